// The start-up gate on a real GPU: a kernel that hangs and one that writes
// to an illegal address (a sticky error that ends its process's CUDA) are
// planted in gemmd-selftest; each must be withdrawn while every other step
// passes, and a gemmd built on that engine must come up SERVING and answer
// step 0 verified.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "engine/cuda_engine.h"
#include "engine/step_gate.h"
#include "gpu_test_util.h"
#include "server_fixture.h"

namespace gemmd::testing {
namespace {

using ::testing::HasSubstr;

// Beside this test (the GPU machine's bundle), else in the build tree.
std::string HelperPath() {
  const auto beside = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "gemmd-selftest";
  return std::filesystem::exists(beside) ? beside.string() : GEMMD_SELFTEST_BUILD_PATH;
}

class PlantedKernels {
 public:
  PlantedKernels() { setenv("GEMMD_SELFTEST_PLANT", "hang:3,fault:5", 1); }
  ~PlantedKernels() { unsetenv("GEMMD_SELFTEST_PLANT"); }
};

TEST(StepGateGpu, AHangingAndAFaultingKernelAreWithdrawnAndTheOtherStepsPass) {
  SKIP_WITHOUT_GPU();
  PlantedKernels planted;
  const auto start = std::chrono::steady_clock::now();
  const auto verdicts = RunStepGate({HelperPath(), 5}, 0, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("gate_seconds", std::to_string(seconds));
  ASSERT_EQ(verdicts.size(), 10u);
  for (const StepVerdict& v : verdicts) {
    if (v.step == 3) {
      EXPECT_FALSE(v.passed);
      EXPECT_THAT(v.reason, HasSubstr("hung in its start-up self-test"));
    } else if (v.step == 5) {
      EXPECT_FALSE(v.passed);
      EXPECT_THAT(v.reason, HasSubstr("cudaErrorIllegalAddress"));
    } else {
      EXPECT_TRUE(v.passed) << v.step << ": " << v.reason;
    }
  }
  EXPECT_LT(seconds, 60);
}

// A step that computes a wrong D is withdrawn with what D says about it
// (gemm/diagnose.h): a descriptor's N too small leaves columns unwritten, a
// K loop that stops early never reads the last k-tiles.
TEST(StepGateGpu, AStepThatComputesAWrongResultIsWithdrawnWithItsDiagnosis) {
  SKIP_WITHOUT_GPU();
  setenv("GEMMD_SELFTEST_PLANT", "narrow:4,shortk:8", 1);
  const auto verdicts = RunStepGate({HelperPath(), 30}, 0, {3, 4, 8, 10});
  unsetenv("GEMMD_SELFTEST_PLANT");
  ASSERT_EQ(verdicts.size(), 4u);
  for (const StepVerdict& v : verdicts) {
    if (v.step == 4) {
      EXPECT_FALSE(v.passed);
      EXPECT_THAT(v.reason, HasSubstr("diagnosis:"));
      EXPECT_THAT(v.reason, HasSubstr("not written"));
      EXPECT_THAT(v.reason, HasSubstr("the tile's N"));
    } else if (v.step == 8) {
      EXPECT_FALSE(v.passed);
      EXPECT_THAT(v.reason, HasSubstr("diagnosis:"));
      EXPECT_THAT(v.reason, HasSubstr("never read"));
    } else {
      EXPECT_TRUE(v.passed) << v.step << ": " << v.reason;
    }
    RecordProperty("reason_" + std::to_string(v.step), v.reason);
    std::printf("step %d: %s\n", v.step, v.reason.c_str());
  }
}

class GatedGpuServerTest : public ServerFixture {};

TEST_F(GatedGpuServerTest, GemmdComesUpServingWithoutTheWithdrawnSteps) {
  SKIP_WITHOUT_GPU();
  PlantedKernels planted;
  setenv("GEMMD_SELFTEST_PLANT", "hang:3,fault:5,narrow:4", 1);  // and a step that computes a wrong D
  CudaEngineOptions o;
  o.selftest = {HelperPath(), 5};
  auto engine = CudaEngine::Create(o);
  ASSERT_TRUE(engine.ok()) << engine.status();
  StartServer(LoopbackConfig(), std::move(*engine));

  gemm::v1::ListKernelsResponse kernels;
  ASSERT_TRUE(client().ListKernels(&kernels).ok());
  EXPECT_FALSE(kernels.kernels(3).available());
  EXPECT_THAT(kernels.kernels(3).unavailable_reason(), HasSubstr("hung"));
  EXPECT_FALSE(kernels.kernels(5).available());
  EXPECT_THAT(kernels.kernels(5).unavailable_reason(), HasSubstr("cudaErrorIllegalAddress"));
  EXPECT_FALSE(kernels.kernels(4).available());  // withdrawn with what its D says
  EXPECT_THAT(kernels.kernels(4).unavailable_reason(), HasSubstr("; diagnosis: "));
  EXPECT_THAT(kernels.kernels(4).unavailable_reason(), HasSubstr("the tile's N"));
  EXPECT_TRUE(kernels.kernels(10).available());

  grpc::health::v1::HealthCheckResponse::ServingStatus health{};
  ASSERT_TRUE(client().Health("", &health).ok());
  EXPECT_EQ(health, grpc::health::v1::HealthCheckResponse::SERVING);
  gemm::v1::MultiplyResponse resp;
  ASSERT_TRUE(client().Multiply(SeededRequest(300, 200, 64, 1, 2), &resp).ok());
  EXPECT_TRUE(resp.verification().passed());
  gemm::v1::MultiplyRequest withdrawn = SeededRequest(300, 200, 64, 1, 2);
  withdrawn.set_step(3);
  const grpc::Status refused = client().Multiply(withdrawn, &resp);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("hung in its start-up self-test"));
  const std::string metrics = MetricsText(server());
  EXPECT_EQ(Sample(metrics, "gemm_step_withdrawn{device=\"cuda:0\",step=\"3\"}"), 1);
  EXPECT_EQ(Sample(metrics, "gemm_step_withdrawn{device=\"cuda:0\",step=\"5\"}"), 1);
  EXPECT_EQ(Sample(metrics, "gemm_step_withdrawn{device=\"cuda:0\",step=\"4\"}"), 1);
}

}  // namespace
}  // namespace gemmd::testing
