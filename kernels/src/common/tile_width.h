// Step 10's tile widths (sm90/step10_two_consumers.cu says why each pays).
// The wide pair tile, 128×256 per CTA, feeds the tensor cores best per byte
// of L2 traffic, but a problem of few tiles leaves most SMs idle under it.
// Then a tile of half its columns (medium, 128×128, one CTA without a
// cluster) or a quarter (narrow, 128×64) spreads the same M·N over two or
// four times as many SMs. No CUDA types, so that the CPU tests check the
// rule.
#pragma once

namespace gemm::common {

enum class TileWidth { kWide, kMedium, kNarrow };

// The widest tile that gives work to more than half the SMs: wide at any
// count, the narrower ones only within one wave (one CTA per SM). Beyond
// one wave a narrower tile's extra L2 traffic per MAC (the narrow tile reads
// 24 KB per k-tile for a quarter of the wide tile's work) would cost more
// than the idle SMs it fills. Where none gives work to over half the SMs,
// the narrow tile if its CTAs fit one wave (the most SMs busy, the least
// padding multiplied), else the medium one, else wide.
constexpr TileWidth ChooseTileWidth(int wide_ctas, int medium_ctas, int narrow_ctas, int sm_count) {
  if (2 * wide_ctas > sm_count) return TileWidth::kWide;
  if (2 * medium_ctas > sm_count && medium_ctas <= sm_count) return TileWidth::kMedium;
  if (narrow_ctas <= sm_count) return TileWidth::kNarrow;
  return medium_ctas <= sm_count ? TileWidth::kMedium : TileWidth::kWide;
}

}  // namespace gemm::common
