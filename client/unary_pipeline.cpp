#include "unary_pipeline.h"

#include <grpcpp/alarm.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace gemmc {
namespace {

using Clock = std::chrono::steady_clock;

struct Slot {
  std::unique_ptr<grpc::ClientContext> ctx;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call;
  grpc::ByteBuffer request, reply;
  grpc::Status status;
  Clock::time_point start;
  grpc::Alarm backoff;
};

// A tag names a slot and what ended: its call, or its back-off.
void* Tag(size_t slot, bool backoff) { return reinterpret_cast<void*>((slot << 1 | (backoff ? 1 : 0)) + 2); }
size_t SlotOf(void* tag) { return (reinterpret_cast<uintptr_t>(tag) - 2) >> 1; }
bool IsBackoff(void* tag) { return ((reinterpret_cast<uintptr_t>(tag) - 2) & 1) != 0; }

}  // namespace

bool NextEvent(grpc::CompletionQueue& cq, bool busy_poll, void** tag, bool* ok) {
  if (!busy_poll) return cq.Next(tag, ok);
  for (;;) {
    const auto polled = cq.AsyncNext(tag, ok, gpr_inf_past(GPR_CLOCK_MONOTONIC));
    if (polled != grpc::CompletionQueue::TIMEOUT) return polled == grpc::CompletionQueue::GOT_EVENT;
  }
}

size_t CallsOnConnection(size_t calls, size_t connections, size_t c) {
  return calls / connections + (c < calls % connections ? 1 : 0);
}

void RunPipeline(grpc::GenericStub& stub, const std::string& method, size_t depth, bool busy_poll,
                 const PipelineHooks& hooks) {
  grpc::CompletionQueue cq;
  std::vector<Slot> slots(depth);
  const auto start = [&](size_t i) {
    Slot& s = slots[i];
    s.ctx = std::make_unique<grpc::ClientContext>();
    s.request.Clear();
    s.reply.Clear();
    if (!hooks.next(i, s.ctx.get(), &s.request)) return false;
    s.start = Clock::now();
    s.call = stub.PrepareUnaryCall(s.ctx.get(), method, s.request, &cq);
    s.call->StartCall();
    s.call->Finish(&s.reply, &s.status, Tag(i, false));
    return true;
  };
  size_t active = 0;
  for (size_t i = 0; i < depth; ++i) active += start(i) ? 1 : 0;
  while (active > 0) {
    void* tag = nullptr;
    bool ok = false;
    if (!NextEvent(cq, busy_poll, &tag, &ok)) break;
    const size_t i = SlotOf(tag);
    Slot& s = slots[i];
    if (!IsBackoff(tag)) {
      const double seconds = std::chrono::duration<double>(Clock::now() - s.start).count();
      // A unary call's Finish always comes back with ok; its status says how it went.
      const double wait = hooks.done(i, *s.ctx, s.status, s.reply, seconds);
      s.call.reset();
      if (wait > 0) {
        s.backoff.Set(&cq,
                      std::chrono::system_clock::now() +
                          std::chrono::duration_cast<std::chrono::system_clock::duration>(
                              std::chrono::duration<double>(wait)),
                      Tag(i, true));
        continue;
      }
    }
    if (!start(i)) --active;
  }
  cq.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq.Next(&tag, &ok)) {
  }
}

}  // namespace gemmc
