// Steps 1-3 write D straight from the accumulator registers to global
// memory (steps 4+ go through shared memory and a TMA store).
#pragma once

#include <cstdint>

#include "common/step_form.h"

namespace gemm::sm90 {

// acc[mb] holds rows [64·mb, 64·mb+64) of a 128×128 tile at (m0, n0), in
// wgmma's register layout (wgmma.h), fused as Form says (common::Fuse)
// and rounded to Form::kResult. Elements outside m×n are not written; D's
// rows lie `ldd` elements apart.
template <typename Form, int kMBlocks>
__device__ inline void StoreAccumulators(const float (&acc)[kMBlocks][64], __half* d, int64_t m, int64_t n,
                                         int64_t ldd, int64_t m0, int64_t n0, const common::EpilogueArgs& e) {
  using Rounding = common::Rounding<Form::kResult>;
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  // Then (row, even col) starts a 4-byte-aligned pair.
  const bool pairs = ldd % 2 == 0 && reinterpret_cast<uintptr_t>(d) % 4 == 0;
#pragma unroll
  for (int mb = 0; mb < kMBlocks; ++mb) {
#pragma unroll
    for (int i = 0; i < 64; i += 2) {
      const int64_t row = m0 + mb * 64 + warp * 16 + lane / 4 + 8 * ((i / 2) % 2);
      const int64_t col = n0 + 8 * (i / 4) + 2 * (lane % 4);
      if (row >= m) continue;
      auto* out = reinterpret_cast<typename Rounding::One*>(d) + row * ldd + col;
      const float lo = common::Fuse<Form>(acc[mb][i], e, row, col);
      const float hi = common::Fuse<Form>(acc[mb][i + 1], e, row, col + 1);
      if (pairs && col + 1 < n) {
        *reinterpret_cast<typename Rounding::Pair*>(out) = Rounding::RoundPair(lo, hi);
      } else {
        if (col < n) out[0] = Rounding::Round(lo);
        if (col + 1 < n) out[1] = Rounding::Round(hi);
      }
    }
  }
}

}  // namespace gemm::sm90
