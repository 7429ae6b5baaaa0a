// A split-K unit's epilogue (common/split_k.h): one warpgroup's 64 rows of
// fp32 accumulators, straight from registers to its range's partial sums.
// No staging and no TMA: a split unit ends rarely (it is one of few tiles),
// and fp32 rows need no packing.
#pragma once

#include <cstdint>

namespace gemm::sm90 {

// acc (the wgmma layout, wgmma.h: accumulators i and i + 1 are one row,
// two adjacent columns) to `partials` (m×n at pitch `ldw`, a multiple of
// 4 floats) at (row0, n0). A pair with its first column inside n is one
// 8-byte store; its second column may land in the pitch's padding.
template <int kRegs>
__device__ inline void StorePartialSums(const float (&acc)[kRegs], float* partials, int64_t ldw, int64_t row0,
                                        int64_t n0, int64_t m, int64_t n) {
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int i = 0; i < kRegs; i += 2) {
    const int64_t row = row0 + warp * 16 + lane / 4 + 8 * ((i / 2) % 2);
    const int64_t col = n0 + 8 * (i / 4) + 2 * (lane % 4);
    if (row < m && col < n) *reinterpret_cast<float2*>(partials + row * ldw + col) = make_float2(acc[i], acc[i + 1]);
  }
}

}  // namespace gemm::sm90
