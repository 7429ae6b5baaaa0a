// VERIFICATION_FAST's sums over D taken in one read of it, rows and
// columns together (sketch_d_tiles.cu), where D allows: the two passes of
// sketch_check.cu read D once each.
#pragma once

#include <cuda_runtime.h>

#include "sketch_lines.h"

namespace gemm {

// Whether D's row and column sums (`rows`, `columns`: the passes of
// sketch::PassesOf) can be taken by tiles: D 16-bit, its rows contiguous,
// a whole number of 4-element words a row from 8-byte boundaries, and C,
// where read, of D's type and laid out the same way.
bool DTilesApply(const sketch::DLines& rows);

// Both passes' sums, as the two LaunchLines calls would leave them (up to
// the order of their fp64 additions).
cudaError_t LaunchDTiles(const sketch::DLines& rows, const sketch::DLines& columns, int64_t batch,
                         cudaStream_t stream);

}  // namespace gemm
