// Split-K's plan (kernels/src/common/split_k.h), on the CPU: the ranges
// cover K once with none empty, and splits are chosen only where tiles
// leave the GPU idle and K is long enough.
#include <gtest/gtest.h>

#include "common/split_k.h"

namespace {

using gemm::common::ChooseSplits;
using gemm::common::ChooseSplitTail;
using gemm::common::kMinKTilesForSplitTail;
using gemm::common::SplitTail;
using gemm::common::kMaxSplitWorkspaceBytes;
using gemm::common::kMinKTilesPerSplit;
using gemm::common::kMinKTilesToSplit;
using gemm::common::SplitKPitch;
using gemm::common::SplitKRange;

TEST(SplitK, RangesCoverEveryKTileOnceAndNoneIsEmpty) {
  for (int k_tiles : {1, 7, 8, 63, 64, 65, 264, 613}) {
    for (int splits = 1; splits <= k_tiles && splits <= 70; ++splits) {
      int next = 0;
      for (int s = 0; s < splits; ++s) {
        int begin = -1, end = -1;
        SplitKRange(s, splits, k_tiles, &begin, &end);
        EXPECT_EQ(begin, next) << k_tiles << " k-tiles, split " << s << " of " << splits;
        EXPECT_GT(end, begin) << k_tiles << " k-tiles, split " << s << " of " << splits;
        next = end;
      }
      EXPECT_EQ(next, k_tiles) << k_tiles << " k-tiles in " << splits;
    }
  }
}

TEST(SplitK, SplitsOnlyWhereTilesLeaveHalfTheSlotsIdleAndKIsLong) {
  // 66 resident clusters (an H100's 132 SMs in pairs).
  EXPECT_EQ(ChooseSplits(1, 66, 264, 56, 151), 33);   // 56x151x16853: K bounds it (264 / 8)
  EXPECT_EQ(ChooseSplits(1, 66, 1000, 16, 16), 66);   // one tile, very long K: every slot
  EXPECT_EQ(ChooseSplits(12, 66, 234, 872, 644), 5);  // 872x644x14932: 66 / 12
  EXPECT_EQ(ChooseSplits(33, 66, 1000, 4000, 2000), 2);
  EXPECT_EQ(ChooseSplits(34, 66, 1000, 4000, 2000), 1);  // more than half the slots busy
  EXPECT_EQ(ChooseSplits(256, 66, 64, 4096, 4096), 1);   // 4096^3
  EXPECT_EQ(ChooseSplits(1, 66, kMinKTilesToSplit - 1, 64, 64), 1);  // K too short to pay for a split
  EXPECT_EQ(ChooseSplits(1, 66, kMinKTilesToSplit, 64, 64), kMinKTilesToSplit / kMinKTilesPerSplit);
  EXPECT_EQ(ChooseSplits(0, 66, 1000, 0, 0), 1);
}

// 66 slots: an H200's 132 SMs in pairs. Wide pair tiles are 256×256.
TEST(SplitTail, SplitsALastWaveThatLeavesHalfTheSlotsIdle) {
  auto expect = [](int tiles, int k_tiles, int whole, int splits) {
    const SplitTail t = ChooseSplitTail(tiles, 66, k_tiles);
    EXPECT_EQ(t.whole_tiles, whole) << tiles << " tiles, " << k_tiles << " k-tiles";
    EXPECT_EQ(t.splits, splits) << tiles << " tiles, " << k_tiles << " k-tiles";
  };
  expect(225, 60, 198, 2);  // 3840^3: three waves, and 27 tiles in two ranges each
  expect(289, 68, 264, 2);  // 4352^3: four waves and 25
  expect(99, 64, 66, 2);    // a last wave of exactly half the slots
  expect(100, 64, 100, 1);  // 2560^2 x 4096: 34 tiles left, more than half: two ranges each would not fit one wave
  expect(67, 1000, 66, 66); // one tile left: a range for every slot
  expect(67, kMinKTilesForSplitTail, 66, kMinKTilesForSplitTail / kMinKTilesPerSplit);  // ranges of at least 8 k-tiles
  expect(75, kMinKTilesForSplitTail - 1, 75, 1);  // K too short for a split to pay
  expect(225, 32, 225, 1);                        // 3840^2 x 2048: as short
  expect(132, 64, 132, 1);  // full waves: nothing to even out
  expect(66, 64, 66, 1);    // one wave or less: split-K's business (ChooseSplits)
  expect(40, 64, 40, 1);
}

TEST(SplitTail, WholeTilesAreFullWavesAndEveryRangeFitsTheLastOne) {
  for (int slots : {1, 2, 60, 64, 66, 74}) {
    for (int tiles = 1; tiles <= 600; ++tiles) {
      for (int k_tiles : {31, 47, 48, 64, 300}) {
        const SplitTail t = ChooseSplitTail(tiles, slots, k_tiles);
        ASSERT_GE(t.splits, 1);
        if (t.splits == 1) {
          EXPECT_EQ(t.whole_tiles, tiles);
          continue;
        }
        EXPECT_EQ(t.whole_tiles % slots, 0) << tiles << " tiles on " << slots;
        EXPECT_GT(t.whole_tiles, 0);
        EXPECT_LE((tiles - t.whole_tiles) * t.splits, slots) << tiles << " tiles on " << slots;
        EXPECT_GE(k_tiles / t.splits, kMinKTilesPerSplit);
      }
    }
  }
}

TEST(SplitK, TheWorkspaceStaysUnderItsCap) {
  const int64_t m = 40000, n = 200;  // one range: 40000 x 200 floats = 32 MB
  const int splits = ChooseSplits(1, 66, 4000, m, n);
  EXPECT_GT(splits, 1);
  EXPECT_LE(splits * m * SplitKPitch(n) * 4, kMaxSplitWorkspaceBytes);
  EXPECT_EQ(splits, kMaxSplitWorkspaceBytes / (m * SplitKPitch(n) * 4));
}

TEST(SplitK, PartialRowsAreWholeSixteenBytes) {
  EXPECT_EQ(SplitKPitch(1), 4);
  EXPECT_EQ(SplitKPitch(4), 4);
  EXPECT_EQ(SplitKPitch(151), 152);
  EXPECT_EQ(SplitKPitch(1306), 1308);
}

}  // namespace
