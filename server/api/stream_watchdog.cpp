#include "api/stream_watchdog.h"

#include <algorithm>
#include <string>

#include "thread_name.h"

namespace gemmd {

namespace {

std::string Seconds(StreamWatchdog::Clock::duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", std::chrono::duration<double>(d).count());
  return text;
}

}  // namespace

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

StreamWatchdog::Id StreamWatchdog::Watch(std::string what, Expire expire) {
  std::lock_guard lock(mu_);
  const Id id = next_id_++;
  streams_[id] = Stream{Clock::now(), std::move(what), std::move(expire)};
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

void StreamWatchdog::BeginShutdown(Clock::duration idle) {
  std::lock_guard lock(mu_);
  shutting_down_ = true;
  shutdown_idle_ = idle;
  wake_.notify_all();
}

void StreamWatchdog::EndAll() {
  std::lock_guard lock(mu_);
  shutting_down_ = end_all_ = true;
  wake_.notify_all();
}

size_t StreamWatchdog::watched() const {
  std::lock_guard lock(mu_);
  return streams_.size();
}

void StreamWatchdog::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const auto now = Clock::now();
    const bool shorter = shutting_down_ && (end_all_ || shutdown_idle_ < idle_limit_);
    const auto limit = !shorter ? idle_limit_ : end_all_ ? Clock::duration::zero() : shutdown_idle_;
    auto next = Clock::time_point::max();
    for (auto it = streams_.begin(); it != streams_.end();) {
      const auto deadline = it->second.last + limit;
      if (deadline <= now) {
        // Expired streams leave the watch: expire runs once.
        const std::string idle = Seconds(now - it->second.last);
        it->second.expire(shorter ? absl::UnavailableError("the server is shutting down, and this " +
                                                           it->second.what + " had moved no data for " + idle +
                                                           " s; retry it after the restart or on another server")
                                  : absl::DeadlineExceededError("the " + it->second.what + " moved no data for " +
                                                                idle + " s (--stream-idle-seconds " +
                                                                Seconds(idle_limit_) + "), so the server ended it"));
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
