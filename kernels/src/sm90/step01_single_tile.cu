// Step 1: one 128×128×64 tile. All 128 threads of one warpgroup copy A and
// B into shared memory, then one MMA (four k16 wgmma per 64-row half)
// accumulates into registers, which are written straight to D.
#include "register_epilogue.h"
#include "step_common.h"
#include "steps_sm90.h"
#include "common/sync_load.h"

namespace gemm::sm90 {
namespace {

constexpr int kSmemBytes = 2 * kTileBytes + kSmemAlignSlack;

template <typename Form>
__global__ void __launch_bounds__(128) SingleTileKernel(Problem p) {
  extern __shared__ char smem_raw[];
  char* a_tile = AlignTo1024(smem_raw);
  char* b_tile = a_tile + kTileBytes;
  const bool a_vectorized = Vectorizable(p.a, p.lda), b_vectorized = Vectorizable(p.b, p.ldb);

  LoadOperandTileSync<Form::kALayout>(a_tile, p.a, p.m, p.k, p.lda, 0, 0, a_vectorized);
  LoadOperandTileSync<Form::kBLayout>(b_tile, p.b, p.n, p.k, p.ldb, 0, 0, b_vectorized);
  FenceSharedForAsyncProxy();
  __syncthreads();

  float acc[2][64] = {};
  IssueTileMma<KMajorTiles<Form>>(acc, a_tile, b_tile, /*accumulate=*/false);
  WaitForTileMma(acc);
  StoreAccumulators<Form>(acc, p.d, p.m, p.n, p.ldd, 0, 0, EpilogueOf(p));
}

}  // namespace

cudaError_t PrepareSingleTile() {
  return ForEachStepForm([](auto form) {
    return cudaFuncSetAttribute(SingleTileKernel<decltype(form)>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                kSmemBytes);
  });
}

std::string LaunchSingleTile(const Problem& p, const DeviceContext&, cudaStream_t stream) {
  return WithStepForm(p, [&](auto form) {
    SingleTileKernel<decltype(form)><<<1, 128, kSmemBytes, stream>>>(p);
    return LaunchError();
  });
}

}  // namespace gemm::sm90
