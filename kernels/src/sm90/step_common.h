// What every Hopper step file needs besides its one idea.
#pragma once

#include <cuda/ptx>
#include <cuda_fp16.h>

#include <string>

#include "gemm/gemm.h"
#include "tile_layout.h"
#include "wgmma.h"

namespace gemm::sm90 {

// Dynamic shared memory is only 16-byte aligned; swizzled tiles need 1024.
inline constexpr int kSmemAlignSlack = 1024;
__device__ inline char* AlignTo1024(char* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<char*>((a + 1023) & ~uintptr_t{1023});
}

// Threads' ordinary stores to shared memory, made visible to the async
// proxy (wgmma, TMA) that reads next. Each writing thread, before the barrier.
__device__ inline void FenceSharedForAsyncProxy() { cuda::ptx::fence_proxy_async(cuda::ptx::space_shared); }

inline std::string LaunchError() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : std::string("kernel launch: ") + cudaGetErrorString(e);
}

inline unsigned CeilDiv(int64_t a, int64_t b) { return static_cast<unsigned>((a + b - 1) / b); }

}  // namespace gemm::sm90

namespace gemm::sm90 {

// A barrier for `threads` threads (a multiple of 32) on hardware barrier
// `id` (1..15; __syncthreads uses 0): syncs one warpgroup, not the CTA.
__device__ inline void NamedBarrierSync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Moves registers between warpgroups: the TMA producer needs few, the MMA
// consumers many. Needs __launch_bounds__(threads, 1) on the kernel.
template <int kRegisters>
__device__ inline void ReleaseRegisters() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ inline void ClaimRegisters() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

// The budgets: a producer warpgroup keeps 40 registers; each of a CTA's
// `consumers` warpgroups gets what the SM's 64K registers leave once every
// resident CTA's producer has its share, rounded down to setmaxnreg's
// multiple of 8 (two CTAs of one consumer: 216; one CTA of two: 232).
inline constexpr int kProducerRegisters = 40;
constexpr int ConsumerRegisters(int ctas_per_sm, int consumers = 1) {
  return (65536 / ctas_per_sm - 128 * kProducerRegisters) / (128 * consumers) / 8 * 8;
}

}  // namespace gemm::sm90
