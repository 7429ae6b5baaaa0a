// Step 5 = step 4 + a 2-stage pipeline: two sets of A/B tiles, each with a
// "full" barrier (TMA bytes landed) and an "empty" one (tcgen05.commit: the
// MMAs that read the stage are done). The issuing thread queues k-tile t's
// MMAs, then refills the other stage with t+1 as soon as t-1's MMAs have
// read it, so the tensor core always has the next MMAs queued while the
// TMA fills behind them. On Hopper the warpgroup waited for its own wgmma;
// here the one thread never waits for the MMAs it has just issued.
#include "common/tile_grid.h"
#include "common/tma.h"
#include "step_common.h"
#include "steps_sm100.h"
#include "tmem_epilogue.h"

namespace gemm::sm100 {
namespace {

constexpr int kStages = 2;
constexpr int kStageBytes = 2 * kTileBytes;  // A and B
constexpr int kSmemBytes = kStages * kStageBytes + kSmemAlignSlack;

template <typename Form>
__global__ void __launch_bounds__(128) PipelinedKernel(const __grid_constant__ CUtensorMap a_map,
                                                       const __grid_constant__ CUtensorMap b_map,
                                                       const __grid_constant__ CUtensorMap d_map,
                                                       const __grid_constant__ CUtensorMap c_map, bool c_mapped,
                                                       int64_t n, int64_t k, EpilogueArgs e, BatchArgs batch) {
  extern __shared__ char smem_raw[];
  char* stages = AlignTo1024(smem_raw);
  char* d_tile = stages;                 // reused once the last MMAs are done
  __shared__ uint64_t full[kStages];     // the stage's A and B have landed
  __shared__ uint64_t empty[kStages];    // the MMAs that read the stage are done
  __shared__ uint32_t tmem_slot;
  const int64_t m0 = int64_t{blockIdx.y} * kTileRows;
  const int64_t n0 = int64_t{blockIdx.x} * kTileRows;
  const int entry = static_cast<int>(blockIdx.z);
  const int k_tiles = static_cast<int>((k + kTileK - 1) / kTileK);
  const bool leader = threadIdx.x == 0;

  if (leader) InitStageBarriers(full, empty);
  const uint32_t tmem = SetUpAccumulator<kTileTmemColumns>(&tmem_slot);

  if (leader) {
    auto load = [&](int t) {  // k-tile t into stage t % 2
      char* a_tile = stages + (t % kStages) * kStageBytes;
      ArriveExpectTx(&full[t % kStages], kStageBytes);
      TmaLoadTile<Form::kALayout, kTileRows>(a_tile, &a_map, t * kTileK, static_cast<int32_t>(m0),
                                             batch.EntryOfA(entry), &full[t % kStages]);
      TmaLoadTile<Form::kBLayout, kTileRows>(a_tile + kTileBytes, &b_map, t * kTileK, static_cast<int32_t>(n0),
                                             batch.EntryOfB(entry), &full[t % kStages]);
    };
    load(0);
    for (int t = 0; t < k_tiles; ++t) {
      const int s = t % kStages;
      Wait(&full[s], (t / kStages) % 2);  // the stage's t / 2-th fill
      TmemFenceAfterSync();
      IssueTileMma<Form>(tmem, stages + s * kStageBytes, stages + s * kStageBytes + kTileBytes, /*accumulate=*/t > 0);
      CommitTo(&empty[s]);
      if (t + 1 < k_tiles) {
        // The other stage last held k-tile t - 1: refill it once those
        // MMAs have read it (they run ahead of t's, just queued).
        if (t >= 1) Wait(&empty[(t + 1) % kStages], ((t - 1) / kStages) % 2);
        load(t + 1);
      }
    }
    Wait(&empty[(k_tiles - 1) % kStages], ((k_tiles - 1) / kStages) % 2);  // the accumulator is complete
    TmemFenceAfterSync();
    TmemFenceBeforeSync();
  }
  // Every load issued has been waited for: full[k_tiles % kStages] is free
  // for one more, C's.
  const CTileByTma c_tile = Form::kFused && c_mapped
                                ? CTileByTma{&c_map, &full[k_tiles % kStages],
                                             static_cast<uint32_t>((k_tiles / kStages) % 2), e.CMapEntry(entry)}
                                : CTileByTma{};
  StoreAccumulatorTile<Form>(tmem, d_tile, &d_map, m0, n0, n, entry, leader, e.ForEntry(entry), c_tile);
  ReleaseAccumulator<kTileTmemColumns>(tmem);
}

}  // namespace

cudaError_t PreparePipelined() {
  return ForEachStepForm([](auto form) {
    return cudaFuncSetAttribute(PipelinedKernel<decltype(form)>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  });
}

std::string LaunchPipelined(const Problem& p, const DeviceContext&, cudaStream_t stream) {
  return WithStepForm(p, [&](auto form) {
    return LaunchTmaOnTileGrid<PipelinedKernel<decltype(form)>, kSmemBytes, /*kCMap=*/true>(p, stream, 5);
  });
}

}  // namespace gemm::sm100
