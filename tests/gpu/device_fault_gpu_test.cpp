// A real sticky CUDA fault on a GPU the server owns. A kernel that writes
// through a wild pointer destroys the device's context for the whole
// process, so this test is a binary of its own: nothing may run on that GPU
// in this process afterwards.
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

gemm::v1::MultiplyRequest SeededRequest(int64_t size, uint64_t seed) {
  gemm::v1::MultiplyRequest req;
  req.mutable_shape()->set_m(size);
  req.mutable_shape()->set_n(size);
  req.mutable_shape()->set_k(size);
  req.mutable_a()->mutable_random()->set_seed(seed);
  req.mutable_b()->mutable_random()->set_seed(seed + 1);
  return req;
}

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
    StartServer(LoopbackConfig(), std::move(*engine));
  }
  Health::ServingStatus ServerHealth() {
    Health::ServingStatus status{};
    EXPECT_TRUE(client().Health("", &status).ok());
    return status;
  }
  int gpus_ = 0;
};

TEST_F(DeviceFaultTest, AStickyFaultTakesTheGpuOutOfServiceAndOnlyIt) {
  gemm::v1::MultiplyResponse resp;
  ASSERT_TRUE(client().Multiply(SeededRequest(512, 1), &resp).ok());
  ASSERT_EQ(resp.device(), "cuda:0");  // idle devices: the dispatcher's tie goes to the first
  ASSERT_EQ(ServerHealth(), Health::SERVING);

  ASSERT_EQ(PlantStickyFault(0), cudaErrorIllegalAddress);

  // The request that finds the fault: INTERNAL, saying the context is lost.
  const grpc::Status hit = client().Multiply(SeededRequest(512, 2), &resp);
  EXPECT_EQ(hit.error_code(), grpc::StatusCode::INTERNAL) << hit.error_message();
  EXPECT_THAT(hit.error_message(), HasSubstr("cuda:0"));
  EXPECT_THAT(hit.error_message(), HasSubstr("context is lost"));

  gemm::v1::ListKernelsResponse kernels;
  ASSERT_TRUE(client().ListKernels(&kernels).ok());
  ASSERT_EQ(kernels.devices_size(), gpus_);
  EXPECT_FALSE(kernels.devices(0).healthy());
  const std::string metrics = MetricsText(server());
  EXPECT_EQ(Sample(metrics, "gemm_device_healthy{device=\"cuda:0\"}"), 0);

  if (gpus_ == 1) {
    EXPECT_EQ(ServerHealth(), Health::NOT_SERVING);
    const grpc::Status after = client().Multiply(SeededRequest(512, 3), &resp);
    EXPECT_EQ(after.error_code(), grpc::StatusCode::UNAVAILABLE) << after.error_message();
    EXPECT_THAT(after.error_message(), HasSubstr("every device of this server is out of service"));
  } else {
    // The other GPUs go on serving, verified.
    EXPECT_EQ(ServerHealth(), Health::SERVING);
    for (int i = 0; i < 2 * gpus_; ++i) {
      ASSERT_TRUE(client().Multiply(SeededRequest(512, 10 + i), &resp).ok());
      EXPECT_NE(resp.device(), "cuda:0");
      EXPECT_TRUE(resp.verification().passed());
    }
    EXPECT_EQ(Sample(metrics, "gemm_device_healthy{device=\"cuda:1\"}"), 1);
  }
}

}  // namespace
}  // namespace gemmd::testing
