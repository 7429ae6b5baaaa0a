#include "api/unary_queues.h"

#include <algorithm>

#include "thread_name.h"

namespace gemmd {

namespace {
// Calls asked for ahead on each queue: a burst beyond them waits in gRPC
// until a thread asks again, which it does as each call arrives.
constexpr int kArmedPerQueue = 16;
}  // namespace

void QueuedCall::Finish(const grpc::ByteBuffer& reply, const grpc::Status& status) {
  if (status.ok()) {
    responder_.Finish(reply, status, &finished_tag_);
  } else {
    responder_.FinishWithError(status, &finished_tag_);
  }
}

bool QueuedCall::Proceed(Event event, bool) {
  if (event == Event::kDone) {
    done_ = true;
    if (ctx_.IsCancelled()) cancelled_ = true;
  } else if (event == Event::kFinished) {
    finished_ = true;
  }
  if (!done_ || !finished_) return true;
  if (on_done_) on_done_(cancelled());
  return false;
}

UnaryQueues::UnaryQueues(grpc::ServerBuilder& builder, unsigned threads) {
  for (unsigned i = 0; i < std::max(threads, 1u); ++i) queues_.push_back(builder.AddCompletionQueue());
}

UnaryQueues::~UnaryQueues() { Shutdown(); }

void UnaryQueues::Start(RequestFn request, Handler handler) {
  request_ = std::move(request);
  handler_ = std::move(handler);
  for (auto& q : queues_) {
    for (int i = 0; i < kArmedPerQueue; ++i) Arm(q.get());
    threads_.emplace_back([this, cq = q.get()] {
      NameThisThread("unary-queue");
      Serve(cq);
    });
  }
}

void UnaryQueues::Arm(grpc::ServerCompletionQueue* cq) {
  // A queue must not be asked for calls once it is shut down.
  std::lock_guard lock(mu_);
  if (stopping_) return;
  auto* call = new QueuedCall;
  // Before the call is asked for, as gRPC requires; its tag comes back only
  // for a call that arrived.
  call->ctx_.AsyncNotifyWhenDone(&call->done_tag_);
  request_(&call->ctx_, &call->request_, &call->responder_, cq, &call->arrived_);
}

void UnaryQueues::Serve(grpc::ServerCompletionQueue* cq) {
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) {
    auto* t = static_cast<QueuedCall::Tag*>(tag);
    QueuedCall* call = t->call;
    if (t->event == QueuedCall::Event::kArrived) {
      if (!ok) {  // the server is shutting down: no call came
        delete call;
        continue;
      }
      Arm(cq);
      handler_(call);
    } else if (!call->Proceed(t->event, ok)) {
      delete call;
    }
  }
}

void UnaryQueues::Shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  // Never started (the server did not build): nothing was asked for, and
  // each queue shuts itself down as it is destroyed.
  if (threads_.empty()) return;
  for (auto& q : queues_) q->Shutdown();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace gemmd
