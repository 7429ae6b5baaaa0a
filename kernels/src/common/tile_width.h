// Step 10's tile widths (sm90/step10_two_consumers.cu says why each pays).
// The wide pair tile, 128×256 per CTA, feeds the tensor cores best per byte
// its shared memory moves, but a problem of few tiles leaves most SMs idle
// under it. Then a tile of half its columns (medium, 128×128, one CTA
// without a cluster) or a quarter (narrow, 128×64, or half height, 64×128)
// spreads the same M·N over two or four times as many SMs, and one of
// three quarters (128×192, one CTA) evens out a count of tiles that
// rounds badly onto the SMs. No CUDA types, so that the CPU tests check
// the rule.
#pragma once

#include <cstdint>

#include "common/tile_layout.h"  // kTileRows: every tile's rows

namespace gemm::common {

enum class TileWidth { kWide, kThreeQuarter, kMedium, kNarrow };

inline constexpr int kNarrowTileCols = 64;         // the narrow tile's columns (step 10 builds it so)
inline constexpr int kThreeQuarterTileCols = 192;  // the three-quarter tile's, 128 rows like the wide one
inline constexpr int kWideTileCols = 256;          // a wide CTA's (step 10 builds it so)

// CTAs with work under each tile for one problem.
struct TileCtas {
  int wide, three_quarter, medium, narrow;
};

// How many tiles the busiest work slot takes: each tile is one CTA and
// each SM holds one, but the wide tile's CTAs come in pairs (a cluster).
constexpr int WideWaves(int wide_ctas, int sm_count) {
  const int pairs = (wide_ctas + 1) / 2, slots = sm_count / 2 > 0 ? sm_count / 2 : 1;
  return (pairs + slots - 1) / slots;
}
constexpr int SoloWaves(int ctas, int sm_count) { return (ctas + sm_count - 1) / sm_count; }

// Where the wide tile gives work to more than half the SMs, it stays,
// unless a narrower tile takes no more waves: then the busiest SM does as
// many tiles, each a half or a quarter as wide, and the wide tile's extra
// columns were padding (n <= 64 makes as many narrow CTAs as wide ones;
// 1408² makes 121 medium CTAs, one wave, against 72 wide ones mostly
// rounded up from 1408 to 1536). One exception, measured: where M is a
// single row of tiles (m <= 128), the medium tile was slower at long K
// (2×11346×8399: 0.83 of the wide tile's speed) though faster at short K,
// so those stay wide (bench/results/h200_2026-11-28_tile_width_summary.txt).
// Failing those, the three-quarter tile (128×192) runs where its busiest
// SM multiplies at most four fifths of the columns the wide tile's would:
// waves × 192 against waves × 256. 1536³ makes 72 wide CTAs (one tile
// each) or 96 three-quarter ones; 3072³ 288 wide (three rounds on some
// SMs) or 384 (three, each 192 wide). At 4096³ it would take more
// (1,152 columns against 1,024) and at 8192³ about as many (4,032 against
// 4,096), so the wide tile stays: per MAC, its m64n256 wgmma and shared B
// cost less (tensor pipe 96% active at 4096³; the three-quarter tile's
// 85% at 3072³, bench/results/h200_2026-11-29_three_quarter_tile_summary.txt).
//
// Where the wide tile leaves over half the SMs idle: the medium tile if it
// busies more than half of them within one wave, else the narrow one if
// its CTAs fit one wave (the most SMs busy, the least padding multiplied),
// else the medium one, else wide. Beyond one wave a narrower tile's extra
// shared-memory traffic per MAC (the narrow tile's k-tile moves 56 KB for
// a quarter of the wide tile's work, whose k-tile moves 128 KB; both near
// 128 bytes a cycle: bench/results/h200_2026-11-28_narrow_tile_timeline_summary.txt)
// costs more than the idle SMs it fills.
constexpr TileWidth ChooseTileWidth(TileCtas ctas, int sm_count, bool single_tile_row) {
  if (2 * ctas.wide > sm_count) {
    const int waves = WideWaves(ctas.wide, sm_count);
    if (SoloWaves(ctas.narrow, sm_count) <= waves) return TileWidth::kNarrow;
    if (single_tile_row) return TileWidth::kWide;
    if (SoloWaves(ctas.medium, sm_count) <= waves) return TileWidth::kMedium;
    const int64_t three_quarter_cols = int64_t{SoloWaves(ctas.three_quarter, sm_count)} * kThreeQuarterTileCols;
    const int64_t wide_cols = int64_t{waves} * kWideTileCols;
    return 5 * three_quarter_cols <= 4 * wide_cols ? TileWidth::kThreeQuarter : TileWidth::kWide;
  }
  if (2 * ctas.medium > sm_count && ctas.medium <= sm_count) return TileWidth::kMedium;
  if (ctas.narrow <= sm_count) return TileWidth::kNarrow;
  return ctas.medium <= sm_count ? TileWidth::kMedium : TileWidth::kWide;
}

// Where the narrow tile runs and N is wider than its 64 columns, the same
// CTAs take tiles of 64×128 instead (half height: one consumer on
// m64n128). A k-tile of the narrow tile moves 56 KB through shared memory
// (two consumers' m64n64 wgmma each read all of B's 64 rows: 32 KB; the TMA
// writes 24 KB); the half-height tile's moves 48 (24 read, 24 written) for
// the same MACs, with half the warps issuing. 1024²×8192: 59-61K cycles
// against 67-68K (bench/results/h200_2026-11-28_half_height_tile_summary.txt).
// It stays where it would make more CTAs than the narrow tile (ragged M
// just past a multiple of 64), and where N fits the narrow tile's columns.
inline constexpr int kHalfHeightTileRows = 64;  // step 10 builds it so, 128 columns wide
constexpr bool HalfHeightReplacesNarrow(int64_t n, int narrow_ctas, int half_height_ctas) {
  return n > kNarrowTileCols && half_height_ctas <= narrow_ctas;
}

// Split-K on the pair tile costs a second kernel and a round trip of its
// fp32 sums, 128×256 a CTA, through a workspace: at 1024²×4096 on an H200
// its four ranges took 20 µs and their sum 7.7 more, where cuBLAS's whole
// GEMM took 18. So where the pair tile would split (M > 128, N > 64) but
// the tile ChooseTileWidth picks already gives over half the SMs work, K
// stays whole up to kLongestKUnsplit k-tiles: 1.02-1.84x faster at K up to
// 8192, slower from 12288 (1024² and 2048×1024,
// bench/results/h200_2026-11-28_split_or_narrower_summary.txt). The
// one-CTA tiles' splits write one row or column of tiles' sums and stay
// (6×5245×2866: 23 µs split on the medium tile, 29 on the narrow one
// whole). `ctas`: the picked tile's CTAs.
inline constexpr int kLongestKUnsplit = 128;  // k-tiles: K = 8192
constexpr bool SplitKMayRun(int64_t m, int64_t n, int ctas, int k_tiles, int sm_count) {
  return m <= kTileRows || n <= kNarrowTileCols || 2 * ctas <= sm_count || k_tiles > kLongestKUnsplit;
}

// The tile split-K runs on (common/split_k.h): the narrow one where N
// fits its 64 columns, the medium one where M fits one row of tiles (the
// pair tile's lower CTA would multiply no rows), else the pair tile. Each
// keeps about as many SMs busy as the pair tile would, with less padding.
constexpr TileWidth SplitKTileWidth(int64_t m, int64_t n) {
  if (n <= kNarrowTileCols) return TileWidth::kNarrow;
  if (m <= kTileRows) return TileWidth::kMedium;
  return TileWidth::kWide;
}

}  // namespace gemm::common
