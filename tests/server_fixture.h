// Starts a real gemmd (GemmServer) on a loopback port for end-to-end tests,
// and a GatedEngine that lets a test hold GEMMs on the device to exercise
// queueing, deadlines and cancellation deterministically.
#pragma once

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/cpu_engine.h"
#include "gemm_client.h"
#include "gemm_server.h"

namespace gemmd::testing {

// Forwards to a CpuEngine; while closed, Run waits at the gate.
class GatedEngine final : public Engine {
 public:
  std::string name() const override { return inner_.name(); }
  std::vector<DeviceDescription> devices() const override { return inner_.devices(); }
  StepAvailability availability(int step, int device) const override { return inner_.availability(step, device); }
  bool healthy(int device) const override { return inner_.healthy(device); }
  absl::Status Warmup(int device) override { return inner_.Warmup(device); }
  void WarmWorker(int device) override {
    {
      std::lock_guard lock(mu_);
      warmed_by_.push_back(std::this_thread::get_id());
    }
    inner_.WarmWorker(device);
  }
  // The threads WarmWorker ran on, in order.
  std::vector<std::thread::id> warmed_by() {
    std::lock_guard lock(mu_);
    return warmed_by_;
  }
  absl::StatusOr<GemmReport> Run(int device, const GemmJob& job) override {
    PassGate(0);
    ++runs_;
    return inner_.Run(device, job);
  }
  // Batches pass the gate once, and are recorded by size.
  std::vector<absl::StatusOr<GemmReport>> RunBatch(int device, const std::vector<const GemmJob*>& jobs) override {
    PassGate(jobs.size());
    runs_ += static_cast<int>(jobs.size());
    return inner_.RunBatch(device, jobs);
  }
  std::vector<size_t> batch_sizes() {
    std::lock_guard lock(mu_);
    return batch_sizes_;
  }

  void Close() {
    std::lock_guard lock(mu_);
    open_ = false;
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    open_cv_.notify_all();
  }
  // Blocks until `n` jobs have reached the gate in total.
  void WaitArrived(int n) {
    std::unique_lock lock(mu_);
    arrived_cv_.wait(lock, [&] { return arrived_ >= n; });
  }
  int runs() const { return runs_; }

 private:
  // Counts an arrival (a batch of `batch_size` jobs is recorded too; 0: a
  // single Run) and waits while the gate is closed.
  void PassGate(size_t batch_size) {
    std::unique_lock lock(mu_);
    ++arrived_;
    if (batch_size > 0) batch_sizes_.push_back(batch_size);
    arrived_cv_.notify_all();
    open_cv_.wait(lock, [&] { return open_; });
  }

