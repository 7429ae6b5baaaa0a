// One raw unary method served on gRPC's completion-queue API: a few queues,
// a thread each, which accept calls and hand each to a handler. The handler
// answers from any thread (QueuedCall::Finish), as a callback reactor would.
//
// Why not the callback API, as the other methods are: under it, gRPC parks
// a handful of threads on the process's pollers (nexting_thread), and every
// hand-over between them sits on a small request's path. On the GPU
// machine's VMs the bare echo answered at one in flight in 86-88 µs on one
// queue thread against 162 on the callback API (docs/service-path.md).
// Under gRPC's default poll strategy, epoll1, the callback
// API's threads still take that role from the queue's thread even when no
// callback method is called, so gemmd runs with GRPC_POLL_STRATEGY=poll,
// which lets each queue's thread poll for itself (server/main.cpp).
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/async_unary_call.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace gemmd {

class QueuedCall {
 public:
  grpc::ServerContext& context() { return ctx_; }
  const grpc::ByteBuffer& request() const { return request_; }
  // Whether the client cancelled or the deadline passed: an atomic load,
  // cheap enough to check at every phase of a request.
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  // Runs once the call is over, on a queue thread, with whether it was
  // cancelled; set before Finish.
  void set_on_done(std::function<void(bool cancelled)> on_done) { on_done_ = std::move(on_done); }
  // Sends the reply (ignored unless status is OK) and the status. Once, from
  // any thread; the call must not be touched after it.
  void Finish(const grpc::ByteBuffer& reply, const grpc::Status& status);

 private:
  friend class UnaryQueues;
  enum class Event { kArrived, kDone, kFinished };
  struct Tag {
    QueuedCall* call;
    Event event;
  };
  QueuedCall() = default;
  // One event from the queue; false when the call is over and may go.
  bool Proceed(Event event, bool ok);

  grpc::ServerContext ctx_;
  grpc::ByteBuffer request_;
  grpc::ServerAsyncResponseWriter<grpc::ByteBuffer> responder_{&ctx_};
  std::atomic<bool> cancelled_{false};
  std::function<void(bool)> on_done_;
  bool done_ = false, finished_ = false;  // touched by the queue's thread only
  Tag arrived_{this, Event::kArrived}, done_tag_{this, Event::kDone}, finished_tag_{this, Event::kFinished};
};

class UnaryQueues {
 public:
  // Asks a call of this method on a queue; the generated service's
  // RequestX for a raw method, bound.
  using RequestFn = std::function<void(grpc::ServerContext*, grpc::ByteBuffer*,
                                       grpc::ServerAsyncResponseWriter<grpc::ByteBuffer>*,
                                       grpc::ServerCompletionQueue*, void* tag)>;
  using Handler = std::function<void(QueuedCall*)>;

  // Adds `threads` queues to the builder, before it builds the server.
  UnaryQueues(grpc::ServerBuilder& builder, unsigned threads);
  ~UnaryQueues();
  // After the server started: each queue's thread begins taking calls.
  void Start(RequestFn request, Handler handler);
  // After the server's Shutdown and once no call can still Finish: drains
  // and stops the queues.
  void Shutdown();

 private:
  void Arm(grpc::ServerCompletionQueue* cq);
  void Serve(grpc::ServerCompletionQueue* cq);

  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues_;
  std::vector<std::thread> threads_;
  RequestFn request_;
  Handler handler_;
  std::mutex mu_;  // orders asking for calls before the queues shut down
  bool stopping_ = false;
};

}  // namespace gemmd
