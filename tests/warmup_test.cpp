// Start-up: while the devices warm up, Multiply is refused as UNAVAILABLE
// (retry in a moment) and health reads NOT_SERVING; both change only once
// the last device is warm.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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

// A CPU engine that says it has four devices; each device's warm-up waits
// (up to 5 s) until every device's warm-up has begun, which only happens if
// the server warms them at once.
class ConcurrentWarmupEngine final : public Engine {
 public:
  static constexpr int kDevices = 4;
  std::string name() const override { return inner_.name(); }
  std::vector<DeviceDescription> devices() const override {
    std::vector<DeviceDescription> out;
    for (int d = 0; d < kDevices; ++d) {
      out.push_back(inner_.devices()[0]);
      out.back().id = "cpu:" + std::to_string(d);
    }
    return out;
  }
  StepAvailability availability(int step, int) const override { return inner_.availability(step, 0); }
  bool healthy(int) const override { return inner_.healthy(0); }
  absl::Status Warmup(int) override {
    std::unique_lock lock(mu_);
    ++begun_;
    cv_.notify_all();
    if (!cv_.wait_for(lock, std::chrono::seconds(5), [&] { return begun_ == kDevices; })) ++alone_;
    return absl::OkStatus();
  }
  absl::StatusOr<GemmReport> Run(int, const GemmJob& job) override { return inner_.Run(0, job); }
  int alone() {
    std::lock_guard lock(mu_);
    return alone_;
  }

 private:
  CpuEngine inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  int begun_ = 0, alone_ = 0;
};

// Each GPU's warm-up takes seconds (the self-test, the cuBLAS plan): the
// server runs them at once, so that a node of eight starts in one's time.
TEST(Warmup, EveryDeviceWarmsUpAtOnce) {
  auto owned = std::make_unique<ConcurrentWarmupEngine>();
  ConcurrentWarmupEngine& engine = *owned;
  GemmServer server(LoopbackConfig(), std::move(owned));
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(engine.alone(), 0) << "a device's warm-up waited in vain for the others: they ran one after another";
  server.Shutdown(std::chrono::seconds(1));
}

}  // namespace
}  // namespace gemmd::testing
