// gemmd-selftest's loop (engine/self_test_steps.h) on the CPU: a failing
// step on a healthy device is diagnosed and its reason carries the
// diagnosis; a lost device stops the loop undiagnosed; and on a pretended
// B200 every one of the ten steps the gate is offered runs the pattern
// diagnostics, each with its sm_100a kernel and probes that fit it.
#include "engine/self_test_steps.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gemm/diagnose.h"
#include "gemm/steps.h"
#ifdef GEMMD_WITH_CUDA
#include "gemm/gemm.h"
#endif

namespace gemmd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Recorded {
  std::vector<std::string> lines;
  std::vector<int> diagnosed;
};

SelfTestActions Record(Recorded* r, std::set<int> failing, std::set<int> losing = {}) {
  SelfTestActions a;
  auto lost = std::make_shared<bool>(false);
  a.self_test = [failing, losing, lost](int step) -> std::string {
    if (losing.count(step)) *lost = true;
    return failing.count(step) ? "3 of 16384 elements wrong" : "";
  };
  a.device_healthy = [lost] { return !*lost; };
  a.diagnose = [r](int step) {
    r->diagnosed.push_back(step);
    return "K16 slices exchanged within a k-tile";
  };
  a.say = [r](const std::string& line) { r->lines.push_back(line); };
  return a;
}

TEST(SelfTestSteps, AFailingStepOnAHealthyDeviceCarriesItsDiagnosis) {
  Recorded r;
  EXPECT_TRUE(SelfTestSteps({1, 2, 3}, Record(&r, {2})));
  EXPECT_THAT(r.diagnosed, ElementsAre(2));
  ASSERT_EQ(r.lines.size(), 6u);
  EXPECT_EQ(r.lines[1], "pass 1");
  EXPECT_EQ(r.lines[3], "fail 2 3 of 16384 elements wrong; diagnosis: K16 slices exchanged within a k-tile");
  EXPECT_EQ(r.lines[5], "pass 3");
}

TEST(SelfTestSteps, ALostDeviceStopsTheLoopWithoutADiagnosis) {
  Recorded r;
  EXPECT_FALSE(SelfTestSteps({1, 2, 3}, Record(&r, {2}, {2})));
  EXPECT_TRUE(r.diagnosed.empty());
  ASSERT_EQ(r.lines.size(), 4u);
  EXPECT_EQ(r.lines[3], "fail 2 3 of 16384 elements wrong");
}

#ifdef GEMMD_WITH_CUDA
// What gemmd does on a B200 (CudaEngine::Create offers the gate every step
// gemm::Supports takes), with every self-test failing as it might on a first
// run: each of the ten steps is diagnosed, by its sm_100a kernel (Launch
// dispatches by the same Supports), on every probe its limits admit.
TEST(SelfTestSteps, OnAPretendedB200EveryLadderStepIsDiagnosedWithItsSm100Kernel) {
  gemm::DeviceContext b200;
  b200.cc_major = 10;
  b200.cc_minor = 0;
  std::vector<int> offered;
  for (const gemm::StepInfo& info : gemm::AllSteps()) {
    if (info.step != gemm::kVendorStep && gemm::Supports(info.step, b200).supported) offered.push_back(info.step);
  }
  ASSERT_THAT(offered, ElementsAre(1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
  Recorded r;
  std::set<int> all(offered.begin(), offered.end());
  SelfTestActions actions = Record(&r, all);
  actions.diagnose = [&](int step) {
    r.diagnosed.push_back(step);
    EXPECT_EQ(gemm::Supports(step, b200).family, "sm_100a") << step;
    const gemm::StepInfo* info = gemm::FindStep(step);
    const auto probes = gemm::DiagnosticProbes(info->max_m, info->max_n, info->max_k);
    EXPECT_GE(probes.size(), 3u) << step;  // at least one tile, decoding k, rows and columns
    return std::to_string(probes.size()) + " probes";
  };
  EXPECT_TRUE(SelfTestSteps(offered, actions));
  EXPECT_EQ(r.diagnosed, offered);
  for (const auto& line : r.lines) {
    if (line.rfind("fail", 0) == 0) EXPECT_THAT(line, HasSubstr("; diagnosis: ")) << line;
  }
}
#endif

}  // namespace
}  // namespace gemmd
