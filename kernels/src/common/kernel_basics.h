// What every ladder kernel needs besides its one idea, on either family.
#pragma once

#include <cuda/ptx>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace gemm::common {

// Dynamic shared memory is only 16-byte aligned; swizzled tiles need 1024.
inline constexpr int kSmemAlignSlack = 1024;
__device__ inline char* AlignTo1024(char* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<char*>((a + 1023) & ~uintptr_t{1023});
}

// Threads' ordinary stores to shared memory, made visible to the async
// proxy (wgmma, tcgen05.mma, TMA) that reads next. Each writing thread,
// before the barrier.
__device__ inline void FenceSharedForAsyncProxy() { cuda::ptx::fence_proxy_async(cuda::ptx::space_shared); }

// A barrier for `threads` threads (a multiple of 32) on hardware barrier
// `id` (1..15; __syncthreads uses 0): syncs one warpgroup, not the CTA.
// Inline PTX: CCCL's <cuda/ptx> has no bar.sync wrapper.
__device__ inline void NamedBarrierSync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

inline std::string LaunchError() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : std::string("kernel launch: ") + cudaGetErrorString(e);
}

inline unsigned CeilDiv(int64_t a, int64_t b) { return static_cast<unsigned>((a + b - 1) / b); }

}  // namespace gemm::common
