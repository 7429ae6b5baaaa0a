#include "gemm/steps.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "gemm/half.h"
#include "gemm/random_fill.h"

namespace {

using ::testing::HasSubstr;

TEST(Steps, CatalogueCoversZeroToTenInOrderWithUniqueNames) {
  auto steps = gemm::AllSteps();
  ASSERT_EQ(steps.size(), 11u);
  std::set<std::string_view> names;
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].step, static_cast<int>(i));
    EXPECT_FALSE(steps[i].description.empty());
    names.insert(steps[i].name);
  }
  EXPECT_EQ(names.size(), 11u);
  EXPECT_EQ(gemm::FindStep(-1), nullptr);
  EXPECT_EQ(gemm::FindStep(11), nullptr);
  EXPECT_EQ(gemm::FindStep(4)->name, "tma");
}

TEST(Steps, SingleTileStepsRefuseLargerShapesAndSaySo) {
  const auto& one = *gemm::FindStep(1);
  EXPECT_EQ(gemm::ShapeError(one, 128, 128, 64), "");
  EXPECT_EQ(gemm::ShapeError(one, 1, 1, 1), "");
  EXPECT_THAT(gemm::ShapeError(one, 128, 128, 65), HasSubstr("step 1 (single-tile) takes k <= 64, got k = 65"));
  EXPECT_THAT(gemm::ShapeError(one, 129, 5, 5), HasSubstr("takes m <= 128, got m = 129"));
  const auto& two = *gemm::FindStep(2);
  EXPECT_EQ(gemm::ShapeError(two, 128, 128, 100000), "");
  EXPECT_THAT(gemm::ShapeError(two, 5, 200, 5), HasSubstr("n <= 128"));
  EXPECT_THAT(gemm::ShapeError(two, 5, 200, 5), HasSubstr("use step 3 or later"));
  for (int s : {0, 3, 10}) EXPECT_EQ(gemm::ShapeError(*gemm::FindStep(s), 8192, 1, 77777), "");
}

// Leading dimensions: 0 becomes the dense row length; a pitch shorter than a
// row is refused, naming the operand, its value and the least it may be.
TEST(LeadingDimensions, ZeroMeansDenseAndShorterThanARowIsRefused) {
  int64_t lda = 0, ldb = 0, ldd = 0;
  EXPECT_EQ(gemm::LeadingDimensionError(300, 200, 13, &lda, &ldb, &ldd), "");
  EXPECT_EQ(lda, 13);
  EXPECT_EQ(ldb, 13);
  EXPECT_EQ(ldd, 200);
  lda = 16, ldb = 13, ldd = 205;  // wider pitches, odd ones included, are taken as they are
  EXPECT_EQ(gemm::LeadingDimensionError(300, 200, 13, &lda, &ldb, &ldd), "");
  EXPECT_EQ(lda, 16);
  EXPECT_EQ(ldd, 205);
  lda = 0, ldb = 12, ldd = 0;
  EXPECT_THAT(gemm::LeadingDimensionError(300, 200, 13, &lda, &ldb, &ldd),
              ::testing::AllOf(::testing::HasSubstr("ldb = 12"), ::testing::HasSubstr("row length 13")));
  lda = 0, ldb = 0, ldd = 199;
  EXPECT_THAT(gemm::LeadingDimensionError(300, 200, 13, &lda, &ldb, &ldd),
              ::testing::AllOf(::testing::HasSubstr("ldd = 199"), ::testing::HasSubstr("n (D is m x n)")));
  lda = -8, ldb = 0, ldd = 0;
  EXPECT_THAT(gemm::LeadingDimensionError(300, 200, 13, &lda, &ldb, &ldd), ::testing::HasSubstr("lda = -8"));
}

TEST(RandomFill, ValuesAreExactFp16InMinusOneToOneAndSeedDependent) {
  int zeros = 0, differ = 0;
  for (uint64_t i = 0; i < 100000; ++i) {
    const float v = gemm::RandomValue(42, gemm::OperandId::kA, i);
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    ASSERT_EQ(gemm::HalfToFloat(gemm::FloatToHalf(v)), v);  // exactly representable
    zeros += v == 0.0f;
    differ += v != gemm::RandomValue(43, gemm::OperandId::kA, i);
  }
  EXPECT_LT(zeros, 200);      // ~1/2048 expected
  EXPECT_GT(differ, 99000);   // another seed is another matrix
  EXPECT_EQ(gemm::RandomValue(7, gemm::OperandId::kB, 123), gemm::RandomValue(7, gemm::OperandId::kB, 123));
  EXPECT_NE(gemm::RandomValue(7, gemm::OperandId::kA, 5), gemm::RandomValue(7, gemm::OperandId::kB, 5));
}

TEST(RandomFill, MeanAndSpreadAreThoseOfAUniformDistribution) {
  double sum = 0, sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double v = gemm::RandomValue(9, gemm::OperandId::kB, i);
    sum += v;
    sq += v * v;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sq / n, 1.0 / 3.0, 0.01);
}

}  // namespace
