// Spreads work over an engine's devices: one bounded FIFO per device, a few
// worker threads per device, each task to a healthy device that can run its
// step: one with an idle worker first, else the one with the least work
// (queued and running, in FLOPs). A task whose stored operands a device
// already holds (Engine::HeldBytes) goes there instead, unless that
// device's work exceeds another's by more than copying the held bytes
// would cost (DispatcherOptions::copy_flops_per_byte). A task queued on a device that has left
// service moves to a healthy one when its turn comes. Tasks that share a
// batch key may run as one: the worker that takes one takes the others of
// its key queued on that device too (up to max_batch, waiting up to
// batch_window for more), and hands them all to the first one's run_batch.
#pragma once

#include <absl/status/status.h>

#include <atomic>
#include <chrono>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"

namespace gemmd {

struct DispatcherOptions {
  // Tasks waiting (not running) across all devices; Submit refuses past it.
  size_t queue_capacity = 64;
  size_t workers_per_device = 1;
  // Called with (device, tasks queued on it) whenever that number changes,
  // under the dispatcher's lock so that gauges see the changes in order:
  // it must not call back into the dispatcher.
  std::function<void(int, size_t)> on_queue_depth = [](int, size_t) {};
  // Batching: at most this many tasks of one key run together (1: never),
  // and a worker holding fewer waits this long for more to arrive (0: it
  // takes what is queued and goes). Later tasks of the key overtake others
  // queued before them, within the first kBatchScan of the queue.
  size_t max_batch = 1;
  std::chrono::microseconds batch_window{0};
  // What a byte of operand already on a device saves, in FLOPs of the
  // device's time: about 20 GB/s of host-to-device copy against about 500
  // TFLOP/s of GEMM (an H100 or H200 serving through gemmd).
  double copy_flops_per_byte = 500e12 / 20e9;
};

class Dispatcher {
 public:
  struct Task {
    int step = 0;
    double work = 0;                  // FLOPs, to balance devices
    std::function<void(int)> run;     // called on a worker with the device index
    // Batching (see DispatcherOptions): 0 never batches. With more than one
    // task taken, run_batch(device, tasks) of the first runs them all and
    // no task's run is called. `payload` is the submitter's, for run_batch.
    uint64_t batch_key = 0;
    std::function<void(int, std::vector<Task>&)> run_batch;
    std::shared_ptr<void> payload;
    // The stored operands' keys (OperandView::cache_key), for affinity.
    std::vector<std::string> operand_keys;
  };
  // How far down a device's queue a worker looks for tasks of its key.
  static constexpr size_t kBatchScan = 256;

  Dispatcher(Engine& engine, DispatcherOptions options);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // RESOURCE_EXHAUSTED when the queue is full, FAILED_PRECONDITION when no
  // healthy device can run the step, UNAVAILABLE after Shutdown.
  absl::Status Submit(Task task);

  // Runs fn(device) once on every worker of every healthy device, each on a
  // worker of its own (a task holds its worker until all of its device's
  // have started), and returns when all are done or `limit` has passed.
  // For a thread's own first calls into a library, before any request.
  void RunOnEveryWorker(const std::function<void(int)>& fn, std::chrono::milliseconds limit);

  // Stops accepting, runs what is queued, joins the workers. Idempotent.
  void Shutdown();

  size_t queued() const;

 private:
  struct Device {
    std::deque<Task> queue;
    double queued_work = 0;
    double running_work = 0;
    size_t running = 0;
    size_t idle_workers = 0;
    // Idle workers spinning before they sleep: at most one (see WorkerLoop).
    size_t spinners = 0;
    std::condition_variable ready;
    // queue.size(), readable without mu_ by a worker spinning before it sleeps.
    std::atomic<size_t> queue_size{0};
    bool has_idle_worker() const { return idle_workers > queue.size(); }
  };
  struct Choice {
    int device = -1;
    bool any_healthy = false;
  };
  // The device for `task`, under mu_; `except` is left out.
  Choice Choose(const Task& task, int except) const;
  void Enqueue(int device, Task task);  // under mu_
  // Takes queue[index] off `device`'s queue with its accounting, under mu_.
  Task Take(int device, size_t index);
  // Adds to `batch` the queued tasks of its key, up to max_batch, under mu_.
  void TakeMatching(int device, std::vector<Task>* batch);
  void WorkerLoop(int device);

  Engine& engine_;
  DispatcherOptions options_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Device>> devices_;
  size_t queued_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace gemmd
