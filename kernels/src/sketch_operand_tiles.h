// VERIFICATION_FAST's two passes over op(B) taken in one read of B
// (sketch_operand_tiles.cu), where B allows: op(B)·x and (yᵀ·op(A))·op(B),
// which sketch_check.cu's line passes read B for once each.
#pragma once

#include <cuda_runtime.h>

#include "sketch_lines.h"

namespace gemm {

// Whether op(B)'s two passes (`by_signs`: op(B)·x, `by_vectors`: the
// k-vectors yᵀ·op(A) times op(B); sketch::PassesOf's b_rows and b_columns)
// can be taken by tiles: B 16-bit, stored with K or N contiguous in whole
// 4-element words from 8-byte boundaries.
bool OperandTilesApply(const sketch::OperandLines& by_signs, int64_t batch);

// Both passes' sums, as the two LaunchLines calls would leave them (up to
// the order of their fp64 additions). The k-vectors must be ready: the
// pass over A's columns runs first.
cudaError_t LaunchOperandTiles(const sketch::OperandLines& by_signs, const sketch::OperandLines& by_vectors,
                               int64_t batch, cudaStream_t stream);

}  // namespace gemm
