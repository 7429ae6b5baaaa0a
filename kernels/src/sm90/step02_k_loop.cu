// Step 2 = step 1 + a K loop: the same 128×128 output tile, K walked 64 at a
// time, every wgmma after the very first accumulating into the registers.
#include "register_epilogue.h"
#include "step_common.h"
#include "steps_sm90.h"
#include "common/sync_load.h"

namespace gemm::sm90 {
namespace {

constexpr int kSmemBytes = 2 * kTileBytes + kSmemAlignSlack;

template <typename Form>
__global__ void __launch_bounds__(128) KLoopKernel(Problem p) {
  extern __shared__ char smem_raw[];
  char* a_tile = AlignTo1024(smem_raw);
  char* b_tile = a_tile + kTileBytes;
  const bool a_vectorized = Vectorizable(p.a, p.lda), b_vectorized = Vectorizable(p.b, p.ldb);

  float acc[2][64] = {};
  for (int64_t k0 = 0; k0 < p.k; k0 += kTileK) {
    LoadOperandTileSync<Form::kALayout>(a_tile, p.a, p.m, p.k, p.lda, 0, k0, a_vectorized);
    LoadOperandTileSync<Form::kBLayout>(b_tile, p.b, p.n, p.k, p.ldb, 0, k0, b_vectorized);
    FenceSharedForAsyncProxy();
    __syncthreads();

    IssueTileMma<KMajorTiles<Form>>(acc, a_tile, b_tile, /*accumulate=*/k0 > 0);
    WaitForTileMma(acc);
    __syncthreads();  // every wgmma has read the tiles before the next load overwrites them
  }
  StoreAccumulators<Form>(acc, p.d, p.m, p.n, p.ldd, 0, 0, EpilogueOf(p));
}

}  // namespace

cudaError_t PrepareKLoop() {
  return ForEachStepForm([](auto form) {
    return cudaFuncSetAttribute(KLoopKernel<decltype(form)>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  });
}

std::string LaunchKLoop(const Problem& p, const DeviceContext&, cudaStream_t stream) {
  return WithStepForm(p, [&](auto form) {
    KLoopKernel<decltype(form)><<<1, 128, kSmemBytes, stream>>>(p);
    return LaunchError();
  });
}

}  // namespace gemm::sm90
