// The host side every persistent TMA step shares: tensor maps (and padded
// staging), a grid of as many CTAs as are resident but no more than have
// work, the launch, and D back from its padded copy.
#pragma once

#include <algorithm>
#include <string>

#include "gemm/gemm.h"
#include "common/kernel_basics.h"
#include "common/resident_grid.h"
#include "common/tma_problem.h"

namespace gemm::common {

// kKernel(a_map, b_map, d_map, m, n, k) with kThreads threads, kSmemBytes of
// dynamic shared memory and compile-time clusters of kClusterSize CTAs.
// `work_ctas`: CTAs that would each get at least one tile.
template <auto kKernel, int kThreads, int kSmemBytes, int kClusterSize = 1>
std::string LaunchOnResidentGrid(const Problem& p, const DeviceContext& ctx, cudaStream_t stream, int work_ctas,
                                 TmaBoxRows boxes = {}) {
  static ResidentGrid grid(reinterpret_cast<const void*>(kKernel), kThreads, kSmemBytes, kClusterSize);
  TmaProblem tma;
  if (auto err = tma.Prepare(p, stream, boxes); !err.empty()) return err;
  const int ctas = std::min(work_ctas, grid.Ctas(ctx.device, ctx.sm_count));
  kKernel<<<ctas, kThreads, kSmemBytes, stream>>>(tma.a(), tma.b(), tma.d(), p.m, p.n, p.k);
  if (auto err = LaunchError(); !err.empty()) return err;
  return tma.Finish(stream);
}

}  // namespace gemm::common
