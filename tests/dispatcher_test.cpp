#include "engine/dispatcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <latch>
#include <map>
#include <set>
#include <thread>

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
  uint64_t HeldBytes(int device, const std::vector<std::string>& keys) const override {
    uint64_t bytes = 0;
    for (const auto& key : keys) {
      if (auto it = held_.find({device, key}); it != held_.end()) bytes += it->second;
    }
    return bytes;
  }

  std::vector<bool> healthy_;
  std::vector<int> no_step_;
  std::map<std::pair<int, std::string>, uint64_t> held_;  // (device, key): bytes held
};

TEST(Dispatcher, RunOnEveryWorkerRunsOnceOnEachWorkerOfEachHealthyDevice) {
  FakeEngine engine(3);
  engine.healthy_[1] = false;
  DispatcherOptions o;
  o.workers_per_device = 3;
  Dispatcher d(engine, o);
  std::mutex mu;
  std::map<int, std::set<std::thread::id>> threads;
  int calls = 0;
  d.RunOnEveryWorker(
      [&](int device) {
        std::lock_guard lock(mu);
        threads[device].insert(std::this_thread::get_id());
        ++calls;
      },
      std::chrono::seconds(10));
  // Returned once all had run: nothing is added afterwards.
  std::lock_guard lock(mu);
  EXPECT_EQ(calls, 6);
  ASSERT_EQ(threads.size(), 2u) << "not on the unhealthy device";
  EXPECT_EQ(threads[0].size(), 3u) << "each of device 0's workers once";
  EXPECT_EQ(threads[2].size(), 3u) << "each of device 2's workers once";
}

TEST(Dispatcher, RunOnEveryWorkerGivesUpAtItsLimit) {
  FakeEngine engine(1);
  DispatcherOptions o;
  o.workers_per_device = 2;
  Dispatcher d(engine, o);
  std::latch release(1);
  Dispatcher::Task busy;  // holds one worker, so only one of the two can start
  busy.run = [&](int) { release.wait(); };
  ASSERT_TRUE(d.Submit(std::move(busy)).ok());
  std::atomic<int> calls{0};
  const auto start = std::chrono::steady_clock::now();
  d.RunOnEveryWorker([&](int) { ++calls; }, std::chrono::milliseconds(200));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.19);
  EXPECT_LT(waited, 5.0);
  release.count_down();
  d.Shutdown();  // runs what is left
  EXPECT_EQ(calls.load(), 2) << "both ran in the end, the second after the limit";
}

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

// A task must not wait behind a long GEMM on one device while another
// device sits idle: running work counts, not only queued work.
TEST(Dispatcher, ANewTaskStartsOnAnIdleDeviceNotBehindARunningOne) {
  FakeEngine engine(2);
  std::latch release(1);
  std::promise<int> blocker_device, next_device;
  Dispatcher d(engine, {});  // after what its tasks use: joined first
  Dispatcher::Task blocker;
  blocker.work = 1e12;
  blocker.run = [&](int device) {
    blocker_device.set_value(device);
    release.wait();
  };
  ASSERT_TRUE(d.Submit(std::move(blocker)).ok());
  const int busy = blocker_device.get_future().get();  // running now, queue empty again
  Dispatcher::Task next;
  next.work = 1;
  next.run = [&](int device) { next_device.set_value(device); };
  ASSERT_TRUE(d.Submit(std::move(next)).ok());
  auto started = next_device.get_future();
  const bool in_time = started.wait_for(std::chrono::seconds(1)) == std::future_status::ready;
  release.count_down();
  ASSERT_TRUE(in_time) << "the task waited behind the running one";
  EXPECT_NE(started.get(), busy);
}

