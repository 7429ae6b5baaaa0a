// Step 5 = step 4 + a 2-stage software pipeline: two sets of A/B tiles, each
// with its own full barrier. While the warpgroup multiplies tile k, the TMA
// is already filling the other stage with tile k+1. C, where read by TMA,
// comes as in step 4, on the barrier whose turn is next.
#include "common/barrier.h"
#include "smem_epilogue.h"
#include "step_common.h"
#include "steps_sm90.h"
#include "common/tile_grid.h"
#include "common/tma.h"

namespace gemm::sm90 {
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
  char* d_tile = stages;  // reused once the last MMA is done
  __shared__ uint64_t full[kStages];
  const int64_t m0 = int64_t{blockIdx.y} * kTileRows;
  const int64_t n0 = int64_t{blockIdx.x} * kTileRows;
  const int entry = static_cast<int>(blockIdx.z);
  const int k_tiles = static_cast<int>((k + kTileK - 1) / kTileK);
  const bool leader = threadIdx.x == 0;

  auto issue = [&](int kt) {  // leader only
    char* a_tile = stages + (kt % kStages) * kStageBytes;
    ArriveExpectTx(&full[kt % kStages], kStageBytes);
    TmaLoadTile<Form::kALayout, kTileRows>(a_tile, &a_map, kt * kTileK, static_cast<int32_t>(m0),
                                           batch.EntryOfA(entry), &full[kt % kStages]);
    TmaLoadTile<Form::kBLayout, kTileRows>(a_tile + kTileBytes, &b_map, kt * kTileK, static_cast<int32_t>(n0),
                                           batch.EntryOfB(entry), &full[kt % kStages]);
  };

  if (leader) {
    for (int s = 0; s < kStages; ++s) BarrierInit(&full[s], 1);
    FenceBarrierInit();
    for (int kt = 0; kt < kStages && kt < k_tiles; ++kt) issue(kt);  // fill the pipeline
  }
  __syncthreads();

  float acc[2][64] = {};
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % kStages;
    Wait(&full[s], (kt / kStages) % 2);
    const char* a_tile = stages + s * kStageBytes;
    const char* b_tile = a_tile + kTileBytes;

    IssueTileMma<Form>(acc, a_tile, b_tile, /*accumulate=*/kt > 0);
    WaitForTileMma(acc);
    __syncthreads();  // stage s is free: refill it with tile kt + kStages
    if (leader && kt + kStages < k_tiles) issue(kt + kStages);
  }

  const bool c_by_tma = Form::kFused && c_mapped;
  if (c_by_tma) {  // every load issued has been waited for: full[k_tiles % kStages] is free for one more
    uint64_t* bar = &full[k_tiles % kStages];
    if (leader) LoadCTile(&c_map, d_tile, m0, n0, n, e.CMapEntry(entry), bar);
    Wait(bar, (k_tiles / kStages) % 2);
  }
  AccumulatorsToSmem<Form>(acc, d_tile, 0, e.ForEntry(entry), m0, n0, c_by_tma);
  FenceSharedForAsyncProxy();
  __syncthreads();
  if (leader) StoreDTile(&d_map, d_tile, m0, n0, n, entry);
}

}  // namespace

cudaError_t PreparePipelined() {
  return ForEachStepForm([](auto form) {
    return cudaFuncSetAttribute(PipelinedKernel<decltype(form)>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                kSmemBytes);
  });
}

std::string LaunchPipelined(const Problem& p, const DeviceContext&, cudaStream_t stream) {
  return WithStepForm(p, [&](auto form) {
    return LaunchTmaOnTileGrid<PipelinedKernel<decltype(form)>, kSmemBytes, /*kCMap=*/true>(p, stream, 5);
  });
}

}  // namespace gemm::sm90
