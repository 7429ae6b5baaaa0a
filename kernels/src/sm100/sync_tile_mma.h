// Steps 2-3: the K loop over one 128×128 output tile with synchronous
// loads. Each k-tile: all threads copy A and B into the swizzled tiles,
// one thread issues the tile's MMAs into TMEM (overwriting on the first
// k-tile, accumulating after) and commits them; every thread waits on the
// commit's phase (k-tile % 2), which also frees the tiles for the next load.
#pragma once

#include "common/barrier.h"
#include "common/kernel_basics.h"
#include "common/step_form.h"
#include "common/sync_load.h"
#include "gemm/gemm.h"
#include "tmem.h"
#include "umma.h"

namespace gemm::sm100 {

template <typename Form>
__device__ inline void MultiplyTileSync(const Problem& p, int64_t m0, int64_t n0, char* a_tile, char* b_tile,
                                        uint32_t tmem, uint64_t* mma_done) {
  const bool a_vectorized = common::Vectorizable(p.a, p.lda), b_vectorized = common::Vectorizable(p.b, p.ldb);
  uint32_t k_tile = 0;
  for (int64_t k0 = 0; k0 < p.k; k0 += common::kTileK, ++k_tile) {
    common::LoadOperandTileSync<Form::kALayout>(a_tile, p.a, p.m, p.k, p.lda, m0, k0, a_vectorized);
    common::LoadOperandTileSync<Form::kBLayout>(b_tile, p.b, p.n, p.k, p.ldb, n0, k0, b_vectorized);
    common::FenceSharedForAsyncProxy();
    __syncthreads();
    if (threadIdx.x == 0) {
      TmemFenceAfterSync();
      IssueTileMma<common::KMajorTiles<Form>>(tmem, a_tile, b_tile, /*accumulate=*/k0 > 0);
      CommitTo(mma_done);
    }
    common::Wait(mma_done, k_tile % 2);
  }
  TmemFenceAfterSync();
}

}  // namespace gemm::sm100
