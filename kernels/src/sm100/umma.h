// The tcgen05 MMA of one 128×128×64 tile: four K=16 MMAs issued by one
// thread, D in TMEM, A and B read from shared memory through descriptors,
// completion signalled on an mbarrier by tcgen05.commit. On Hopper the
// same tile is four wgmma per 64-row half issued by a whole warpgroup,
// accumulating in its registers.
#pragma once

#include <cuda/ptx>

#include <cstdint>

#include "common/tile_layout.h"
#include "tmem.h"
#include "umma_descriptors.h"

namespace gemm::sm100 {

template <typename Form>
inline constexpr uint32_t kTileInstrDesc =
    InstrDescF16(common::kTileRows, common::kTileRows, Form::kOperands, Form::kALayout, Form::kBLayout);

__device__ inline uint32_t SharedAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// D(f32, TMEM at `tmem_d`) = A·Bᵀ (+ D if `accumulate`) over one 64-wide
// k-tile, for the swizzled tiles (common/tile_layout.h, as Form's layouts
// say) at `a_tile`, `b_tile`, which start on 1024-byte boundaries: four
// K=16 MMAs of the shape in `instr_desc`. One thread issues; with
// kCtaGroup 2 it is the leader CTA's, and the MMA reads the same offsets
// in the peer CTA too.
template <int kCtaGroup, typename Form>
__device__ inline void IssueKTileMma(uint32_t tmem_d, const char* a_tile, const char* b_tile, uint32_t instr_desc,
                                     bool accumulate) {
  constexpr bool kAMn = Form::kALayout == Layout::kMnContiguous, kBMn = Form::kBLayout == Layout::kMnContiguous;
  const uint64_t a_desc = SmemDescSw128<Form::kALayout>(SharedAddress(a_tile));
  const uint64_t b_desc = SmemDescSw128<Form::kBLayout>(SharedAddress(b_tile));
#pragma unroll
  for (int s = 0; s < common::kTileK / common::kMmaK; ++s) {
    cuda::ptx::tcgen05_mma(cuda::ptx::kind_f16, CtaGroup<kCtaGroup>{}, tmem_d,
                           AdvanceSmemDesc(a_desc, common::KSliceBytes(kAMn, s)),
                           AdvanceSmemDesc(b_desc, common::KSliceBytes(kBMn, s)), instr_desc, accumulate || s > 0);
  }
}

// Steps 1-6: the 128×128 tile, one CTA.
template <typename Form>
__device__ inline void IssueTileMma(uint32_t tmem_d, const char* a_tile, const char* b_tile, bool accumulate) {
  IssueKTileMma<1, Form>(tmem_d, a_tile, b_tile, kTileInstrDesc<Form>, accumulate);
}

// Arrives once on `bar` when every MMA this thread issued before has
// completed (and, with it, read its shared-memory operands).
__device__ inline void CommitTo(uint64_t* bar) { cuda::ptx::tcgen05_commit(cuda::ptx::cta_group_1, bar); }

}  // namespace gemm::sm100
