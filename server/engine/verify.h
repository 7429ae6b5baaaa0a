// Host-side comparison of D with a reference, under ladder.md's bound:
// |d - ref| <= atol + rtol·|ref|, every element finite.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/engine.h"

namespace gemmd {

inline constexpr double kRtol = 1e-3;
inline constexpr double kAtol = 1e-2;

// `d` is fp16, `ref` is the reference in fp64; both have `count` elements.
VerificationResult CompareWithReference(const uint16_t* d, const double* ref, size_t count);

}  // namespace gemmd
