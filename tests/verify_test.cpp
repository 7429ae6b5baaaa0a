#include "engine/verify.h"

#include <gtest/gtest.h>

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
