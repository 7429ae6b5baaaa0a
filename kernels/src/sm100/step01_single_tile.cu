// Step 1: one 128×128×64 tile. Warp 0 allocates TMEM for the accumulator;
// all 128 threads copy A and B into shared memory; one thread issues four
// K=16 tcgen05 MMAs and commits them to an mbarrier; every thread waits,
// then the warpgroup reads the accumulator out of TMEM, row per thread,
// and writes D. Why it pays on Blackwell: the MMA no longer occupies the
// warpgroup or its registers (Hopper's wgmma does both), so one thread
// drives the tensor core while the others are free for loads and stores.
#include "common/sync_load.h"
#include "step_common.h"
#include "steps_sm100.h"
#include "tmem_epilogue.h"

namespace gemm::sm100 {
namespace {

constexpr int kSmemBytes = 2 * kTileBytes + kSmemAlignSlack;

template <typename Form>
__global__ void __launch_bounds__(128) SingleTileKernel(Problem p) {
  extern __shared__ char smem_raw[];
  __shared__ uint64_t mma_done;
  __shared__ uint32_t tmem_slot;
  char* a_tile = AlignTo1024(smem_raw);
  char* b_tile = a_tile + kTileBytes;
  if (threadIdx.x == 0) BarrierInit(&mma_done, 1);
  const uint32_t tmem = SetUpAccumulator<kTileTmemColumns>(&tmem_slot);

  const bool a_vectorized = Vectorizable(p.a, p.lda), b_vectorized = Vectorizable(p.b, p.ldb);
  LoadOperandTileSync<Form::kALayout>(a_tile, p.a, p.m, p.k, p.lda, 0, 0, a_vectorized);
  LoadOperandTileSync<Form::kBLayout>(b_tile, p.b, p.n, p.k, p.ldb, 0, 0, b_vectorized);
  FenceSharedForAsyncProxy();
  __syncthreads();
  if (threadIdx.x == 0) {
    TmemFenceAfterSync();
    IssueTileMma<KMajorTiles<Form>>(tmem, a_tile, b_tile, /*accumulate=*/false);
    CommitTo(&mma_done);
  }
  Wait(&mma_done, 0);
  TmemFenceAfterSync();

  StoreTmemTile<Form>(tmem, p.d, p.m, p.n, p.ldd, 0, 0, EpilogueOf(p));
  ReleaseAccumulator<kTileTmemColumns>(tmem);
}

}  // namespace

cudaError_t PrepareSingleTile() {
  return ForEachStepForm([](auto form) {
    return cudaFuncSetAttribute(SingleTileKernel<decltype(form)>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  });
}

std::string LaunchSingleTile(const Problem& p, const DeviceContext&, cudaStream_t stream) {
  return WithStepForm(p, [&](auto form) {
    SingleTileKernel<decltype(form)><<<1, 128, kSmemBytes, stream>>>(p);
    return LaunchError();
  });
}

}  // namespace gemm::sm100
