// The second half of split-K (split_k.h): the ranges' fp32 sums added up.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace gemm::common {

// D (m×n at pitch ldd) = fp16(sum over s of partials[s]), s = 0, 1, ... in
// that order; partials[s] is m×n at pitch `ldw`, splits × m × ldw floats.
cudaError_t SumSplitsToHalf(const float* partials, int splits, int64_t ldw, int64_t m, int64_t n, __half* d,
                            int64_t ldd, cudaStream_t stream);

}  // namespace gemm::common
