// The pattern diagnostics (gemm/diagnose.h) against faults planted in the
// real sm_90a kernels (planted_faults/, kernels/src/sm90/planted_fault.h):
// on the chip, each fault is named as itself and as no other fault
// (tests/fault_phrases.h), and the real steps read "exact" on every probe.
// What a B200's first run relies on, proven where the faults can be made.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "fault_phrases.h"
#include "gemm/diagnose_step.h"
#include "gemm/gemm.h"
#include "gemm/steps.h"
#include "gpu_test_util.h"
#include "planted_faults/planted_step.h"

gemm::testing::PlantedStep PlantedKAdvanceStep4();
gemm::testing::PlantedStep PlantedKAdvanceStep10();
gemm::testing::PlantedStep PlantedStrideOffsetStep4();
gemm::testing::PlantedStep PlantedStrideOffsetStep10();
gemm::testing::PlantedStep PlantedEpilogueRowsStep4();
gemm::testing::PlantedStep PlantedEpilogueRowsStep10();
gemm::testing::PlantedStep PlantedAccumulateFlagStep6();
gemm::testing::PlantedStep PlantedAccumulateFlagStep10();
gemm::testing::PlantedStep PlantedPairLoadsStep9();
gemm::testing::PlantedStep PlantedPairLoadsStep10();
gemm::testing::PlantedStep PlantedStagePhaseStep7();
gemm::testing::PlantedStep PlantedStagePhaseStep8();

namespace gemmd::testing {
namespace {

using ::testing::HasSubstr;

// The findings of `verdicts` that are not "exact", each once and without
// its count or evidence: what the diagnosis says, short enough for a log
// line. A verdict joins its findings with "; " before the next count.
std::string Findings(const std::vector<gemm::ProbeVerdict>& verdicts) {
  std::set<std::string> seen;
  std::string out;
  auto add = [&](std::string finding) {
    if (const size_t e = finding.find(" (e.g. "); e != std::string::npos) finding.erase(e);
    if (const size_t colon = finding.find(": "); colon != std::string::npos) finding.erase(0, colon + 2);
    if (seen.insert(finding).second) out += (out.empty() ? "" : " | ") + finding;
  };
  for (const auto& v : verdicts) {
    if (v.verdict == "exact") continue;
    size_t begin = 0;
    for (size_t at = v.verdict.find("; "); at != std::string::npos; at = v.verdict.find("; ", at + 2)) {
      const char next = at + 2 < v.verdict.size() ? v.verdict[at + 2] : '0';
      if (next >= '0' && next <= '9') {
        add(v.verdict.substr(begin, at - begin));
        begin = at + 2;
      }
    }
    add(v.verdict.substr(begin));
  }
  return out.empty() ? "exact" : out;
}

class PlantedFaultsGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    ASSERT_EQ(gemm::CreateContext(0, &ctx_), "");
    if (ctx_.cc_major != 9) GTEST_SKIP() << "the planted kernels are sm_90a; this GPU is sm_" << ctx_.cc_major << ctx_.cc_minor;
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
    gemm::DestroyContext(&ctx_);
  }
  gemm::DeviceContext ctx_;
  cudaStream_t stream_ = nullptr;
};

TEST_F(PlantedFaultsGpuTest, EachPlantedFaultIsDiagnosedAsItselfAndAsNoOther) {
  const gemm::testing::PlantedStep planted[] = {
      PlantedKAdvanceStep4(),       PlantedKAdvanceStep10(),       PlantedStrideOffsetStep4(),
      PlantedStrideOffsetStep10(),  PlantedEpilogueRowsStep4(),    PlantedEpilogueRowsStep10(),
      PlantedAccumulateFlagStep6(), PlantedAccumulateFlagStep10(), PlantedPairLoadsStep9(),
      PlantedPairLoadsStep10(),     PlantedStagePhaseStep7(),      PlantedStagePhaseStep8()};
  for (const auto& p : planted) {
    SCOPED_TRACE(std::string("step ") + std::to_string(p.step) + " with " + p.fault + " planted");
    ASSERT_EQ(p.prepare(), cudaSuccess);
    const auto verdicts = gemm::DiagnoseLauncher(
        *gemm::FindStep(p.step), [&](const gemm::Problem& problem) { return p.launch(problem, ctx_, stream_); },
        stream_);
    ASSERT_FALSE(verdicts.empty());
    std::string all;
    for (const auto& v : verdicts) {
      EXPECT_EQ(v.verdict.rfind("did not run", 0), std::string::npos) << v.probe << ": " << v.verdict;
      all += v.probe + ": " + v.verdict + "\n";
    }
    const std::string findings = Findings(verdicts);
    std::printf("diagnosed: step %d, %s planted: %s\n", p.step, p.fault, findings.c_str());
    std::fflush(stdout);
    EXPECT_THAT(all, HasSubstr(gemm::PhraseOf(p.fault))) << all;
    EXPECT_EQ(gemm::OtherFaultsNamed(all, p.fault), "") << all;
  }
}

TEST_F(PlantedFaultsGpuTest, TheRealStepsReadExactOnEveryProbe) {
  for (int step = gemm::kFirstLadderStep; step <= gemm::kLastStep; ++step) {
    const auto verdicts = gemm::DiagnoseStep(step, ctx_, stream_);
    ASSERT_FALSE(verdicts.empty()) << step;
    for (const auto& v : verdicts) EXPECT_EQ(v.verdict, "exact") << "step " << step << ", " << v.probe;
  }
}

}  // namespace
}  // namespace gemmd::testing
