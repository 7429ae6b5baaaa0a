// TMA (cp.async.bulk.tensor) through CCCL's <cuda/ptx>. One thread issues;
// loads complete on an mbarrier, stores in a bulk group.
#pragma once

#include <cuda.h>
#include <cuda/ptx>

#include <cstdint>

namespace gemm::sm90 {

// Box at (col, row) of `map` into shared memory; arrives on `bar` with its bytes.
__device__ inline void TmaLoad(void* smem, const CUtensorMap* map, int32_t col, int32_t row, uint64_t* bar) {
  const int32_t coords[2] = {col, row};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, smem, map, coords, bar);
}

// The same box, delivered to the same shared-memory offset in every CTA of
// the cluster named in `cta_mask`; each copy arrives on the barrier at
// `bar`'s offset in its own CTA.
__device__ inline void TmaLoadMulticast(void* smem, const CUtensorMap* map, int32_t col, int32_t row, uint64_t* bar,
                                        uint16_t cta_mask) {
  const int32_t coords[2] = {col, row};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, smem, map, coords, bar, cta_mask);
}

__device__ inline void TmaStore(const CUtensorMap* map, int32_t col, int32_t row, const void* smem) {
  const int32_t coords[2] = {col, row};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, map, coords, smem);
}

// Closes the stores issued so far into one bulk group.
__device__ inline void TmaStoreCommit() { cuda::ptx::cp_async_bulk_commit_group(); }

// Waits until every committed store group but the newest kPending has read
// its shared memory, which may then be overwritten (the writes to global
// memory may still be under way). Groups are counted per issuing thread.
template <int kPending = 0>
__device__ inline void TmaStoreWaitRead() {
  cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<kPending>{});
}

__device__ inline void TmaStoreCommitAndWait() {
  TmaStoreCommit();
  TmaStoreWaitRead();
}

}  // namespace gemm::sm90
