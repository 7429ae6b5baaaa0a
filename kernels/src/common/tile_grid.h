// The host side of a grid of one CTA per 128×128 output tile (steps 3-5 of
// both families): x over the tile columns of N, y over the tile rows of M
// (grid y stops at 65535).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "common/kernel_basics.h"
#include "common/tile_layout.h"
#include "gemm/gemm.h"

namespace gemm::common {

inline dim3 TileGrid(const Problem& p) { return dim3(CeilDiv(p.n, kTileRows), CeilDiv(p.m, kTileRows)); }

// "" if `step`'s grid can cover M, else why not.
inline std::string TileGridError(const Problem& p, int step) {
  if (CeilDiv(p.m, kTileRows) <= 65535) return "";
  return "step " + std::to_string(step) + " takes m <= 65535*128 (grid y limit)";
}

}  // namespace gemm::common
