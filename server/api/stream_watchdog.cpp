#include "api/stream_watchdog.h"

#include <algorithm>

#include "thread_name.h"

namespace gemmd {

StreamWatchdog::StreamWatchdog(Clock::duration idle_limit)
    : idle_limit_(idle_limit), thread_([this] {
        NameThisThread("stream-watchdog");
        Run();
      }) {}

StreamWatchdog::~StreamWatchdog() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

StreamWatchdog::Id StreamWatchdog::Watch(std::function<void()> expire) {
  std::lock_guard lock(mu_);
  const Id id = next_id_++;
  streams_[id] = Stream{Clock::now(), std::move(expire)};
  wake_.notify_all();  // the earliest expiry may now be this one's
  return id;
}

void StreamWatchdog::Touch(Id id) {
  std::lock_guard lock(mu_);
  if (auto it = streams_.find(id); it != streams_.end()) it->second.last = Clock::now();
}

void StreamWatchdog::Forget(Id id) {
  std::lock_guard lock(mu_);
  streams_.erase(id);
}

void StreamWatchdog::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const auto now = Clock::now();
    auto next = Clock::time_point::max();
    for (auto it = streams_.begin(); it != streams_.end();) {
      const auto deadline = it->second.last + idle_limit_;
      if (deadline <= now) {
        it->second.expire();  // expired streams leave the watch: expire runs once
        it = streams_.erase(it);
      } else {
        next = std::min(next, deadline);
        ++it;
      }
    }
    if (next == Clock::time_point::max()) {
      wake_.wait(lock);
    } else {
      wake_.wait_until(lock, next);
    }
  }
}

}  // namespace gemmd
