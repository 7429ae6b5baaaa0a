// The largest of non-negative floats across threads, by one atomic on
// their bits: for non-negative IEEE floats, the bits order as the values.
#pragma once

#include <cuda_runtime.h>

namespace gemm {

__device__ inline void AtomicMaxNonNegative(float* at, float value) {
  atomicMax(reinterpret_cast<unsigned*>(at), __float_as_uint(value));
}

}  // namespace gemm
