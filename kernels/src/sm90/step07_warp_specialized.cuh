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
// A template on the pipeline depth: step 7 uses 2 stages, step 8 uses 4.
#pragma once

#include "barrier.h"
#include "smem_epilogue.h"
#include "step_common.h"
#include "tile_scheduler.h"
#include "tma.h"
#include "tma_problem.h"

namespace gemm::sm90 {

inline constexpr int kWarpSpecializedThreads = 256;  // producer + consumer warpgroup

template <int kStages>
struct WarpSpecialized {
  static constexpr int kStageBytes = 2 * kTileBytes;  // A and B
  static constexpr int kSmemBytes = kStages * kStageBytes + kDTileBytes + kSmemAlignSlack;
};

template <int kStages>
__global__ void __launch_bounds__(kWarpSpecializedThreads, 1)
    WarpSpecializedKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                          const __grid_constant__ CUtensorMap d_map, int64_t m, int64_t n, int64_t k) {
  constexpr int kStageBytes = WarpSpecialized<kStages>::kStageBytes;
  extern __shared__ char smem_raw[];
  char* stages = AlignTo1024(smem_raw);
  char* d_tile = stages + kStages * kStageBytes;
  __shared__ uint64_t full[kStages];   // TMA -> MMA: the stage holds data
  __shared__ uint64_t empty[kStages];  // MMA -> TMA: the stage may be refilled
  const TileScheduler scheduler(m, n, kTileRows);
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
    ReleaseRegisters<40>();
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
    ClaimRegisters<232>();
    const bool leader = threadIdx.x % 128 == 0;
    float acc[2][64] = {};
    for (int it = 0; it < iterations; ++it) {
      const int s = it % kStages, kt = it % k_tiles;
      Wait(&full[s], (it / kStages) % 2);
      const char* a_tile = stages + s * kStageBytes;
      const char* b_tile = a_tile + kTileBytes;

      IssueTileMma(acc, a_tile, b_tile, /*accumulate=*/kt > 0);
      WaitForTileMma(acc);
      if (leader) Arrive(&empty[s]);  // the whole warpgroup's wgmma are done with stage s

      if (kt == k_tiles - 1) {
        int tile_m, tile_n;
        scheduler.Coordinates(blockIdx.x + (it / k_tiles) * gridDim.x, &tile_m, &tile_n);
        AccumulatorsToSmem(acc, d_tile, 0);
        FenceSharedForAsyncProxy();
        NamedBarrierSync(1, 128);
        if (leader) StoreDTile(&d_map, d_tile, int64_t{tile_m} * kTileRows, int64_t{tile_n} * kTileRows, n);
        NamedBarrierSync(1, 128);  // d_tile is read out before the next epilogue writes it
      }
    }
  }
}

template <int kStages>
cudaError_t PrepareWarpSpecialized() {
  return cudaFuncSetAttribute(WarpSpecializedKernel<kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              WarpSpecialized<kStages>::kSmemBytes);
}

template <int kStages>
std::string LaunchWarpSpecialized(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  TmaProblem tma;
  if (auto err = tma.Prepare(p, stream); !err.empty()) return err;
  const int tiles = TileScheduler(p.m, p.n, kTileRows).tiles();
  WarpSpecializedKernel<kStages><<<std::min(tiles, ctx.sm_count), kWarpSpecializedThreads,
                                   WarpSpecialized<kStages>::kSmemBytes, stream>>>(tma.a(), tma.b(), tma.d(), p.m,
                                                                                   p.n, p.k);
  if (auto err = LaunchError(); !err.empty()) return err;
  return tma.Finish(stream);
}

}  // namespace gemm::sm90
