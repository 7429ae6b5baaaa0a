// What the fast check's tile kernels share (sketch_d_tiles.cu,
// sketch_operand_tiles.cu): a block's eight warps take one 128-column strip
// of a 16-bit matrix whose rows are contiguous, one above the other; a lane
// takes four adjacent columns, one 8-byte load a row. A lane's columns keep
// their weights all the way down, and a row's are the same for the whole
// warp, so an element is read once for both of its lines.
#pragma once

#include <cstdint>

#include "common/widen_eight.h"
#include "gemm/element_type.h"

namespace gemm::sketch_tiles {

inline constexpr int kWarps = 8, kLaneColumns = 4, kStripColumns = 32 * kLaneColumns;
inline constexpr int kHalfWarp = 16;
// Fewer rows a warp where that leaves fewer blocks than this, down to
// kLeastRowsPerWarp: 1024 blocks of two an SM fill an H200's 132 SMs about
// four times over.
inline constexpr int64_t kBlocksAtLeast = 1024;
// Rows a warp takes at most: a column's fp32 Σe² gathers that many terms.
inline constexpr int kMostRowsPerWarp = 32, kLeastRowsPerWarp = 8;

template <ElementType T>
__device__ inline void Widen4(uint2 v, float (&out)[kLaneColumns]) {
  float eight[8];
  Widen8<T>(make_uint4(v.x, v.y, 0u, 0u), eight);
#pragma unroll
  for (int k = 0; k < kLaneColumns; ++k) out[k] = eight[k];
}

__device__ inline double SignOf(uint32_t word, int bit) { return (word >> bit) & 1u ? 1.0 : -1.0; }

// Rows a warp takes: the most that still leaves kBlocksAtLeast blocks.
inline int RowsPerWarp(int64_t rows, int64_t strips, int64_t batch) {
  auto bands = [&](int per_warp) { return (rows + kWarps * per_warp - 1) / (kWarps * per_warp); };
  int per_warp = kMostRowsPerWarp;
  while (per_warp > kLeastRowsPerWarp && strips * bands(per_warp) * batch < kBlocksAtLeast) per_warp /= 2;
  return per_warp;
}
inline int64_t Bands(int64_t rows, int rows_per_warp) {
  return (rows + kWarps * rows_per_warp - 1) / (kWarps * rows_per_warp);
}

}  // namespace gemm::sketch_tiles