  CpuEngine inner_;
  std::mutex mu_;
  std::condition_variable open_cv_, arrived_cv_;
  bool open_ = true;
  int arrived_ = 0;
  std::vector<size_t> batch_sizes_;
  std::vector<std::thread::id> warmed_by_;
  std::atomic<int> runs_{0};
};

// The server's metrics in the text exposition format, as a scrape would
// return them (without HTTP).
inline std::string MetricsText(GemmServer& server) {
  return prometheus::TextSerializer().Serialize(server.metrics().registry().Collect());
}

// The value of the sample `name{labels}` (labels in the exposition's order)
// in `text`; -1 when absent.
inline double Sample(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

// A request for an m×n×k GEMM whose A and B the server generates from
// seeds (gemm/random_fill.h): nothing to upload, any size.
inline gemm::v1::MultiplyRequest SeededRequest(int64_t m, int64_t n, int64_t k, uint64_t a_seed, uint64_t b_seed) {
  gemm::v1::MultiplyRequest req;
  req.mutable_shape()->set_m(m);
  req.mutable_shape()->set_n(n);
  req.mutable_shape()->set_k(k);
  req.mutable_a()->mutable_random()->set_seed(a_seed);
  req.mutable_b()->mutable_random()->set_seed(b_seed);
  return req;
}

inline ServerConfig LoopbackConfig() {
  ServerConfig c;
  c.listen = "127.0.0.1:0";
  c.metrics_listen = "";  // prometheus-cpp's exposer takes 2 s to stop: only metrics tests start one
  c.max_message_bytes = 4 << 20;
  c.matrix_quota_bytes = 64 << 20;
  return c;
}

class ServerFixture : public ::testing::Test {
 protected:
  // Call from the test (or SetUp) before using client().
  // `before_start` may set what must be set before Start.
  void StartServer(ServerConfig config = LoopbackConfig(), std::unique_ptr<Engine> engine = nullptr,
                   const std::function<void(GemmServer&)>& before_start = nullptr) {
    if (!engine) engine = std::make_unique<CpuEngine>();
    config_ = config;
    server_ = std::make_unique<GemmServer>(config, std::move(engine));
    if (before_start) before_start(*server_);
    ASSERT_TRUE(server_->Start().ok());
    gemmc::ClientOptions opts;
    opts.target = "127.0.0.1:" + std::to_string(server_->port());
    opts.max_message_bytes = config.max_message_bytes;
    opts.token = config.auth_token;
    client_ = std::make_unique<gemmc::GemmClient>(opts);
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::seconds(5));
  }
  // Ends the server (as a restart's first half does), so that StartServer
  // can start another, on the same matrix directory if it likes.
  void StopServer() {
    client_.reset();
    server_.reset();
  }
  // A client of the running server that calls with `token`.
  std::unique_ptr<gemmc::GemmClient> ClientWithToken(const std::string& token) const {
    gemmc::ClientOptions opts;
    opts.target = "127.0.0.1:" + std::to_string(server_->port());
    opts.max_message_bytes = config_.max_message_bytes;
    opts.token = token;
    return std::make_unique<gemmc::GemmClient>(opts);
  }

  gemmc::GemmClient& client() { return *client_; }
  // Polls ListMatrices until the quota in use is `bytes` (or 5 s pass);
  // what it last saw.
  uint64_t WaitForUsedBytes(uint64_t bytes) {
    gemm::v1::ListMatricesResponse list;
    for (int i = 0; i < 500; ++i) {
      list.Clear();
      if (client().ListMatrices(&list).ok() && list.used_bytes() == bytes) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return list.used_bytes();
  }
  GemmServer& server() { return *server_; }
  const ServerConfig& config() const { return config_; }

 private:
  ServerConfig config_;
  std::unique_ptr<GemmServer> server_;
  std::unique_ptr<gemmc::GemmClient> client_;
};

// A server whose one device runs at a gate (GatedEngine) and whose queue
// holds one request: HoldDevice keeps the device busy until ReleaseDevice,
// so tests can fill the queue, let deadlines pass or cancel on cue.
class GatedServerFixture : public ServerFixture {
 protected:
  void SetUp() override {
    auto engine = std::make_unique<GatedEngine>();
    gate_ = engine.get();
    ServerConfig c = LoopbackConfig();
    c.queue_capacity = 1;
    StartServer(c, std::move(engine));
  }
  void TearDown() override {
    gate_->Open();
    ServerFixture::TearDown();
  }
  // A request sent from a thread while the gate is closed: it holds the
  // (only) device until ReleaseDevice.
  struct HeldRequest {
    grpc::Status status;
    gemm::v1::MultiplyResponse resp;
    std::thread thread;
  };
  std::unique_ptr<HeldRequest> HoldDevice() {
    gate_->Close();
    auto held = std::make_unique<HeldRequest>();
    held->thread = std::thread([this, h = held.get()] {
      h->status = client().Multiply(SeededRequest(8, 8, 8, 1, 1), &h->resp);
    });
    gate_->WaitArrived(1);
    return held;
  }
  // Opens the gate; the held request's status once it is answered.
  grpc::Status ReleaseDevice(HeldRequest& held) {
    gate_->Open();
    held.thread.join();
    return held.status;
  }
  GatedEngine* gate_ = nullptr;
};

}  // namespace gemmd::testing