// A task goes where its stored operands already are, even behind work,
// until that device's work exceeds the other's by more than the copy of
// those bytes would cost; tasks with nothing held anywhere spread as before.
TEST(Dispatcher, ATaskGoesWhereItsOperandsAreUnlessThatDeviceIsBehindByMoreThanTheCopy) {
  FakeEngine engine(2);
  engine.held_[{1, "m-weights"}] = 1000;  // bytes on device 1
  DispatcherOptions o;
  o.queue_capacity = 100;
  o.copy_flops_per_byte = 10;  // the 1000 bytes held are worth 10,000 FLOPs of device 1's time
  Dispatcher d(engine, o);
  std::latch release(1);
  std::mutex mu;
  std::vector<std::pair<std::string, int>> ran;  // (name, device) as they ran
  std::latch blockers_running(2);
  auto submit = [&](std::string name, double work, std::vector<std::string> keys, bool block) {
    Dispatcher::Task t;
    t.work = work;
    t.operand_keys = std::move(keys);
    t.run = [&, name, block](int device) {
      if (block) {
        blockers_running.count_down();
        release.wait();
      }
      std::lock_guard lock(mu);
      ran.emplace_back(name, device);
    };
    return d.Submit(std::move(t));
  };
  // Both devices busy: device 0 with 1,000 FLOPs, device 1 with 6,000.
  ASSERT_TRUE(submit("busy 0", 1000, {}, true).ok());
  ASSERT_TRUE(submit("busy 1", 6000, {}, true).ok());
  blockers_running.wait();
  std::map<std::string, int> where;
  // 6,000 - 10,000 < 1,000: device 1, behind by 5,000 but holding the weights.
  ASSERT_TRUE(submit("by weights", 2000, {"m-weights", "m-other"}, false).ok());
  // Now device 1 has 8,000 queued and running: 8,000 - 10,000 < 1,000 still.
  ASSERT_TRUE(submit("by weights again", 4000, {"m-weights"}, false).ok());
  // 12,000 - 10,000 > 1,000: behind by more than the copy saves: device 0.
  ASSERT_TRUE(submit("by weights, too far behind", 1, {"m-weights"}, false).ok());
  // Nothing held anywhere: the least work, device 0 (1,001 against 12,000).
  ASSERT_TRUE(submit("inline", 1, {"m-nowhere"}, false).ok());
  release.count_down();
  d.Shutdown();
  for (const auto& [name, device] : ran) where[name] = device;
  EXPECT_EQ(where["busy 1"], 1);
  EXPECT_EQ(where["by weights"], 1);
  EXPECT_EQ(where["by weights again"], 1);
  EXPECT_EQ(where["by weights, too far behind"], 0);
  EXPECT_EQ(where["inline"], 0);
}

// Tasks queued on a device that leaves service go to a healthy device
// instead of failing there.
TEST(Dispatcher, TasksQueuedOnADeviceThatLeavesServiceMoveToAHealthyOne) {
  FakeEngine engine(2);
  std::latch release0(1), release1(1);
  std::promise<void> started0, started1;
  std::promise<int> moved;
  Dispatcher d(engine, {});
  Dispatcher::Task small, large, queued;
  small.work = 1;  // device 0: the lighter load, so the next task queues there
  small.run = [&](int) {
    started0.set_value();
    release0.wait();
  };
  large.work = 100;
  large.run = [&](int) {
    started1.set_value();
    release1.wait();
  };
  ASSERT_TRUE(d.Submit(std::move(small)).ok());
  started0.get_future().wait();
  ASSERT_TRUE(d.Submit(std::move(large)).ok());
  started1.get_future().wait();
  queued.work = 1;
  queued.run = [&](int device) { moved.set_value(device); };
  ASSERT_TRUE(d.Submit(std::move(queued)).ok());
  engine.healthy_[0] = false;  // device 0 is lost while its GEMM runs
  release0.count_down();
  release1.count_down();
  EXPECT_EQ(moved.get_future().get(), 1);
}

// Gauges are published under the lock that orders the changes: a worker's
// "0 queued" can no longer be overtaken by the submitter's older "1 queued",
// which left gemm_queue_depth at 1 on an idle server.
TEST(Dispatcher, QueueDepthIsPublishedInTheOrderItChanged) {
  FakeEngine engine(1);
  DispatcherOptions o;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<size_t> published;
  bool first = true;
  o.on_queue_depth = [&](int, size_t depth) {
    std::unique_lock lock(mu);
    if (first && depth == 1) {  // the submitter's: give the worker time to overtake it
      first = false;
      cv.wait_for(lock, std::chrono::milliseconds(300), [&] { return !published.empty(); });
    }
    published.push_back(depth);
    cv.notify_all();
  };
  Dispatcher d(engine, o);
  Dispatcher::Task t;
  t.run = [](int) {};
  ASSERT_TRUE(d.Submit(std::move(t)).ok());
  d.Shutdown();
  std::lock_guard lock(mu);
  ASSERT_FALSE(published.empty());
  EXPECT_EQ(published.back(), 0u);
}

// What the batching tests record: each run as the list of task ids it ran.
struct RunLog {
  std::mutex mu;
  std::vector<std::vector<int>> runs;
  void Add(std::vector<int> ids) {
    std::lock_guard lock(mu);
    runs.push_back(std::move(ids));
  }
};

Dispatcher::Task BatchTask(int id, uint64_t key, RunLog* log, std::latch* gate = nullptr) {
  Dispatcher::Task t;
  t.work = 1;
  t.batch_key = key;
  t.payload = std::make_shared<int>(id);
  t.run = [id, log, gate](int) {
    if (gate != nullptr) gate->wait();
    log->Add({id});
  };
  t.run_batch = [log](int, std::vector<Dispatcher::Task>& batch) {
    std::vector<int> ids;
    for (const auto& b : batch) ids.push_back(*std::static_pointer_cast<int>(b.payload));
    log->Add(ids);
  };
  return t;
}

