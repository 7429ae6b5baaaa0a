// The start-up gate's process handling, on the CPU: fake helpers (shell
// scripts speaking the same line protocol as gemmd-selftest) that pass,
// fail, hang, crash and fail to start. tests/gpu/step_gate_gpu_test.cpp
// plants a real hanging and a real faulting kernel on a GPU.
#include "engine/step_gate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <system_error>
#include <vector>

namespace gemmd {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// An executable script in the temporary directory, removed when the test
// program exits.
fs::path TempScript(const std::string& name) {
  static struct Written {
    std::vector<fs::path> paths;
    ~Written() {
      std::error_code ignored;
      for (const auto& p : paths) fs::remove(p, ignored);
    }
  } written;
  written.paths.push_back(fs::temp_directory_path() / (name + "-" + std::to_string(getpid())));
  return written.paths.back();
}

// A helper whose behaviour per step is a shell case: "pass", "fail", "hang",
// "crash" (SIGSEGV), "lost" (fails, then exits 3 as after a sticky error).
std::string FakeHelper(const std::string& name, const std::string& cases) {
  const fs::path path = TempScript("gemmd-fake-selftest-" + name);
  std::ofstream(path) << "#!/bin/sh\n"
                         "for s in $(echo \"$4\" | tr , ' '); do\n"
                         "  echo \"start $s\"\n"
                         "  case $s in\n" << cases << "\n"
                         "    *) echo \"pass $s\" ;;\n"
                         "  esac\n"
                         "done\n";
  fs::permissions(path, fs::perms::owner_all);
  return path.string();
}

std::map<int, StepVerdict> ByStep(const std::vector<StepVerdict>& verdicts) {
  std::map<int, StepVerdict> out;
  for (const auto& v : verdicts) out[v.step] = v;
  return out;
}

TEST(StepGate, EveryStepPassingGivesOneVerdictEach) {
  StepGateOptions o{FakeHelper("pass", ""), 5};
  const auto v = RunStepGate(o, 0, {1, 2, 3});
  ASSERT_EQ(v.size(), 3u);
  for (const auto& s : v) EXPECT_TRUE(s.passed) << s.step;
}

TEST(StepGate, AFailingStepIsWithdrawnWithTheHelpersReason) {
  StepGateOptions o{FakeHelper("fail", "    2) echo \"fail 2 failed its start-up self-test on 77x100x50\" ;;"), 5};
  auto v = ByStep(RunStepGate(o, 0, {1, 2, 3}));
  EXPECT_TRUE(v[1].passed);
  EXPECT_FALSE(v[2].passed);
  EXPECT_EQ(v[2].reason, "failed its start-up self-test on 77x100x50");
  EXPECT_TRUE(v[3].passed);
}

TEST(StepGate, AHangingStepIsKilledAtTheLimitAndTheRestStillRun) {
  // exec: the shell itself is what hangs and is killed, leaving no orphan
  // sleep holding the test's output open.
  StepGateOptions o{FakeHelper("hang", "    2) exec sleep 600 ;;"), 1};
  const auto start = std::chrono::steady_clock::now();
  auto v = ByStep(RunStepGate(o, 0, {1, 2, 3}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_TRUE(v[1].passed);
  EXPECT_FALSE(v[2].passed);
  EXPECT_THAT(v[2].reason, HasSubstr("hung in its start-up self-test (no result within 1 s"));
  EXPECT_TRUE(v[3].passed);  // a fresh helper took the steps after the hung one
}

TEST(StepGate, AHelperThatDiesMidStepCondemnsThatStepOnly) {
  StepGateOptions o{FakeHelper("crash", "    2) kill -SEGV $$ ;;"), 5};
  auto v = ByStep(RunStepGate(o, 0, {1, 2, 3}));
  EXPECT_TRUE(v[1].passed);
  EXPECT_FALSE(v[2].passed);
  EXPECT_THAT(v[2].reason, HasSubstr("crashed its start-up self-test"));
  EXPECT_THAT(v[2].reason, HasSubstr("Segmentation fault"));
  EXPECT_TRUE(v[3].passed);
}

TEST(StepGate, AFailureThatEndsTheContextRestartsTheHelperForTheRest) {
  StepGateOptions o{FakeHelper("lost", "    2) echo \"fail 2 faulted (cudaErrorIllegalAddress)\"; exit 3 ;;"), 5};
  auto v = ByStep(RunStepGate(o, 0, {1, 2, 3, 4}));
  EXPECT_TRUE(v[1].passed);
  EXPECT_FALSE(v[2].passed);
  EXPECT_THAT(v[2].reason, HasSubstr("cudaErrorIllegalAddress"));
  EXPECT_TRUE(v[3].passed);
  EXPECT_TRUE(v[4].passed);
}

// Nothing unproven runs: a helper that cannot start, or that stops before
// any step, withdraws every step.
TEST(StepGate, AHelperThatCannotRunWithdrawsEveryStep) {
  StepGateOptions missing{"/nonexistent/gemmd-selftest", 5};
  for (const auto& s : RunStepGate(missing, 0, {1, 2})) {
    EXPECT_FALSE(s.passed);
    EXPECT_THAT(s.reason, HasSubstr("could not be self-tested at start-up"));
  }
  const fs::path quits = TempScript("gemmd-fake-quits");
  std::ofstream(quits) << "#!/bin/sh\necho 'no CUDA device' >&2\nexit 2\n";
  fs::permissions(quits, fs::perms::owner_all);
  const auto v = RunStepGate({quits.string(), 5}, 0, {1, 2});
  ASSERT_EQ(v.size(), 2u);
  for (const auto& s : v) {
    EXPECT_FALSE(s.passed);
    EXPECT_THAT(s.reason, HasSubstr("helper: exit status 2"));
  }
}

}  // namespace
}  // namespace gemmd
