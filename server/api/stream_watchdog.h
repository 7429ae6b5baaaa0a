// Ends streams that go quiet. A client that sends an upload's header and
// then nothing would hold its upload slot forever; one that stops reading a
// download holds its matrix. The watchdog calls a stream's `expire` once it
// has seen no progress for the idle limit, with the status the stream should
// end with. At shutdown the limit shrinks, so that a silent client does not
// hold the whole grace (BeginShutdown).
#pragma once

#include <absl/status/status.h>

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
  using Expire = std::function<void(const absl::Status& why)>;

  explicit StreamWatchdog(Clock::duration idle_limit);
  ~StreamWatchdog();
  StreamWatchdog(const StreamWatchdog&) = delete;
  StreamWatchdog& operator=(const StreamWatchdog&) = delete;

  // `expire` runs once, on the watchdog's thread and under its lock, after
  // the stream made no progress for the idle limit: it may finish the
  // stream, but must never call back into the watchdog. `what` names the
  // stream in that status ("upload").
  Id Watch(std::string what, Expire expire);
  // The stream made progress: its idle time starts again.
  void Touch(Id id);
  // Once this returns, `expire` is not running and never will.
  void Forget(Id id);

  // From now on a stream idle for `idle` (if shorter than the idle limit)
  // expires with UNAVAILABLE: the server is going away; streams that move
  // data go on. EndAll expires every stream at once.
  void BeginShutdown(Clock::duration idle);
  void EndAll();

  Clock::duration idle_limit() const { return idle_limit_; }
  size_t watched() const;

 private:
  struct Stream {
    Clock::time_point last;
    std::string what;
    Expire expire;
  };
  void Run();

  const Clock::duration idle_limit_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::map<Id, Stream> streams_;
  Id next_id_ = 1;
  bool stopping_ = false;
  bool shutting_down_ = false, end_all_ = false;
  Clock::duration shutdown_idle_{};
  std::thread thread_;
};

}  // namespace gemmd
