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
// wgmma layout, wgmma.h) into a 64×64 swizzled chunk: the box of D that a
// warpgroup stores at a time. `col0` must be a compile-time constant after
// unrolling, so that the accumulators stay in registers.
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
// layout) to D at (row0, n0), one 64×64 chunk at a time through `chunk`
// (kDChunkBytes): all threads write it, the leader stores it. The leader
// waits for the TMA to have read the chunk before the next one overwrites
// it, not after each store, so the last chunk of a tile leaves while the
// next tile multiplies (call DrainChunkStores before the CTA exits). Small
// staging leaves shared memory to the pipeline. The D map's box is 64×64.
// `barrier_id` syncs this warpgroup only.
template <int kCols>
__device__ inline void StoreRowsInChunks(const float (&acc)[kCols / 2], char* chunk, int barrier_id, bool leader,
                                         const CUtensorMap* d_map, int64_t row0, int64_t n0, int64_t n) {
#pragma unroll
  for (int c = 0; c < kCols / 64; ++c) {
    if (leader) TmaStoreWaitRead();
    NamedBarrierSync(barrier_id, 128);  // the previous chunk is read out
    AccumulatorColumnsToSmem(acc, c * 64, chunk);
    FenceSharedForAsyncProxy();
    NamedBarrierSync(barrier_id, 128);
    if (leader) {
      if (n0 + c * 64 < n) TmaStore(d_map, static_cast<int32_t>(n0 + c * 64), static_cast<int32_t>(row0), chunk);
      TmaStoreCommit();
    }
  }
}

// The leader, after its last StoreRowsInChunks: shared memory must outlive
// the TMA's reads of it.
__device__ inline void DrainChunkStores(bool leader) {
  if (leader) TmaStoreWaitRead();
}

// Step 10 stores D while the next tile multiplies: the accumulators are
// packed to fp16 pairs (PackAccumulators), which frees them for the next
// tile's first wgmma, and the packed rows leave one 64×64 chunk at a time
// between that tile's k-tiles (StoreChunk), through two staging chunks
// used in turn.
template <int kRegs>
__device__ inline void PackAccumulators(const float (&acc)[kRegs], uint32_t (&packed)[kRegs / 2]) {
#pragma unroll
  for (int i = 0; i < kRegs; i += 2) {
    const __half2 h = __floats2half2_rn(acc[i], acc[i + 1]);
    packed[i / 2] = *reinterpret_cast<const uint32_t*>(&h);
  }
}

// Chunk `chunk` (columns 64·chunk..+63) of one warpgroup's packed 64 rows
// to D at (row0, n0), through staging chunk chunk % 2. `chunk` must be a
// compile-time constant after unrolling, so that `packed` stays in
// registers. The leader waits until the store that last used that staging
// chunk has read it (every call commits a group, stored or not, so "all but
// the newest" is that store). `barrier_id` syncs this warpgroup only. Call
// DrainChunkStores before the CTA exits.
template <int kPackedRegs>
__device__ inline void StoreChunk(const uint32_t (&packed)[kPackedRegs], int chunk, char* staging, int barrier_id,
                                  bool leader, const CUtensorMap* d_map, int64_t row0, int64_t n0, int64_t n) {
  char* buffer = staging + (chunk % 2) * kDChunkBytes;
  if (leader) TmaStoreWaitRead<1>();
  NamedBarrierSync(barrier_id, 128);
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int i = chunk * 32; i < chunk * 32 + 32; i += 2) {  // packed index i/2 holds accumulators i, i+1
    const int row = warp * 16 + lane / 4 + 8 * ((i / 2) % 2);
    const int c = 8 * (i / 4) + 2 * (lane % 4) - chunk * 64;
    *reinterpret_cast<uint32_t*>(buffer + SwizzledChunkOffset(row, c / 8) + (c % 8) * 2) = packed[i / 2];
  }
  FenceSharedForAsyncProxy();
  NamedBarrierSync(barrier_id, 128);
  if (leader) {
    const int64_t col = n0 + chunk * 64;
    if (col < n) TmaStore(d_map, static_cast<int32_t>(col), static_cast<int32_t>(row0), buffer);
    TmaStoreCommit();
  }
}

// A warpgroup's 128×128 tile (acc[2][64]) to D at (m0, n0), one 64×64 chunk
// at a time through `chunk`; 64-row halves at or below row m are skipped
// (the lower CTA of a cluster pair on the last tile-row has none).
__device__ inline void StoreTileInChunks(const float (&acc)[2][64], char* chunk, int barrier_id, bool leader,
                                         const CUtensorMap* d_map, int64_t m0, int64_t n0, int64_t m, int64_t n) {
#pragma unroll
  for (int mb = 0; mb < 2; ++mb) {
    if (m0 + 64 * mb < m) StoreRowsInChunks<kTileRows>(acc[mb], chunk, barrier_id, leader, d_map, m0 + 64 * mb, n0, n);
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
