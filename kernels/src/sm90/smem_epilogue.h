// Steps 4+ write D through shared memory: registers -> a 128×128 tile in two
// swizzled 128×64 halves (the operand layout, so the stores spread over the
// banks) -> fence -> two TMA stores, which clip at the matrix edge. Steps
// 6-10 stage D in 64×64 chunks instead, to leave room for the pipeline.
#pragma once

#include <cuda_fp16.h>

#include "barrier.h"
#include "step_common.h"
#include "tile_layout.h"
#include "tma.h"

namespace gemm::sm90 {

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
// kDChunkRows is also the rows of the D map's box (TmaBoxRows::d) for every
// step that stores in chunks.
inline constexpr int kDChunkRows = 64;
inline constexpr int kDChunkBytes = kDChunkRows * 64 * 2;

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

// One warpgroup's 64 rows × kCols columns of accumulators (the wgmma
// layout) to D at (row0, n0), kChunksPerPass 64×64 chunks at a time through
// `staging` (kChunksPerPass × kDChunkBytes): all threads write a pass, the
// leader stores it. The leader waits for the TMA to have read the staging
// before a pass overwrites it, not after each store, so the last pass of a
// tile leaves while the next tile multiplies (call DrainChunkStores before
// the CTA exits). Small staging leaves shared memory to the pipeline. The
// D map's box is 64×64. `barrier_id` syncs this warpgroup only.
template <int kCols, int kChunksPerPass>
__device__ inline void StoreRowsInChunks(const float (&acc)[kCols / 2], char* staging, int barrier_id, bool leader,
                                         const CUtensorMap* d_map, int64_t row0, int64_t n0, int64_t n) {
#pragma unroll
  for (int pass = 0; pass < kCols / 64 / kChunksPerPass; ++pass) {
    if (leader) TmaStoreWaitRead();
    NamedBarrierSync(barrier_id, 128);  // the previous pass's staging is read out
#pragma unroll
    for (int c = 0; c < kChunksPerPass; ++c) {
      AccumulatorColumnsToSmem(acc, (pass * kChunksPerPass + c) * 64, staging + c * kDChunkBytes);
    }
    FenceSharedForAsyncProxy();
    NamedBarrierSync(barrier_id, 128);
    if (leader) {
      for (int c = 0; c < kChunksPerPass; ++c) {
        const int64_t col = n0 + (pass * kChunksPerPass + c) * 64;
        if (col < n) TmaStore(d_map, static_cast<int32_t>(col), static_cast<int32_t>(row0), staging + c * kDChunkBytes);
      }
      TmaStoreCommit();
    }
  }
}

// The leader, after its last StoreRowsInChunks: shared memory must outlive
// the TMA's reads of it.
__device__ inline void DrainChunkStores(bool leader) {
  if (leader) TmaStoreWaitRead();
}

// A warpgroup's 128×128 tile (acc[2][64]) to D at (m0, n0), one 64×64 chunk
// at a time through `chunk`; 64-row halves at or below row m are skipped
// (the lower CTA of a cluster pair on the last tile-row has none).
__device__ inline void StoreTileInChunks(const float (&acc)[2][64], char* chunk, int barrier_id, bool leader,
                                         const CUtensorMap* d_map, int64_t m0, int64_t n0, int64_t m, int64_t n) {
#pragma unroll
  for (int mb = 0; mb < 2; ++mb) {
    if (m0 + 64 * mb < m) StoreRowsInChunks<kTileRows, 1>(acc[mb], chunk, barrier_id, leader, d_map, m0 + 64 * mb, n0, n);
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
