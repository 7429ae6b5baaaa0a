// Step 2 = step 1 + a K loop (sync_tile_mma.h): the same 128×128 output
// tile, K walked 64 at a time into the same TMEM accumulator, the first
// k-tile's MMAs overwriting it and every later one accumulating. The
// commit flips the mbarrier's phase once per k-tile, so the wait's parity
// is k-tile % 2.
#include "step_common.h"
#include "steps_sm100.h"
#include "sync_tile_mma.h"
#include "tmem_epilogue.h"

namespace gemm::sm100 {
namespace {

constexpr int kSmemBytes = 2 * kTileBytes + kSmemAlignSlack;

template <typename Form>
__global__ void __launch_bounds__(128) KLoopKernel(Problem p) {
  extern __shared__ char smem_raw[];
  __shared__ uint64_t mma_done;
  __shared__ uint32_t tmem_slot;
  char* a_tile = AlignTo1024(smem_raw);
  char* b_tile = a_tile + kTileBytes;
  if (threadIdx.x == 0) BarrierInit(&mma_done, 1);
  const uint32_t tmem = SetUpAccumulator<kTileTmemColumns>(&tmem_slot);

  MultiplyTileSync<Form>(p, 0, 0, a_tile, b_tile, tmem, &mma_done);
  StoreTmemTile<Form>(tmem, p.d, p.m, p.n, p.ldd, 0, 0, EpilogueOf(p));
  ReleaseAccumulator<kTileTmemColumns>(tmem);
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

}  // namespace gemm::sm100
