// The sums of gemm/sketch_check.h, one element at a time, shared by the GPU
// kernels (sketch_check.cu) and the host loops (sketch_check_host.cpp), so
// that both engines compute the check with the same code.
//
// Each pass reduces one matrix along its rows or its columns: for output o
// (a row or a column of it) of batch entry e, Begin(e, o) gives the line,
// Load<T, kVariant>(line, r) reads element r (and C's beside it, for D's
// lines that read C) and Accumulate<T, kVariant>(line, r, loaded, plus,
// sums, partials) adds its share, `plus` holding bit v where sign vector v
// is + at r (the GPU's loop issues several loads before it accumulates any,
// and reads each word of signs once for the elements it covers), and
// Out(e, s, o) is where sum s of output o goes. T is the element type the
// pass reads, fixed at compile time; kUnitStep, that the line's elements
// are adjacent (contiguous(): the GPU's warp-per-output loop); kVariant,
// the pass's variant() (what it reads besides the matrix, and in which
// type), chosen once per pass (WithVariant) so that no inner loop branches
// on it. A load behind a branch on a type known only at run time cannot
// join the batch of loads in flight: C's element read that way left D's
// passes that read C waiting on memory one element at a time (16% of an
// H100's DRAM bandwidth, ncu at 4096^2).
//
// Sums that only bound an error (D's Σ e² and its count of non-finite
// elements) gather in fp32 `partials`, which Flush adds to the fp64 sums
// after at most kFlushEvery elements: an fp32 sum of 16 non-negative terms
// is off by less than 2^-20 of itself, well inside the 2^-10 by which
// JudgeLine widens Σ e². Every sum a residual is made of stays fp64, and
// so does Σ |d|, which an fp32 sum could overflow. On Hopper a conversion
// to or from fp64 issues at a quarter of an fp64 add's rate, so an element
// of D converts once: d itself.
#pragma once

#include <cmath>
#include <type_traits>

#include "gemm/sketch_check.h"

namespace gemm::sketch {

inline constexpr int V = kSketchVectors;
inline constexpr int kFlushEvery = 16;  // elements a partial gathers at most before Flush

// What a pass's Load reads at one place: the matrix's element, and C's
// where D's lines read C (0 otherwise, and never used).
struct Loaded {
  float x, c;
};

// f(std::integral_constant<int, v>{}) for the pass's variant v, so that
// the loops are compiled once per variant.
template <class Op, class F>
auto WithVariant(const Op& op, F&& f) {
  if constexpr (Op::kVariants > 2) {
    if (op.variant() == 2) return f(std::integral_constant<int, 2>{});
  }
  if (op.variant() == 1) return f(std::integral_constant<int, 1>{});
  return f(std::integral_constant<int, 0>{});
}

// Bit r of a sign vector: + where set.
GEMM_HOST_DEVICE inline bool SignBit(const uint32_t* words, int64_t r) { return (words[r >> 5] >> (r & 31)) & 1u; }

// The V vectors' signs at r as Accumulate takes them: bit v for vector v,
// the vectors `words` words apart.
GEMM_HOST_DEVICE inline uint32_t SignsAt(const uint32_t* signs, int64_t words, int64_t r) {
  uint32_t plus = 0;
  for (int v = 0; v < V; ++v) plus |= static_cast<uint32_t>(SignBit(signs + v * words, r)) << v;
  return plus;
}
// The words of the V vectors that hold bit r, for SignsIn: where several
// elements share their words, they are read once.
GEMM_HOST_DEVICE inline void SignWordsAt(const uint32_t* signs, int64_t words, int64_t r, uint32_t (&word)[V]) {
  for (int v = 0; v < V; ++v) word[v] = signs[v * words + (r >> 5)];
}
// SignsAt's value from the words SignWordsAt read, at bit `bit` of each
// (r & 31): where a run of elements starts at a known bit, the GPU's loops
// give the bit directly.
GEMM_HOST_DEVICE inline uint32_t SignsAtBit(const uint32_t (&word)[V], int bit) {
  uint32_t plus = 0;
  for (int v = 0; v < V; ++v) plus |= ((word[v] >> bit) & 1u) << v;
  return plus;
}
GEMM_HOST_DEVICE inline uint32_t SignsIn(const uint32_t (&word)[V], int64_t r) {
  return SignsAtBit(word, static_cast<int>(r & 31));
}

// Reduces op(A) or op(B): per output, Σ m·vec_v over the reduction index
// for each vector, Σ |m|·weight, and Σ m². Begin(e, o) works out what is
// the same along a line; Accumulate is the inner loop's body, for the
// matrix's element type T known at compile time.
struct OperandLines {
  static constexpr int kSums = SketchLayout::kOperandSums;
  static constexpr int kPartials = 0;
  StridedView matrix;
  bool per_row;         // outputs are the matrix's rows (reducing its columns), else its columns
  int64_t length;       // the reduction's length
  int64_t outputs;
  const uint32_t* signs;  // with no `vec`: this side's sign vectors as bits, `words` apart
  int64_t words;
  double* scratch;      // the entries' sums, SketchLayout::doubles() apart
  int64_t entry_doubles;
  int64_t out_at;       // where this pass's sums start within an entry
  int64_t vec_at = -1;  // where the vectors (V·length) start, or -1: the signs
  int64_t weight_at = -1;  // where the absolute weights (length) start, or -1: ones

