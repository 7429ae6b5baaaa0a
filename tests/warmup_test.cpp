// Start-up: while the devices warm up, Multiply is refused as UNAVAILABLE
// (retry in a moment) and health reads NOT_SERVING; both change only once
// the last device is warm.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <latch>
#include <thread>

#include "server_fixture.h"

namespace gemmd::testing {
namespace {

using HealthStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;

// A CPU engine whose warm-up waits until the test lets it finish.
class SlowWarmupEngine final : public Engine {
 public:
  std::string name() const override { return inner_.name(); }
  std::vector<DeviceDescription> devices() const override { return inner_.devices(); }
  StepAvailability availability(int step, int device) const override { return inner_.availability(step, device); }
  bool healthy(int device) const override { return inner_.healthy(device); }
  absl::Status Warmup(int device) override {
    warming.count_down();
    finish.wait();
    return inner_.Warmup(device);
  }
  absl::StatusOr<GemmReport> Run(int device, const GemmJob& job) override { return inner_.Run(device, job); }

  std::latch warming{1}, finish{1};

 private:
  CpuEngine inner_;
};

TEST(Warmup, RequestsAreRefusedAndHealthIsNotServingUntilEveryDeviceIsWarm) {
  auto owned = std::make_unique<SlowWarmupEngine>();
  SlowWarmupEngine& engine = *owned;
  GemmServer server(LoopbackConfig(), std::move(owned));
  absl::Status started;
  std::thread start([&] { started = server.Start(); });
  engine.warming.wait();  // listening, and warming up

  gemmc::ClientOptions opts;
  opts.target = "127.0.0.1:" + std::to_string(server.port());
  gemmc::GemmClient client(opts);
  gemm::v1::MultiplyResponse resp;
  const grpc::Status refused = client.Multiply(SeededRequest(8, 8, 8, 1, 2), &resp);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(refused.error_message(), ::testing::HasSubstr("warming up"));
  HealthStatus health{};
  ASSERT_TRUE(client.Health("", &health).ok());
  EXPECT_EQ(health, grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  ASSERT_TRUE(client.Health("gemm.v1.GemmService", &health).ok());
  EXPECT_EQ(health, grpc::health::v1::HealthCheckResponse::NOT_SERVING);

  engine.finish.count_down();
  start.join();
  ASSERT_TRUE(started.ok()) << started;
  ASSERT_TRUE(client.Health("", &health).ok());
  EXPECT_EQ(health, grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_TRUE(client.Multiply(SeededRequest(8, 8, 8, 1, 2), &resp).ok());
  server.Shutdown(std::chrono::seconds(1));
}

}  // namespace
}  // namespace gemmd::testing
