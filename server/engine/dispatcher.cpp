#include "engine/dispatcher.h"

#include <chrono>
#include <limits>
#include <thread>
#include <string>

#include "thread_name.h"

namespace gemmd {
namespace {

constexpr auto kSpinBeforeSleep = std::chrono::microseconds(1000);

}  // namespace

Dispatcher::Dispatcher(Engine& engine, DispatcherOptions options)
    : engine_(engine), options_(std::move(options)) {
  const size_t count = engine_.devices().size();
  for (size_t d = 0; d < count; ++d) devices_.push_back(std::make_unique<Device>());
  for (size_t d = 0; d < count; ++d) {
    for (size_t w = 0; w < options_.workers_per_device; ++w) {
      workers_.emplace_back([this, d] {
        NameThisThread("gemm-worker-" + std::to_string(d));
        WorkerLoop(static_cast<int>(d));
      });
    }
  }
}

Dispatcher::~Dispatcher() { Shutdown(); }

Dispatcher::Choice Dispatcher::Choose(const Task& task, int except) const {
  // Two picks in one pass: by idleness then least work, and by the work
  // less the copies the device's held operands save (idle breaks ties);
  // the second wins when any device holds any of them.
  Choice choice;
  int by_work = -1, by_held = -1;
  bool work_idle = false, held_idle = false, any_held = false;
  double least_work = std::numeric_limits<double>::infinity(), least_score = least_work;
  for (size_t d = 0; d < devices_.size(); ++d) {
    const int di = static_cast<int>(d);
    if (di == except || !engine_.healthy(di)) continue;
    choice.any_healthy = true;
    if (!engine_.availability(task.step, di).available) continue;
    const Device& dev = *devices_[d];
    const bool idle = dev.has_idle_worker();
    const double load = dev.queued_work + dev.running_work;
    const double held = task.operand_keys.empty() ? 0.0 : static_cast<double>(engine_.HeldBytes(di, task.operand_keys));
    any_held = any_held || held > 0;
    if ((idle && !work_idle) || (idle == work_idle && load < least_work)) {
      work_idle = idle;
      least_work = load;
      by_work = di;
    }
    const double score = load - held * options_.copy_flops_per_byte;
    if (score < least_score || (score == least_score && idle && !held_idle)) {
      least_score = score;
      held_idle = idle;
      by_held = di;
    }
  }
  choice.device = any_held ? by_held : by_work;
  return choice;
}

void Dispatcher::Enqueue(int device, Task task) {
  Device& dev = *devices_[device];
  dev.queued_work += task.work;
  dev.queue.push_back(std::move(task));
  dev.queue_size.store(dev.queue.size(), std::memory_order_release);
  ++queued_;
  options_.on_queue_depth(device, dev.queue.size());
  if (options_.max_batch > 1 && options_.batch_window.count() > 0) {
    // A worker waiting to fill a batch may not take this task: wake them all.
    dev.ready.notify_all();
  } else if (dev.spinners == 0) {
    // A spinning worker sees the task by itself; waking a sleeping one as
    // well only has the two contend for the lock.
    dev.ready.notify_one();
  }
}

Dispatcher::Task Dispatcher::Take(int device, size_t index) {
  Device& dev = *devices_[device];
  Task task = std::move(dev.queue[index]);
  dev.queue.erase(dev.queue.begin() + static_cast<std::ptrdiff_t>(index));
  dev.queue_size.store(dev.queue.size(), std::memory_order_release);
  dev.queued_work -= task.work;
  if (dev.queue.empty()) dev.queued_work = 0;  // no float drift
  --queued_;
  options_.on_queue_depth(device, dev.queue.size());
  return task;
}

void Dispatcher::TakeMatching(int device, std::vector<Task>* batch) {
  Device& dev = *devices_[device];
  const uint64_t key = batch->front().batch_key;
  for (size_t i = 0; i < dev.queue.size() && i < kBatchScan && batch->size() < options_.max_batch;) {
    if (dev.queue[i].batch_key == key) {
      batch->push_back(Take(device, i));
    } else {
      ++i;
    }
  }
}

absl::Status Dispatcher::Submit(Task task) {
  std::lock_guard lock(mu_);
  if (stopping_) return absl::UnavailableError("the server is shutting down");
  if (queued_ >= options_.queue_capacity) {
    return absl::ResourceExhaustedError("the server's queue is full (" + std::to_string(options_.queue_capacity) +
                                        " requests waiting); retry later");
  }
  const Choice choice = Choose(task, -1);
  // Every device lost is this server's state, not the request's fault: a
  // client may retry elsewhere. A step no healthy device offers is.
  if (!choice.any_healthy) {
    return absl::UnavailableError("every device of this server is out of service (see ListKernels for why); "
                                  "retry on another server");
  }
  if (choice.device < 0) {
    return absl::FailedPreconditionError("no healthy device can run step " + std::to_string(task.step));
  }
  Enqueue(choice.device, std::move(task));
  return absl::OkStatus();
}

void Dispatcher::RunOnEveryWorker(const std::function<void(int)>& fn, std::chrono::milliseconds limit) {
  struct Round {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<size_t> started;
    size_t finished = 0;
  };
  auto round = std::make_shared<Round>();
  round->started.resize(devices_.size());
  const auto deadline = std::chrono::steady_clock::now() + limit;
  const size_t per_device = options_.workers_per_device;
  size_t tasks = 0;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    for (size_t d = 0; d < devices_.size(); ++d) {
      if (!engine_.healthy(static_cast<int>(d))) continue;
      for (size_t w = 0; w < per_device; ++w, ++tasks) {
        Task task;
        task.run = [round, fn, deadline, per_device, d](int device) {
          std::unique_lock lock(round->mu);
          ++round->started[d];
          round->cv.notify_all();
          // Held until every worker of the device has one, so that no
          // worker takes two (bounded: a device that leaves service meanwhile
          // sends its tasks elsewhere).
          round->cv.wait_until(lock, deadline, [&] { return round->started[d] >= per_device; });
          lock.unlock();
          fn(device);
          lock.lock();
          ++round->finished;
          round->cv.notify_all();
        };
        Enqueue(static_cast<int>(d), std::move(task));
      }
    }
  }
  std::unique_lock lock(round->mu);
  round->cv.wait_until(lock, deadline, [&] { return round->finished == tasks; });
}

