// A few threads that send replies for the device workers. A batch's replies
// are each built, logged, serialized and handed to gRPC (whose Finish writes
// to the socket on the calling thread when it can): about 10 us apiece on
// an H100 host, so a worker that sent all of a batch's replies itself kept
// the next batch waiting (32 in flight: reply phase 75-300 us p50, queue as
// much). The worker posts them here, to go out side by side while it takes
// its next task: a batch's all but the first, which it sends itself, and
// every reply while other requests wait for it.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gemmd {

class ReplySenders {
 public:
  // `threads` 0: Post runs each send on the caller.
  explicit ReplySenders(unsigned threads);
  // Sends what is posted, then joins.
  ~ReplySenders();
  ReplySenders(const ReplySenders&) = delete;
  ReplySenders& operator=(const ReplySenders&) = delete;

  void Post(std::vector<std::function<void()>> sends);

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gemmd
