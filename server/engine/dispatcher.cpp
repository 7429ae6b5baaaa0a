#include "engine/dispatcher.h"

#include <limits>
#include <string>

namespace gemmd {

Dispatcher::Dispatcher(Engine& engine, DispatcherOptions options)
    : engine_(engine), options_(std::move(options)) {
  const size_t count = engine_.devices().size();
  for (size_t d = 0; d < count; ++d) devices_.push_back(std::make_unique<Device>());
  for (size_t d = 0; d < count; ++d) {
    for (size_t w = 0; w < options_.workers_per_device; ++w) {
      workers_.emplace_back([this, d] { WorkerLoop(static_cast<int>(d)); });
    }
  }
}

Dispatcher::~Dispatcher() { Shutdown(); }

absl::Status Dispatcher::Submit(Task task) {
  int device = -1;
  size_t depth = 0;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    if (queued_ >= options_.queue_capacity) {
      return absl::ResourceExhaustedError("the server's queue is full (" +
                                          std::to_string(options_.queue_capacity) +
                                          " requests waiting); retry later");
    }
    double least = std::numeric_limits<double>::infinity();
    bool any_healthy = false;
    for (size_t d = 0; d < devices_.size(); ++d) {
      const int di = static_cast<int>(d);
      if (!engine_.healthy(di)) continue;
      any_healthy = true;
      if (!engine_.availability(task.step, di).available) continue;
      if (devices_[d]->queued_work < least) {
        least = devices_[d]->queued_work;
        device = di;
      }
    }
    // Every device lost is this server's state, not the request's fault: a
    // client may retry elsewhere. A step no healthy device offers is.
    if (!any_healthy) {
      return absl::UnavailableError("every device of this server is out of service (see ListKernels for why); "
                                    "retry on another server");
    }
    if (device < 0) {
      return absl::FailedPreconditionError("no healthy device can run step " + std::to_string(task.step));
    }
    Device& dev = *devices_[device];
    dev.queued_work += task.work;
    dev.queue.push_back(std::move(task));
    depth = dev.queue.size();
    ++queued_;
    dev.ready.notify_one();
  }
  options_.on_queue_depth(device, depth);
  return absl::OkStatus();
}

void Dispatcher::WorkerLoop(int device) {
  Device& dev = *devices_[device];
  for (;;) {
    Task task;
    size_t depth = 0;
    {
      std::unique_lock lock(mu_);
      dev.ready.wait(lock, [&] { return stopping_ || !dev.queue.empty(); });
      if (dev.queue.empty()) return;  // stopping, and nothing left to drain
      task = std::move(dev.queue.front());
      dev.queue.pop_front();
      dev.queued_work -= task.work;
      if (dev.queue.empty()) dev.queued_work = 0;  // no float drift
      depth = dev.queue.size();
      --queued_;
    }
    options_.on_queue_depth(device, depth);
    task.run(device);
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