void Dispatcher::WorkerLoop(int device) {
  Device& dev = *devices_[device];
  std::unique_lock lock(mu_);
  for (;;) {
    ++dev.idle_workers;
    if (dev.queue.empty() && !stopping_ && dev.spinners == 0) {
      // Spin a little before sleeping: a worker woken from a futex wait
      // starts tens of microseconds later, as much as a small GEMM's whole
      // device time, and requests often follow one another this closely.
      // One worker spins, the others sleep: two spinning workers both ran
      // for the lock when a task came, and the hand-off took 9 us instead
      // of 1 (a bare dispatcher on an H100 host; docs/service-path.md).
      ++dev.spinners;
      lock.unlock();
      const auto until = std::chrono::steady_clock::now() + kSpinBeforeSleep;
      while (dev.queue_size.load(std::memory_order_acquire) == 0 && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
      // The submitter still holds the lock for a moment (it publishes the
      // queue's depth): a blocking lock() here slept in the kernel and
      // woke 10-15 us later, the whole hand-off's cost (H100 host).
      while (!lock.try_lock()) std::this_thread::yield();
      --dev.spinners;
    }
    dev.ready.wait(lock, [&] { return stopping_ || !dev.queue.empty(); });
    --dev.idle_workers;
    if (dev.queue.empty()) return;  // stopping, and nothing left to drain
    Task task = Take(device, 0);
    // Enqueue woke no one while this worker spun: another task that came
    // meanwhile must not wait for this one while a worker sleeps.
    if (!dev.queue.empty()) dev.ready.notify_one();
    if (!engine_.healthy(device)) {
      // The device left service while this task waited: a healthy one
      // takes it. With none left, it runs here and fails fast as UNAVAILABLE.
      if (const Choice other = Choose(task, device); other.device >= 0) {
        Enqueue(other.device, std::move(task));
        continue;
      }
    }
    std::vector<Task> batch;
    batch.push_back(std::move(task));
    if (batch.front().batch_key != 0 && options_.max_batch > 1) {
      TakeMatching(device, &batch);
      const auto until = std::chrono::steady_clock::now() + options_.batch_window;
      while (batch.size() < options_.max_batch && !stopping_ && options_.batch_window.count() > 0) {
        const bool timed_out = dev.ready.wait_until(lock, until) == std::cv_status::timeout;
        TakeMatching(device, &batch);
        if (timed_out) break;
      }
    }
    double work = 0;
    for (const Task& t : batch) work += t.work;
    const size_t count = batch.size();
    dev.running_work += work;
    dev.running += count;
    lock.unlock();
    if (count == 1) {
      batch.front().run(device);
    } else {
      auto run_batch = batch.front().run_batch;
      run_batch(device, batch);
    }
    batch.clear();  // the tasks' captures go before the lock is taken again
    lock.lock();
    dev.running -= count;
    if (dev.running == 0) {
      dev.running_work = 0;  // no float drift
    } else {
      dev.running_work -= work;
    }
  }
}

void Dispatcher::Shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
    for (auto& dev : devices_) dev->ready.notify_all();
  }
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  std::lock_guard lock(mu_);
  workers_.clear();
}

size_t Dispatcher::queued() const {
  std::lock_guard lock(mu_);
  return queued_;
}

}  // namespace gemmd
