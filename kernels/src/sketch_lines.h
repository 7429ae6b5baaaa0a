// The sums of gemm/sketch_check.h, one element at a time, shared by the GPU
// kernels (sketch_check.cu) and the host loops (sketch_check_host.cpp), so
// that both engines compute the check with the same code.
//
// Each pass reduces one matrix along its rows or its columns: for output o
// (a row or a column of it) and reduction index r, Add(e, o, r, sums) adds
// element (o, r)'s share of batch entry e, and Out(e, s, o) is where sum s
// of output o goes.
#pragma once

#include <cmath>

#include "gemm/sketch_check.h"

namespace gemm::sketch {

inline constexpr int V = kSketchVectors;

// Reduces op(A) or op(B): per output, Σ m·vec_v over the reduction index
// for each vector, Σ |m|·weight, and Σ m².
struct OperandLines {
  static constexpr int kSums = SketchLayout::kOperandSums;
  StridedView matrix;
  bool per_row;         // outputs are the matrix's rows (reducing its columns), else its columns
  int64_t length;       // the reduction's length
  int64_t outputs;
  int side = 0;         // with no `vec`: the seeded signs of this side (0: x over columns, 1: y over rows)
  uint64_t seed = 0;
  double* scratch;      // the entries' sums, SketchLayout::doubles() apart
  int64_t entry_doubles;
  int64_t out_at;       // where this pass's sums start within an entry
  int64_t vec_at = -1;  // where the vectors (V·length) start, or -1: seeded signs
  int64_t weight_at = -1;  // where the absolute weights (length) start, or -1: ones

  GEMM_HOST_DEVICE double* Out(int64_t e, int s, int64_t o) const {
    return scratch + e * entry_doubles + out_at + s * outputs + o;
  }
  GEMM_HOST_DEVICE void Add(int64_t e, int64_t o, int64_t r, double* sums) const {
    const double x = per_row ? matrix.At(e, o, r) : matrix.At(e, r, o);
    const double* entry = scratch + e * entry_doubles;
    for (int v = 0; v < V; ++v) {
      sums[v] += x * (vec_at >= 0 ? entry[vec_at + v * length + r] : SketchSign(seed, e, side, v, r));
    }
    sums[V] += fabs(x) * (weight_at >= 0 ? entry[weight_at + r] : 1.0);
    sums[V + 1] += x * x;
  }
};

// Reduces D (and C) along its rows (outputs i, reducing j) or its columns:
// per vector Σ d·sign and Σ c·sign, then Σ e², Σ (|d| + |β·c|) and the
// count of non-finite d. The norms of op(A)'s rows and op(B)'s columns are
// in place of their sums of squares (TakeNorms).
struct DLines {
  static constexpr int kSums = SketchLayout::kDSums;
  SketchProblem problem;
  bool per_row;
  int64_t outputs;
  double* scratch;
  int64_t entry_doubles;
  int64_t out_at;
  int64_t a_norms_at, b_norms_at;  // within an entry: m and n norms

