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

template <ElementType kOperands>
inline constexpr uint32_t kTileInstrDesc = InstrDescF16(common::kTileRows, common::kTileRows, kOperands);

__device__ inline uint32_t SharedAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// D(f32, TMEM at `tmem_d`) = A·Bᵀ (+ D if `accumulate`) over one 64-wide
// k-tile, for the swizzled 128×64 tiles (common/tile_layout.h) at `a_tile`,
// `b_tile`, which start on 1024-byte boundaries: four K=16 MMAs of the
// shape in `instr_desc`. One thread issues; with kCtaGroup 2 it is the
// leader CTA's, and the MMA reads the same offsets in the peer CTA too.
template <int kCtaGroup>
__device__ inline void IssueKTileMma(uint32_t tmem_d, const char* a_tile, const char* b_tile, uint32_t instr_desc,
                                     bool accumulate) {
  const uint64_t a_desc = SmemDescSw128KMajor(SharedAddress(a_tile));
  const uint64_t b_desc = SmemDescSw128KMajor(SharedAddress(b_tile));
#pragma unroll
  for (int s = 0; s < common::kTileK / common::kMmaK; ++s) {
    const uint32_t step = s * common::kMmaK * 2;  // 32 bytes along the swizzled row
    cuda::ptx::tcgen05_mma(cuda::ptx::kind_f16, CtaGroup<kCtaGroup>{}, tmem_d, AdvanceSmemDesc(a_desc, step),
                           AdvanceSmemDesc(b_desc, step), instr_desc, accumulate || s > 0);
  }
}

// Steps 1-6: the 128×128 tile, one CTA.
template <ElementType kOperands>
__device__ inline void IssueTileMma(uint32_t tmem_d, const char* a_tile, const char* b_tile, bool accumulate) {
  IssueKTileMma<1>(tmem_d, a_tile, b_tile, kTileInstrDesc<kOperands>, accumulate);
}

// Arrives once on `bar` when every MMA this thread issued before has
// completed (and, with it, read its shared-memory operands).
__device__ inline void CommitTo(uint64_t* bar) { cuda::ptx::tcgen05_commit(cuda::ptx::cta_group_1, bar); }

}  // namespace gemm::sm100
