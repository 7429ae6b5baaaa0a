// The accumulator from TMEM to registers, and on: steps 1-3 write D
// straight to global memory, steps 4+ through shared memory and TMA stores.
// Warp w of the warpgroup may read TMEM lanes 32w..32w+31 only, so each
// thread owns one row of the tile and reads it 32 columns at a time.
#pragma once

#include <cuda/ptx>

#include <cstdint>

#include "common/kernel_basics.h"
#include "common/step_form.h"
#include "common/tile_layout.h"
#include "common/tma.h"
#include "tmem.h"
#include "umma_descriptors.h"

namespace gemm::sm100 {

// Columns [c0, c0 + 32) of this thread's row of the fp32 tile at TMEM
// `tmem_base` (lane = row). The whole warp, aligned.
__device__ inline void LoadRowColumns(uint32_t tmem_base, int c0, uint32_t (&v)[32]) {
  const int warp = (threadIdx.x % 128) / 32;
  cuda::ptx::tcgen05_ld_32x32b(v, TmemAddress(tmem_base, warp * 32, c0));
  cuda::ptx::tcgen05_wait_ld();
}

// v[j..j+7] fused with their four C pairs `c` (raw bits, as CPairBits
// gives them) and rounded to eight Form::kResult, one 16-byte value.
template <typename Form>
__device__ inline uint4 FuseEight(const uint32_t (&v)[32], int j, const uint32_t (&c)[4],
                                  const common::EpilogueArgs& ep) {
  typename common::Rounding<Form::kResult>::Pair h[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    h[e] = common::FuseWithC<Form>(__uint_as_float(v[j + 2 * e]), __uint_as_float(v[j + 2 * e + 1]),
                                   common::WidenCPair<Form>(c[e]), ep);
  }
  return *reinterpret_cast<const uint4*>(h);
}

// v[j..j+7], D's elements (row, col..col+7), fused as Form says
// (common::Fuse) and rounded to eight Form::kResult, one 16-byte value.
template <typename Form>
__device__ inline uint4 PackEight(const uint32_t (&v)[32], int j, const common::EpilogueArgs& ep, int64_t row,
                                  int64_t col) {
  if constexpr (Form::kFused) {  // the four C pairs in flight before any is used
    uint32_t c[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) c[e] = common::CPairBits<Form>(ep, row, col + 2 * e);
    return FuseEight<Form>(v, j, c, ep);
  } else {
    using Rounding = common::Rounding<Form::kResult>;
    typename Rounding::Pair h[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      h[e] = Rounding::RoundPair(__uint_as_float(v[j + 2 * e]), __uint_as_float(v[j + 2 * e + 1]));
    }
    return *reinterpret_cast<const uint4*>(h);
  }
}

// The 128×128 fp32 tile at TMEM `tmem_base` (lane = row, column = column)
// to D at (m0, n0) as Form::kResult, fused as Form says, whose rows lie
// `ldd` elements apart; elements outside m×n are not written. All 128
// threads.
template <typename Form>
__device__ inline void StoreTmemTile(uint32_t tmem_base, __half* d, int64_t m, int64_t n, int64_t ldd, int64_t m0,
                                     int64_t n0, const common::EpilogueArgs& ep) {
  using Rounding = common::Rounding<Form::kResult>;
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int64_t row = m0 + warp * 32 + lane;
  // Then 8 halves from an 8-aligned column are one aligned 16-byte store.
  const bool vectorized = common::Vectorizable(d, ldd);
#pragma unroll 1
  for (int c0 = 0; c0 < common::kTileRows; c0 += 32) {
    uint32_t v[32];
    LoadRowColumns(tmem_base, c0, v);
    if (row >= m) continue;
    auto* out = reinterpret_cast<typename Rounding::One*>(d) + row * ldd + n0 + c0;
#pragma unroll
    for (int j = 0; j < 32; j += 8) {
      const int64_t col = n0 + c0 + j;
      if (vectorized && col + 8 <= n) {
        *reinterpret_cast<uint4*>(out + j) = PackEight<Form>(v, j, ep, row, col);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          if (col + e < n) out[j + e] = Rounding::Round(common::Fuse<Form>(__uint_as_float(v[j + e]), ep, row, col + e));
        }
      }
    }
  }
}

