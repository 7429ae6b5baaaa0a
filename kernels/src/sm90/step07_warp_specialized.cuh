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
// As in step 6, the grid holds as many CTAs as fit at once. A template on
// the pipeline depth and on CTAs per SM: step 7 runs 2 stages and fits two
// CTAs on an SM (the consumer then gets 216 registers, the producer 40);
// step 8 runs 4 stages, whose shared memory allows one CTA per SM, and uses
// the depth to keep one wgmma group in flight across k-tiles, so the tensor
// cores no longer drain at every k-tile with no second CTA to fill the gap.
#pragma once

#include "barrier.h"
#include "persistent_launch.h"
#include "smem_epilogue.h"
#include "step_common.h"
#include "tile_scheduler.h"
#include "tma.h"
#include "tma_problem.h"

namespace gemm::sm90 {

inline constexpr int kWarpSpecializedThreads = 256;  // producer + consumer warpgroup

template <int kStages, int kCtasPerSm>
struct WarpSpecialized {
  static constexpr int kStageBytes = 2 * kTileBytes;  // A and B
  static constexpr int kSmemBytes = kStages * kStageBytes + kDTileBytes + kSmemAlignSlack;
  // setmaxnreg budgets: producer + consumer warpgroups share the SM's 64K
  // registers with the other CTAs on it.
  static constexpr int kProducerRegisters = 40;
  static constexpr int kConsumerRegisters = kCtasPerSm == 1 ? 232 : 65536 / kCtasPerSm / 128 - kProducerRegisters;
  // wgmma groups left running when the consumer moves to the next k-tile.
  // With 4 stages the consumer can hold two (one computing, one being
  // issued) and the producer still has two to fill; with 2 stages holding
  // one longer starves the producer (measured slower on H100).
  static constexpr int kMmaInFlight = kStages >= 4 ? 1 : 0;
};

template <int kStages, int kCtasPerSm>
__global__ void __launch_bounds__(kWarpSpecializedThreads, kCtasPerSm)
    WarpSpecializedKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                          const __grid_constant__ CUtensorMap d_map, int64_t m, int64_t n, int64_t k) {
  using Config = WarpSpecialized<kStages, kCtasPerSm>;
  constexpr int kStageBytes = Config::kStageBytes;
  extern __shared__ char smem_raw[];
  char* stages = AlignTo1024(smem_raw);
  char* d_tile = stages + kStages * kStageBytes;
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
    ReleaseRegisters<Config::kProducerRegisters>();
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
    ClaimRegisters<Config::kConsumerRegisters>();
    const bool leader = threadIdx.x % 128 == 0;
    float acc[2][64] = {};
    int it = 0;  // this CTA's (tile, k-tile) iteration, as the producer counts them
    for (int tile = 0; tile < my_tiles; ++tile) {
      for (int kt = 0; kt < k_tiles; ++kt, ++it) {
        const int s = it % kStages;
        Wait(&full[s], (it / kStages) % 2);
        const char* a_tile = stages + s * kStageBytes;
        const char* b_tile = a_tile + kTileBytes;

        IssueTileMma(acc, a_tile, b_tile, /*accumulate=*/kt > 0);
        WaitForTileMma<Config::kMmaInFlight>(acc);
        // The stage whose wgmma group is known to be done goes back to the
        // producer: this one, or with a group in flight the one before.
        if (leader && kt >= Config::kMmaInFlight) Arrive(&empty[(it - Config::kMmaInFlight) % kStages]);
      }
      if constexpr (Config::kMmaInFlight > 0) {
        WaitForTileMma<0>(acc);
        if (leader) Arrive(&empty[(it - 1) % kStages]);
      }
      int tile_m, tile_n;
      scheduler.Coordinates(blockIdx.x + tile * gridDim.x, &tile_m, &tile_n);
      AccumulatorsToSmem(acc, d_tile, 0);
      FenceSharedForAsyncProxy();
      NamedBarrierSync(1, 128);
      if (leader) StoreDTile(&d_map, d_tile, int64_t{tile_m} * kTileRows, int64_t{tile_n} * kTileRows, n);
      NamedBarrierSync(1, 128);  // d_tile is read out before the next epilogue writes it
    }
  }
}

template <int kStages, int kCtasPerSm>
cudaError_t PrepareWarpSpecialized() {
  return cudaFuncSetAttribute(WarpSpecializedKernel<kStages, kCtasPerSm>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              WarpSpecialized<kStages, kCtasPerSm>::kSmemBytes);
}

template <int kStages, int kCtasPerSm>
std::string LaunchWarpSpecialized(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  return LaunchOnResidentGrid<WarpSpecializedKernel<kStages, kCtasPerSm>, kWarpSpecializedThreads,
                              WarpSpecialized<kStages, kCtasPerSm>::kSmemBytes>(
      p, ctx, stream, TileScheduler(p.m, p.n, kTileRows, kTileRows).tiles());
}

}  // namespace gemm::sm90
