// The host side every persistent TMA step shares: tensor maps (and padded
// staging), a grid of as many CTAs as are resident but no more than have
// work, the launch, and D back from its padded copy; and the same for a
// split-K launch and for a split tail.
#pragma once

#include <algorithm>
#include <string>

#include "gemm/gemm.h"
#include "common/batch.h"
#include "common/kernel_basics.h"
#include "common/resident_grid.h"
#include "common/split_k.h"
#include "common/split_k_sum.h"
#include "common/step_form.h"
#include "common/tile_scheduler.h"
#include "common/tma_problem.h"

namespace gemm::common {

// kKernel(a_map, b_map, d_map, m, n, k, epilogue, batch) with kThreads threads, kSmemBytes of
// dynamic shared memory and compile-time clusters of kClusterSize CTAs;
// with kCMap, kKernel(a_map, b_map, d_map, c_map, c_mapped, m, n, k,
// epilogue, batch) for a kernel that reads C by TMA where c_mapped
// (TmaProblem::c_mapped) and by its own loads elsewhere, or kMappedCKernel
// in its place where C is mapped, if the two ways are two kernels (of the
// same threads, shared memory and residency).
// `work_ctas`: CTAs that would each get at least one tile.
template <auto kKernel, int kThreads, int kSmemBytes, int kClusterSize = 1, bool kCMap = false,
          auto kMappedCKernel = kKernel>
std::string LaunchOnResidentGrid(const Problem& p, const DeviceContext& ctx, cudaStream_t stream, int work_ctas,
                                 TmaBoxRows boxes = {}) {
  static ResidentGrid grid(reinterpret_cast<const void*>(kKernel), kThreads, kSmemBytes, kClusterSize);
  TmaProblem tma;
  if (auto err = tma.Prepare(p, stream, boxes, /*d_map=*/true, kCMap); !err.empty()) return err;
  const int ctas = std::min(work_ctas, grid.Ctas(ctx.device, ctx.sm_count));
  if constexpr (kCMap) {
    const auto kernel = tma.c_mapped() ? kMappedCKernel : kKernel;
    kernel<<<ctas, kThreads, kSmemBytes, stream>>>(tma.a(), tma.b(), tma.d(), tma.c(), tma.c_mapped(), p.m, p.n, p.k,
                                                   EpilogueOf(p), BatchOf(p));
  } else {
    kKernel<<<ctas, kThreads, kSmemBytes, stream>>>(tma.a(), tma.b(), tma.d(), p.m, p.n, p.k, EpilogueOf(p),
                                                    BatchOf(p));
  }
  if (auto err = LaunchError(); !err.empty()) return err;
  return tma.Finish(stream);
}

// Split-K (split_k.h) for a cluster kernel whose units are tile × range:
// kSplitKernel(a_map, b_map, m, n, k, partials, ldw, splits) writes each
// range's fp32 sums, then one kernel adds them up into D. Returns "" and
// sets *split when it ran; *split false, having launched nothing, when
// `tiles` already keep half the resident clusters busy, K is too short, or
// the problem is a batch (whose tiles are every entry's).
template <auto kSplitKernel, int kThreads, int kSmemBytes, int kClusterSize>
std::string LaunchSplitKOnResidentGrid(const Problem& p, const DeviceContext& ctx, cudaStream_t stream, int tiles,
                                       TmaBoxRows boxes, bool* split) {
  static ResidentGrid grid(reinterpret_cast<const void*>(kSplitKernel), kThreads, kSmemBytes, kClusterSize);
  *split = false;
  if (p.batch > 1) return "";
  const int resident = grid.Ctas(ctx.device, ctx.sm_count);
  const int splits = ChooseSplits(tiles, resident / kClusterSize, static_cast<int>(CeilDiv(p.k, kTileK)), p.m, p.n);
  *split = splits > 1;
  if (!*split) return "";
  TmaProblem tma;
  if (auto err = tma.Prepare(p, stream, boxes, /*d_map=*/false); !err.empty()) return err;
  const int64_t ldw = SplitKPitch(p.n);
  float* partials = nullptr;
  cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&partials), sizeof(float) * splits * p.m * ldw, stream);
  if (e != cudaSuccess) return std::string("split-K workspace: ") + cudaGetErrorString(e);
  const int ctas = std::min(tiles * splits * kClusterSize, resident);
  kSplitKernel<<<ctas, kThreads, kSmemBytes, stream>>>(tma.a(), tma.b(), p.m, p.n, p.k, partials, ldw, splits);
  std::string err = LaunchError();
  if (err.empty() &&
      (e = SumSplits(partials, splits, ldw, p.m, p.n, p.result, p.d, p.ldd, EpilogueOf(p), stream)) != cudaSuccess) {
    err = std::string("split-K sum: ") + cudaGetErrorString(e);
  }
  cudaFreeAsync(partials, stream);
  const std::string finished = tma.Finish(stream);
  return err.empty() ? finished : err;
}

