// VERIFICATION_FAST's passes over a 16-bit operand by tiles
// (sketch_operand_tiles.cu), where the operand allows: op(B)·x and
// (yᵀ·op(A))·op(B) in one read of B, and A's yᵀ·op(A) and
// op(A)·(op(B)·x), each of which needs a k-vector that a pass over B
// makes or reads, one at a time.
#pragma once

#include <cuda_runtime.h>

#include "sketch_lines.h"

namespace gemm {

// Which of an operand's two passes a launch takes.
enum class OperandPasses { kBySigns, kByVectors, kBoth };

// Whether an operand's passes (`by_signs`: op(B)·x or yᵀ·op(A);
// `by_vectors`: (yᵀ·op(A))·op(B) or op(A)·(op(B)·x); sketch::PassesOf's
// b_rows and b_columns, or a_columns and a_rows) can be taken by tiles: the
// operand 16-bit, stored with K or its other axis contiguous, in whole
// 4-element words from 8-byte boundaries.
bool OperandTilesApply(const sketch::OperandLines& by_signs, int64_t batch);

// The passes' sums, as LaunchLines would leave them (up to the order of
// their fp64 additions). A pass by vectors needs its k-vectors ready.
cudaError_t LaunchOperandTiles(const sketch::OperandLines& by_signs, const sketch::OperandLines& by_vectors,
                               OperandPasses passes, int64_t batch, cudaStream_t stream);

}  // namespace gemm
