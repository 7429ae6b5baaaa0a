#include "engine/verify.h"

#include <cmath>

#include "gemm/half.h"

namespace gemmd {

VerificationResult CompareWithReference(const uint16_t* d, const double* ref, size_t count) {
  VerificationResult r;
  r.performed = true;
  r.elements = count;
  r.rtol = kRtol;
  r.atol = kAtol;
  for (size_t i = 0; i < count; ++i) {
    const double value = gemm::HalfToFloat(d[i]);
    if (!std::isfinite(value)) {
      ++r.non_finite;
      ++r.mismatches;
      continue;
    }
    const double err = std::fabs(value - ref[i]);
    if (err > r.max_abs_error) r.max_abs_error = err;
    if (err > kAtol + kRtol * std::fabs(ref[i])) ++r.mismatches;
  }
  r.passed = r.mismatches == 0;
  return r;
}

}  // namespace gemmd
