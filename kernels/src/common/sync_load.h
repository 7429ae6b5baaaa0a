// Steps 1-3 of both families load operands synchronously: all 128 threads copy a 128×64
// tile from global memory into the swizzled layout, 16 bytes at a time,
// zero-filling what lies outside the matrix (ragged M, N or K).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "common/tile_layout.h"
#include "gemm/form.h"

namespace gemm::common {

// Rows [row0, row0+128) and columns [k0, k0+64) of a row-major rows×cols
// matrix whose rows lie `ld` elements apart. `vectorized`: Vectorizable(g, ld).
__device__ inline void LoadTileSync(char* smem_tile, const __half* g, int64_t rows, int64_t cols, int64_t ld,
                                    int64_t row0, int64_t k0, bool vectorized) {
  for (int c = threadIdx.x % 128; c < kTileRows * 8; c += 128) {
    const int r = c / 8, chunk = c % 8;
    const int64_t gr = row0 + r, gk = k0 + chunk * 8;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (gr < rows && gk < cols) {
      const __half* src = g + gr * ld + gk;
      if (vectorized && gk + 8 <= cols) {
        v = *reinterpret_cast<const uint4*>(src);
      } else {
        __half h[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) h[e] = gk + e < cols ? src[e] : __float2half(0.0f);
        v = *reinterpret_cast<const uint4*>(h);
      }
    }
    *reinterpret_cast<uint4*>(smem_tile + SwizzledChunkOffset(r, chunk)) = v;
  }
}

// The same K-major tile from an operand stored MN-contiguous (k×rows at
// pitch `ld`, `cols` being K): a transposing gather. Each thread builds one
// 16-byte chunk (8 k of one row) from 8 rows of the storage; the 32 threads
// of a warp take 32 adjacent rows, so each of their 8 reads is one
// coalesced 64-byte line.
__device__ inline void LoadTransposedTileSync(char* smem_tile, const __half* g, int64_t rows, int64_t cols, int64_t ld,
                                              int64_t row0, int64_t k0) {
  const auto* bits = reinterpret_cast<const uint16_t*>(g);
  for (int c = threadIdx.x % 128; c < kTileRows * 8; c += 128) {
    const int r = c % kTileRows, chunk = c / kTileRows;
    const int64_t gr = row0 + r;
    uint16_t h[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int64_t gk = k0 + chunk * 8 + e;
      h[e] = gr < rows && gk < cols ? bits[gk * ld + gr] : uint16_t{0};
    }
    *reinterpret_cast<uint4*>(smem_tile + SwizzledChunkOffset(r, chunk)) = *reinterpret_cast<const uint4*>(h);
  }
}

// An operand's tile by its storage (gemm/form.h): rows×cols is the operand
// as the product reads it (M or N by K), whatever way it is stored.
template <Layout kLayout>
__device__ inline void LoadOperandTileSync(char* smem_tile, const __half* g, int64_t rows, int64_t cols, int64_t ld,
                                           int64_t row0, int64_t k0, bool vectorized) {
  if constexpr (kLayout == Layout::kKContiguous) {
    LoadTileSync(smem_tile, g, rows, cols, ld, row0, k0, vectorized);
  } else {
    LoadTransposedTileSync(smem_tile, g, rows, cols, ld, row0, k0);
  }
}

}  // namespace gemm::common
