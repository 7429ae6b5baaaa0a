// gemm.v1.GemmService: Multiply taken from completion queues (unary_queues.h),
// the other methods on gRPC's callback API; no thread per call. Multiply
// validates, resolves handles and queues a task on the Dispatcher; a device
// worker runs it and finishes the call.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>

#include "api/caller_identity.h"
#include "api/reply_buffers.h"
#include "api/reply_senders.h"
#include "api/request_validation.h"
#include "api/stream_watchdog.h"
#include "api/unary_queues.h"
#include "engine/batching.h"
#include "engine/dispatcher.h"
#include "engine/engine.h"
#include "engine/matrix_store.h"
#include "gemm/v1/gemm.grpc.pb.h"
#include "metrics/metrics.h"

namespace gemmd {

struct ServiceOptions {
  RequestLimits limits;
  uint32_t queue_capacity = 64;
  uint64_t default_chunk_bytes = 1 << 20;
  // An upload or download that makes no progress for this long is cancelled.
  double stream_idle_seconds = 60;
  CallerIdentity identity;  // who each call is (bearer token, mTLS subject)
  BatchPolicy batching;     // which requests may share a launch (engine/batching.h)
  // Called after a GEMM that left its device out of service.
  std::function<void()> on_device_lost;
  // The device's SM clock in MHz from the telemetry (0: none), for replies.
  std::function<uint32_t(const std::string& device)> sm_clock_mhz;
  // Threads that send a batch's replies besides its worker (reply_senders.h).
  unsigned reply_threads = 2;
  // Faults in new reply buffers ahead of D (reply_buffers.h); none: no one does.
  std::shared_ptr<gemm::hostmem::PagePopulator> populator;
};

// Multiply, UploadMatrix and DownloadMatrix are raw methods (their messages
// as byte buffers: multiply_wire.h, matrix_wire.h), so that matrices are not
// copied on their way in or out. Multiply is served on completion queues
// (unary_queues.h), the others on the callback API.
using GeneratedService = gemm::v1::GemmService;
class GemmService final
    : public GeneratedService::WithRawMethod_Multiply<GeneratedService::WithCallbackMethod_ListKernels<
          GeneratedService::WithRawCallbackMethod_UploadMatrix<GeneratedService::WithRawCallbackMethod_DownloadMatrix<
              GeneratedService::WithCallbackMethod_DeleteMatrix<
                  GeneratedService::WithCallbackMethod_ListMatrices<GeneratedService::Service>>>>>> {
 public:
  GemmService(Engine& engine, Dispatcher& dispatcher, MatrixStore& store, Metrics& metrics,
              ServiceOptions options);

  // A Multiply call taken from a queue; it is answered through `queued`.
  void Multiply(QueuedCall* queued);
  grpc::ServerUnaryReactor* ListKernels(grpc::CallbackServerContext* ctx,
                                        const gemm::v1::ListKernelsRequest* req,
                                        gemm::v1::ListKernelsResponse* resp) override;
  grpc::ServerReadReactor<grpc::ByteBuffer>* UploadMatrix(grpc::CallbackServerContext* ctx,
                                                          grpc::ByteBuffer* resp) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* DownloadMatrix(grpc::CallbackServerContext* ctx,
                                                             const grpc::ByteBuffer* request) override;
  grpc::ServerUnaryReactor* DeleteMatrix(grpc::CallbackServerContext* ctx,
                                         const gemm::v1::DeleteMatrixRequest* req,
                                         gemm::v1::DeleteMatrixResponse* resp) override;
  grpc::ServerUnaryReactor* ListMatrices(grpc::CallbackServerContext* ctx,
                                         const gemm::v1::ListMatricesRequest* req,
                                         gemm::v1::ListMatricesResponse* resp) override;

  // Multiply is refused as UNAVAILABLE until the devices are warm.
  void SetReady() { ready_ = true; }

  // Shutdown: streams that move no data for `idle` end now with
  // UNAVAILABLE (StreamWatchdog::BeginShutdown); EndAllStreams ends the
  // rest too (a second signal).
  void BeginShutdown(std::chrono::steady_clock::duration idle) { watchdog_.BeginShutdown(idle); }
  void EndAllStreams() { watchdog_.EndAll(); }

  // Tests only, set before serving: runs on the worker just before a
  // successful Multiply's reply is sent, so a test can cancel in between.
  void SetBeforeReplyHookForTest(std::function<void(grpc::ServerContextBase*)> hook) {
    before_reply_for_test_ = std::move(hook);
  }

  // Device memory and health gauges; after every GEMM and at start.
  void PublishDeviceState(int device);

  // nullptr when the call may go on, with *caller set; else the reactor
  // already finished with UNAUTHENTICATED.
  grpc::ServerUnaryReactor* RejectUnauthenticated(const char* method, grpc::CallbackServerContext* ctx,
                                                  Caller* caller);
  // Counts and logs a streaming call refused before it started.
  void RecordRejected(const char* method, const absl::Status& status);

  // Records, logs and finishes an RPC that is not Multiply.
  void FinishSimple(const char* method, grpc::ServerUnaryReactor* reactor, const absl::Status& status,
                    std::chrono::steady_clock::time_point start, const std::string& detail);
  // Its counting and logging alone.
  void RecordSimple(const char* method, const absl::Status& status, std::chrono::steady_clock::time_point start,
                    const std::string& detail);

 private:
  struct MultiplyCall;
  // Records, logs and answers a Multiply refused before it became a call.
  void RejectMultiply(QueuedCall* queued, const absl::Status& status);
  // Runs the calls' GEMMs on `device`, together when there are several (a
  // batch), and finishes each call.
  void RunMultiplies(std::vector<std::shared_ptr<MultiplyCall>> calls, int device);
  void CompleteMultiply(const std::shared_ptr<MultiplyCall>& call, absl::StatusOr<GemmReport> report,
                        std::chrono::steady_clock::time_point engine_start);
  void FinishMultiply(const std::shared_ptr<MultiplyCall>& call, const absl::Status& status);

  Engine& engine_;
  Dispatcher& dispatcher_;
  MatrixStore& store_;
  Metrics& metrics_;
  ServiceOptions options_;
  std::vector<DeviceDescription> devices_;
  StreamWatchdog watchdog_;
  // Inline D's buffers, recycled: up to this many bytes wait for reuse.
  static constexpr uint64_t kReplyBuffersKept = uint64_t{256} << 20;
  std::shared_ptr<ReplyBuffers> reply_buffers_ =
      ReplyBuffers::Create(kReplyBuffersKept, options_.populator);
  std::atomic<bool> ready_{false};
  std::function<void(grpc::ServerContextBase*)> before_reply_for_test_;
  // Last: joined first, while everything its sends use is still here.
  ReplySenders reply_senders_;
};

grpc::Status ToGrpc(const absl::Status& status);

}  // namespace gemmd
