// Steps 4+ write D through shared memory: registers -> a 128×128 tile in two
// swizzled 128×64 halves (the operand layout, so the stores spread over the
// banks) -> fence -> two TMA stores, which clip at the matrix edge.
#pragma once

#include <cuda_fp16.h>

#include "barrier.h"
#include "tile_layout.h"
#include "tma.h"

namespace gemm::sm90 {

inline constexpr int kDTileBytes = 2 * kTileBytes;  // 128×128 fp16

// acc[mb] (wgmma layout, wgmma.h) of the warpgroup `threadIdx.x / 128 % groups`
// into its rows of `d_tile`: the warpgroup's first row is `row_base`.
template <int kMBlocks>
__device__ inline void AccumulatorsToSmem(const float (&acc)[kMBlocks][64], char* d_tile, int row_base) {
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int mb = 0; mb < kMBlocks; ++mb) {
#pragma unroll
    for (int i = 0; i < 64; i += 2) {
      const int row = row_base + mb * 64 + warp * 16 + lane / 4 + 8 * ((i / 2) % 2);
      const int col = 8 * (i / 4) + 2 * (lane % 4);  // 0..127
      char* half_tile = d_tile + (col / 64) * kTileBytes;
      const int c = col % 64;
      *reinterpret_cast<__half2*>(half_tile + SwizzledChunkOffset(row, c / 8) + (c % 8) * 2) =
          __floats2half2_rn(acc[mb][i], acc[mb][i + 1]);
    }
  }
}

// Columns [col0, col0 + 64) of one warpgroup's 64×N accumulators (the
// wgmma layout, wgmma.h) into a 64×64 swizzled chunk: the box of D that
// one consumer warpgroup stores at a time when it owns 64 rows of a wide
// tile. `col0` must be a compile-time constant after unrolling, so that the
// accumulators stay in registers.
inline constexpr int kDChunkBytes = 64 * 64 * 2;

template <int kRegs>
__device__ inline void AccumulatorColumnsToSmem(const float (&acc)[kRegs], int col0, char* chunk) {
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int i = col0 / 2; i < col0 / 2 + 32; i += 2) {
    const int row = warp * 16 + lane / 4 + 8 * ((i / 2) % 2);
    const int c = 8 * (i / 4) + 2 * (lane % 4) - col0;  // 0..63
    *reinterpret_cast<__half2*>(chunk + SwizzledChunkOffset(row, c / 8) + (c % 8) * 2) =
        __floats2half2_rn(acc[i], acc[i + 1]);
  }
}

// One thread: both halves of the tile at (m0, n0) to global memory.
__device__ inline void StoreDTile(const CUtensorMap* d_map, const char* d_tile, int64_t m0, int64_t n0, int64_t n) {
  for (int h = 0; h < 2; ++h) {
    if (n0 + 64 * h < n) TmaStore(d_map, static_cast<int32_t>(n0 + 64 * h), static_cast<int32_t>(m0), d_tile + h * kTileBytes);
  }
  TmaStoreCommitAndWait();
}

}  // namespace gemm::sm90
