// Split-K for the persistent TMA steps. When M·N gives fewer output tiles
// than the GPU has work slots (CTAs, or clusters) and K is long, one slot
// walks all of K while the others idle: a 16-row, 16K-deep GEMM took step
// 10 as long as 263 k-tiles in a row. Split K into `splits` ranges instead:
// each (tile, range) is a unit of work whose fp32 accumulators go to a
// workspace, and a second kernel sums the ranges of each element in a
// fixed order and rounds once to fp16. The order never changes, so D is
// bit-identical from run to run; the sum stays in fp32, so ladder.md's
// bound holds as it does for one range.
//
// This header is the plan, host and device, with no CUDA types, so that
// the CPU tests check it; split_k_sum.h declares the sum.
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/tile_layout.h"  // GEMM_TILE_HD

namespace gemm::common {

// Each range is at least this many k-tiles, so that a unit's fp32 store
// (and the sum's reads) stay small beside its multiply; and K is split only
// when it has kMinKTilesToSplit, where halving it saves more than the
// second launch and the fp32 round trip cost (a few µs on an H100).
inline constexpr int kMinKTilesPerSplit = 8;
inline constexpr int kMinKTilesToSplit = 32;
// The workspace (splits × m × pitch floats) stays under this.
inline constexpr int64_t kMaxSplitWorkspaceBytes = int64_t{256} << 20;

// k-tiles [begin, end) of range `split` of `splits`; none is empty when
// splits <= k_tiles, and together they cover [0, k_tiles) once.
GEMM_TILE_HD inline void SplitKRange(int split, int splits, int k_tiles, int* begin, int* end) {
  *begin = static_cast<int>(int64_t{split} * k_tiles / splits);
  *end = static_cast<int>(int64_t{split + 1} * k_tiles / splits);
}

// Floats from one row of a range's partial sums to the next: whole 16
// bytes, so that a thread's two adjacent columns are one aligned store.
inline int64_t SplitKPitch(int64_t n) { return (n + 3) / 4 * 4; }

// How many ranges for `tiles` output tiles on `slots` work slots: enough
// that every slot gets a unit, no more than k_tiles / kMinKTilesPerSplit,
// and within the workspace cap. 1 means no split.
inline int ChooseSplits(int tiles, int slots, int k_tiles, int64_t m, int64_t n) {
  if (tiles <= 0 || tiles * 2 > slots) return 1;  // half the slots or more busy already
  if (k_tiles < kMinKTilesToSplit) return 1;
  int splits = std::min(slots / tiles, k_tiles / kMinKTilesPerSplit);
  const int64_t range_bytes = m * SplitKPitch(n) * 4;
  splits = static_cast<int>(std::min<int64_t>(splits, kMaxSplitWorkspaceBytes / std::max<int64_t>(range_bytes, 1)));
  return std::max(splits, 1);
}

// The split tail. Where a problem has more tiles than work slots, they
// run in waves, and a last wave of few tiles leaves most slots idle for a
// whole tile's time: 3840³ makes 225 pair tiles for 66 clusters, three full
// waves and a fourth of 27. Each of those last tiles can be split into
// ranges of K instead, as split-K does (one launch: the whole tiles first,
// then the split ones, and the sum of the split ones after), so that the
// last wave's work takes about 1/splits of a tile's time. Only where the
// last wave fills at most half the slots (with more, two ranges a tile
// would not fit in one wave; three, tried at 2560³ and 3328³, were
// 0.64-0.79×) and K has kMinKTilesForSplitTail: the split tiles' fp32 sums
// and the second kernel cost about 7 µs on an H200 (3840²: the sum kernel
// alone 7.1 µs in ncu), which half a wide tile at K = 2048 barely repays
// (3840²×2048: 0.99×, bf16 x @ W + C 0.96×), and from K = 3072 repays in
// every shape measured: 1.01-1.21×
// (bench/results/h200_2026-11-29_split_tail_summary.txt). Step 10 runs it
// without α or β·C only (its LaunchTwoConsumers says why).
inline constexpr int kMinKTilesForSplitTail = 48;
struct SplitTail {
  int whole_tiles;  // the tiles that run whole: the first ones, in the scheduler's order
  int splits;       // ranges of each later tile; 1: no split tail
};

inline SplitTail ChooseSplitTail(int tiles, int slots, int k_tiles) {
  const SplitTail none{tiles, 1};
  if (slots <= 0 || tiles <= slots || k_tiles < kMinKTilesForSplitTail) return none;
  const int rest = tiles % slots;
  if (rest == 0 || 2 * rest > slots) return none;
  return {tiles - rest, std::min(slots / rest, k_tiles / kMinKTilesPerSplit)};
}

}  // namespace gemm::common
