// VERIFICATION_FAST's sampled elements on the GPU (sketch_samples.cu): each
// recomputed in full over K and judged against the element-wise tolerance.
#pragma once

#include <cuda_runtime.h>

#include "gemm/sketch_check.h"

namespace gemm {

// Launches the samples' kernel for p's operand types and its clusters'
// shape (sketch_lines.h); their verdicts go into `result`. `scratch` holds
// the operands' norms, which the tolerance reads.
void LaunchSketchSamples(const SketchProblem& p, const double* scratch, SketchResult* result, cudaStream_t stream);

}  // namespace gemm
