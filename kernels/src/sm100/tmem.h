// Tensor Memory through CCCL's tcgen05 wrappers (<cuda/ptx>). Blackwell
// keeps the accumulators here instead of in registers: 128 lanes (one per
// row of D) × 512 columns of 32 bits per SM, allocated in columns.
#pragma once

#include <cuda/ptx>

#include <cstdint>

#include "common/barrier.h"
#include "umma_descriptors.h"

namespace gemm::sm100 {

// The tcgen05 CTA-group qualifier: 1, or 2 for a pair of CTAs that share
// one MMA (steps 9-10).
template <int kCtaGroup>
using CtaGroup = cuda::ptx::cta_group_t<kCtaGroup == 2 ? cuda::ptx::dot_cta_group::cta_group_2
                                                       : cuda::ptx::dot_cta_group::cta_group_1>;

// One whole warp allocates `kColumns` columns and writes their base address
// to `*smem_dst`; the same warp frees them (FreeTmem) before the CTA exits.
// Giving up the permit at once lets a CTA resident beside this one allocate.
// With kCtaGroup 2, the warp of the same index in each CTA of the pair
// calls it, with the same `smem_dst` offset (the PTX ISA's tcgen05.alloc).
template <uint32_t kColumns, int kCtaGroup = 1>
__device__ inline void AllocateTmem(uint32_t* smem_dst) {
  static_assert(ValidTmemColumns(kColumns), "tcgen05.alloc takes a power of two of 32..512 columns");
  cuda::ptx::tcgen05_alloc(CtaGroup<kCtaGroup>{}, smem_dst, kColumns);
  cuda::ptx::tcgen05_relinquish_alloc_permit(CtaGroup<kCtaGroup>{});
}

template <uint32_t kColumns, int kCtaGroup = 1>
__device__ inline void FreeTmem(uint32_t base) {
  cuda::ptx::tcgen05_dealloc(CtaGroup<kCtaGroup>{}, base, kColumns);
}

// tcgen05 operations are asynchronous to the threads that order them with
// barriers: every thread fences before a barrier that publishes its tcgen05
// work and after a barrier (or mbarrier wait) that it relies on.
__device__ inline void TmemFenceBeforeSync() { cuda::ptx::tcgen05_fence_before_thread_sync(); }
__device__ inline void TmemFenceAfterSync() { cuda::ptx::tcgen05_fence_after_thread_sync(); }

// The tile's accumulator: warp 0 allocates `kColumns` TMEM columns into
// *tmem_slot; returns the TMEM base once every thread may use it, and the
// mbarriers thread 0 initialised before the call. All threads of the CTA.
template <uint32_t kColumns>
__device__ inline uint32_t SetUpAccumulator(uint32_t* tmem_slot) {
  // tcgen05.alloc is .sync.aligned: warp 0 must be converged, and thread 0
  // has just run the barrier set-up alone.
  __syncwarp();
  if (threadIdx.x / 32 == 0) AllocateTmem<kColumns>(tmem_slot);
  if (threadIdx.x == 0) common::FenceBarrierInit();
  TmemFenceBeforeSync();
  __syncthreads();
  TmemFenceAfterSync();
  return *tmem_slot;
}

// Once every thread's TMEM reads are done, warp 0 frees the columns: the
// PTX ISA's pattern is before-fence, barrier, after-fence, then the
// dealloc that relies on the barrier.
template <uint32_t kColumns>
__device__ inline void ReleaseAccumulator(uint32_t tmem) {
  TmemFenceBeforeSync();
  __syncthreads();
  if (threadIdx.x / 32 == 0) {
    TmemFenceAfterSync();
    FreeTmem<kColumns>(tmem);
  }
}

}  // namespace gemm::sm100
