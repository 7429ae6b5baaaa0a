// Split-K's plan (kernels/src/common/split_k.h), on the CPU: the ranges
// cover K once with none empty, and splits are chosen only where tiles
// leave the GPU idle and K is long enough.
#include <gtest/gtest.h>

#include "common/split_k.h"

namespace {

using gemm::common::ChooseSplits;
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
