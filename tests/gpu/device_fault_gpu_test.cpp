// A real sticky CUDA fault on a GPU the server owns. A kernel that writes
// through a wild pointer ends CUDA for the whole process (every device:
// the CUDA runtime returns the sticky error from then on), so this test is
// a binary of its own, and the server must take every GPU out of service,
// say so, and ask to be restarted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine/cuda_engine.h"
#include "gemm/device_ops.h"
#include "gpu_test_util.h"
#include "server_fixture.h"

namespace gemmd::testing {
namespace {

using ::testing::HasSubstr;
using Health = grpc::health::v1::HealthCheckResponse;

// Launches a kernel on `device` that writes to an unmapped address and
// waits for it: the context is lost (cudaErrorIllegalAddress, sticky).
cudaError_t PlantStickyFault(int device) {
  cudaSetDevice(device);
  auto* wild = reinterpret_cast<__half*>(uintptr_t{16});
  if (cudaError_t e = gemm::FillRandom(wild, 1 << 20, 1, gemm::OperandId::kA, nullptr); e != cudaSuccess) return e;
  return cudaDeviceSynchronize();
}

class DeviceFaultTest : public ServerFixture {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    cudaGetDeviceCount(&gpus_);
    CudaEngineOptions o;
    o.staging_bytes = 4 << 20;
    auto engine = CudaEngine::Create(o);
    ASSERT_TRUE(engine.ok()) << engine.status();
    StartServer(LoopbackConfig(), std::move(*engine),
                [this](GemmServer& s) { s.OnAllDevicesLost([this] { ++lost_callbacks_; }); });
  }
  Health::ServingStatus ServerHealth() {
    Health::ServingStatus status{};
    EXPECT_TRUE(client().Health("", &status).ok());
    return status;
  }
  int gpus_ = 0;
  std::atomic<int> lost_callbacks_{0};
};

TEST_F(DeviceFaultTest, AStickyFaultTakesEveryGpuOutOfServiceAndAsksForARestart) {
  gemm::v1::MultiplyResponse resp;
  ASSERT_TRUE(client().Multiply(SeededRequest(512, 512, 512, 1, 2), &resp).ok());
  ASSERT_EQ(resp.device(), "cuda:0");  // idle devices: the dispatcher's tie goes to the first
  ASSERT_EQ(ServerHealth(), Health::SERVING);

  ASSERT_EQ(PlantStickyFault(0), cudaErrorIllegalAddress);

  // The request that finds the fault: INTERNAL, saying what happened.
  const grpc::Status hit = client().Multiply(SeededRequest(512, 512, 512, 2, 3), &resp);
  EXPECT_EQ(hit.error_code(), grpc::StatusCode::INTERNAL) << hit.error_message();
  EXPECT_THAT(hit.error_message(), HasSubstr("cuda:0"));
  EXPECT_THAT(hit.error_message(), HasSubstr("must be restarted"));

  // Every GPU is out of service, in ListKernels, the metrics and health.
  gemm::v1::ListKernelsResponse kernels;
  ASSERT_TRUE(client().ListKernels(&kernels).ok());
  ASSERT_EQ(kernels.devices_size(), gpus_);
  const std::string metrics = MetricsText(server());
  for (int d = 0; d < gpus_; ++d) {
    EXPECT_FALSE(kernels.devices(d).healthy()) << "cuda:" << d;
    EXPECT_EQ(Sample(metrics, "gemm_device_healthy{device=\"cuda:" + std::to_string(d) + "\"}"), 0);
  }
  EXPECT_EQ(ServerHealth(), Health::NOT_SERVING);
  EXPECT_EQ(lost_callbacks_.load(), 1);  // gemmd's main drains and exits 3 on this

  const grpc::Status after = client().Multiply(SeededRequest(512, 512, 512, 3, 4), &resp);
  EXPECT_EQ(after.error_code(), grpc::StatusCode::UNAVAILABLE) << after.error_message();
  EXPECT_THAT(after.error_message(), HasSubstr("every device of this server is out of service"));
}

}  // namespace
}  // namespace gemmd::testing