// A split tail (split_k.h: SplitTail) for a cluster kernel whose units are
// whole tiles and then ranges of the last ones: kKernel(a_map, b_map,
// d_map, c_map, c_mapped, m, n, k, epilogue, batch, partials,
// whole_tiles, splits) writes the whole tiles' D and the split ones' fp32
// sums, a tile_rows × tile_cols block a range (the scheduler's tile), and
// a second kernel adds those up into D. Returns "" and sets *ran when it
// ran; *ran false, having launched nothing, where the last wave of tiles
// is full enough, K too short, or the problem a batch.
template <auto kKernel, int kThreads, int kSmemBytes, int kClusterSize>
std::string LaunchSplitTailOnResidentGrid(const Problem& p, const DeviceContext& ctx, cudaStream_t stream,
                                          int tile_rows, int tile_cols, TmaBoxRows boxes, bool* ran) {
  static ResidentGrid grid(reinterpret_cast<const void*>(kKernel), kThreads, kSmemBytes, kClusterSize);
  *ran = false;
  if (p.batch > 1) return "";
  const int tiles = TileScheduler(p.m, p.n, tile_rows, tile_cols).tiles();
  const int resident = grid.Ctas(ctx.device, ctx.sm_count);
  const SplitTail tail = ChooseSplitTail(tiles, resident / kClusterSize, static_cast<int>(CeilDiv(p.k, kTileK)));
  if (tail.splits == 1) return "";
  *ran = true;
  TmaProblem tma;
  if (auto err = tma.Prepare(p, stream, boxes, /*d_map=*/true, /*c_map=*/true); !err.empty()) return err;
  const int split_tiles = tiles - tail.whole_tiles;
  float* partials = nullptr;
  cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&partials),
                                  sizeof(float) * split_tiles * tail.splits * tile_rows * tile_cols, stream);
  if (e != cudaSuccess) return std::string("split tail workspace: ") + cudaGetErrorString(e);
  const int ctas = std::min((tail.whole_tiles + split_tiles * tail.splits) * kClusterSize, resident);
  kKernel<<<ctas, kThreads, kSmemBytes, stream>>>(tma.a(), tma.b(), tma.d(), tma.c(), tma.c_mapped(), p.m, p.n, p.k,
                                                  EpilogueOf(p), BatchOf(p), partials, tail.whole_tiles, tail.splits);
  std::string err = LaunchError();
  if (err.empty() && (e = SumTileSplits(partials, tail.splits, tail.whole_tiles, split_tiles, tile_rows, tile_cols,
                                        p.m, p.n, p.result, tma.d_written(), tma.ldd_written(), EpilogueOf(p),
                                        stream)) != cudaSuccess) {
    err = std::string("split tail sum: ") + cudaGetErrorString(e);
  }
  cudaFreeAsync(partials, stream);
  const std::string finished = tma.Finish(stream);
  return err.empty() ? finished : err;
}

}  // namespace gemm::common
