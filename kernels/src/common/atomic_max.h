// The largest of non-negative floats across threads, by one atomic on
// their bits: for non-negative IEEE floats, the bits order as the values.
#pragma once

#include <cuda_runtime.h>

namespace gemm {

__device__ inline void AtomicMaxNonNegative(float* at, float value) {
  atomicMax(reinterpret_cast<unsigned*>(at), __float_as_uint(value));
}

// The same over a whole warp, every lane taking part: one atomic a warp,
// none where the warp's largest is 0. Atomics a thread on one address
// cost more than the pass that computes their values.
__device__ inline void WarpAtomicMaxNonNegative(float* at, float value) {
  for (int offset = 16; offset > 0; offset /= 2) value = fmaxf(value, __shfl_down_sync(0xffffffffu, value, offset));
  if ((threadIdx.x & 31) == 0 && value > 0) AtomicMaxNonNegative(at, value);
}

}  // namespace gemm
