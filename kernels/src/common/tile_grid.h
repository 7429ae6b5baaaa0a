// The host side of a grid of one CTA per 128×128 output tile (steps 3-5 of
// both families): x over the tile columns of N, y over the tile rows of M
// (grid y stops at 65535), z over a batch's entries (steps 4-5); for the
// TMA steps, the tensor maps too.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "common/batch.h"
#include "common/kernel_basics.h"
#include "common/tile_layout.h"
#include "common/step_form.h"
#include "common/tma_problem.h"
#include "gemm/gemm.h"

namespace gemm::common {

inline dim3 TileGrid(const Problem& p) {
  return dim3(CeilDiv(p.n, kTileRows), CeilDiv(p.m, kTileRows), static_cast<unsigned>(p.batch));
}

// "" if `step`'s grid can cover M, else why not.
inline std::string TileGridError(const Problem& p, int step) {
  if (CeilDiv(p.m, kTileRows) <= 65535) return "";
  return "step " + std::to_string(step) + " takes m <= 65535*128 (grid y limit)";
}

// Steps 4-5: kKernel(a_map, b_map, d_map, n, k, epilogue, batch) over the tile grid, with
// 128 threads and kSmemBytes of dynamic shared memory; the tensor maps, and
// any padded staging, from TmaProblem. With kCMap, kKernel(a_map, b_map,
// d_map, c_map, c_mapped, n, k, epilogue, batch), C mapped with D's box
// where TMA can take it in place (TmaProblem::c_mapped).
template <auto kKernel, int kSmemBytes, bool kCMap = false>
std::string LaunchTmaOnTileGrid(const Problem& p, cudaStream_t stream, int step) {
  if (auto err = TileGridError(p, step); !err.empty()) return err;
  TmaProblem tma;
  if (auto err = tma.Prepare(p, stream, {}, /*d_map=*/true, kCMap); !err.empty()) return err;
  if constexpr (kCMap) {
    kKernel<<<TileGrid(p), 128, kSmemBytes, stream>>>(tma.a(), tma.b(), tma.d(), tma.c(), tma.c_mapped(), p.n, p.k,
                                                      EpilogueOf(p), BatchOf(p));
  } else {
    kKernel<<<TileGrid(p), 128, kSmemBytes, stream>>>(tma.a(), tma.b(), tma.d(), p.n, p.k, EpilogueOf(p),
                                                      BatchOf(p));
  }
  if (auto err = LaunchError(); !err.empty()) return err;
  return tma.Finish(stream);
}

}  // namespace gemm::common
