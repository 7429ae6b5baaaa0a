// Batching of small GEMMs (--batch-max): requests of one small step-0 shape
// and form that queue while the device is busy reach the engine together,
// and each still gets its own verified reply; other shapes, other forms,
// other steps, batched requests and benchmark timing run alone; with batching off nothing is batched. A
// batch's replies, and a request's while others wait, go out on the reply
// senders beside the worker.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/batching.h"
#include "server_fixture.h"
#include "test_util.h"
#include "x_times_w.h"

namespace gemmd {
namespace {

using namespace gemmd::testing;
using gemm::v1::MultiplyRequest;
using gemm::v1::MultiplyResponse;

// `count` requests of one small shape (16^3), each with seeds of its own:
// a batch's worth.
std::vector<MultiplyRequest> SameShapeRequests(uint64_t count) {
  std::vector<MultiplyRequest> reqs;
  for (uint64_t seed = 0; seed < count; ++seed) reqs.push_back(SeededRequest(16, 16, 16, seed, seed));
  return reqs;
}

class BatchingTest : public ServerFixture {
 protected:
  void Start(uint32_t batch_max) {
    auto engine = std::make_unique<GatedEngine>();
    gate_ = engine.get();
    ServerConfig c = LoopbackConfig();
    c.batch_max = batch_max;
    StartServer(c, std::move(engine));
  }
  // Every reply waits (up to 5 s) until `n` replies are being sent at once.
  void StartWithReplyBarrier(uint32_t batch_max, uint32_t reply_threads, int n) {
    auto engine = std::make_unique<GatedEngine>();
    gate_ = engine.get();
    ServerConfig c = LoopbackConfig();
    c.batch_max = batch_max;
    c.reply_threads = reply_threads;
    barrier_size_ = n;
    StartServer(c, std::move(engine), [this](GemmServer& s) {
      s.SetBeforeReplyHookForTest([this](grpc::ServerContextBase*) {
        std::unique_lock lock(mu_);
        most_at_once_ = std::max(most_at_once_, ++sending_);
        all_arrived_ |= sending_ == barrier_size_;
        arrived_.notify_all();
        arrived_.wait_for(lock, std::chrono::seconds(5), [this] { return all_arrived_; });
        --sending_;
      });
    });
  }
  int most_at_once() {
    std::lock_guard lock(mu_);
    return most_at_once_;
  }
  void TearDown() override {
    if (gate_) gate_->Open();
    ServerFixture::TearDown();
  }

