// VERIFICATION_FAST: a check of D = α'·op(A)·op(B) + β·C that costs a few
// passes over the operands instead of a second GEMM (Freivalds' idea):
//
// - Rows: for random sign vectors x, D·x against α'·op(A)·(op(B)·x) + β·C·x.
//   Columns: yᵀ·D against α'·(yᵀ·op(A))·op(B) + β·yᵀ·C. Every sum these
//   are made of is fp64 (the bound's Σ e² gathers in fp32 a few terms at a
//   time: kernels/src/sketch_lines.h).
// - Each row's (column's) residual is held to λ·sqrt(Σ_j e_ij²), e_ij the
//   error an honest D may carry in element (i, j): half an ulp of D_ij in
//   D's type, fp32's rounding of the epilogue, and the element-wise check's
//   K-aware term from this row's and column's norms (gemm/form.h). For a
//   fixed D the residual is a Rademacher sum Σ_j x_j·E_ij, so by Hoeffding's
//   inequality an honest row exceeds the bound with probability at most
//   2·exp(-λ²/2), whatever the errors are, provided Σ_j E_ij² <= Σ_j e_ij².
// - A seeded sample of D's elements is recomputed in full in fp64 and held
//   to the element-wise tolerance; every NaN and Inf in D is counted.
//
// What it catches for sure: an error δ in one element moves its row's and
// its column's residual by |δ|, so |δ| > 2·min(t_row, t_column) is caught
// (with probability 1 - 2·exp(-λ²/2) per line); smaller single-element
// errors only if sampled. Whole rows, tiles, swaps, NaN and Inf move
// residuals by far more. docs/verification.md has the derivation and the
// planted-fault measurements.
//
// The GPU runs it as a few bandwidth-bound kernels (sketch_check.cu); the
// CPU engine runs the same code on the host (sketch_check_host.cpp).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "gemm/element_type.h"
#include "gemm/form.h"

namespace gemm {

// A matrix as the check reads it: element (r, c) of batch entry e is
// element e·batch_stride + r·row_stride + c·col_stride of `data`.
struct StridedView {
  const void* data = nullptr;
  ElementType type = ElementType::kF16;
  int64_t row_stride = 0, col_stride = 1, batch_stride = 0;
  GEMM_HOST_DEVICE float At(int64_t e, int64_t r, int64_t c) const {
    return LoadElement(type, data, static_cast<uint64_t>(e * batch_stride + r * row_stride + c * col_stride));
  }
};

inline constexpr int kSketchVectors = 2;        // random sign vectors per side
inline constexpr int kSketchSamples = 2048;     // elements recomputed in full, per batch entry
inline constexpr double kSketchLambda = 7.5;    // 2·exp(-λ²/2) = 1.5e-12 per line and vector
inline constexpr const char* kSketchReference = "gpu-sketch-fp64";

struct SketchProblem {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  StridedView a, b;  // op(A) m×k and op(B) k×n
  StridedView c, d;  // m×n; c read only when reads_c
  double product_scale = 1;  // α' = α·scales
  double beta = 0;
  bool reads_c = false;
  FormTolerance tolerance;  // the element-wise tolerance the samples are held to
  uint64_t seed = 0;        // picks the vectors and the samples
};

struct SketchResult {
  unsigned long long failed_lines;    // rows and columns whose residual exceeds its bound
  unsigned long long failed_samples;  // sampled elements outside the element-wise tolerance
  unsigned long long non_finite;      // NaN or Inf in D
  unsigned long long samples;         // elements recomputed in full
  float max_sample_error;             // largest |d - ref| among the samples
  float worst_line_ratio;             // largest residual over its bound (> 1: failed)
  float largest_row_bound, largest_column_bound;  // over the batch
  float sample_atol;                  // the largest K-aware term a sample's tolerance added

