// What "verified" means: every element of D agrees with an independent
// GEMM of the same operands within
//
//   |d - ref| <= atol + rtol·|ref| + AccumulationAtol(k, ‖A‖, ‖B‖)
//
// It is agreement with another GEMM, not closeness to the exact product:
// both sides round their sums in fp32 and D in fp16.
// - rtol 1e-3 and atol 1e-2 are the seed's fp16 tolerances
//   (../shared/design/ladder.md): about one fp16 rounding of each side.
// - The accumulation term grows with K. An fp32 sum of K products carries
//   a rounding error that, for errors of random sign, is of the order of
//   λ·√K·u·Σ|a_k·b_k| (Higham and Mary, "A new approach to probabilistic
//   rounding error analysis", SIAM J. Sci. Comput. 41(5), 2019: the
//   probabilistic bound for inner products), and Σ|a_k·b_k| <= ‖a‖₂·‖b‖₂
//   (Cauchy–Schwarz). With the largest row norms of A and B this bounds
//   every element. D and the reference each carry such an error, so the
//   unit is 2u = 2^-23 (λ = 1 for each side). With inputs in [-1, 1] the
//   term adds 0.01 at K = 4096 and 0.67 at K = 65536;
//   docs/verification.md has what each step needed, measured.
#pragma once

#include <cmath>
#include <cstdint>

namespace gemm {

inline constexpr double kRtol = 1e-3;
inline constexpr double kAtol = 1e-2;
inline constexpr double kAccumulationUnit = 0x1p-23;

// The K-aware part of the bound, from the largest row norms (‖a_i‖₂ over
// A's rows, ‖b_j‖₂ over B's, each row K long).
inline double AccumulationAtol(int64_t k, double max_a_row_norm, double max_b_row_norm) {
  return kAccumulationUnit * std::sqrt(static_cast<double>(k)) * max_a_row_norm * max_b_row_norm;
}

}  // namespace gemm
