// Widening 16-bit floats eight at a time, from one 16-byte load.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "gemm/element_type.h"

namespace gemm {

// Eight fp16 or bf16 elements of type T, widened to fp32 (exactly).
template <ElementType T>
__device__ inline void Widen8(const uint4& v, float (&out)[8]) {
  static_assert(T == ElementType::kF16 || T == ElementType::kBF16);
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    if constexpr (T == ElementType::kF16) {
      const float2 pair = __half22float2(*reinterpret_cast<const __half2*>(&words[w]));
      out[2 * w] = pair.x, out[2 * w + 1] = pair.y;
    } else {
      out[2 * w] = __uint_as_float(words[w] << 16), out[2 * w + 1] = __uint_as_float(words[w] & 0xffff0000u);
    }
  }
}

}  // namespace gemm
