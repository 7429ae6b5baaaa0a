// What a pair of CTAs sharing one tcgen05.mma.cta_group::2 needs beyond a
// cluster (common/cluster.h): TMA loads of either CTA that complete on the
// leader's barrier, and commits that arrive in both CTAs.
#pragma once

#include <cuda.h>
#include <cuda/ptx>

#include <cstdint>

#include "tmem.h"
#include "umma_descriptors.h"  // PairLeaderAddress

namespace gemm::sm100 {

// A box at (col, row) of `map` into this CTA's `smem`, its bytes counted on
// the leader CTA's copy of `bar` (where the leader's producer posted the
// pair's total). CCCL's cta_group::2 form takes the barrier as a generic
// pointer and converts it back to a shared address, so the leader's
// address goes in through the generic window.
__device__ inline void TmaLoadToLeader(void* smem, const CUtensorMap* map, int32_t col, int32_t row, uint64_t* bar) {
  const int32_t coords[2] = {col, row};
  const uint32_t leader = PairLeaderAddress(static_cast<uint32_t>(__cvta_generic_to_shared(bar)));
  auto* leader_bar = static_cast<uint64_t*>(__cvta_shared_to_generic(leader));
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_shared, cuda::ptx::space_global, cuda::ptx::cta_group_2, smem, map,
                                  coords, leader_bar);
}

// Arrives once on `bar` in both CTAs of the pair when every MMA this thread
// issued before has completed.
__device__ inline void CommitToPair(uint64_t* bar) {
  cuda::ptx::tcgen05_commit_multicast(cuda::ptx::cta_group_2, bar, uint16_t{0b11});
}

}  // namespace gemm::sm100
