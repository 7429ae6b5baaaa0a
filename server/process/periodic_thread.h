// A named thread that calls `tick` every `period` until `tick` says to stop
// or the object is destroyed; the destructor wakes it and joins it at once.
// The listener probe and the memory trimmer run on one each.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "thread_name.h"

namespace gemmd {

class PeriodicThread {
 public:
  // `tick` returns false to end the thread.
  PeriodicThread(std::string name, std::chrono::milliseconds period, std::function<bool()> tick)
      : period_(period), tick_(std::move(tick)), thread_([this, name = std::move(name)] {
          NameThisThread(name);
          std::unique_lock lock(mu_);
          while (!wake_.wait_for(lock, period_, [this] { return stopping_; })) {
            lock.unlock();
            const bool more = tick_();
            lock.lock();
            if (!more) return;
          }
        }) {}
  ~PeriodicThread() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

 private:
  const std::chrono::milliseconds period_;
  const std::function<bool()> tick_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;  // last: it starts once the rest is ready
};

}  // namespace gemmd
