#include "engine/verify.h"

#include <algorithm>
#include <cmath>

#include "gemm/half.h"

namespace gemmd {

VerificationResult CompareWithReference(const uint16_t* d, const double* ref, size_t count,
                                        double accumulation_atol) {
  VerificationResult r;
  r.performed = true;
  r.elements = count;
  r.rtol = kRtol;
  r.atol = kAtol;
  r.accumulation_atol = accumulation_atol;
  const double atol = kAtol + accumulation_atol;
  for (size_t i = 0; i < count; ++i) {
    const double value = gemm::HalfToFloat(d[i]);
    if (!std::isfinite(value)) {
      ++r.non_finite;
      ++r.mismatches;
      continue;
    }
    const double err = std::fabs(value - ref[i]);
    if (err > r.max_abs_error) r.max_abs_error = err;
    if (err > atol + kRtol * std::fabs(ref[i])) ++r.mismatches;
  }
  r.passed = r.mismatches == 0;
  return r;
}

double MaxRowNorm(const float* x, size_t rows, size_t cols) {
  double largest = 0;
  for (size_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (size_t c = 0; c < cols; ++c) sum += double{x[r * cols + c]} * x[r * cols + c];
    largest = std::max(largest, std::sqrt(sum));
  }
  return largest;
}

}  // namespace gemmd
