// Which kernel family serves a step, decided from the device's compute
// capability alone: checked here on the CPU with pretended devices, since
// no B200 (compute capability 10.0) can be reached. Nothing is launched.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>

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

TEST(LadderDispatch, ABlackwellDeviceGetsTheSm100FamilyForEveryStep) {
  const DeviceContext b200 = Pretend(10, 0);
  for (int step = 1; step <= kLastStep; ++step) {
    const StepSupport s = Supports(step, b200);
    EXPECT_TRUE(s.supported) << step << ": " << s.reason;
    EXPECT_EQ(s.family, "sm_100a") << step;
  }
  EXPECT_TRUE(Supports(kVendorStep, b200).supported);
}

// Each family's table holds each step once, so a device never has two
// kernels to choose from, and the Blackwell table is the one a B200 gets.
TEST(LadderDispatch, EachFamilyHasExactlyOneKernelPerStep) {
  for (auto [family, cc_major] : {std::pair{detail::Sm90Kernels(), 9}, std::pair{detail::Sm100Kernels(), 10}}) {
    for (int step = 1; step <= kLastStep; ++step) {
      int kernels = 0;
      for (const auto& k : family) kernels += k.step == step;
      EXPECT_EQ(kernels, 1) << "step " << step << " of the cc " << cc_major << " family";
    }
    for (const auto& k : family) {
      EXPECT_EQ(k.cc_major, cc_major);
      EXPECT_NE(k.launch, nullptr) << k.step;
      EXPECT_NE(k.prepare, nullptr) << k.step;
    }
  }
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
  EXPECT_EQ(Supports(10, ampere).reason, "runs on NVIDIA sm_90a or sm_100a GPUs; this one is sm_80");
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
