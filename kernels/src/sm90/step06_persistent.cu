// Step 6 = step 5 + a persistent grid: exactly as many CTAs as the GPU holds
// at once, each walking the output tiles the TileScheduler hands it (an
// L2-friendly grouped order). The CTA's (tile, k-tile) pairs form one stream
// of iterations, so the pipeline runs on across tile boundaries: the next
// tile's first loads are in flight while this tile's epilogue writes D, which
// therefore needs a buffer of its own instead of step 5's spent stages.
// That buffer is one 64×64 chunk (D leaves chunk by chunk), so that three
// CTAs still share each SM as in step 5: while one waits on its wgmma or
// writes D, the others keep the tensor cores busy. (A whole 32 KB D tile
// allowed two CTAs per SM, and this step then ran 5-20% slower than step 5.)
// With β·C, each chunk of C comes by TMA into that buffer just before D's
// pairs are written over it (CChunkLoad), where C can be mapped.
#include "common/barrier.h"
#include "common/persistent_launch.h"
#include "smem_epilogue.h"
#include "step_common.h"
#include "steps_sm90.h"
#include "common/tile_scheduler.h"
#include "common/tma.h"
#include "common/tma_problem.h"

namespace gemm::sm90 {
namespace {

constexpr int kStages = 2;
constexpr int kStageBytes = 2 * kTileBytes;  // A and B
constexpr int kCtasPerSm = 3;  // as step 5: 168 registers and 73 KB of shared memory each
constexpr int kSmemBytes = kStages * kStageBytes + kDChunkBytes + kSmemAlignSlack;

// kCByTma: the launch mapped C (TmaProblem::c_mapped). Each way is its own
// kernel: with both in one, the loads' path left no registers for the
// other and the fused epilogue spilled a kilobyte a thread (ptxas -v).
template <typename Form, bool kCByTma>
__global__ void __launch_bounds__(128, kCtasPerSm)
    PersistentKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                     const __grid_constant__ CUtensorMap d_map, const __grid_constant__ CUtensorMap c_map,
                     bool /*c_mapped: kCByTma*/, int64_t m, int64_t n, int64_t k, EpilogueArgs e, BatchArgs batch) {
  extern __shared__ char smem_raw[];
  char* stages = AlignTo1024(smem_raw);
  char* d_chunk = stages + kStages * kStageBytes;
  __shared__ uint64_t full[kStages];
  __shared__ uint64_t c_full;  // C's chunk has landed in d_chunk
  const TileScheduler scheduler(m, n, kTileRows, kTileRows, batch.entries);
  const int k_tiles = static_cast<int>((k + kTileK - 1) / kTileK);
  // This CTA's tiles: blockIdx.x, blockIdx.x + gridDim.x, ...
  const int my_tiles = (scheduler.tiles() - static_cast<int>(blockIdx.x) + gridDim.x - 1) / gridDim.x;
  const int iterations = my_tiles * k_tiles;
  const bool leader = threadIdx.x == 0;

  // Leader only: loads the iteration kStages after k-tile `kt` of `tile` (a
  // scheduler index) into stage s. The tile's origin is worked out when the
  // loads reach a new tile, not for every k-tile: that put a thread's integer
  // divisions between a stage's release and its refill, which held up the
  // warpgroup's next wgmma (3-7% slower at 8192³ on an H200, five processes).
  // It is kept in shared memory: the accumulators leave no registers for it.
  __shared__ struct { int tile, m, n, entry; } origin;
  auto issue_ahead = [&](int tile, int kt, int s) {
    kt += kStages;
    while (kt >= k_tiles) kt -= k_tiles, tile += gridDim.x;
    if (origin.tile != tile) {
      origin.tile = tile;
      scheduler.Coordinates(tile, &origin.m, &origin.n, &origin.entry);
    }
    char* a_tile = stages + s * kStageBytes;
    ArriveExpectTx(&full[s], kStageBytes);
    TmaLoadTile<Form::kALayout, kTileRows>(a_tile, &a_map, kt * kTileK, origin.m * kTileRows,
                                           batch.EntryOfA(origin.entry), &full[s]);
    TmaLoadTile<Form::kBLayout, kTileRows>(a_tile + kTileBytes, &b_map, kt * kTileK, origin.n * kTileRows,
                                           batch.EntryOfB(origin.entry), &full[s]);
  };

  if (leader) {
    for (int s = 0; s < kStages; ++s) BarrierInit(&full[s], 1);
    if constexpr (kCByTma) BarrierInit(&c_full, 1);
    FenceBarrierInit();
    origin.tile = -1;
    for (int s = 0; s < kStages && s < iterations; ++s) issue_ahead(blockIdx.x, s - kStages, s);
  }
  __syncthreads();

  float acc[2][64] = {};
  for (int it = 0, kt = 0, tile = blockIdx.x; it < iterations; ++it) {
    const int s = it % kStages;
    Wait(&full[s], (it / kStages) % 2);
    const char* a_tile = stages + s * kStageBytes;
    const char* b_tile = a_tile + kTileBytes;

    IssueTileMma<Form>(acc, a_tile, b_tile, /*accumulate=*/kt > 0);
    WaitForTileMma(acc);
    __syncthreads();
    if (leader && it + kStages < iterations) issue_ahead(tile, kt, s);

    if (++kt == k_tiles) {  // this tile is done: write it while the next one loads
      int tile_m, tile_n, entry;
      scheduler.Coordinates(tile, &tile_m, &tile_n, &entry);
      const int64_t m0 = int64_t{tile_m} * kTileRows, n0 = int64_t{tile_n} * kTileRows;
      // Where C is not mapped, a pair at a time: three CTAs an SM leave no registers for more.
      if constexpr (kCByTma) {
        const CChunkLoad c_load{&c_map, &c_full, e.CMapEntry(entry)};
        StoreTileInChunks<Form, 1, true>(acc, d_chunk, 1, leader, &d_map, m0, n0, entry, m, n, e.ForEntry(entry),
                                         nullptr, c_load);
      } else {
        StoreTileInChunks<Form, 1>(acc, d_chunk, 1, leader, &d_map, m0, n0, entry, m, n, e.ForEntry(entry));
      }
      kt = 0, tile += gridDim.x;
    }
  }
  DrainChunkStores(leader);
}

}  // namespace

cudaError_t PreparePersistent() {
  return ForEachStepForm([](auto form) {
    using Form = decltype(form);
    cudaError_t e = cudaFuncSetAttribute(PersistentKernel<Form, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         kSmemBytes);
    if (e != cudaSuccess || !Form::kFused) return e;
    return cudaFuncSetAttribute(PersistentKernel<Form, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                kSmemBytes);
  });
}

std::string LaunchPersistent(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  return WithStepForm(p, [&](auto form) {
    using Form = decltype(form);
    return LaunchOnResidentGrid<PersistentKernel<Form, false>, 128, kSmemBytes, 1, /*kCMap=*/true,
                                PersistentKernel<Form, Form::kFused>>(
        p, ctx, stream, TileScheduler(p.m, p.n, kTileRows, kTileRows, BatchOf(p).entries).tiles(),
        TmaBoxRows{kTileRows, kTileRows, kDChunkRows});
  });
}

}  // namespace gemm::sm90
