// Step 7 = step 6 + warp specialization. Warpgroup 0 is the producer: one
// thread issues every TMA load, waiting on an "empty" barrier per stage
// until the consumer has finished with it. Warpgroup 1 is the consumer: it
// waits on the stage's "full" barrier, runs the wgmma, releases the stage
// and, at a tile's end, writes D. Producer and consumer no longer take
// turns: the loads for later k-tiles run while this one multiplies. The
// producer gives registers back (setmaxnreg) for the consumer's 128
// accumulators. On Hopper the accumulators live in the consumer's
// registers, so "MMA" and "writeback" are one warpgroup here.
//
// As in step 6, the grid holds as many CTAs as fit at once and D leaves in
// 64×64 chunks. The registers allow two CTAs per SM now, not three (the
// consumer gets 216, the producer 40), so one CTA's epilogue and k-tile
// drains hide behind the other's wgmma. With β·C, the producer loads the
// tile's C by TMA into the stage after its last k-tile (CTileLoad), where
// C can be mapped. A template on the pipeline depth: step 7 runs 2
// stages, step 8 runs 3.
#pragma once

#include "common/barrier.h"
#include "common/persistent_launch.h"
#include "smem_epilogue.h"
#include "step_common.h"
#include "tile_consumer.h"
#include "common/tile_scheduler.h"
#include "common/tma.h"
#include "common/tma_problem.h"

namespace gemm::sm90 {

inline constexpr int kWarpSpecializedThreads = 256;  // producer + consumer warpgroup

inline constexpr int kWarpSpecializedCtasPerSm = 2;

template <int kStages>
struct WarpSpecialized {
  static constexpr int kStageBytes = 2 * kTileBytes;  // A and B
  static constexpr int kSmemBytes = kStages * kStageBytes + kDChunkBytes + kSmemAlignSlack;
};

template <int kStages, typename Form>
__global__ void __launch_bounds__(kWarpSpecializedThreads, kWarpSpecializedCtasPerSm)
    WarpSpecializedKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                          const __grid_constant__ CUtensorMap d_map, const __grid_constant__ CUtensorMap c_map,
                          bool c_mapped, int64_t m, int64_t n, int64_t k, EpilogueArgs e, BatchArgs batch) {
  using Config = WarpSpecialized<kStages>;
  constexpr int kStageBytes = Config::kStageBytes;
  extern __shared__ char smem_raw[];
  char* stages = AlignTo1024(smem_raw);
  char* d_chunk = stages + kStages * kStageBytes;
  __shared__ uint64_t full[kStages];   // TMA -> MMA: the stage holds data
  __shared__ uint64_t empty[kStages];  // MMA -> TMA: the stage may be refilled
  const TileScheduler scheduler(m, n, kTileRows, kTileRows, batch.entries);
  const int k_tiles = static_cast<int>((k + kTileK - 1) / kTileK);
  const int my_tiles = (scheduler.tiles() - static_cast<int>(blockIdx.x) + gridDim.x - 1) / gridDim.x;
  const bool c_by_tma = Form::kFused && c_mapped;
  int tile_items = k_tiles;  // what a tile passes through the stages: its k-tiles, then its C if by TMA
  if constexpr (Form::kFused) tile_items += c_by_tma ? 1 : 0;
  const int iterations = my_tiles * tile_items;
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      BarrierInit(&full[s], 1);   // the producer's expect_tx arrival
      BarrierInit(&empty[s], 1);  // one arrival from the consumer warpgroup
    }
    FenceBarrierInit();
  }
  __syncthreads();

  if (warpgroup == 0) {  // ---------------------------------------- producer
    ReleaseRegisters<kProducerRegisters>();
    if (threadIdx.x == 0) {
      for (int it = 0; it < iterations; ++it) {
        const int s = it % kStages;
        Wait(&empty[s], ((it / kStages) % 2) ^ 1);  // the first round finds every stage empty
        int tile_m, tile_n, entry;
        scheduler.Coordinates(blockIdx.x + (it / tile_items) * gridDim.x, &tile_m, &tile_n, &entry);
        const int kt = it % tile_items;
        char* a_tile = stages + s * kStageBytes;
        if constexpr (Form::kFused) {
          if (kt == k_tiles) {
            const CTileLoad load_c{&c_map, m, n, e.c_stride == 0};
            load_c(a_tile, int64_t{tile_m} * kTileRows, int64_t{tile_n} * kTileRows, entry, &full[s]);
            continue;
          }
        }
        ArriveExpectTx(&full[s], kStageBytes);
        TmaLoadTile<Form::kALayout, kTileRows>(a_tile, &a_map, kt * kTileK, tile_m * kTileRows,
                                               batch.EntryOfA(entry), &full[s]);
        TmaLoadTile<Form::kBLayout, kTileRows>(a_tile + kTileBytes, &b_map, kt * kTileK, tile_n * kTileRows,
                                               batch.EntryOfB(entry), &full[s]);
      }
    }
  } else {  // ------------------------------------------------------ consumer
    ClaimRegisters<ConsumerRegisters(kWarpSpecializedCtasPerSm)>();
    const bool leader = threadIdx.x % 128 == 0;
    float acc[2][64] = {};
    int it = 0;  // this CTA's (tile, k-tile) iteration, as the producer counts them
    for (int tile = 0; tile < my_tiles; ++tile) {
      MultiplyTile<Form, kStages, kStageBytes>(acc, stages, full, empty, k_tiles, it, leader, Arrive);
      int tile_m, tile_n, entry;
      scheduler.Coordinates(blockIdx.x + tile * gridDim.x, &tile_m, &tile_n, &entry);
      const int64_t m0 = int64_t{tile_m} * kTileRows, n0 = int64_t{tile_n} * kTileRows;
      const char* c_tile = c_by_tma ? WaitForTileC<kStages, kStageBytes>(stages, full, it) : nullptr;
      StoreTileInChunks<Form>(acc, d_chunk, 1, leader, &d_map, m0, n0, entry, m, n, e.ForEntry(entry), c_tile);
      if (c_by_tma) ReleaseTileC<kStages>(empty, it, leader, Arrive);
    }
    DrainChunkStores(leader);
  }
}

template <int kStages>
cudaError_t PrepareWarpSpecialized() {
  return ForEachStepForm([](auto form) {
    return cudaFuncSetAttribute(WarpSpecializedKernel<kStages, decltype(form)>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize, WarpSpecialized<kStages>::kSmemBytes);
  });
}

template <int kStages>
std::string LaunchWarpSpecialized(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  return WithStepForm(p, [&](auto form) {
    return LaunchOnResidentGrid<WarpSpecializedKernel<kStages, decltype(form)>, kWarpSpecializedThreads,
                                WarpSpecialized<kStages>::kSmemBytes, 1, /*kCMap=*/true>(
        p, ctx, stream, TileScheduler(p.m, p.n, kTileRows, kTileRows, BatchOf(p).entries).tiles(),
        TmaBoxRows{kTileRows, kTileRows, kDChunkRows});
  });
}

}  // namespace gemm::sm90
