#include "engine/dispatcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <latch>
#include <map>

namespace gemmd {
namespace {

// Devices whose health and step support a test can set; Run is not used
// (the dispatcher only calls Task::run).
class FakeEngine final : public Engine {
 public:
  explicit FakeEngine(int devices) : healthy_(devices, true), no_step_(devices, -1) {}
  std::string name() const override { return "fake"; }
  std::vector<DeviceDescription> devices() const override {
    std::vector<DeviceDescription> out(healthy_.size());
    for (size_t i = 0; i < out.size(); ++i) out[i].id = "fake:" + std::to_string(i);
    return out;
  }
  StepAvailability availability(int step, int device) const override {
    return {step != no_step_[device], "not here"};
  }
  bool healthy(int device) const override { return healthy_[device]; }
  absl::Status Warmup(int) override { return absl::OkStatus(); }
  absl::StatusOr<GemmReport> Run(int, const GemmJob&) override { return GemmReport{}; }

  std::vector<bool> healthy_;
  std::vector<int> no_step_;
};

TEST(Dispatcher, SpreadsWorkToTheDeviceWithTheLeastQueued) {
  FakeEngine engine(2);
  DispatcherOptions o;
  o.queue_capacity = 100;
  Dispatcher d(engine, o);
  std::latch release(1);
  std::mutex mu;
  std::map<int, double> work_by_device;
  std::atomic<int> done{0};
  // Two blockers occupy both workers, then six tasks of mixed size queue up.
  for (double w : {1.0, 1.0, 8.0, 1.0, 1.0, 1.0, 1.0, 1.0}) {
    Dispatcher::Task t;
    t.work = w;
    t.run = [&, w](int device) {
      release.wait();
      std::lock_guard lock(mu);
      work_by_device[device] += w;
      ++done;
    };
    ASSERT_TRUE(d.Submit(std::move(t)).ok());
  }
  release.count_down();
  d.Shutdown();
  EXPECT_EQ(done.load(), 8);
  // The 8-FLOP task lands alone beside the small ones: 8+1 vs 6 at worst.
  EXPECT_LE(std::abs(work_by_device[0] - work_by_device[1]), 3.0);
}

TEST(Dispatcher, RefusesWhenTheQueueIsFull) {
  FakeEngine engine(1);
  DispatcherOptions o;
  o.queue_capacity = 2;
  std::vector<size_t> depths;
  std::mutex mu;
  o.on_queue_depth = [&](int, size_t depth) {
    std::lock_guard lock(mu);
    depths.push_back(depth);
  };
  Dispatcher d(engine, o);
  std::latch started(1), release(1);
  Dispatcher::Task blocker;
  blocker.run = [&](int) {
    started.count_down();
    release.wait();
  };
  ASSERT_TRUE(d.Submit(std::move(blocker)).ok());
  started.wait();
  for (int i = 0; i < 2; ++i) {
    Dispatcher::Task t;
    t.run = [](int) {};
    ASSERT_TRUE(d.Submit(std::move(t)).ok());
  }
  Dispatcher::Task extra;
  extra.run = [](int) {};
  absl::Status st = d.Submit(std::move(extra));
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("queue is full (2 requests waiting)"));
  EXPECT_EQ(d.queued(), 2u);
  release.count_down();
  d.Shutdown();
  EXPECT_EQ(d.queued(), 0u);
  std::lock_guard lock(mu);
  EXPECT_EQ(depths.back(), 0u);
}

TEST(Dispatcher, SkipsUnhealthyDevicesAndDevicesWithoutTheStep) {
  FakeEngine engine(3);
  engine.healthy_[0] = false;
  engine.no_step_[1] = 4;
  Dispatcher d(engine, {});
  std::promise<int> where;
  Dispatcher::Task t;
  t.step = 4;
  t.run = [&](int device) { where.set_value(device); };
  ASSERT_TRUE(d.Submit(std::move(t)).ok());
  EXPECT_EQ(where.get_future().get(), 2);

  engine.healthy_[2] = false;  // device 1 is healthy but lacks step 4
  Dispatcher::Task u;
  u.step = 4;
  u.run = [](int) {};
  const absl::Status st = d.Submit(std::move(u));
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("no healthy device can run step 4"));
}

TEST(Dispatcher, EveryDeviceLostIsUnavailableNotTheRequestsFault) {
  FakeEngine engine(2);
  engine.healthy_[0] = engine.healthy_[1] = false;
  Dispatcher d(engine, {});
  Dispatcher::Task t;
  t.run = [](int) { ADD_FAILURE() << "ran on a lost device"; };
  const absl::Status st = d.Submit(std::move(t));
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("every device of this server is out of service"));
  EXPECT_EQ(d.queued(), 0u);
}

TEST(Dispatcher, ShutdownRunsWhatIsQueuedThenRefuses) {
  FakeEngine engine(1);
  Dispatcher d(engine, {});
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i) {
    Dispatcher::Task t;
    t.run = [&](int) { ++ran; };
    ASSERT_TRUE(d.Submit(std::move(t)).ok());
  }
  d.Shutdown();
  EXPECT_EQ(ran.load(), 10);
  Dispatcher::Task late;
  late.run = [](int) {};
  EXPECT_EQ(d.Submit(std::move(late)).code(), absl::StatusCode::kUnavailable);
  d.Shutdown();  // idempotent
}

}  // namespace
}  // namespace gemmd
