#include "engine/cpu_engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine_test_util.h"
#include "gemm/random_fill.h"
#include "test_util.h"

namespace gemmd {
namespace {

using testing::CountMismatches;
using testing::HostJob;
using testing::SeededJob;
using testing::RandomHalfBytes;
using testing::ReferenceGemm;
using testing::SeededOperand;
using testing::ToDouble;

TEST(CpuEngine, OffersStepZeroOnlyAndExplainsTheRest) {
  CpuEngine e;
  ASSERT_EQ(e.devices().size(), 1u);
  EXPECT_EQ(e.devices()[0].id, "cpu:0");
  EXPECT_TRUE(e.availability(0, 0).available);
  for (int s = 1; s <= 10; ++s) {
    EXPECT_FALSE(e.availability(s, 0).available);
    EXPECT_THAT(e.availability(s, 0).reason, ::testing::HasSubstr("GPU"));
  }
  GemmJob job;
  job.m = job.n = job.k = 8;
  job.step = 5;
  EXPECT_EQ(e.Run(0, job).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(CpuEngine, HostInputsGiveTheReferenceProductAndAPassingReport) {
  CpuEngine e;
  const int64_t m = 70, n = 45, k = 130;
  const std::string a = RandomHalfBytes(m, k, 1), b = RandomHalfBytes(n, k, 2);
  std::string d(m * n * 2, '\xff');  // poisoned: 0xffff is an fp16 NaN
  auto r = e.Run(0, HostJob(m, n, k, a, b, d));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->verification.passed);
  EXPECT_EQ(r->verification.elements, static_cast<uint64_t>(m * n));
  EXPECT_EQ(CountMismatches(d, ReferenceGemm(ToDouble(a), ToDouble(b), m, n, k)), 0);
}

TEST(CpuEngine, RandomInputsComeFromTheSeed) {
  CpuEngine e;
  const int64_t m = 20, n = 30, k = 40;
  std::string d(m * n * 2, '\xff');
  GemmJob job = SeededJob(m, n, k, 77);
  job.d = reinterpret_cast<uint16_t*>(d.data());
  job.repeats = 3;
  auto r = e.Run(0, job);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->seconds.repeats, 3u);
  const auto a = SeededOperand(77, gemm::OperandId::kA, m * k);
  const auto b = SeededOperand(77, gemm::OperandId::kB, n * k);
  EXPECT_EQ(CountMismatches(d, ReferenceGemm(a, b, m, n, k)), 0);
}

TEST(CpuEngine, AStopRequestCancelsBeforeTheGemm) {
  CpuEngine e;
  GemmJob job;
  job.m = job.n = job.k = 16;
  job.should_stop = [] { return true; };
  EXPECT_EQ(e.Run(0, job).status().code(), absl::StatusCode::kCancelled);
}

TEST(CpuEngine, RefusesADimensionBlasCannotRepresent) {
  CpuEngine e;
  GemmJob job = SeededJob(1, 1, int64_t{1} << 31, 1);
  auto r = e.Run(0, job);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("up to 2^31-1"));
}

TEST(CpuEngine, WarmupSucceeds) {
  CpuEngine e;
  EXPECT_TRUE(e.Warmup(0).ok());
}

}  // namespace
}  // namespace gemmd
