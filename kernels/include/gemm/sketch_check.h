// VERIFICATION_FAST: a check of D = α'·op(A)·op(B) + β·C that costs a few
// passes over the operands instead of a second GEMM (Freivalds' idea):
//
// - Rows: for random sign vectors x, D·x against α'·op(A)·(op(B)·x) + β·C·x.
//   Columns: yᵀ·D against α'·(yᵀ·op(A))·op(B) + β·yᵀ·C. All sums in fp64.
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

// The largest honest error of one element of D: half an ulp in D's type, the
// epilogue's fp32 rounding, the K-aware accumulation term for a row of norm
// `a_norm` and a column of norm `b_norm`, and β·C's rounding.
GEMM_HOST_DEVICE inline double HalfUlp(ElementType t, double v) {
  const int mantissa = t == ElementType::kF16 ? 11 : t == ElementType::kBF16 ? 8 : 24;  // with the implicit bit
  const int min_exponent = t == ElementType::kF16 ? -14 : -126;
  int exponent = 0;
  const double fraction = frexp(fabs(v), &exponent);  // |v| = fraction·2^exponent, fraction in [0.5, 1)
  (void)fraction;
  const int e = (v == 0 || exponent - 1 < min_exponent) ? min_exponent : exponent - 1;
  return ldexp(1.0, e - mantissa);  // half of 2^(e - (mantissa - 1))
}

GEMM_HOST_DEVICE inline double ElementErrorBound(const SketchProblem& p, double d, double c, double a_norm,
                                                 double b_norm) {
  const FormTolerance& t = p.tolerance;
  const double accumulation = (t.unit * sqrt(static_cast<double>(p.k)) + t.input) * fabs(p.product_scale);
  return HalfUlp(p.d.type, d) + 0x1p-24 * fabs(d) + accumulation * a_norm * b_norm +
         (p.reads_c ? 0x1p-23 * fabs(p.beta) * fabs(c) : 0.0);
}

// Entry `e`'s random sign for vector v of a side (0: rows, the vector x of
// length n; 1: columns, y of length m) at index i.
GEMM_HOST_DEVICE inline double SketchSign(uint64_t seed, int64_t e, int side, int v, int64_t i) {
  const uint64_t stream = Mix64(seed ^ Mix64(static_cast<uint64_t>(e) * 4 + side * 2 + v + 1));
  return (Mix64(stream + static_cast<uint64_t>(i)) >> 63) ? 1.0 : -1.0;
}

// The sums the check keeps per batch entry, in doubles: per side the
// k-vectors op(B)·x and yᵀ·op(A) with their absolute sums, then the
// row (m) and column (n) sums of the operands and of D.
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
  GEMM_HOST_DEVICE int64_t doubles() const { return d_columns() + kDSums * n; }         // per entry
};

// Device scratch SketchCheck (gemm/sketch_check_gpu.h) needs for `p`.
inline size_t SketchScratchBytes(const SketchProblem& p) {
  return static_cast<size_t>(SketchLayout{p.m, p.n, p.k}.doubles() * p.batch) * sizeof(double);
}

// The check on the host, for the CPU engine and the tests.
SketchResult SketchCheckOnHost(const SketchProblem& p);

}  // namespace gemm