  struct Line {
    int64_t base, step;  // element r of the line is base + r·step
    const double* vec;   // or nullptr: the signs
    const double* weight;
  };
  GEMM_HOST_DEVICE ElementType type() const { return matrix.type; }
  // Whether the reduction walks contiguous memory.
  GEMM_HOST_DEVICE bool contiguous() const { return (per_row ? matrix.col_stride : matrix.row_stride) == 1; }
  GEMM_HOST_DEVICE double* Out(int64_t e, int s, int64_t o) const {
    return scratch + e * entry_doubles + out_at + s * outputs + o;
  }
  GEMM_HOST_DEVICE Line Begin(int64_t e, int64_t o) const {
    const double* entry = scratch + e * entry_doubles;
    return {e * matrix.batch_stride + o * (per_row ? matrix.row_stride : matrix.col_stride),
            per_row ? matrix.col_stride : matrix.row_stride, vec_at >= 0 ? entry + vec_at : nullptr,
            weight_at >= 0 ? entry + weight_at : nullptr};
  }
  template <ElementType T, int kVariant, bool kUnitStep = false>
  GEMM_HOST_DEVICE Loaded Load(const Line& l, int64_t r) const {
    return {LoadElement(T, matrix.data, static_cast<uint64_t>(l.base + (kUnitStep ? r : r * l.step))), 0.0f};
  }
  // 1 where the pass multiplies by k-vectors and weights (op(A)·(op(B)·x)
  // and its transpose), 0 where by the sign vectors.
  static constexpr int kVariants = 2;
  GEMM_HOST_DEVICE int variant() const { return vec_at >= 0 ? 1 : 0; }
  template <ElementType T, int kVariant>  // as DLines's
  GEMM_HOST_DEVICE void Accumulate(const Line& l, int64_t r, Loaded loaded, uint32_t plus, double* sums,
                                   float*) const {
    const double x = loaded.x;
    for (int v = 0; v < V; ++v) {
      if constexpr (kVariant == 1) {
        sums[v] += x * l.vec[v * length + r];
      } else {
        sums[v] += (plus >> v) & 1u ? x : -x;
      }
    }
    if constexpr (kVariant == 1) {
      sums[V] += fabs(x) * l.weight[r];
      sums[V + 1] += x * x;  // the norms: op(A)'s rows, op(B)'s columns
    } else {
      sums[V] += fabs(x);  // the weights; these lines' norms are never read
    }
  }
  GEMM_HOST_DEVICE static void Flush(float*, double*) {}
};

// Reduces D (and C) along its rows (outputs i, reducing j) or its columns:
// per vector Σ d·sign and Σ c·sign, then Σ e², Σ (|d| + |β·c|) and the
// count of non-finite d, e the largest honest error of an element: half an
// ulp in D's type, the epilogue's fp32 rounding, the K-aware term of its
// row's and column's norms (in place of their sums of squares: TakeNorm),
// and β·C's rounding.
struct DLines {
  static constexpr int kSums = SketchLayout::kDSums;
  static constexpr int kPartials = 2;  // Σ e² where D is 16-bit, and the non-finite count
  SketchProblem problem;
  bool per_row;
  int64_t length;  // n where per_row, else m
  int64_t outputs;
  const uint32_t* signs;  // x where per_row, else y: bits, `words` apart
  int64_t words;
  double* scratch;
  int64_t entry_doubles;
  int64_t out_at;
  int64_t a_norms_at, b_norms_at;  // within an entry: m and n norms
  int64_t float_norms_at;          // within an entry: the same as floats, m then n
  double accumulation;  // (unit·√K + input)·|α'|, per unit of ‖a_i‖·‖b_j‖
  double c_rounding;    // 2^-23·|β| where C is read

