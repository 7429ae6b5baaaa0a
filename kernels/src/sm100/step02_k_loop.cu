// Step 2 = step 1 + a K loop: the same 128×128 output tile, K walked 64 at a
// time into the same TMEM accumulator (the first k-tile's MMAs overwrite
// it, every later one accumulates). Each k-tile's commit flips the
// mbarrier's phase once, so the loop waits on parity k-tile % 2; the wait
// also says the MMAs have read the tiles, so the next load may overwrite them.
#include "common/sync_load.h"
#include "step_common.h"
#include "steps_sm100.h"
#include "tmem_epilogue.h"

namespace gemm::sm100 {
namespace {

constexpr int kSmemBytes = 2 * kTileBytes + kSmemAlignSlack;

__global__ void __launch_bounds__(128) KLoopKernel(Problem p) {
  extern __shared__ char smem_raw[];
  __shared__ uint64_t mma_done;
  __shared__ uint32_t tmem_base;
  char* a_tile = AlignTo1024(smem_raw);
  char* b_tile = a_tile + kTileBytes;
  const bool vectorized = p.k % 8 == 0;
  const bool allocator = threadIdx.x / 32 == 0;

  if (allocator) AllocateTmem<kTileTmemColumns>(&tmem_base);
  if (threadIdx.x == 0) {
    BarrierInit(&mma_done, 1);
    FenceBarrierInit();
  }
  TmemFenceBeforeSync();
  __syncthreads();
  TmemFenceAfterSync();
  const uint32_t tmem = tmem_base;

  uint32_t k_tile = 0;
  for (int64_t k0 = 0; k0 < p.k; k0 += kTileK, ++k_tile) {
    LoadTileSync(a_tile, p.a, p.m, p.k, 0, k0, vectorized);
    LoadTileSync(b_tile, p.b, p.n, p.k, 0, k0, vectorized);
    FenceSharedForAsyncProxy();
    __syncthreads();
    if (threadIdx.x == 0) {
      TmemFenceAfterSync();
      IssueTileMma(tmem, a_tile, b_tile, /*accumulate=*/k0 > 0);
      CommitTo(&mma_done);
    }
    Wait(&mma_done, k_tile % 2);
  }
  TmemFenceAfterSync();
  StoreTmemTile(tmem, p.d, p.m, p.n, 0, 0);

  TmemFenceBeforeSync();
  __syncthreads();
  if (allocator) FreeTmem<kTileTmemColumns>(tmem);
}

}  // namespace

cudaError_t PrepareKLoop() {
  return cudaFuncSetAttribute(KLoopKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
}

std::string LaunchKLoop(const Problem& p, const DeviceContext&, cudaStream_t stream) {
  KLoopKernel<<<1, 128, kSmemBytes, stream>>>(p);
  return LaunchError();
}

}  // namespace gemm::sm100
