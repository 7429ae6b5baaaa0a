// Spreads work over an engine's devices: one bounded FIFO per device, a few
// worker threads per device, each task to a healthy device that can run its
// step: one with an idle worker first, else the one with the least work
// (queued and running, in FLOPs). A task queued on a device that has left
// service moves to a healthy one when its turn comes.
#pragma once

#include <atomic>
#include <absl/status/status.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
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
};

class Dispatcher {
 public:
  struct Task {
    int step = 0;
    double work = 0;                  // FLOPs, to balance devices
    std::function<void(int)> run;     // called on a worker with the device index
  };

  Dispatcher(Engine& engine, DispatcherOptions options);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // RESOURCE_EXHAUSTED when the queue is full, FAILED_PRECONDITION when no
  // healthy device can run the step, UNAVAILABLE after Shutdown.
  absl::Status Submit(Task task);

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
    std::condition_variable ready;
    // queue.size(), readable without mu_ by a worker spinning before it sleeps.
    std::atomic<size_t> queue_size{0};
    bool has_idle_worker() const { return idle_workers > queue.size(); }
  };
  struct Choice {
    int device = -1;
    bool any_healthy = false;
  };
  // The device for a task of `step`, under mu_; `except` is left out.
  Choice Choose(int step, int except) const;
  void Enqueue(int device, Task task);  // under mu_
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
