// Step 4 = step 3 with its data movement handed to the TMA: one thread asks
// for the A and B tiles, which land on an mbarrier told the byte count
// (expect_tx), issues the tile's MMAs once they have, and waits for their
// commit before the next k-tile's loads overwrite the tiles. D leaves TMEM
// through registers into the two swizzled halves where A and B were, and
// the TMA stores them. Edges need no predication: TMA zero-fills loads and
// clips stores. Why it pays on Blackwell as on Hopper: the copies no
// longer take the threads' instructions or registers, and with tcgen05
// the loads, the MMA issue and the waits are all one thread's. With β·C,
// C's tile comes by TMA into D's staging once the MMAs have read the
// operands there, where C can be mapped, and each thread fuses its
// elements in place.
#include "common/tile_grid.h"
#include "common/tma.h"
#include "step_common.h"
#include "steps_sm100.h"
#include "tmem_epilogue.h"
#include "tmem_occupancy.h"

namespace gemm::sm100 {
namespace {

// A and B tiles; D reuses their space once the last MMAs have read them.
// Rounded up as step 3's: at most four CTAs per SM, as many as TMEM holds.
constexpr int kSmemBytes = TmemBoundSmemBytes(2 * kTileBytes + kSmemAlignSlack, kTileTmemColumns);

template <typename Form>
__global__ void __launch_bounds__(128) TmaKernel(const __grid_constant__ CUtensorMap a_map,
                                                 const __grid_constant__ CUtensorMap b_map,
                                                 const __grid_constant__ CUtensorMap d_map,
                                                 const __grid_constant__ CUtensorMap c_map, bool c_mapped, int64_t n,
                                                 int64_t k, EpilogueArgs e, BatchArgs batch) {
  extern __shared__ char smem_raw[];
  __shared__ uint64_t full;      // "the A and B tiles have landed"
  __shared__ uint64_t mma_done;  // "the k-tile's MMAs are complete" (tcgen05.commit)
  __shared__ uint32_t tmem_slot;
  char* a_tile = AlignTo1024(smem_raw);
  char* b_tile = a_tile + kTileBytes;
  char* d_tile = a_tile;
  const int64_t m0 = int64_t{blockIdx.y} * kTileRows;
  const int64_t n0 = int64_t{blockIdx.x} * kTileRows;
  const int entry = static_cast<int>(blockIdx.z);
  const bool leader = threadIdx.x == 0;

  if (leader) {
    BarrierInit(&full, 1);
    BarrierInit(&mma_done, 1);
  }
  const uint32_t tmem = SetUpAccumulator<kTileTmemColumns>(&tmem_slot);

  if (leader) {
    uint32_t k_tile = 0;
    for (int64_t k0 = 0; k0 < k; k0 += kTileK, ++k_tile) {
      ArriveExpectTx(&full, 2 * kTileBytes);
      TmaLoadTile<Form::kALayout, kTileRows>(a_tile, &a_map, static_cast<int32_t>(k0), static_cast<int32_t>(m0),
                                             batch.EntryOfA(entry), &full);
      TmaLoadTile<Form::kBLayout, kTileRows>(b_tile, &b_map, static_cast<int32_t>(k0), static_cast<int32_t>(n0),
                                             batch.EntryOfB(entry), &full);
      Wait(&full, k_tile % 2);
      TmemFenceAfterSync();
      IssueTileMma<Form>(tmem, a_tile, b_tile, /*accumulate=*/k0 > 0);
      CommitTo(&mma_done);
      Wait(&mma_done, k_tile % 2);  // the tiles are read: the next loads may land
      TmemFenceAfterSync();         // what follows relies on that wait
    }
    TmemFenceBeforeSync();
  }
  // The leader has seen the last MMAs complete. Every load issued has
  // been waited for: `full` takes one more, C's.
  const int k_tiles = static_cast<int>((k + kTileK - 1) / kTileK);
  const CTileByTma c_tile = Form::kFused && c_mapped ? CTileByTma{&c_map, &full, static_cast<uint32_t>(k_tiles % 2),
                                                                  e.CMapEntry(entry)}
                                                     : CTileByTma{};
  StoreAccumulatorTile<Form>(tmem, d_tile, &d_map, m0, n0, n, entry, leader, e.ForEntry(entry), c_tile);
  ReleaseAccumulator<kTileTmemColumns>(tmem);
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

}  // namespace gemm::sm100