// Steps 4+: the 128×128 fp32 tile at TMEM `tmem_base` to `d_tile` in
// shared memory as Form::kResult (fused as Form says: the tile is D's at
// (m0, n0)), in two swizzled 128×64 halves (the operand layout: a
// thread's row lands on the atom's eight banks, not one), for the TMA
// stores (common/tma.h, StoreDTile). All 128 threads. Fused with
// `c_in_tile`, `d_tile` holds C's tile (common::LoadCTile), and each
// thread reads its eight elements of C where it writes D's.
template <typename Form>
__device__ inline void TmemTileToSmem(uint32_t tmem_base, char* d_tile, const common::EpilogueArgs& ep, int64_t m0,
                                      int64_t n0, bool c_in_tile = false) {
  const int row = threadIdx.x % 128;  // warp w's lanes are rows 32w..32w+31
#pragma unroll 1
  for (int c0 = 0; c0 < common::kTileRows; c0 += 32) {
    uint32_t v[32];
    LoadRowColumns(tmem_base, c0, v);
    char* half_tile = d_tile + (c0 / common::kTileK) * common::kTileBytes;
#pragma unroll
    for (int j = 0; j < 32; j += 8) {
      const int chunk = (c0 % common::kTileK + j) / 8;
      // The address is written out in both paths: computed once above
      // them, it moved the plain instantiation's PTX (scripts/ptx_same_code.py).
      if constexpr (Form::kFused) {
        if (c_in_tile) {
          uint4* at = reinterpret_cast<uint4*>(half_tile + common::SwizzledChunkOffset(row, chunk));
          const uint4 c = *at;
          *at = FuseEight<Form>(v, j, {c.x, c.y, c.z, c.w}, ep);
          continue;
        }
      }
      *reinterpret_cast<uint4*>(half_tile + common::SwizzledChunkOffset(row, chunk)) =
          PackEight<Form>(v, j, ep, m0 + row, n0 + c0 + j);
    }
  }
}

// C's tile by TMA for steps 4-6 (common::LoadCTile), where the launch
// mapped it (TmaProblem::c_mapped): `map` null where it did not.
struct CTileByTma {
  const CUtensorMap* map = nullptr;
  uint64_t* full = nullptr;  // C's tile has landed in D's staging
  uint32_t parity = 0;       // of the phase that brings it
  int32_t entry = 0;         // the map's batch entry
};

// Steps 4-5, once the leader has seen the tile's last MMAs complete: the
// accumulator out of TMEM into `d_tile` (all threads), then the leader's TMA
// stores of its two halves to D at (m0, n0) of batch entry `entry`, waited
// for before it returns. With `c` mapped, the leader first asks for C's
// tile into `d_tile`, whose stages the MMAs have read, and every thread
// waits for it before the accumulator leaves TMEM.
template <typename Form>
__device__ inline void StoreAccumulatorTile(uint32_t tmem, char* d_tile, const CUtensorMap* d_map, int64_t m0,
                                            int64_t n0, int64_t n, int entry, bool leader,
                                            const common::EpilogueArgs& ep, const CTileByTma& c = {}) {
  const bool c_in_tile = Form::kFused && c.map != nullptr;
  if (c_in_tile && leader) common::LoadCTile(c.map, d_tile, m0, n0, n, c.entry, c.full);
  __syncthreads();
  TmemFenceAfterSync();
  if (c_in_tile) common::Wait(c.full, c.parity);
  TmemTileToSmem<Form>(tmem, d_tile, ep, m0, n0, c_in_tile);
  common::FenceSharedForAsyncProxy();
  __syncthreads();
  if (leader) common::StoreDTile(d_map, d_tile, m0, n0, n, entry);
}

}  // namespace gemm::sm100
