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
// As in step 6, the grid holds as many CTAs as fit at once: two per SM (the
// consumer gets 216 registers, the producer 40), so one CTA's epilogue and
// k-tile drains hide behind the other's wgmma. A template on the pipeline
// depth and on how D is staged: step 7 runs 2 stages and a whole-tile D
// buffer; step 8 runs 3 stages, which fit two CTAs per SM only with D
// staged in 64×64 chunks.
#pragma once

#include "barrier.h"
#include "persistent_launch.h"
#include "smem_epilogue.h"
#include "step_common.h"
#include "tile_consumer.h"
#include "tile_scheduler.h"
#include "tma.h"
#include "tma_problem.h"

namespace gemm::sm90 {

inline constexpr int kWarpSpecializedThreads = 256;  // producer + consumer warpgroup

// How D leaves the consumer: through a whole 128×128 staging tile, or 64×64
// chunk by chunk through one 8 KB buffer, which leaves 24 KB more for the
// pipeline.
enum class DStaging { kWholeTile, kChunks };

inline constexpr int kWarpSpecializedCtasPerSm = 2;

template <int kStages, DStaging kD>
struct WarpSpecialized {
  static constexpr int kStageBytes = 2 * kTileBytes;  // A and B
  static constexpr int kDStagingBytes = kD == DStaging::kWholeTile ? kDTileBytes : kDChunkBytes;
  static constexpr int kSmemBytes = kStages * kStageBytes + kDStagingBytes + kSmemAlignSlack;
  static constexpr TmaBoxRows kBoxes{kTileRows, kTileRows, kD == DStaging::kWholeTile ? kTileRows : 64};
};

template <int kStages, DStaging kD>
__global__ void __launch_bounds__(kWarpSpecializedThreads, kWarpSpecializedCtasPerSm)
    WarpSpecializedKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                          const __grid_constant__ CUtensorMap d_map, int64_t m, int64_t n, int64_t k) {
  using Config = WarpSpecialized<kStages, kD>;
  constexpr int kStageBytes = Config::kStageBytes;
  extern __shared__ char smem_raw[];
  char* stages = AlignTo1024(smem_raw);
  char* d_staging = stages + kStages * kStageBytes;
  __shared__ uint64_t full[kStages];   // TMA -> MMA: the stage holds data
  __shared__ uint64_t empty[kStages];  // MMA -> TMA: the stage may be refilled
  const TileScheduler scheduler(m, n, kTileRows, kTileRows);
  const int k_tiles = static_cast<int>((k + kTileK - 1) / kTileK);
  const int my_tiles = (scheduler.tiles() - static_cast<int>(blockIdx.x) + gridDim.x - 1) / gridDim.x;
  const int iterations = my_tiles * k_tiles;
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
        int tile_m, tile_n;
        scheduler.Coordinates(blockIdx.x + (it / k_tiles) * gridDim.x, &tile_m, &tile_n);
        const int kt = it % k_tiles;
        char* a_tile = stages + s * kStageBytes;
        ArriveExpectTx(&full[s], kStageBytes);
        TmaLoad(a_tile, &a_map, kt * kTileK, tile_m * kTileRows, &full[s]);
        TmaLoad(a_tile + kTileBytes, &b_map, kt * kTileK, tile_n * kTileRows, &full[s]);
      }
    }
  } else {  // ------------------------------------------------------ consumer
    ClaimRegisters<ConsumerRegisters(kWarpSpecializedCtasPerSm)>();
    const bool leader = threadIdx.x % 128 == 0;
    float acc[2][64] = {};
    int it = 0;  // this CTA's (tile, k-tile) iteration, as the producer counts them
    for (int tile = 0; tile < my_tiles; ++tile) {
      MultiplyTile<kStages, kStageBytes>(acc, stages, full, empty, k_tiles, it, leader, Arrive);
      int tile_m, tile_n;
      scheduler.Coordinates(blockIdx.x + tile * gridDim.x, &tile_m, &tile_n);
      const int64_t m0 = int64_t{tile_m} * kTileRows, n0 = int64_t{tile_n} * kTileRows;
      if constexpr (kD == DStaging::kWholeTile) {
        AccumulatorsToSmem(acc, d_staging, 0);
        FenceSharedForAsyncProxy();
        NamedBarrierSync(1, 128);
        if (leader) StoreDTile(&d_map, d_staging, m0, n0, n);
        NamedBarrierSync(1, 128);  // the staging is read out before the next epilogue writes it
      } else {
        StoreTileInChunks(acc, d_staging, 1, leader, &d_map, m0, n0, m, n);
      }
    }
  }
}

template <int kStages, DStaging kD>
cudaError_t PrepareWarpSpecialized() {
  return cudaFuncSetAttribute(WarpSpecializedKernel<kStages, kD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              WarpSpecialized<kStages, kD>::kSmemBytes);
}

template <int kStages, DStaging kD>
std::string LaunchWarpSpecialized(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  using Config = WarpSpecialized<kStages, kD>;
  return LaunchOnResidentGrid<WarpSpecializedKernel<kStages, kD>, kWarpSpecializedThreads, Config::kSmemBytes>(
      p, ctx, stream, TileScheduler(p.m, p.n, kTileRows, kTileRows).tiles(), Config::kBoxes);
}

}  // namespace gemm::sm90
