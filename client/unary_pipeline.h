// Several unary calls kept in flight on one channel by one thread, through
// one completion queue: what a load test needs from a client. A blocking
// call per thread (as a generated synchronous stub makes it) costs a thread
// and a wake-up per call in flight; here the thread that reads one reply
// starts the next call, and replies that land together are read together.
// gemm-client bench and grpc-echo-bench --pipelined drive their calls with
// it, so that the floor and the server are measured by the same client.
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <functional>
#include <string>

namespace gemmc {

struct PipelineHooks {
  // Fills the next request of call slot `slot` (0 .. depth-1) and sets up
  // its fresh context (metadata, deadline); false: that slot is done.
  std::function<bool(size_t slot, grpc::ClientContext* ctx, grpc::ByteBuffer* request)> next;
  // Slot `slot`'s call ended after `seconds` (from its start to its reply
  // read here). Returns how long the slot waits before its next call: 0 for
  // at once, more to back off without holding the thread.
  std::function<double(size_t slot, const grpc::ClientContext& ctx, const grpc::Status& status,
                       const grpc::ByteBuffer& reply, double seconds)>
      done;
};

// The next event of `cq` into `tag` and `ok`; false once the queue is shut
// down. With `busy_poll` the caller polls the queue instead of sleeping in it.
bool NextEvent(grpc::CompletionQueue& cq, bool busy_poll, void** tag, bool* ok);

// How many of `calls` in flight connection `c` of `connections` keeps: an
// even share, the first connections one more where they do not divide.
size_t CallsOnConnection(size_t calls, size_t connections, size_t c);

// Keeps up to `depth` calls of `method` in flight on `stub`'s channel from
// the calling thread until every slot's `next` says it is done. With
// `busy_poll` the thread polls the queue instead of sleeping in it.
void RunPipeline(grpc::GenericStub& stub, const std::string& method, size_t depth, bool busy_poll,
                 const PipelineHooks& hooks);

}  // namespace gemmc