  // Holds the device with a first request, queues `reqs` behind it, opens
  // the gate and collects every reply (the first one's last).
  std::vector<std::pair<grpc::Status, MultiplyResponse>> QueueBehindABusyDevice(
      const std::vector<MultiplyRequest>& reqs) {
    gate_->Close();
    std::vector<std::pair<grpc::Status, MultiplyResponse>> out(reqs.size() + 1);
    std::vector<std::thread> threads;
    threads.emplace_back([&] { out.back().first = client().Multiply(SeededRequest(32, 32, 32, 1, 2), &out.back().second); });
    gate_->WaitArrived(1);
    for (size_t i = 0; i < reqs.size(); ++i) {
      threads.emplace_back([&, i] { out[i].first = client().Multiply(reqs[i], &out[i].second); });
    }
    for (int i = 0; i < 2000 && server().queued() < reqs.size(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_EQ(server().queued(), reqs.size());
    gate_->Open();
    for (auto& t : threads) t.join();
    return out;
  }

  GatedEngine* gate_ = nullptr;
  std::mutex mu_;
  std::condition_variable arrived_;
  int barrier_size_ = 0, sending_ = 0, most_at_once_ = 0;
  bool all_arrived_ = false;
};

TEST_F(BatchingTest, QueuedSmallRequestsOfOneShapeReachTheEngineTogether) {
  Start(8);
  std::vector<MultiplyRequest> reqs;
  for (uint64_t seed = 10; seed < 16; ++seed) reqs.push_back(SeededRequest(64, 48, 80, seed, seed + 100));
  reqs.push_back(SeededRequest(64, 48, 81, 7, 8));  // another shape
  MultiplyRequest ladder = SeededRequest(64, 48, 80, 9, 9);
  ladder.set_step(3);  // no GPU here: refused up front, never queued
  MultiplyRequest timed = SeededRequest(64, 48, 80, 5, 6);
  timed.set_benchmark(true);  // benchmark timing runs alone
  reqs.push_back(timed);
  for (auto& r : reqs) r.set_output(gemm::v1::OUTPUT_INLINE);

  const auto replies = QueueBehindABusyDevice(reqs);
  for (size_t i = 0; i < replies.size(); ++i) {
    ASSERT_TRUE(replies[i].first.ok()) << i << ": " << replies[i].first.error_message();
    const MultiplyResponse& resp = replies[i].second;
    EXPECT_TRUE(resp.verification().passed()) << i;
    if (i < reqs.size()) {
      // Each reply carries its own D: its own seeds' product.
      const auto& s = reqs[i].shape();
      const auto a = SeededOperand(reqs[i].a().random().seed(), gemm::OperandId::kA, s.m() * s.k());
      const auto b = SeededOperand(reqs[i].b().random().seed(), gemm::OperandId::kB, s.n() * s.k());
      EXPECT_EQ(CountMismatches(resp.d(), ReferenceGemm(a, b, s.m(), s.n(), s.k())), 0) << i;
    }
  }
  // The holder alone; the six of one shape as one batch; the rest alone.
  EXPECT_EQ(gate_->batch_sizes(), std::vector<size_t>{6});
  EXPECT_EQ(gate_->runs(), 9);
  const std::string metrics = MetricsText(server());
  EXPECT_EQ(Sample(metrics, "gemm_batch_size_count"), 3);  // holder, the six, the other shape (benchmark: not batchable)
  EXPECT_EQ(Sample(metrics, "gemm_batch_size_sum"), 8);
}

// A batch's replies go out at once: its worker sends one and the reply
// senders the others, so the worker can take the next batch. Three senders:
// the reply of the request that held the device is on one of them too (a
// batch was waiting when it finished).
TEST_F(BatchingTest, ABatchsRepliesAreSentSideBySide) {
  StartWithReplyBarrier(8, 3, 4);
  const std::vector<MultiplyRequest> reqs = SameShapeRequests(3);
  const auto start = std::chrono::steady_clock::now();
  for (const auto& [status, resp] : QueueBehindABusyDevice(reqs)) {
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_TRUE(resp.verification().passed());
  }
  EXPECT_EQ(gate_->batch_sizes(), std::vector<size_t>{3});
  EXPECT_EQ(most_at_once(), 4);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
}

// With batching off, a worker that has more requests waiting leaves each
// reply to the senders (two, the default) and runs the next GEMM: the
// request that held the device and the two queued behind it are all being
// answered at once (the last, with nothing left waiting, by the worker).
TEST_F(BatchingTest, WhileRequestsWaitTheWorkerLeavesRepliesToTheSenders) {
  StartWithReplyBarrier(1, 2, 3);
  const std::vector<MultiplyRequest> reqs = SameShapeRequests(2);
  const auto start = std::chrono::steady_clock::now();
  for (const auto& [status, resp] : QueueBehindABusyDevice(reqs)) {
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(resp.timing().batch_size(), 1u);
  }
  EXPECT_EQ(most_at_once(), 3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
}

// The dispatcher's key: equal for small step-0 jobs of one shape and form,
// different for another form or shape, 0 for a job that must run alone.
TEST(BatchKey, GroupsJobsOfOneShapeAndForm) {
  const BatchPolicy policy{8};
  GemmJob plain;
  plain.m = plain.n = plain.k = 64;
  GemmJob bf16 = plain;
  bf16.form.a = bf16.form.b = bf16.form.d = gemm::ElementType::kBF16;
  GemmJob bf16_again = bf16;
  bf16_again.a.seed = 5;
  EXPECT_NE(BatchKey(plain, policy), 0u);
  EXPECT_EQ(BatchKey(bf16, policy), BatchKey(bf16_again, policy));
  EXPECT_NE(BatchKey(bf16, policy), BatchKey(plain, policy));
  GemmJob scaled = bf16, wider = bf16, batched = bf16, ladder = bf16;
  scaled.form.alpha = 2;
  wider.n = 65;
  batched.form.batch = 2;
  ladder.step = 3;
  EXPECT_NE(BatchKey(scaled, policy), BatchKey(bf16, policy));
  EXPECT_NE(BatchKey(wider, policy), BatchKey(bf16, policy));
  EXPECT_EQ(BatchKey(batched, policy), 0u) << "a batch of its own runs alone";
  EXPECT_EQ(BatchKey(ladder, policy), 0u);
}

// bf16 x @ W + 0.5·r, W stored K×N: four requests of that form batch
// together, two of another alpha together apart from them, and one that
// is a batch of two itself runs alone. Each reply is its own product.
TEST_F(BatchingTest, RequestsOfOneFormBatchTogetherAndOtherFormsApart) {
  Start(8);
  std::vector<XTimesW> problems;
  std::vector<MultiplyRequest> reqs;
  for (uint32_t i = 0; i < 6; ++i) {
    problems.emplace_back(1, 24, 16, 40, 10 * i + 1);
    reqs.push_back(problems.back().Request(client()));
    if (i >= 4) reqs.back().set_alpha(2);
  }
  problems.emplace_back(2, 24, 16, 40, 99);
  reqs.push_back(problems.back().Request(client()));

  const auto replies = QueueBehindABusyDevice(reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_TRUE(replies[i].first.ok()) << i << ": " << replies[i].first.error_message();
    const MultiplyResponse& resp = replies[i].second;
    EXPECT_TRUE(resp.verification().passed()) << i;
    if (i < 4 || i == 6) EXPECT_EQ(problems[i].Mismatches(resp.d()), 0) << i;  // alpha 1's product
  }
  std::vector<size_t> sizes = gate_->batch_sizes();
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<size_t>{2, 4}));
}

TEST_F(BatchingTest, UpToTheLimitPerBatch) {
  Start(4);
  const std::vector<MultiplyRequest> reqs = SameShapeRequests(10);
  for (const auto& [status, resp] : QueueBehindABusyDevice(reqs)) {
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_TRUE(resp.verification().passed());
  }
  EXPECT_EQ(gate_->batch_sizes(), (std::vector<size_t>{4, 4, 2}));
}

TEST_F(BatchingTest, WithBatchingOffEveryRequestRunsAlone) {
  Start(1);
  const std::vector<MultiplyRequest> reqs = SameShapeRequests(5);
  for (const auto& [status, resp] : QueueBehindABusyDevice(reqs)) {
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(resp.timing().batch_size(), 1u);
  }
  EXPECT_TRUE(gate_->batch_sizes().empty());
  EXPECT_EQ(Sample(MetricsText(server()), "gemm_batch_size_count"), 0);
}

}  // namespace
}  // namespace gemmd
