// Ends streams that go quiet. A client that sends an upload's header and
// then nothing would hold the header's quota reservation forever; one that
// stops reading a download holds its matrix. The watchdog calls a stream's
// `expire` once it has seen no progress for the idle limit.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace gemmd {

class StreamWatchdog {
 public:
  using Clock = std::chrono::steady_clock;
  using Id = uint64_t;

  explicit StreamWatchdog(Clock::duration idle_limit);
  ~StreamWatchdog();
  StreamWatchdog(const StreamWatchdog&) = delete;
  StreamWatchdog& operator=(const StreamWatchdog&) = delete;

  // `expire` runs once, on the watchdog's thread and under its lock, after
  // the stream made no progress for the idle limit: it must only signal
  // (e.g. TryCancel), never call back into the watchdog.
  Id Watch(std::function<void()> expire);
  // The stream made progress: its idle time starts again.
  void Touch(Id id);
  // Once this returns, `expire` is not running and never will.
  void Forget(Id id);

  Clock::duration idle_limit() const { return idle_limit_; }

 private:
  struct Stream {
    Clock::time_point last;
    std::function<void()> expire;
  };
  void Run();

  const Clock::duration idle_limit_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::map<Id, Stream> streams_;
  Id next_id_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gemmd
