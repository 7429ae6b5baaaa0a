// Which kernel family serves a step, decided from the device's compute
// capability alone: checked here on the CPU with pretended devices, since
// no B200 (compute capability 10.0) can be reached. Nothing is launched.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "gemm/gemm.h"
#include "gemm/steps.h"
#include "ladder.h"

namespace gemm {
namespace {

using ::testing::HasSubstr;

DeviceContext Pretend(int major, int minor) {
  DeviceContext ctx;
  ctx.cc_major = major;
  ctx.cc_minor = minor;
  return ctx;
}

TEST(LadderDispatch, ABlackwellDeviceGetsTheSm100FamilyForTheStepsItHas) {
  const DeviceContext b200 = Pretend(10, 0);
  for (int step = 1; step <= 6; ++step) {
    const StepSupport s = Supports(step, b200);
    EXPECT_TRUE(s.supported) << step << ": " << s.reason;
    EXPECT_EQ(s.family, "sm_100a") << step;
  }
  for (int step = 7; step <= kLastStep; ++step) {
    const StepSupport s = Supports(step, b200);
    EXPECT_FALSE(s.supported) << step;
    EXPECT_EQ(s.reason, "has no sm_100a kernel in this build yet") << step;
  }
  EXPECT_TRUE(Supports(kVendorStep, b200).supported);
}

TEST(LadderDispatch, AHopperDeviceGetsTheSm90FamilyForEveryStep) {
  const DeviceContext h100 = Pretend(9, 0);
  for (int step = 1; step <= kLastStep; ++step) {
    const StepSupport s = Supports(step, h100);
    EXPECT_TRUE(s.supported) << step;
    EXPECT_EQ(s.family, "sm_90a") << step;
  }
}

// Other GPUs are told which families exist for the step, and only those.
TEST(LadderDispatch, OtherGpusAreToldWhichFamiliesHaveTheStep) {
  const DeviceContext ampere = Pretend(8, 0);
  EXPECT_EQ(Supports(1, ampere).reason, "runs on NVIDIA sm_90a or sm_100a GPUs; this one is sm_80");
  EXPECT_EQ(Supports(7, ampere).reason, "runs on NVIDIA sm_90a GPUs; this one is sm_80");
  EXPECT_THAT(Supports(11, ampere).reason, HasSubstr("is not a step of the ladder"));
}

// The catalogue's family list (what messages say) is the kernel tables'
// contents (what Launch can run), step by step.
TEST(LadderDispatch, TheCatalogueNamesExactlyTheFamiliesThatHaveKernels) {
  for (int step = 1; step <= kLastStep; ++step) {
    bool sm90 = false, sm100 = false;
    for (const auto& k : detail::Sm90Kernels()) sm90 |= k.step == step && k.cc_major == 9;
    for (const auto& k : detail::Sm100Kernels()) sm100 |= k.step == step && k.cc_major == 10;
    const std::string expected = sm90 && sm100 ? "sm_90a or sm_100a" : sm90 ? "sm_90a" : sm100 ? "sm_100a" : "";
    EXPECT_EQ(GpuFamilies(step), expected) << step;
  }
}

}  // namespace
}  // namespace gemm
