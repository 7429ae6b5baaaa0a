// Which tile step 10 takes (kernels/src/common/tile_width.h), on the CPU,
// with an H100's 132 SMs: wide while it gives work to over half the SMs and
// no narrower tile takes as few waves, else the widest narrower tile that
// does within one wave.
#include <gtest/gtest.h>

#include <cstdint>

#include "common/tile_width.h"

namespace {

using gemm::common::ChooseTileWidth;
using gemm::common::TileWidth;

constexpr int kSms = 132;
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
// Step 10's tiles: wide, 256×256 per pair of CTAs; medium, 128×128 per CTA;
// narrow, 128×64 per CTA.
int WideCtas(int64_t m, int64_t n) { return static_cast<int>(2 * CeilDiv(m, 256) * CeilDiv(n, 256)); }
int MediumCtas(int64_t m, int64_t n) { return static_cast<int>(CeilDiv(m, 128) * CeilDiv(n, 128)); }
int NarrowCtas(int64_t m, int64_t n) { return static_cast<int>(CeilDiv(m, 128) * CeilDiv(n, 64)); }
// Half height, 64×128 per CTA (taken where the narrow tile would run).
int HalfHeightCtas(int64_t m, int64_t n) { return static_cast<int>(CeilDiv(m, 64) * CeilDiv(n, 128)); }
// Three quarters, 128×192 per CTA.
int ThreeQuarterCtas(int64_t m, int64_t n) { return static_cast<int>(CeilDiv(m, 128) * CeilDiv(n, 192)); }
TileWidth Width(int64_t m, int64_t n) {
  return ChooseTileWidth({WideCtas(m, n), ThreeQuarterCtas(m, n), MediumCtas(m, n), NarrowCtas(m, n)}, kSms,
                         m <= 128);
}

TEST(TileWidth, TinyAndSmallProblemsTakeTheNarrowTile) {
  EXPECT_EQ(Width(64, 64), TileWidth::kNarrow);     // 2 wide CTAs, 1 narrow
  EXPECT_EQ(Width(1, 1), TileWidth::kNarrow);
  EXPECT_EQ(Width(432, 74), TileWidth::kNarrow);    // 4 wide, 8 narrow
  EXPECT_EQ(Width(1209, 717), TileWidth::kNarrow);  // 30 wide, 60 medium, 120 narrow
  EXPECT_EQ(Width(1000, 1001), TileWidth::kNarrow); // 32 wide, 64 medium, 128 narrow
  EXPECT_EQ(Width(1024, 1024), TileWidth::kNarrow);
  EXPECT_EQ(Width(512, 2048), TileWidth::kNarrow);  // 32 wide, 64 medium, 128 narrow
}

TEST(TileWidth, WhereTheNarrowTileWouldNeedASecondWaveTheMediumOneRuns) {
  // 2048×1024: 64 wide CTAs leave over half the SMs idle; 128 medium CTAs
  // fill one wave (256 narrow would need two).
  EXPECT_EQ(WideCtas(2048, 1024), 64);
  EXPECT_EQ(MediumCtas(2048, 1024), 128);
  EXPECT_EQ(Width(2048, 1024), TileWidth::kMedium);
  EXPECT_EQ(Width(1024, 2048), TileWidth::kMedium);
  EXPECT_EQ(Width(1024, 1536), TileWidth::kMedium);  // 48 wide, 96 medium
  EXPECT_EQ(Width(1024, 1100), TileWidth::kMedium);  // 40 wide, 72 medium, 144 narrow
}

TEST(TileWidth, ProblemsThatFillTheGpuKeepTheWideTile) {
  EXPECT_EQ(Width(4096, 4096), TileWidth::kWide);  // 512 wide CTAs
  EXPECT_EQ(Width(8192, 8192), TileWidth::kWide);
  EXPECT_EQ(Width(2000, 2000), TileWidth::kWide);  // 128 wide: most SMs busy
  EXPECT_EQ(Width(2048, 2048), TileWidth::kWide);  // 128 wide, one wave; 176 three-quarter, two
  EXPECT_EQ(Width(2560, 2560), TileWidth::kWide);  // 200 wide, two waves (512 columns); 280, three (576)
}

TEST(TileWidth, WherePairTilesRoundBadlyOntoTheSmsTheThreeQuarterTileRuns) {
  // 1536²: 72 wide CTAs (one wave, 256 columns on the busiest SM), 144
  // medium (two waves), 96 three-quarter (one wave, 192 columns).
  EXPECT_EQ(WideCtas(1536, 1536), 72);
  EXPECT_EQ(ThreeQuarterCtas(1536, 1536), 96);
  EXPECT_EQ(Width(1536, 1536), TileWidth::kThreeQuarter);
  EXPECT_EQ(Width(3072, 3072), TileWidth::kThreeQuarter);  // 288 wide, three waves (768); 384, three (576)
  EXPECT_EQ(Width(2304, 2304), TileWidth::kThreeQuarter);  // 162 wide, two (512); 216, two (384)
  EXPECT_EQ(Width(1024, 3072), TileWidth::kThreeQuarter);  // 96 wide (256); 128 three-quarter (192)
  EXPECT_EQ(Width(1500, 1430), TileWidth::kThreeQuarter);  // ragged: 72 wide, 96 three-quarter
  // Where it would not save a fifth of the columns, the wide tile stays.
  EXPECT_EQ(Width(4096, 4096), TileWidth::kWide);  // 4 waves (1024) against 6 (1152)
  EXPECT_EQ(Width(8192, 8192), TileWidth::kWide);  // 16 waves (4096) against 21 (4032): within a fifth
}

TEST(TileWidth, ANarrowerTileInNoMoreWavesTakesOver) {
  // n <= 64: as many narrow CTAs as wide ones, a quarter of the columns each.
  EXPECT_EQ(Width(20330, 14), TileWidth::kNarrow);  // 160 wide, 159 narrow: two waves either way
  EXPECT_EQ(Width(9161, 64), TileWidth::kNarrow);   // 72 and 72
  // 1408 rounds up to 1536 in the wide tile: 72 wide CTAs, one wave, or 121
  // medium ones, one wave too (242 narrow: two).
  EXPECT_EQ(Width(1408, 1408), TileWidth::kMedium);
  EXPECT_EQ(Width(356, 4869), TileWidth::kMedium);  // 80 wide, 117 medium, 231 narrow
  EXPECT_EQ(Width(8600, 330), TileWidth::kMedium);  // 136 wide and 204 medium: two waves each
}

TEST(TileWidth, ASingleRowOfTilesKeepsTheWideTileOverTheMediumOne) {
  EXPECT_EQ(WideCtas(2, 11346), 90);
  EXPECT_EQ(MediumCtas(2, 11346), 89);
  EXPECT_EQ(Width(2, 11346), TileWidth::kWide);
  EXPECT_EQ(Width(128, 20000), TileWidth::kWide);
  // Only a single row of tiles makes about as many medium CTAs as wide ones
  // (the pair tile is 256 rows): two rows make twice as many, a wave more.
  // Neither does it keep the three-quarter tile off: 129×10000 makes 80
  // wide CTAs (one wave) or 106 three-quarter ones, 1.06× faster at K = 1024
  // and 0.99× at 4096 on an H200
  // (bench/results/h200_2026-11-29_three_quarter_tile_summary.txt).
  EXPECT_EQ(Width(129, 10000), TileWidth::kThreeQuarter);  // 158 medium: two waves
}

TEST(TileWidth, WavesCountPairsOnHalfTheSms) {
  EXPECT_EQ(gemm::common::WideWaves(132, kSms), 1);
  EXPECT_EQ(gemm::common::WideWaves(134, kSms), 2);
  EXPECT_EQ(gemm::common::WideWaves(512, kSms), 4);
  EXPECT_EQ(gemm::common::SoloWaves(132, kSms), 1);
  EXPECT_EQ(gemm::common::SoloWaves(133, kSms), 2);
}

TEST(TileWidth, SplitKRunsOnTheTileWithTheLeastPadding) {
  using gemm::common::SplitKTileWidth;
  EXPECT_EQ(SplitKTileWidth(16, 16), TileWidth::kNarrow);
  EXPECT_EQ(SplitKTileWidth(8192, 64), TileWidth::kNarrow);
  EXPECT_EQ(SplitKTileWidth(128, 65), TileWidth::kMedium);  // one row of tiles: the pair's lower CTA idle
  EXPECT_EQ(SplitKTileWidth(1, 1306), TileWidth::kMedium);
  EXPECT_EQ(SplitKTileWidth(129, 65), TileWidth::kWide);
  EXPECT_EQ(SplitKTileWidth(872, 644), TileWidth::kWide);
}

TEST(TileWidth, KStaysWholeWhereTheTileAlreadyBusiesHalfTheSmsUnlessItIsLong) {
  using gemm::common::SplitKMayRun;
  // 1024²: the pair tile's 32 CTAs would split K four ways (its fp32 sums
  // 128×256 a CTA); the narrow tile's 128 CTAs keep 128 SMs busy whole.
  EXPECT_EQ(Width(1024, 1024), TileWidth::kNarrow);
  EXPECT_FALSE(SplitKMayRun(1024, 1024, NarrowCtas(1024, 1024), 32, kSms));   // K = 2048
  EXPECT_FALSE(SplitKMayRun(1024, 1024, NarrowCtas(1024, 1024), 128, kSms));  // K = 8192, the longest kept whole
  EXPECT_TRUE(SplitKMayRun(1024, 1024, NarrowCtas(1024, 1024), 129, kSms));
  // 2048×1024: 128 medium CTAs.
  EXPECT_EQ(Width(2048, 1024), TileWidth::kMedium);
  EXPECT_FALSE(SplitKMayRun(2048, 1024, MediumCtas(2048, 1024), 64, kSms));
  // Where no tile fills half the SMs, K splits as before: the start-up
  // self-test's 200×300 (10 narrow CTAs), the GPU tests' 8192×32 (64) and
  // 16×16 (1).
  EXPECT_TRUE(SplitKMayRun(200, 300, NarrowCtas(200, 300), 63, kSms));
  EXPECT_TRUE(SplitKMayRun(8192, 32, NarrowCtas(8192, 32), 64, kSms));
  EXPECT_TRUE(SplitKMayRun(16, 16, NarrowCtas(16, 16), 256, kSms));
  EXPECT_TRUE(SplitKMayRun(1024, 1024, 66, 32, kSms));  // half exactly
  EXPECT_FALSE(SplitKMayRun(1024, 1024, 67, 32, kSms));
  // The one-CTA tiles split as before though a tile busies half the SMs:
  // 6×5245 splits on the medium tile, though 82 narrow CTAs would run whole.
  EXPECT_EQ(Width(6, 5245), TileWidth::kNarrow);
  EXPECT_TRUE(SplitKMayRun(6, 5245, NarrowCtas(6, 5245), 45, kSms));
  EXPECT_TRUE(SplitKMayRun(128, 1000, 100, 45, kSms));
  EXPECT_TRUE(SplitKMayRun(5000, 64, 100, 45, kSms));
  EXPECT_FALSE(SplitKMayRun(129, 65, 100, 45, kSms));
}

TEST(TileWidth, WhereNIsWiderThanTheNarrowTileItsCtasTakeHalfHeightTiles) {
  using gemm::common::HalfHeightReplacesNarrow;
  auto replaces = [](int64_t m, int64_t n) {
    return HalfHeightReplacesNarrow(n, NarrowCtas(m, n), HalfHeightCtas(m, n));
  };
  EXPECT_TRUE(replaces(1024, 1024));   // 128 CTAs either way
  EXPECT_TRUE(replaces(1000, 1001));   // 128 either way
  EXPECT_TRUE(replaces(5580, 117));    // 88 either way
  EXPECT_TRUE(replaces(1209, 717));    // 114 against 120
  EXPECT_TRUE(replaces(4, 6021));      // 48 against 95: less padding in M as well
  EXPECT_TRUE(replaces(64, 65));
  // N fits the narrow tile: the half-height tile would multiply padding.
  EXPECT_FALSE(replaces(20330, 14));
  EXPECT_FALSE(replaces(64, 64));
  EXPECT_FALSE(replaces(1, 1));
  // M just past a multiple of 64 in each narrow tile's 128 rows: more CTAs.
  EXPECT_FALSE(replaces(200, 300));    // 12 against 10
  EXPECT_FALSE(replaces(65, 129));     // 4 against 3
  EXPECT_TRUE(replaces(64, 129));      // 2 against 3
  EXPECT_TRUE(replaces(65, 128));      // 2 against 2: ties go to the half-height tile
}

TEST(TileWidth, TheBoundariesAreInclusive) {
  // {wide, three-quarter, medium, narrow} CTAs.
  EXPECT_EQ(ChooseTileWidth({67, 133, 134, 268}, kSms, false), TileWidth::kWide);
  EXPECT_EQ(ChooseTileWidth({67, 133, 132, 268}, kSms, false), TileWidth::kMedium);  // one wave, as the wide tile's
  EXPECT_EQ(ChooseTileWidth({67, 133, 132, 268}, kSms, true), TileWidth::kWide);
  EXPECT_EQ(ChooseTileWidth({67, 133, 132, 132}, kSms, true), TileWidth::kNarrow);
  EXPECT_EQ(ChooseTileWidth({66, 99, 132, 264}, kSms, false), TileWidth::kMedium);
  EXPECT_EQ(ChooseTileWidth({66, 99, 66, 132}, kSms, false), TileWidth::kNarrow);
  EXPECT_EQ(ChooseTileWidth({33, 50, 67, 133}, kSms, false), TileWidth::kMedium);
  // No tile fills half; narrow needs two waves.
  EXPECT_EQ(ChooseTileWidth({33, 50, 66, 133}, kSms, false), TileWidth::kMedium);
  // The three-quarter tile: one wave (192 columns) against the wide tile's one (256).
  EXPECT_EQ(ChooseTileWidth({67, 132, 134, 268}, kSms, false), TileWidth::kThreeQuarter);
  EXPECT_EQ(ChooseTileWidth({67, 132, 134, 268}, kSms, true), TileWidth::kWide);  // a single row of tiles
  // 15 wide waves (3,840 columns) against 16 three-quarter ones (3,072: four fifths exactly), or 17.
  EXPECT_EQ(ChooseTileWidth({1980, 2112, 4000, 8000}, kSms, false), TileWidth::kThreeQuarter);
  EXPECT_EQ(ChooseTileWidth({1980, 2113, 4000, 8000}, kSms, false), TileWidth::kWide);
}

}  // namespace
