// Step 3 = step 2 + a 2-D grid: one CTA per 128×128 output tile, so any
// M and N (edge tiles zero-fill their loads and clip their stores).
#include "register_epilogue.h"
#include "step_common.h"
#include "steps_sm90.h"
#include "common/sync_load.h"
#include "common/tile_grid.h"

namespace gemm::sm90 {
namespace {

constexpr int kSmemBytes = 2 * kTileBytes + kSmemAlignSlack;

template <typename Form>
__global__ void __launch_bounds__(128) TiledKernel(Problem p) {
  extern __shared__ char smem_raw[];
  char* a_tile = AlignTo1024(smem_raw);
  char* b_tile = a_tile + kTileBytes;
  const bool a_vectorized = Vectorizable(p.a, p.lda), b_vectorized = Vectorizable(p.b, p.ldb);
  const int64_t m0 = int64_t{blockIdx.y} * kTileRows;
  const int64_t n0 = int64_t{blockIdx.x} * kTileRows;

  float acc[2][64] = {};
  for (int64_t k0 = 0; k0 < p.k; k0 += kTileK) {
    LoadOperandTileSync<Form::kALayout>(a_tile, p.a, p.m, p.k, p.lda, m0, k0, a_vectorized);
    LoadOperandTileSync<Form::kBLayout>(b_tile, p.b, p.n, p.k, p.ldb, n0, k0, b_vectorized);
    FenceSharedForAsyncProxy();
    __syncthreads();

    IssueTileMma<KMajorTiles<Form>>(acc, a_tile, b_tile, /*accumulate=*/k0 > 0);
    WaitForTileMma(acc);
    __syncthreads();
  }
  StoreAccumulators<Form>(acc, p.d, p.m, p.n, p.ldd, m0, n0, EpilogueOf(p));
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

}  // namespace gemm::sm90