  GEMM_HOST_DEVICE double* Out(int64_t e, int s, int64_t o) const {
    return scratch + e * entry_doubles + out_at + s * outputs + o;
  }
  GEMM_HOST_DEVICE void Add(int64_t e, int64_t o, int64_t r, double* sums) const {
    const int64_t i = per_row ? o : r, j = per_row ? r : o;
    const SketchProblem& p = problem;
    const double d = p.d.At(e, i, j);
    const double c = p.reads_c ? p.c.At(e, i, j) : 0.0;
    const double* entry = scratch + e * entry_doubles;
    const int side = per_row ? 0 : 1;  // D·x sums over columns; yᵀ·D over rows
    for (int v = 0; v < V; ++v) {
      const double sign = SketchSign(p.seed, e, side, v, r);
      sums[v] += d * sign;
      sums[V + v] += c * sign;
    }
    const double bound = ElementErrorBound(p, d, c, entry[a_norms_at + i], entry[b_norms_at + j]);
    sums[2 * V] += bound * bound;
    sums[2 * V + 1] += fabs(d) + fabs(p.beta * c);
    sums[2 * V + 2] += d - d == 0 ? 0.0 : 1.0;  // NaN or Inf
  }
};

// Where each pass reads and writes within an entry.
struct Passes {
  OperandLines b_rows, a_columns, a_rows, b_columns;
  DLines d_rows, d_columns;
};

inline Passes PassesOf(const SketchProblem& p, double* scratch) {
  const SketchLayout l{p.m, p.n, p.k};
  const int64_t entry = l.doubles();
  Passes s;
  // op(B)·x and yᵀ·op(A): k-vectors, signs made on the fly.
  s.b_rows = {p.b, true, p.n, p.k, 0, p.seed, scratch, entry, l.b_rows()};
  s.a_columns = {p.a, false, p.m, p.k, 1, p.seed, scratch, entry, l.a_columns()};
  // op(A)·(op(B)·x) and (yᵀ·op(A))·op(B), with |op(A)|·(|op(B)|·1) and its
  // transpose beside them for the bound on fp64's own rounding, and the
  // norms of op(A)'s rows and op(B)'s columns.
  s.a_rows = {p.a, true, p.k, p.m, 0, p.seed, scratch, entry, l.a_rows(), l.b_rows(), l.b_rows() + V * p.k};
  s.b_columns = {p.b, false, p.k, p.n, 0, p.seed, scratch, entry, l.b_columns(), l.a_columns(),
                 l.a_columns() + V * p.k};
  const int64_t a_norms = l.a_rows() + (V + 1) * p.m, b_norms = l.b_columns() + (V + 1) * p.n;
  s.d_rows = {p, true, p.m, scratch, entry, l.d_rows(), a_norms, b_norms};
  s.d_columns = {p, false, p.n, scratch, entry, l.d_columns(), a_norms, b_norms};
  return s;
}

// The sums of squares of op(A)'s rows and op(B)'s columns become norms.
GEMM_HOST_DEVICE inline void TakeNorm(const SketchProblem& p, double* scratch, int64_t e, int64_t line) {
  const SketchLayout l{p.m, p.n, p.k};
  double* entry = scratch + e * l.doubles();
  double* x = line < p.m ? entry + l.a_rows() + (V + 1) * p.m + line
                         : entry + l.b_columns() + (V + 1) * p.n + (line - p.m);
  *x = sqrt(*x);
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
  const double* entry = scratch + e * l.doubles();
  const bool row = line < p.m;
  const int64_t o = row ? line : line - p.m, outputs = row ? p.m : p.n;
  const double* product = entry + (row ? l.a_rows() : l.b_columns());  // op(A)·op(B) against the vectors
  const double* dsums = entry + (row ? l.d_rows() : l.d_columns());
  // fp64's own rounding: n + k terms of at most Σ|d| + |α'|·Σ|a||b|, each
  // off by 2^-53; 2^-40 leaves room.
  const double bound = kSketchLambda * sqrt(dsums[2 * V * outputs + o]) +
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

// Sample s of entry e: the element it recomputes (every element in turn
// where the entry has no more than the samples).
struct SampleAt {
  int64_t i, j;
};
GEMM_HOST_DEVICE inline SampleAt SampleOf(const SketchProblem& p, int64_t e, int64_t s) {
  const uint64_t elements = static_cast<uint64_t>(p.m) * p.n;
  const uint64_t index = elements <= static_cast<uint64_t>(kSketchSamples)
                             ? static_cast<uint64_t>(s)
                             : Mix64(p.seed ^ Mix64(0x5a5a5a5aull + static_cast<uint64_t>(e)) ^ Mix64(s + 1)) %
                                   elements;
  return {static_cast<int64_t>(index / p.n), static_cast<int64_t>(index % p.n)};
}
GEMM_HOST_DEVICE inline int64_t SamplesPerEntry(const SketchProblem& p) {
  const uint64_t elements = static_cast<uint64_t>(p.m) * p.n;
  return elements < static_cast<uint64_t>(kSketchSamples) ? static_cast<int64_t>(elements) : kSketchSamples;
}

// A sample's verdict against the element-wise tolerance, from its exact
// product `sum` (Σ_k a·b in fp64).
struct SampleVerdict {
  bool failed;
  double error, accumulation;
};
GEMM_HOST_DEVICE inline SampleVerdict JudgeSample(const SketchProblem& p, const double* scratch, int64_t e,
                                                  SampleAt at, double sum) {
  const SketchLayout l{p.m, p.n, p.k};
  const double* entry = scratch + e * l.doubles();
  const double c = p.reads_c ? p.c.At(e, at.i, at.j) : 0.0;
  const double ref = p.product_scale * sum + p.beta * c;
  const double d = p.d.At(e, at.i, at.j);
  const FormTolerance& t = p.tolerance;
  const double accumulation = (t.unit * sqrt(static_cast<double>(p.k)) + t.input) * fabs(p.product_scale) *
                                  entry[l.a_rows() + (V + 1) * p.m + at.i] *
                                  entry[l.b_columns() + (V + 1) * p.n + at.j] +
                              (p.reads_c ? 0x1p-23 * fabs(p.beta * c) : 0.0);
  const double error = fabs(d - ref);
  return {!(error <= t.atol + t.rtol * fabs(ref) + accumulation), error, accumulation};
}

}  // namespace gemm::sketch
