// VERIFICATION_FAST on a GPU (gemm/sketch_check.h says what it checks).
#pragma once

#include <cuda_runtime_api.h>

#include "gemm/sketch_check.h"

namespace gemm {

// Queues the check on `stream`; *result (device memory) is complete when
// the stream reaches this point. `scratch` (device memory) holds
// SketchScratchBytes(p); both are overwritten.
cudaError_t SketchCheck(const SketchProblem& p, void* scratch, SketchResult* result, cudaStream_t stream);

}  // namespace gemm
