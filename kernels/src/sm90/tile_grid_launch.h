// The host side of Hopper's steps 4-5 on the tile grid (common/tile_grid.h).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "gemm/gemm.h"
#include "common/tile_grid.h"
#include "step_common.h"
#include "tma_problem.h"

namespace gemm::sm90 {

// Steps 4-5: kKernel(a_map, b_map, d_map, n, k) over the tile grid, with
// 128 threads and kSmemBytes of dynamic shared memory; the tensor maps, and
// any padded staging, from TmaProblem.
template <auto kKernel, int kSmemBytes>
std::string LaunchTmaOnTileGrid(const Problem& p, cudaStream_t stream, int step) {
  if (auto err = TileGridError(p, step); !err.empty()) return err;
  TmaProblem tma;
  if (auto err = tma.Prepare(p, stream); !err.empty()) return err;
  kKernel<<<TileGrid(p), 128, kSmemBytes, stream>>>(tma.a(), tma.b(), tma.d(), p.n, p.k);
  if (auto err = LaunchError(); !err.empty()) return err;
  return tma.Finish(stream);
}

}  // namespace gemm::sm90
