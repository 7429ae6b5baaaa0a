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

// A box at (col, row) of batch entry `entry` of `map` into this CTA's `smem`, its bytes counted on
// the leader CTA's copy of `bar` (where the leader's producer posted the
// pair's total).
//
// Inline PTX, because CCCL has no overload for this form: its cta_group::2
// TMA load (cuda::ptx::cp_async_bulk_tensor with space_shared) emits the
// `.shared::cta` destination, which the PTX ISA allows but no working B200
// kernel is known to use. CUTLASS (SM100_TMA_2SM_LOAD_2D and _3D), DeepGEMM and
// gau-nernst's matmul_v6 all load with the `.shared::cluster` destination:
// this CTA's own shared address (a shared::cta address is a valid
// shared::cluster address of the executing CTA), and the barrier's address
// with the peer bit cleared, which names the leader's copy
// (PairLeaderAddress). tests/sm100_ptx_check.py pins the form.
__device__ inline void TmaLoadToLeader(void* smem, const CUtensorMap* map, int32_t col, int32_t row, int32_t entry,
                                       uint64_t* bar) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t leader_bar = PairLeaderAddress(static_cast<uint32_t>(__cvta_generic_to_shared(bar)));
  asm volatile(
      "cp.async.bulk.tensor.3d.cta_group::2.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];"
      :
      : "r"(dst), "l"(map), "r"(col), "r"(row), "r"(entry), "r"(leader_bar)
      : "memory");
}

// Arrives once on `bar` in both CTAs of the pair when every MMA this thread
// issued before has completed.
__device__ inline void CommitToPair(uint64_t* bar) {
  cuda::ptx::tcgen05_commit_multicast(cuda::ptx::cta_group_2, bar, uint16_t{0b11});
}

}  // namespace gemm::sm100
