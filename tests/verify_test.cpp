#include "engine/verify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "gemm/half.h"

namespace gemmd {
namespace {

std::vector<uint16_t> Halves(const std::vector<double>& v) {
  std::vector<uint16_t> h;
  for (double x : v) h.push_back(gemm::FloatToHalf(static_cast<float>(x)));
  return h;
}

TEST(Verify, ExactResultPasses) {
  const std::vector<double> ref{1.0, -2.5, 100.0, 0.0};
  auto d = Halves(ref);
  auto r = CompareWithReference(d.data(), ref.data(), ref.size());
  EXPECT_TRUE(r.performed);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_EQ(r.elements, 4u);
}

TEST(Verify, BoundIsAtolPlusRtolTimesReference) {
  // |ref| = 1000: bound 0.01 + 1.0. fp16 near 1000 has a spacing of 0.5.
  const std::vector<double> ref{1000.0};
  auto within = Halves({1001.0});
  EXPECT_TRUE(CompareWithReference(within.data(), ref.data(), 1).passed);
  auto outside = Halves({1001.5});
  auto r = CompareWithReference(outside.data(), ref.data(), 1);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_DOUBLE_EQ(r.max_abs_error, 1.5);
}

TEST(Verify, APlantedWrongElementIsCaught) {
  std::vector<double> ref(1000);
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = 0.001 * static_cast<double>(i) - 0.3;
  auto d = Halves(ref);
  d[617] = gemm::FloatToHalf(static_cast<float>(ref[617] + 0.05));
  auto r = CompareWithReference(d.data(), ref.data(), ref.size());
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_NEAR(r.max_abs_error, 0.05, 1e-3);
}

// The K-aware term (gemm/tolerance.h) widens atol by what it says, and is
// reported; it grows as √K times the largest row norms.
TEST(Verify, TheAccumulationTermWidensTheBoundAndIsReported) {
  const std::vector<double> ref{100.0};
  auto d = Halves({100.5});  // 0.5 off: outside 0.01 + 0.1
  EXPECT_FALSE(CompareWithReference(d.data(), ref.data(), 1).passed);
  auto r = CompareWithReference(d.data(), ref.data(), 1, 0.45);
  EXPECT_TRUE(r.passed);
  EXPECT_DOUBLE_EQ(r.accumulation_atol, 0.45);
  EXPECT_FALSE(CompareWithReference(d.data(), ref.data(), 1, 0.35).passed);
  // K = 4096 and 65536 with rows of K values in [-1, 1] (norm √(K/3)).
  const auto term = [](int64_t k) {
    const double norm = std::sqrt(k / 3.0);
    return gemm::AccumulationAtol(k, norm, norm);
  };
  EXPECT_NEAR(term(4096), 0.0104, 1e-3);
  EXPECT_NEAR(term(65536), 0.667, 1e-2);
  EXPECT_NEAR(term(64), 0.0000, 1e-4);  // nothing at small K
  const std::vector<float> rows{3, 4, 0, 1, 1, 1};  // norms 5 and √3
  EXPECT_DOUBLE_EQ(MaxRowNorm(rows.data(), 2, 3), 5.0);
}

TEST(Verify, AnUnwrittenPoisonedElementIsCaught) {
  std::vector<double> ref(64, 0.5);
  auto d = Halves(ref);
  d[3] = 0x7e00;  // fp16 NaN: the poison a kernel failed to overwrite
  d[9] = 0x7c00;  // +Inf
  auto r = CompareWithReference(d.data(), ref.data(), ref.size());
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.non_finite, 2u);
  EXPECT_EQ(r.mismatches, 2u);
}

}  // namespace
}  // namespace gemmd
