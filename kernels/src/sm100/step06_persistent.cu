// Step 6 = step 5 + a persistent grid: as many CTAs as the GPU holds at
// once, each walking the output tiles the TileScheduler hands it (an
// L2-friendly grouped order, shared with Hopper). The CTA's (tile, k-tile)
// pairs form one stream for the issuing thread, so the next tile's first
// loads are in flight while this tile's accumulator leaves TMEM; D gets a
// staging tile of its own, whose TMA stores are waited for only before the
// next tile's D overwrites it. The accumulator is one 128-column TMEM
// buffer: the next tile's first MMAs (which overwrite it) are issued only
// after every thread has read it out. With β·C, the issuing thread asks
// for C's tile into that staging by TMA as it issues the tile's last
// MMAs, where C can be mapped, and each thread fuses its elements in place.
#include "common/persistent_launch.h"
#include "common/tile_scheduler.h"
#include "common/tma.h"
#include "step_common.h"
#include "steps_sm100.h"
#include "tmem_epilogue.h"

namespace gemm::sm100 {
namespace {

constexpr int kStages = 2;
constexpr int kStageBytes = 2 * kTileBytes;  // A and B
constexpr int kDStagingBytes = 2 * kTileBytes;  // D as two swizzled 128×64 halves
constexpr int kSmemBytes = kStages * kStageBytes + kDStagingBytes + kSmemAlignSlack;

template <typename Form>
__global__ void __launch_bounds__(128)
    PersistentKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                     const __grid_constant__ CUtensorMap d_map, const __grid_constant__ CUtensorMap c_map,
                     bool c_mapped, int64_t m, int64_t n, int64_t k, EpilogueArgs e, BatchArgs batch) {
  extern __shared__ char smem_raw[];
  char* stages = AlignTo1024(smem_raw);
  char* d_staging = stages + kStages * kStageBytes;
  __shared__ uint64_t full[kStages];   // the stage's A and B have landed
  __shared__ uint64_t empty[kStages];  // the MMAs that read the stage are done
  __shared__ uint64_t c_full;          // C's tile has landed in the staging
  __shared__ uint32_t tmem_slot;
  const bool c_by_tma = Form::kFused && c_mapped;
  const TileScheduler scheduler(m, n, kTileRows, kTileRows, batch.entries);
  const int k_tiles = static_cast<int>((k + kTileK - 1) / kTileK);
  // This CTA's tiles: blockIdx.x, blockIdx.x + gridDim.x, ...
  const int my_tiles = (scheduler.tiles() - static_cast<int>(blockIdx.x) + gridDim.x - 1) / gridDim.x;
  const int iterations = my_tiles * k_tiles;
  const bool leader = threadIdx.x == 0;

  if (leader) InitStageBarriers(full, empty);
  if (leader && c_by_tma) BarrierInit(&c_full, 1);
  const uint32_t tmem = SetUpAccumulator<kTileTmemColumns>(&tmem_slot);

  // Leader only: the next iteration to load, counted rather than divided
  // out of the iteration number.
  int load_tile = blockIdx.x, load_kt = 0, load_m = 0, load_n = 0, load_entry = 0;
  if (leader && iterations > 0) scheduler.Coordinates(load_tile, &load_m, &load_n, &load_entry);
  auto load_next = [&](int it) {
    char* a_tile = stages + (it % kStages) * kStageBytes;
    ArriveExpectTx(&full[it % kStages], kStageBytes);
    TmaLoadTile<Form::kALayout, kTileRows>(a_tile, &a_map, load_kt * kTileK, load_m * kTileRows,
                                           batch.EntryOfA(load_entry), &full[it % kStages]);
    TmaLoadTile<Form::kBLayout, kTileRows>(a_tile + kTileBytes, &b_map, load_kt * kTileK, load_n * kTileRows,
                                           batch.EntryOfB(load_entry), &full[it % kStages]);
    if (++load_kt == k_tiles) {
      load_kt = 0;
      load_tile += gridDim.x;
      if (load_tile < scheduler.tiles()) scheduler.Coordinates(load_tile, &load_m, &load_n, &load_entry);
    }
  };
  if (leader && iterations > 0) load_next(0);

  for (int t = 0, tile = blockIdx.x; t < my_tiles; ++t, tile += gridDim.x) {
    if (leader) {
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int it = t * k_tiles + kt, s = it % kStages;
        if (c_by_tma && kt == k_tiles - 1) {  // the previous tile's D has long left the staging
          int c_m, c_n, c_entry;
          scheduler.Coordinates(tile, &c_m, &c_n, &c_entry);
          TmaStoreWaitRead<0>();
          LoadCTile(&c_map, d_staging, int64_t{c_m} * kTileRows, int64_t{c_n} * kTileRows, n, e.CMapEntry(c_entry),
                    &c_full);
        }
        Wait(&full[s], (it / kStages) % 2);
        TmemFenceAfterSync();
        IssueTileMma<Form>(tmem, stages + s * kStageBytes, stages + s * kStageBytes + kTileBytes,
                           /*accumulate=*/kt > 0);
        CommitTo(&empty[s]);
        if (it + 1 < iterations) {
          // As step 5: refill the stage iteration it - 1 used once its MMAs
          // are done; across a tile boundary this is the next tile's load.
          if (it >= 1) Wait(&empty[(it + 1) % kStages], ((it - 1) / kStages) % 2);
          load_next(it + 1);
        }
        if (kt == k_tiles - 1) {
          Wait(&empty[s], (it / kStages) % 2);  // the tile's accumulator is complete
          TmemFenceAfterSync();
        }
      }
      TmaStoreWaitRead<0>();  // the previous tile's D has left the staging
      TmemFenceBeforeSync();
    }
    __syncthreads();
    TmemFenceAfterSync();
    int tile_m, tile_n, entry;  // the tile's origin: for the stores, and a fused epilogue's C
    scheduler.Coordinates(tile, &tile_m, &tile_n, &entry);
    const int64_t m0 = int64_t{tile_m} * kTileRows, n0 = int64_t{tile_n} * kTileRows;
    if (c_by_tma) Wait(&c_full, t % 2);
    TmemTileToSmem<Form>(tmem, d_staging, e.ForEntry(entry), m0, n0, c_by_tma);
    TmemFenceBeforeSync();  // every TMEM read is done before the next tile's MMAs overwrite it
    FenceSharedForAsyncProxy();
    __syncthreads();
    if (leader) {
      TmemFenceAfterSync();
      for (int h = 0; h < 2; ++h) {
        if (n0 + kTileK * h < n) {
          TmaStore(&d_map, static_cast<int32_t>(n0 + kTileK * h), static_cast<int32_t>(m0), entry,
                   d_staging + h * kTileBytes);
        }
      }
      TmaStoreCommit();  // waited for before the staging is reused, or at exit
    }
  }
  if (leader) TmaStoreWaitRead<0>();
  ReleaseAccumulator<kTileTmemColumns>(tmem);
}

}  // namespace

cudaError_t PreparePersistent() {
  return ForEachStepForm([](auto form) {
    return cudaFuncSetAttribute(PersistentKernel<decltype(form)>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  });
}

std::string LaunchPersistent(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  return WithStepForm(p, [&](auto form) {
    return LaunchOnResidentGrid<PersistentKernel<decltype(form)>, 128, kSmemBytes, 1, /*kCMap=*/true>(
        p, ctx, stream, TileScheduler(p.m, p.n, kTileRows, kTileRows, BatchOf(p).entries).tiles());
  });
}

}  // namespace gemm::sm100
