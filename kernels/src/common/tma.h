// TMA (cp.async.bulk.tensor) through CCCL's <cuda/ptx>, the same on sm_90a
// and sm_100a. One thread issues; loads complete on an mbarrier, stores in
// a bulk group.
#pragma once

#include <cuda.h>
#include <cuda/ptx>

#include <cstdint>

#include "common/barrier.h"
#include "common/tile_layout.h"
#include "gemm/form.h"

namespace gemm::common {

// Every map has three coordinates: column, row and batch entry
// (common/batch.h); a problem without a batch has one entry.

// Box at (col, row) of batch entry `entry` of `map` into shared memory;
// arrives on `bar` with its bytes.
__device__ inline void TmaLoad(void* smem, const CUtensorMap* map, int32_t col, int32_t row, int32_t entry,
                               uint64_t* bar) {
  const int32_t coords[3] = {col, row, entry};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, smem, map, coords, bar);
}

// The same box, delivered to the same shared-memory offset in every CTA of
// the cluster named in `cta_mask`; each copy arrives on the barrier at
// `bar`'s offset in its own CTA.
__device__ inline void TmaLoadMulticast(void* smem, const CUtensorMap* map, int32_t col, int32_t row, int32_t entry,
                                        uint64_t* bar, uint16_t cta_mask) {
  const int32_t coords[3] = {col, row, entry};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, smem, map, coords, bar, cta_mask);
}

// The TMA boxes of one operand's tile of kRows rows (M or N) × the 64 k
// at (k0, row0), in the layout the MMA reads (tile_layout.h): load(offset
// in the tile, box column, box row) for each. K-contiguous, one box of the
// map's kRows × 64 at (k0, row0); MN-contiguous, kRows / 64 boxes of 64 × 64
// from a map over the k×rows storage, one 64-row block each.
template <Layout kLayout, int kRows, typename Load>
__device__ inline void ForEachTileBox(int32_t k0, int32_t row0, Load load) {
  if constexpr (kLayout == Layout::kKContiguous) {
    load(0, k0, row0);
  } else {
#pragma unroll
    for (int b = 0; b < kRows / kMnBlockRows; ++b) load(b * kMnBlockBytes, row0 + b * kMnBlockRows, k0);
  }
}

// The tile of batch entry `entry` into `smem`, every box arriving on `bar`.
template <Layout kLayout, int kRows>
__device__ inline void TmaLoadTile(char* smem, const CUtensorMap* map, int32_t k0, int32_t row0, int32_t entry,
                                   uint64_t* bar) {
  ForEachTileBox<kLayout, kRows>(k0, row0, [&](int offset, int32_t col, int32_t row) {
    TmaLoad(smem + offset, map, col, row, entry, bar);
  });
}

// The same, multicast to the CTAs in `cta_mask` (TmaLoadMulticast).
template <Layout kLayout, int kRows>
__device__ inline void TmaLoadTileMulticast(char* smem, const CUtensorMap* map, int32_t k0, int32_t row0,
                                            int32_t entry, uint64_t* bar, uint16_t cta_mask) {
  ForEachTileBox<kLayout, kRows>(k0, row0, [&](int offset, int32_t col, int32_t row) {
    TmaLoadMulticast(smem + offset, map, col, row, entry, bar, cta_mask);
  });
}

__device__ inline void TmaStore(const CUtensorMap* map, int32_t col, int32_t row, int32_t entry, const void* smem) {
  const int32_t coords[3] = {col, row, entry};
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

// Steps 4-5 of both families stage a 128×128 D tile as two swizzled 128×64
// halves. One thread: both halves of the tile at (m0, n0) of batch entry
// `entry` to global memory.
__device__ inline void StoreDTile(const CUtensorMap* d_map, const char* d_tile, int64_t m0, int64_t n0, int64_t n,
                                  int32_t entry) {
  for (int h = 0; h < 2; ++h) {
    if (n0 + 64 * h < n) {
      TmaStore(d_map, static_cast<int32_t>(n0 + 64 * h), static_cast<int32_t>(m0), entry, d_tile + h * kTileBytes);
    }
  }
  TmaStoreCommitAndWait();
}

// One box of `bytes` into `smem` at (x, y) of batch entry `entry`,
// arriving on `bar`, where `inside`; elsewhere the arrival alone, with no
// bytes, so that the barrier's phase completes all the same and the
// waiting threads need not know which boxes lie outside the matrix.
__device__ inline void TmaLoadBoxOrArrive(char* smem, const CUtensorMap* map, int32_t x, int32_t y, int32_t entry,
                                          uint64_t* bar, uint32_t bytes, bool inside) {
  ArriveExpectTx(bar, inside ? bytes : 0);
  if (inside) TmaLoad(smem, map, x, y, entry, bar);
}

// With C by TMA (TmaProblem::c_mapped), once the stages D's staging
// reuses are read, or the last tile's D has left it: the leader asks for
// C's 128×128 tile at (m0, n0) of the map's batch entry `entry` into
// `d_tile`, as the two swizzled halves StoreDTile stores (a half wholly
// right of n is not loaded; TMA zero-fills the ragged ones), arriving on
// `bar`.
__device__ inline void LoadCTile(const CUtensorMap* c_map, char* d_tile, int64_t m0, int64_t n0, int64_t n,
                                 int32_t entry, uint64_t* bar) {
  ArriveExpectTx(bar, (n0 + 64 < n ? 2 : 1) * kTileBytes);
  for (int h = 0; h < 2; ++h) {
    if (n0 + 64 * h < n) {
      TmaLoad(d_tile + h * kTileBytes, c_map, static_cast<int32_t>(n0 + 64 * h), static_cast<int32_t>(m0), entry, bar);
    }
  }
}

}  // namespace gemm::common