  bool passed() const { return failed_lines == 0 && failed_samples == 0 && non_finite == 0; }
  // The smallest error in a single element of D that the lines catch
  // wherever it is (2·min(row bound, column bound), their largest).
  double sure_error() const { return 2.0 * fmin(largest_row_bound, largest_column_bound); }
};

// 2^e as a double, from its bits (e from -1022 to 1023).
GEMM_HOST_DEVICE inline double Pow2(int e) {
  const uint64_t bits = static_cast<uint64_t>(e + 1023) << 52;
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(bits));
#else
  double d;
  __builtin_memcpy(&d, &bits, sizeof d);
  return d;
#endif
}

// Half an ulp of a value of type `t` (fp16, bf16 or fp32, so exactly a
// float): 2^(E - p) for |v| in [2^E, 2^(E+1)) with p significant bits, E
// no lower than the type's smallest normal exponent. From the float's bits:
// this runs once per element of D.
GEMM_HOST_DEVICE inline double HalfUlp(ElementType t, float v) {
  const int significant = t == ElementType::kF16 ? 11 : t == ElementType::kBF16 ? 8 : 24;
  const int min_exponent = t == ElementType::kF16 ? -14 : -126;
  const int exponent = static_cast<int>((element_detail::FloatBits(v) >> 23) & 0xff) - 127;  // 0 and subnormals: -127
  return Pow2((exponent < min_exponent ? min_exponent : exponent) - significant);
}

// The same in fp32 for fp16 and bf16 (whose half-ulps are normal floats,
// 2^-25 and up, and 2^-134 and up, as subnormals), for the inner loop,
// which runs it once per element of D: 2^E is v with its sign and
// mantissa masked off (0 where v is 0 or an fp32 subnormal, as bf16's
// are), raised to the type's smallest normal, times 2^-p. Three
// instructions on a GPU. Infinite for Inf and NaN, whose lines fail anyway.
GEMM_HOST_DEVICE inline float HalfUlpF(ElementType t, float v) {
  const float power = element_detail::BitsFloat(element_detail::FloatBits(v) & 0x7f800000u);
  return t == ElementType::kF16 ? fmaxf(power, 0x1p-14f) * 0x1p-11f : fmaxf(power, 0x1p-126f) * 0x1p-8f;
}

// Entry-independent random signs: vector v of a side (0: rows, x of length
// n; 1: columns, y of length m) at index i. Made once per check.
GEMM_HOST_DEVICE inline double SketchSign(uint64_t seed, int side, int v, int64_t i) {
  const uint64_t stream = Mix64(seed ^ Mix64(static_cast<uint64_t>(side * 2 + v + 1)));
  return (Mix64(stream + static_cast<uint64_t>(i)) >> 63) ? 1.0 : -1.0;
}

