// gemm-bench's sweep: the shapes are reproducible from the seed, stay in
// their class's ranges and the size bounds, and the statistics are the ones
// the report names.
#include "shape_sweep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace gemm::bench {
namespace {

TEST(ShapeSweep, TheSameSeedGivesTheSameShapesAndAnotherSeedOthers) {
  const auto a = SweepShapes(40, 7), b = SweepShapes(40, 7), c = SweepShapes(40, 8);
  int differing = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].m, b[i].m);
    EXPECT_EQ(a[i].n, b[i].n);
    EXPECT_EQ(a[i].k, b[i].k);
    differing += a[i].m != c[i].m || a[i].n != c[i].n || a[i].k != c[i].k;
  }
  EXPECT_GT(differing, 35);
  // The first shapes of seed 1, fixed: a change to the generator changes
  // every committed sweep's meaning, so it has to show up here.
  const auto first = SweepShapes(4, 1);
  const int64_t expected[4][3] = {{1481, 4001, 13951}, {5217, 6, 9838}, {26, 5, 141}, {56, 151, 16853}};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(first[i].shape_class, SweepClasses()[i]);
    EXPECT_EQ(first[i].m, expected[i][0]);
    EXPECT_EQ(first[i].n, expected[i][1]);
    EXPECT_EQ(first[i].k, expected[i][2]);
  }
}

TEST(ShapeSweep, EveryClassStaysInItsRangesAndTheSizeBounds) {
  std::map<std::string, int> per_class;
  int k_or_n_unaligned = 0;
  const auto shapes = SweepShapes(400, 12345);
  for (const auto& s : shapes) {
    ++per_class[s.shape_class];
    k_or_n_unaligned += s.k % 8 != 0 || s.n % 8 != 0;
    EXPECT_LE(s.m * s.k, int64_t{1} << 28);
    EXPECT_LE(s.n * s.k, int64_t{1} << 28);
    EXPECT_LE(static_cast<double>(s.m) * s.n * s.k, 0x1.0p39);
    if (s.shape_class == "mixed") {
      for (int64_t d : {s.m, s.n, s.k}) EXPECT_THAT(d, ::testing::AllOf(::testing::Ge(64), ::testing::Le(16384)));
    } else if (s.shape_class == "skinny") {
      EXPECT_LE(std::min(s.m, s.n), 64);
      EXPECT_THAT(std::max(s.m, s.n), ::testing::AllOf(::testing::Ge(1024), ::testing::Le(40000)));
      EXPECT_THAT(s.k, ::testing::AllOf(::testing::Ge(256), ::testing::Le(16384)));
    } else if (s.shape_class == "tiny") {
      for (int64_t d : {s.m, s.n, s.k}) EXPECT_THAT(d, ::testing::AllOf(::testing::Ge(1), ::testing::Le(512)));
    } else {
      ASSERT_EQ(s.shape_class, "long-K");
      EXPECT_LE(std::max(s.m, s.n), 1024);
      EXPECT_THAT(s.k, ::testing::AllOf(::testing::Ge(8192), ::testing::Le(40000)));
    }
  }
  for (const auto& cls : SweepClasses()) EXPECT_EQ(per_class[cls], 100) << cls;
  // Random dimensions are mostly not multiples of 8: the padded path is swept.
  EXPECT_GT(k_or_n_unaligned, 300);
}

TEST(ShapeSweep, SummaryGivesMedianTenthPercentileAndShareAtLeastOne) {
  const RatioSummary s = Summarize({1.2, 0.5, 0.9, 1.0, 0.3, 2.0, 0.8, 1.1, 0.7, 0.6});
  EXPECT_EQ(s.count, 10);
  EXPECT_DOUBLE_EQ(s.median, 0.85);  // (0.8 + 0.9) / 2
  EXPECT_DOUBLE_EQ(s.p10, 0.3);      // the first of ten
  EXPECT_DOUBLE_EQ(s.share_at_least_1, 0.4);  // 1.0, 1.1, 1.2, 2.0
  EXPECT_EQ(Summarize({}).count, 0);
  EXPECT_DOUBLE_EQ(Summarize({0.9, 1.3, 1.1}).median, 1.1);
}

}  // namespace
}  // namespace gemm::bench
