// Host-side comparison of D with a reference, under gemm/tolerance.h's
// bound: |d - ref| <= atol + rtol·|ref| + the accumulation term, every
// element finite.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/engine.h"
#include "gemm/tolerance.h"

namespace gemmd {

using gemm::kAtol;
using gemm::kRtol;

// `d` is fp16, `ref` is the reference in fp64; both have `count` elements.
// `accumulation_atol`: the bound's K-aware term for this GEMM.
VerificationResult CompareWithReference(const uint16_t* d, const double* ref, size_t count,
                                        double accumulation_atol = 0);

// The largest ‖row‖₂ of a rows×cols row-major matrix.
double MaxRowNorm(const float* x, size_t rows, size_t cols);

}  // namespace gemmd
