// Step 4 = step 3 with its data movement handed to the TMA: one thread asks
// for the A and B tiles, which land on an mbarrier told the byte count
// (expect_tx), and D leaves through shared memory with a TMA store. Edges
// need no predication: TMA zero-fills loads and clips stores. With β·C,
// C's tile comes by TMA into D's staging, where each thread fuses its pairs
// in place.
#include "common/barrier.h"
#include "smem_epilogue.h"
#include "step_common.h"
#include "steps_sm90.h"
#include "common/tile_grid.h"
#include "common/tma.h"

namespace gemm::sm90 {
namespace {

// A and B tiles; D reuses their space once the last MMA is done.
constexpr int kSmemBytes = 2 * kTileBytes + kSmemAlignSlack;

template <typename Form>
__global__ void __launch_bounds__(128) TmaKernel(const __grid_constant__ CUtensorMap a_map,
                                                 const __grid_constant__ CUtensorMap b_map,
                                                 const __grid_constant__ CUtensorMap d_map,
                                                 const __grid_constant__ CUtensorMap c_map, bool c_mapped, int64_t n,
                                                 int64_t k, EpilogueArgs e, BatchArgs batch) {
  extern __shared__ char smem_raw[];
  char* a_tile = AlignTo1024(smem_raw);
  char* b_tile = a_tile + kTileBytes;
  char* d_tile = a_tile;
  __shared__ uint64_t full;  // "the A and B tiles have landed"
  const int64_t m0 = int64_t{blockIdx.y} * kTileRows;
  const int64_t n0 = int64_t{blockIdx.x} * kTileRows;
  const int entry = static_cast<int>(blockIdx.z);
  const bool leader = threadIdx.x == 0;

  if (leader) {
    BarrierInit(&full, 1);
    FenceBarrierInit();
  }
  __syncthreads();

  float acc[2][64] = {};
  uint32_t phase = 0;
  for (int64_t k0 = 0; k0 < k; k0 += kTileK) {
    if (leader) {
      ArriveExpectTx(&full, 2 * kTileBytes);
      TmaLoadTile<Form::kALayout, kTileRows>(a_tile, &a_map, static_cast<int32_t>(k0), static_cast<int32_t>(m0),
                                             batch.EntryOfA(entry), &full);
      TmaLoadTile<Form::kBLayout, kTileRows>(b_tile, &b_map, static_cast<int32_t>(k0), static_cast<int32_t>(n0),
                                             batch.EntryOfB(entry), &full);
    }
    Wait(&full, phase);
    phase ^= 1;

    IssueTileMma<Form>(acc, a_tile, b_tile, /*accumulate=*/k0 > 0);
    WaitForTileMma(acc);
    __syncthreads();  // every warp is done with the tiles before the next TMA overwrites them
  }

  const bool c_by_tma = Form::kFused && c_mapped;
  if (c_by_tma) {
    if (leader) LoadCTile(&c_map, d_tile, m0, n0, n, e.CMapEntry(entry), &full);
    Wait(&full, phase);
  }
  AccumulatorsToSmem<Form>(acc, d_tile, 0, e.ForEntry(entry), m0, n0, c_by_tma);
  FenceSharedForAsyncProxy();
  __syncthreads();
  if (leader) StoreDTile(&d_map, d_tile, m0, n0, n, entry);
}

}  // namespace

cudaError_t PrepareTma() {
  return ForEachStepForm([](auto form) {
    return cudaFuncSetAttribute(TmaKernel<decltype(form)>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  });
}

std::string LaunchTma(const Problem& p, const DeviceContext&, cudaStream_t stream) {
  return WithStepForm(p, [&](auto form) {
    return LaunchTmaOnTileGrid<TmaKernel<decltype(form)>, kSmemBytes, /*kCMap=*/true>(p, stream, 4);
  });
}

}  // namespace gemm::sm90
