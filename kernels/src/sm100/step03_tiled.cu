// Step 3 = step 2 + a 2-D grid: one CTA per 128×128 output tile, so any
// M and N (edge tiles zero-fill their loads and clip their stores). Each
// CTA allocates its own 128 TMEM columns, so up to four CTAs share an SM's
// 512 without waiting on each other's allocation; the shared memory each
// asks for keeps a fifth off the SM.
#include "common/tile_grid.h"
#include "step_common.h"
#include "steps_sm100.h"
#include "sync_tile_mma.h"
#include "tmem_occupancy.h"
#include "tmem_epilogue.h"

namespace gemm::sm100 {
namespace {

// Rounded up so that an SM holds no more CTAs than TMEM has room for
// (tmem_occupancy.h): four, not the six the tiles alone would allow.
constexpr int kSmemBytes = TmemBoundSmemBytes(2 * kTileBytes + kSmemAlignSlack, kTileTmemColumns);

template <typename Form>
__global__ void __launch_bounds__(128) TiledKernel(Problem p) {
  extern __shared__ char smem_raw[];
  __shared__ uint64_t mma_done;
  __shared__ uint32_t tmem_slot;
  char* a_tile = AlignTo1024(smem_raw);
  char* b_tile = a_tile + kTileBytes;
  const int64_t m0 = int64_t{blockIdx.y} * kTileRows;
  const int64_t n0 = int64_t{blockIdx.x} * kTileRows;
  if (threadIdx.x == 0) BarrierInit(&mma_done, 1);
  const uint32_t tmem = SetUpAccumulator<kTileTmemColumns>(&tmem_slot);

  MultiplyTileSync<Form>(p, m0, n0, a_tile, b_tile, tmem, &mma_done);
  StoreTmemTile<Form>(tmem, p.d, p.m, p.n, p.ldd, m0, n0, EpilogueOf(p));
  ReleaseAccumulator<kTileTmemColumns>(tmem);
}

}  // namespace

cudaError_t PrepareTiled() {
  return ForEachStepForm([](auto form) {
    return cudaFuncSetAttribute(TiledKernel<decltype(form)>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  });
}

std::string LaunchTiled(const Problem& p, const DeviceContext&, cudaStream_t stream) {
  if (auto err = TileGridError(p, 3); !err.empty()) return err;
  return WithStepForm(p, [&](auto form) {
    TiledKernel<decltype(form)><<<TileGrid(p), 128, kSmemBytes, stream>>>(p);
    return LaunchError();
  });
}

}  // namespace gemm::sm100