  struct Line {
    int64_t d_base, d_step, c_base, c_step;
    double own_norm;            // this row's (column's) norm, times `accumulation`
    const double* other_norms;  // the columns' (rows') norms, by r
    const float* other_float_norms;
  };
  GEMM_HOST_DEVICE ElementType type() const { return problem.d.type; }
  GEMM_HOST_DEVICE bool contiguous() const {
    const StridedView &d = problem.d, &c = problem.c;
    return (per_row ? d.col_stride : d.row_stride) == 1 &&
           (!problem.reads_c || (per_row ? c.col_stride : c.row_stride) == 1);
  }
  GEMM_HOST_DEVICE double* Out(int64_t e, int s, int64_t o) const {
    return scratch + e * entry_doubles + out_at + s * outputs + o;
  }
  GEMM_HOST_DEVICE Line Begin(int64_t e, int64_t o) const {
    const StridedView &d = problem.d, &c = problem.c;
    const double* entry = scratch + e * entry_doubles;
    const float* float_norms = reinterpret_cast<const float*>(entry + float_norms_at);
    return {e * d.batch_stride + o * (per_row ? d.row_stride : d.col_stride), per_row ? d.col_stride : d.row_stride,
            e * c.batch_stride + o * (per_row ? c.row_stride : c.col_stride), per_row ? c.col_stride : c.row_stride,
            accumulation * entry[(per_row ? a_norms_at : b_norms_at) + o],
            entry + (per_row ? b_norms_at : a_norms_at),
            float_norms + (per_row ? problem.m : 0)};  // the columns' after the rows'
  }
  // 0 where the pass does not read C; 1 where C has D's type; 2 where C
  // is fp32 (the two types gemm/form.h allows C).
  static constexpr int kVariants = 3;
  GEMM_HOST_DEVICE int variant() const {
    return !problem.reads_c ? 0 : problem.c.type == problem.d.type ? 1 : 2;
  }
  template <ElementType T, int kVariant, bool kUnitStep = false>
  GEMM_HOST_DEVICE Loaded Load(const Line& l, int64_t r) const {
    const float d = LoadElement(T, problem.d.data, static_cast<uint64_t>(l.d_base + (kUnitStep ? r : r * l.d_step)));
    if constexpr (kVariant == 0) {
      return {d, 0.0f};
    } else {
      constexpr ElementType kC = kVariant == 1 ? T : ElementType::kF32;
      return {d, LoadElement(kC, problem.c.data, static_cast<uint64_t>(l.c_base + (kUnitStep ? r : r * l.c_step)))};
    }
  }
  template <ElementType T, int kVariant>
  GEMM_HOST_DEVICE void Accumulate(const Line& l, int64_t r, Loaded loaded, uint32_t plus, double* sums,
                                   float* partials) const {
    constexpr bool kReadsC = kVariant != 0;
    const SketchProblem& p = problem;
    const float d = loaded.x, c = loaded.c;
    const double dd = d;  // the one conversion to fp64 an element of D costs
    double cc = 0.0;
    if constexpr (kReadsC) cc = c;
    for (int v = 0; v < V; ++v) {
      const bool positive = (plus >> v) & 1u;
      sums[v] += positive ? dd : -dd;
      if constexpr (kReadsC) sums[V + v] += positive ? cc : -cc;
    }
    // In fp32 where D is 16-bit: a bound, not a result; JudgeLine widens
    // the sum by 2^-10 for fp32's rounding of its terms and of the partials.
    if constexpr (T == ElementType::kF16 || T == ElementType::kBF16) {
      float b32 = HonestError16(T, d, static_cast<float>(l.own_norm) * l.other_float_norms[r]);
      if constexpr (kReadsC) b32 += static_cast<float>(c_rounding) * fabsf(c);
      partials[0] += b32 * b32;
    } else {
      const double b64 = HalfUlp(T, d) + 0x1p-24 * fabs(dd) + l.own_norm * l.other_norms[r] + c_rounding * fabs(cc);
      sums[2 * V] += b64 * b64;
    }
    if constexpr (kReadsC) {
      sums[2 * V + 1] += fabs(dd) + fabs(p.beta * cc);
    } else {
      sums[2 * V + 1] += fabs(dd);
    }
    partials[1] += d - d == 0 ? 0.0f : 1.0f;  // NaN or Inf
  }
  // e where D is 16-bit, before β·C's term: half an ulp, the epilogue's
  // fp32 rounding, and `norms`, the K-aware term (own_norm times the other
  // line's norm, in fp32).
  GEMM_HOST_DEVICE static float HonestError16(ElementType T, float d, float norms) {
    return HalfUlpF(T, d) + 0x1p-24f * fabsf(d) + norms;
  }
  // The partials into the fp64 sums, and cleared.
  GEMM_HOST_DEVICE static void Flush(float* partials, double* sums) {
    sums[2 * V] += partials[0];
    sums[2 * V + 2] += partials[1];
    partials[0] = partials[1] = 0.0f;
  }
};

// Where each pass reads and writes.
struct Passes {
  OperandLines b_rows, a_columns, a_rows, b_columns;
  DLines d_rows, d_columns;
};

// The entries' part of the scratch, after the signs.
GEMM_HOST_DEVICE inline double* Entries(const SketchProblem& p, double* scratch) {
  return scratch + SketchLayout{p.m, p.n, p.k}.signs();
}
GEMM_HOST_DEVICE inline const double* Entries(const SketchProblem& p, const double* scratch) {
  return scratch + SketchLayout{p.m, p.n, p.k}.signs();
}

// Word `index` of the signs: x's V vectors, then y's (SketchLayout).
GEMM_HOST_DEVICE inline void MakeSignWord(const SketchProblem& p, double* scratch, int64_t index) {
  const SketchLayout l{p.m, p.n, p.k};
  const bool x = index < V * l.x_words();
  const int64_t words = x ? l.x_words() : l.y_words(), at = x ? index : index - V * l.x_words();
  const int64_t length = x ? p.n : p.m, first = at % words * 32;
  uint32_t bits = 0;
  for (int b = 0; b < 32 && first + b < length; ++b) {
    if (SketchSign(p.seed, x ? 0 : 1, static_cast<int>(at / words), first + b) > 0) bits |= 1u << b;
  }
  reinterpret_cast<uint32_t*>(scratch)[index] = bits;
}

inline Passes PassesOf(const SketchProblem& p, double* scratch) {
  const SketchLayout l{p.m, p.n, p.k};
  const int64_t entry = l.doubles();
  const uint32_t* x = reinterpret_cast<const uint32_t*>(scratch);
  const uint32_t* y = x + V * l.x_words();
  const int64_t xw = l.x_words(), yw = l.y_words();
  double* entries = Entries(p, scratch);
  Passes s;
  // op(B)·x and yᵀ·op(A): k-vectors.
  s.b_rows = {p.b, true, p.n, p.k, x, xw, entries, entry, l.b_rows()};
  s.a_columns = {p.a, false, p.m, p.k, y, yw, entries, entry, l.a_columns()};
  // op(A)·(op(B)·x) and (yᵀ·op(A))·op(B), with |op(A)|·(|op(B)|·1) and its
  // transpose beside them for the bound on fp64's own rounding, and the
  // norms of op(A)'s rows and op(B)'s columns.
  s.a_rows = {p.a, true, p.k, p.m, x, xw, entries, entry, l.a_rows(), l.b_rows(), l.b_rows() + V * p.k};
  s.b_columns = {p.b, false, p.k, p.n, y, yw, entries, entry, l.b_columns(), l.a_columns(), l.a_columns() + V * p.k};
  const double accumulation = ProductTermPerNorms(p.tolerance, p.k, p.product_scale);
  const double c_rounding = CTermPerValue(p.reads_c, p.beta);
  s.d_rows = {p,          true,        p.n,         p.m,         x,        xw,       entries,
              entry,      l.d_rows(),  l.a_norms(), l.b_norms(), l.float_norms(), accumulation, c_rounding};
  s.d_columns = {p,          false,         p.m,         p.n,         y,        yw,       entries,
                 entry,      l.d_columns(), l.a_norms(), l.b_norms(), l.float_norms(), accumulation, c_rounding};
  return s;
}

// The sums of squares of op(A)'s rows and op(B)'s columns become norms,
// as doubles and as floats (rows, then columns: `line`'s order).
GEMM_HOST_DEVICE inline void TakeNorm(const SketchProblem& p, double* scratch, int64_t e, int64_t line) {
  const SketchLayout l{p.m, p.n, p.k};
  double* entry = Entries(p, scratch) + e * l.doubles();
  double* x = line < p.m ? entry + l.a_norms() + line : entry + l.b_norms() + (line - p.m);
  *x = sqrt(*x);
  reinterpret_cast<float*>(entry + l.float_norms())[line] = static_cast<float>(*x);
}

// One line's verdict: failed where a residual exceeds the bound or is not
// finite; the largest residual over the bound; the bound itself.
struct LineVerdict {
  bool failed;
  double ratio, bound;
};

GEMM_HOST_DEVICE inline LineVerdict JudgeLine(const SketchProblem& p, const double* scratch, int64_t e,
                                              int64_t line) {
  const SketchLayout l{p.m, p.n, p.k};
  const double* entry = Entries(p, scratch) + e * l.doubles();
  const bool row = line < p.m;
  const int64_t o = row ? line : line - p.m, outputs = row ? p.m : p.n;
  const double* product = entry + (row ? l.a_rows() : l.b_columns());  // op(A)·op(B) against the vectors
  const double* dsums = entry + (row ? l.d_rows() : l.d_columns());
  // fp64's own rounding: n + k terms of at most Σ|d| + |α'|·Σ|a||b|, each
  // off by 2^-53; 2^-40 leaves room.
  const double bound = kSketchLambda * sqrt(dsums[2 * V * outputs + o] * (1 + 0x1p-10)) +
                       0x1p-40 * (dsums[(2 * V + 1) * outputs + o] + fabs(p.product_scale) * product[V * outputs + o]);
  LineVerdict verdict{dsums[(2 * V + 2) * outputs + o] > 0, 0.0, bound};
  for (int v = 0; v < V; ++v) {
    const double residual =
        dsums[v * outputs + o] - p.product_scale * product[v * outputs + o] - p.beta * dsums[(V + v) * outputs + o];
    if (!(fabs(residual) <= bound)) verdict.failed = true;  // NaN too
    if (residual - residual == 0) verdict.ratio = fmax(verdict.ratio, fabs(residual) / bound);
  }
  return verdict;
}

// The sampled elements come in clusters of adjacent elements of D, side by
// side along whichever of op(A)'s rows and op(B)'s columns lie side by side
// in memory (A stored K×M, B stored K×N), so that a cluster's walk along K
// reads one run of bytes per k instead of a 32-byte sector per element and
// operand: 16 rows where A is MN-contiguous, 16 columns where B is, 4×4
// where both are, single elements where both run along K. A cluster's
// place is drawn uniformly from the grid of clusters that covers D (those
// at the edges clipped to it), so every element is sampled with the same
// probability as when the elements were drawn one by one.
struct ClusterShape {
  int rows, cols;
};
GEMM_HOST_DEVICE inline ClusterShape SampleClusterShape(const SketchProblem& p) {
  const bool a_mn = p.a.row_stride == 1 && p.a.col_stride != 1;  // op(A)(i, k) and (i + 1, k) adjacent
  const bool b_mn = p.b.col_stride == 1 && p.b.row_stride != 1;  // op(B)(k, j) and (k, j + 1) adjacent
  if (static_cast<uint64_t>(p.m) * p.n <= static_cast<uint64_t>(kSketchSamples)) return {1, 1};  // every element
  return a_mn && b_mn ? ClusterShape{4, 4} : a_mn ? ClusterShape{16, 1} : b_mn ? ClusterShape{1, 16} : ClusterShape{1, 1};
}
inline constexpr int kMaxClusterElements = 16;

// Cluster s of entry e: its first element and its extent within D (every
// element in turn, one a cluster, where the entry has no more than the
// samples).
struct SampleCluster {
  int64_t i, j;
  int rows, cols;
};
GEMM_HOST_DEVICE inline int64_t SampleClustersPerEntry(const SketchProblem& p) {
  const uint64_t elements = static_cast<uint64_t>(p.m) * p.n;
  if (elements <= static_cast<uint64_t>(kSketchSamples)) return static_cast<int64_t>(elements);
  const ClusterShape shape = SampleClusterShape(p);
  return kSketchSamples / (shape.rows * shape.cols);
}
GEMM_HOST_DEVICE inline SampleCluster SampleClusterOf(const SketchProblem& p, int64_t e, int64_t s) {
  const ClusterShape shape = SampleClusterShape(p);
  const uint64_t grid_rows = (p.m + shape.rows - 1) / shape.rows, grid_cols = (p.n + shape.cols - 1) / shape.cols;
  const uint64_t cells = grid_rows * grid_cols;
  const uint64_t index = static_cast<uint64_t>(p.m) * p.n <= static_cast<uint64_t>(kSketchSamples)
                             ? static_cast<uint64_t>(s)
                             : Mix64(p.seed ^ Mix64(0x5a5a5a5aull + static_cast<uint64_t>(e)) ^ Mix64(s + 1)) % cells;
  const int64_t i = static_cast<int64_t>(index / grid_cols) * shape.rows;
  const int64_t j = static_cast<int64_t>(index % grid_cols) * shape.cols;
  return {i, j, static_cast<int>(p.m - i < shape.rows ? p.m - i : shape.rows),
          static_cast<int>(p.n - j < shape.cols ? p.n - j : shape.cols)};
}

// An element of D the samples recompute.
struct SampleAt {
  int64_t i, j;
};

// A sample's verdict against the element-wise tolerance, from its exact
// product `sum` (Σ_k a·b in fp64).
struct SampleVerdict {
  bool failed;
  double error, accumulation;
};
GEMM_HOST_DEVICE inline SampleVerdict JudgeSample(const SketchProblem& p, const double* scratch, int64_t e,
                                                  SampleAt at, double sum) {
  const SketchLayout l{p.m, p.n, p.k};
  const double* entry = Entries(p, scratch) + e * l.doubles();
  const double c = p.reads_c ? p.c.At(e, at.i, at.j) : 0.0;
  const double ref = p.product_scale * sum + p.beta * c;
  const double d = p.d.At(e, at.i, at.j);
  const FormTolerance& t = p.tolerance;
  const double accumulation = ProductTermPerNorms(t, p.k, p.product_scale) * entry[l.a_norms() + at.i] *
                                  entry[l.b_norms() + at.j] +
                              CTermPerValue(p.reads_c, p.beta) * fabs(c);
  const double error = fabs(d - ref);
  return {!(error <= t.atol + t.rtol * fabs(ref) + accumulation), error, accumulation};
}

}  // namespace gemm::sketch
