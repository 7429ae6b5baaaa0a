// The second half of split-K (split_k.h): the ranges' fp32 sums added up.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/step_form.h"
#include "gemm/element_type.h"

namespace gemm::common {

// D (m×n at pitch ldd, of type `result`: fp16 or bf16) = the sum over
// s = 0, 1, ... in that order of partials[s], then α·sum + β·C where the
// epilogue is fused (IsFused), rounded once; partials[s] is m×n at pitch
// `ldw`, splits × m × ldw floats.
cudaError_t SumSplits(const float* partials, int splits, int64_t ldw, int64_t m, int64_t n, ElementType result,
                      __half* d, int64_t ldd, const EpilogueArgs& epilogue, cudaStream_t stream);

// The same for a split tail (split_k.h: SplitTail): only the tiles from
// `first_tile` on, `tiles` of them, in the order TileScheduler(m, n,
// tile_rows, tile_cols) gives them. Each tile's ranges lie together:
// partials[((t - first_tile) · splits + s) · tile_rows · tile_cols], a
// tile_rows × tile_cols block each, rows tile_cols apart (a multiple of
// 8 that divides 2048). D's other tiles are left as they are.
cudaError_t SumTileSplits(const float* partials, int splits, int first_tile, int tiles, int tile_rows, int tile_cols,
                          int64_t m, int64_t n, ElementType result, __half* d, int64_t ldd,
                          const EpilogueArgs& epilogue, cudaStream_t stream);

}  // namespace gemm::common