// Behind a running task, tasks of one key queue up among others: the next
// worker run takes every task of its key (up to max_batch) as one batch,
// in queue order, and leaves the others, unbatched keys included, alone.
TEST(Dispatcher, QueuedTasksOfOneKeyRunAsOneBatchUpToTheLimit) {
  FakeEngine engine(1);
  DispatcherOptions o;
  o.queue_capacity = 100;
  o.max_batch = 4;
  RunLog log;
  std::latch gate(1);
  {
    Dispatcher d(engine, o);
    ASSERT_TRUE(d.Submit(BatchTask(0, 0, &log, &gate)).ok());  // holds the only worker
    while (d.queued() != 0) std::this_thread::yield();
    for (auto [id, key] : std::vector<std::pair<int, uint64_t>>{
             {1, 7}, {2, 9}, {3, 7}, {4, 0}, {5, 7}, {6, 7}, {7, 7}, {8, 9}}) {
      ASSERT_TRUE(d.Submit(BatchTask(id, key, &log)).ok());
    }
    gate.count_down();
    d.Shutdown();
  }
  const std::vector<std::vector<int>> expected = {{0}, {1, 3, 5, 6}, {2, 8}, {4}, {7}};
  EXPECT_EQ(log.runs, expected);
}

// With a window, a worker that took one task waits for more of its key.
TEST(Dispatcher, AWorkerWaitsUpToTheWindowToFillABatch) {
  FakeEngine engine(1);
  DispatcherOptions o;
  o.max_batch = 3;
  o.batch_window = std::chrono::seconds(10);  // long: the batch fills well before
  RunLog log;
  {
    Dispatcher d(engine, o);
    for (int id = 0; id < 3; ++id) {
      ASSERT_TRUE(d.Submit(BatchTask(id, 5, &log)).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the worker took the first already
    }
    d.Shutdown();
  }
  const std::vector<std::vector<int>> expected = {{0, 1, 2}};
  EXPECT_EQ(log.runs, expected);

  // A short window that nothing fills: the lone task runs by itself.
  o.batch_window = std::chrono::milliseconds(5);
  RunLog alone;
  Dispatcher d(engine, o);
  ASSERT_TRUE(d.Submit(BatchTask(0, 5, &alone)).ok());
  d.Shutdown();
  EXPECT_EQ(alone.runs, std::vector<std::vector<int>>{{0}});
}

// max_batch 1 (the default) never batches: each task's own run.
TEST(Dispatcher, WithoutBatchingEveryTaskRunsAlone) {
  FakeEngine engine(1);
  RunLog log;
  std::latch gate(1);
  {
    Dispatcher d(engine, {});
    ASSERT_TRUE(d.Submit(BatchTask(0, 7, &log, &gate)).ok());
    while (d.queued() != 0) std::this_thread::yield();
    for (int id = 1; id < 4; ++id) ASSERT_TRUE(d.Submit(BatchTask(id, 7, &log)).ok());
    gate.count_down();
    d.Shutdown();
  }
  const std::vector<std::vector<int>> expected = {{0}, {1}, {2}, {3}};
  EXPECT_EQ(log.runs, expected);
}

// One idle worker spins and the others sleep, so Enqueue wakes no one while
// a worker spins. Two tasks that come together must still run side by side:
// each here waits (up to 5 s) until both have started.
TEST(Dispatcher, TwoTasksArrivingWhileAWorkerSpinsRunOnTwoWorkers) {
  FakeEngine engine(1);
  DispatcherOptions o;
  o.workers_per_device = 2;
  Dispatcher d(engine, o);
  for (int round = 0; round < 20; ++round) {
    std::promise<void> warm;
    Dispatcher::Task first;
    first.run = [&](int) { warm.set_value(); };
    ASSERT_TRUE(d.Submit(std::move(first)).ok());
    warm.get_future().wait();  // its worker spins again in a moment
    std::mutex mu;
    std::condition_variable cv;
    int started = 0;
    std::atomic<int> saw_both{0};
    std::latch finished(2);
    for (int i = 0; i < 2; ++i) {
      Dispatcher::Task t;
      t.run = [&](int) {
        std::unique_lock lock(mu);
        ++started;
        cv.notify_all();
        if (cv.wait_for(lock, std::chrono::seconds(5), [&] { return started == 2; })) ++saw_both;
        finished.count_down();
      };
      ASSERT_TRUE(d.Submit(std::move(t)).ok());
    }
    finished.wait();
    ASSERT_EQ(saw_both.load(), 2) << "round " << round << ": one task waited for the other to end";
  }
}

}  // namespace
}  // namespace gemmd