// The scratch: the sign vectors as bits (x, then y), then per
// batch entry, in doubles: per side the k-vectors op(B)·x and yᵀ·op(A)
// with their absolute sums, then the row (m) and column (n) sums of the
// operands and of D.
struct SketchLayout {
  static constexpr int V = kSketchVectors;
  static constexpr int kOperandSums = V + 2;  // dot per vector, absolute sum, sum of squares
  static constexpr int kDSums = 2 * V + 3;    // D·x and C·x per vector, Σe², Σ|d| + |β·c|, non-finite
  int64_t m, n, k;
  GEMM_HOST_DEVICE int64_t b_rows() const { return 0; }                                 // (V + 2)·k
  GEMM_HOST_DEVICE int64_t a_columns() const { return kOperandSums * k; }               // (V + 2)·k
  GEMM_HOST_DEVICE int64_t a_rows() const { return 2 * kOperandSums * k; }              // (V + 2)·m
  GEMM_HOST_DEVICE int64_t b_columns() const { return a_rows() + kOperandSums * m; }    // (V + 2)·n
  GEMM_HOST_DEVICE int64_t d_rows() const { return b_columns() + kOperandSums * n; }    // (2V + 3)·m
  GEMM_HOST_DEVICE int64_t d_columns() const { return d_rows() + kDSums * m; }          // (2V + 3)·n
  GEMM_HOST_DEVICE int64_t float_norms() const { return d_columns() + kDSums * n; }     // m + n floats
  GEMM_HOST_DEVICE int64_t doubles() const { return float_norms() + (m + n + 1) / 2; }  // per entry
  // Within an entry: op(A)'s row norms (m) and op(B)'s column norms (n), in
  // place of their sums of squares once taken; each row's count of
  // non-finite elements of D (m).
  GEMM_HOST_DEVICE int64_t a_norms() const { return a_rows() + (V + 1) * m; }
  GEMM_HOST_DEVICE int64_t b_norms() const { return b_columns() + (V + 1) * n; }
  // At float_norms(): the same norms as floats, the m rows' then the n
  // columns', which D's passes multiply in fp32 without converting a double.
  GEMM_HOST_DEVICE int64_t d_row_non_finite() const { return d_rows() + (2 * V + 2) * m; }
  // The signs come first, as bits: V vectors of n for x, then V of m for y.
  GEMM_HOST_DEVICE int64_t x_words() const { return (n + 31) / 32; }  // per vector
  GEMM_HOST_DEVICE int64_t y_words() const { return (m + 31) / 32; }
  GEMM_HOST_DEVICE int64_t sign_words() const { return V * (x_words() + y_words()); }
  GEMM_HOST_DEVICE int64_t signs() const { return (sign_words() + 1) / 2; }  // in doubles
};

// Device scratch SketchCheck (gemm/sketch_check_gpu.h) needs for `p`.
inline size_t SketchScratchBytes(const SketchProblem& p) {
  const SketchLayout l{p.m, p.n, p.k};
  return static_cast<size_t>(l.signs() + l.doubles() * p.batch) * sizeof(double);
}

// The check's view of a form's operands, dense as FormProblem has them.
inline SketchProblem SketchOfForm(const FormProblem& f, uint64_t seed) {
  const GemmForm& g = f.form;
  const int64_t m = f.m, n = f.n, k = f.k;
  const bool a_k = g.a_layout == Layout::kKContiguous, b_k = g.b_layout == Layout::kKContiguous;
  SketchProblem p;
  p.m = m, p.n = n, p.k = k, p.batch = g.batch;
  p.a = {f.a, g.a, a_k ? k : 1, a_k ? 1 : m, g.stride_a};  // stored m×k, or k×m
  p.b = {f.b, g.b, b_k ? 1 : n, b_k ? k : 1, g.stride_b};  // stored n×k, or k×n
  p.c = {f.c, g.c, n, 1, g.stride_c};
  p.d = {f.d, g.d, n, 1, m * n};
  p.product_scale = g.ProductScale();
  p.reads_c = g.ReadsC();
  p.beta = p.reads_c ? g.beta : 0.0;
  p.tolerance = ToleranceOf(g);
  p.seed = seed;
  return p;
}

// The check's view of gemmd's original fp16 D = A·Bᵀ: A m×k and B n×k, K
// contiguous, D m×n, rows `lda`, `ldb` and `ldd` elements apart.
inline SketchProblem SketchOfPlain(int64_t m, int64_t n, int64_t k, const void* a, int64_t lda, const void* b,
                                   int64_t ldb, const void* d, int64_t ldd, uint64_t seed) {
  SketchProblem p;
  p.m = m, p.n = n, p.k = k;
  p.a = {a, ElementType::kF16, lda, 1, 0};
  p.b = {b, ElementType::kF16, 1, ldb, 0};  // op(B) = Bᵀ: (kk, j) at j·ldb + kk
  p.d = {d, ElementType::kF16, ldd, 1, 0};
  p.seed = seed;
  return p;
}

// The check on the host, for the CPU engine and the tests.
SketchResult SketchCheckOnHost(const SketchProblem& p);

}  // namespace gemm
