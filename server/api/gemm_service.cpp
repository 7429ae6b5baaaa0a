#include "api/gemm_service.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "api/kernel_listing.h"
#include "api/matrix_streams.h"
#include "api/multiply_report.h"
#include "api/multiply_wire.h"
#include "api/operand_resolution.h"
#include "form/request_form.h"
#include "client_text.h"
#include "engine/permanent_refusal.h"
#include "gemm/steps.h"

namespace gemmd {

using Clock = std::chrono::steady_clock;
using gemm::v1::MatrixInfo;
using gemm::v1::MultiplyRequest;
using gemm::v1::MultiplyResponse;

static_assert(std::endian::native == std::endian::little,
              "the wire format is little-endian fp16; a big-endian host would need byte swaps");

namespace {

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string CodeName(absl::StatusCode code) { return absl::StatusCodeToString(code); }

// A client's gRPC retry policy marks retried attempts; the number is echoed
// back so the client can count its retries (gemmc::RetriesOf). 0 for a
// first attempt.
int EchoPreviousAttempts(grpc::ServerContextBase* ctx) {
  const auto it = ctx->client_metadata().find("grpc-previous-rpc-attempts");
  if (it == ctx->client_metadata().end()) return 0;
  const std::string attempts(it->second.data(), it->second.size());
  ctx->AddTrailingMetadata("gemmd-previous-attempts", attempts);
  return std::atoi(attempts.c_str());
}

}  // namespace

grpc::Status ToGrpc(const absl::Status& status) {
  // The message goes out as grpc-message metadata, which a client refuses
  // past its metadata limit (8 KiB by default): bounded, whatever it holds.
  constexpr size_t kMaxMessageBytes = 2048;
  std::string message(status.message().substr(0, kMaxMessageBytes));
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::move(message));
}

GemmService::GemmService(Engine& engine, Dispatcher& dispatcher, MatrixStore& store, Metrics& metrics,
                         ServiceOptions options)
    : engine_(engine),
      dispatcher_(dispatcher),
      store_(store),
      metrics_(metrics),
      options_(options),
      devices_(engine.devices()),
      watchdog_(std::chrono::duration_cast<StreamWatchdog::Clock::duration>(
          std::chrono::duration<double>(options.stream_idle_seconds))),
      reply_senders_(options.reply_threads) {}

// ---------------------------------------------------------------- Multiply

struct GemmService::MultiplyCall {
  QueuedCall* queued;  // answered, and gone, at FinishMultiply
  grpc::ServerContext& context() const { return queued->context(); }
  Caller caller;
  MultiplyWireRequest wire;        // the request, its inline matrices left in gRPC's slices
  const MultiplyRequest* req = &wire.fields;
  MultiplyResponse reply;
  MultiplyResponse* resp = &reply;
  grpc::ByteBuffer response;  // the reply on the wire (SerializeMultiplyResponse)
  Clock::time_point start = Clock::now();
  Clock::time_point enqueued;
  Clock::time_point engine_done;  // the engine handed back its report
  double queued_seconds = 0;
  uint64_t batch_key = 0;         // engine/batching.h; 0: runs alone
  std::chrono::system_clock::time_point deadline;
  GemmJob job;
  // Keep stored operands alive while the job reads them, even if deleted.
  std::vector<std::shared_ptr<const StoredMatrix>> a_stored, b_stored, c_stored;
  std::unique_ptr<PendingMatrix> d_pending;
  std::unique_ptr<ReplyBuffer> d_inline;  // D, when the reply carries it
  std::string device = "-";

  // Why the call should stop, `when` saying at which point; OK if it may go
  // on. An expired deadline also cancels the context, so the deadline is
  // checked first: a deadline miss must not be counted as a cancellation.
  // `when` is only called to word a stop (formatting costs microseconds
  // that a small request would pay on every call).
  template <typename When>
  absl::Status StopReason(const When& when) const {
    if (std::chrono::system_clock::now() > deadline) {
      return absl::DeadlineExceededError("the deadline passed " + std::string(when()));
    }
    if (queued->cancelled()) return absl::CancelledError("the client cancelled the request " + std::string(when()));
    return absl::OkStatus();
  }
};

void GemmService::Multiply(QueuedCall* queued) {
  grpc::ServerContext* ctx = &queued->context();
  auto who = options_.identity.Identify(*ctx);
  if (!who.ok()) return RejectMultiply(queued, who.status());
  EchoPreviousAttempts(ctx);
  auto call = std::make_shared<MultiplyCall>();
  call->queued = queued;
  call->caller = std::move(*who);
  call->deadline = ctx->deadline();
  metrics_.AddInFlight(1);

  if (auto st = ParseMultiplyRequest(queued->request(), &call->wire); !st.ok()) {
    FinishMultiply(call, st);
    return;
  }
  if (!ready_) {
    FinishMultiply(call, absl::UnavailableError("the server is warming up its devices (start-up self-test); "
                                                "retry in a moment"));
    return;
  }
  const MultiplyRequest* req = call->req;
  MultiplyResponse* resp = call->resp;
  const std::array<uint64_t, 3> inline_bytes = {call->wire.a_data.size(), call->wire.b_data.size(),
                                                 call->wire.c_data.size()};
  GemmJob& job = call->job;
  if (auto st = ValidateMultiply(*req, options_.limits, &inline_bytes, &job.form); !st.ok()) {
    FinishMultiply(call, st);
    return;
  }
  if (auto avail = AvailabilityOnAnyDevice(engine_, static_cast<int>(req->step())); !avail.available) {
    FinishMultiply(call, absl::FailedPreconditionError("step " + std::to_string(req->step()) + " " + avail.reason));
    return;
  }
  if (auto why = gemm::FormError(static_cast<int>(req->step()), job.form); !why.empty()) {
    FinishMultiply(call, Permanent(absl::FailedPreconditionError("step " + std::to_string(req->step()) + " " + why)));
    return;
  }
  const auto& s = req->shape();
  if (auto err = gemm::ShapeError(*gemm::FindStep(req->step()), s.m(), s.n(), s.k()); !err.empty()) {
    FinishMultiply(call, absl::InvalidArgumentError(err));
    return;
  }

  job.m = s.m();
  job.n = s.n();
  job.k = s.k();
  job.step = static_cast<int>(req->step());
  job.verify = req->verification() != gemm::v1::VERIFICATION_NONE;
  job.verify_fast = req->verification() == gemm::v1::VERIFICATION_FAST;
  job.repeats = std::max<uint32_t>(req->repeats(), 1);
  job.benchmark = req->benchmark();

  // Each operand to host memory or a seed (api/operand_resolution.h).
  const gemm::GemmForm& form = job.form;
  using Kept = std::vector<std::shared_ptr<const StoredMatrix>>;
  const auto resolve = [&](OperandRequest r, OperandView* view, Kept* keep) {
    return ResolveOperand(r, store_, call->caller, view, keep);
  };
  absl::Status resolved = resolve({"a", gemm::StoredDimsOfA(form), req->a(), gemm::StorageOfA(form, s.m(), s.k()),
                                   form.batch, call->wire.a_data},
                                  &job.a, &call->a_stored);
  if (resolved.ok()) {
    resolved = resolve({"b", gemm::StoredDimsOfB(form), req->b(), gemm::StorageOfB(form, s.n(), s.k()), form.batch,
                        call->wire.b_data},
                       &job.b, &call->b_stored);
  }
  if (resolved.ok() && form.has_c) {
    resolved = resolve({"c", gemm::StoredDimsOfC(), req->c(), gemm::StorageOfC(form, s.m(), s.n()), form.batch,
                        call->wire.c_data},
                       &job.c, &call->c_stored);
  }
  if (!resolved.ok()) {
    FinishMultiply(call, resolved);
    return;
  }

  // Where D goes.
  const size_t d_bytes = static_cast<size_t>(form.batch) * job.m * job.n * gemm::ElementBytes(form.d);
  if (req->output() == gemm::v1::OUTPUT_INLINE) {
    call->d_inline = reply_buffers_->Take(d_bytes);
    job.d = call->d_inline->data();
  } else if (req->output() == gemm::v1::OUTPUT_HANDLE) {
    auto pending = store_.Reserve(form.batch * job.m, job.n, "D of a step " + std::to_string(job.step) + " multiply",
                                  call->caller.identity, req->transient_output(), form.d);
    if (!pending.ok()) {
      FinishMultiply(call, pending.status());
      return;
    }
    call->d_pending = std::move(*pending);
    job.d = call->d_pending->data();
    job.d_cache_key = call->d_pending->ReserveHandle();  // D may stay on the GPU under it
  }

  call->enqueued = Clock::now();
  Dispatcher::Task task;
  task.step = job.step;
  task.work = 2.0 * job.m * job.n * job.k;
  task.run = [this, call](int device) { RunMultiplies({call}, device); };
  for (const OperandView* op : {&job.a, &job.b}) {
    if (!op->cache_key.empty()) task.operand_keys.push_back(op->cache_key);
  }
  task.work *= static_cast<double>(form.batch);
  call->batch_key = task.batch_key = BatchKey(job, options_.batching);
  if (task.batch_key != 0) {
    task.payload = call;
    task.run_batch = [this](int device, std::vector<Dispatcher::Task>& tasks) {
      std::vector<std::shared_ptr<MultiplyCall>> calls;
      for (const auto& t : tasks) calls.push_back(std::static_pointer_cast<MultiplyCall>(t.payload));
      RunMultiplies(std::move(calls), device);
    };
  }
  if (auto st = dispatcher_.Submit(std::move(task)); !st.ok()) FinishMultiply(call, st);
}

void GemmService::RunMultiplies(std::vector<std::shared_ptr<MultiplyCall>> calls, int device) {
  // A call stopped while it waited finishes here; the others run together.
  std::vector<std::shared_ptr<MultiplyCall>> live;
  for (auto& call : calls) {
    const double queued = call->queued_seconds = SecondsSince(call->enqueued);
    call->device = devices_[device].id;
    if (auto st = call->StopReason(
            [queued] { return "after " + std::to_string(queued) + " s in the queue; the GEMM was not run"; });
        !st.ok()) {
      FinishMultiply(call, st);
      continue;
    }
    const auto deadline = call->deadline;
    const QueuedCall* grpc_call = call->queued;  // alive until Finish
    call->job.should_stop = [grpc_call, deadline] {
      return grpc_call->cancelled() || std::chrono::system_clock::now() > deadline;
    };
    if (call->d_inline != nullptr) call->d_inline->PopulateAhead();
    if (call->d_pending != nullptr) call->d_pending->PopulateAhead();
    live.push_back(std::move(call));
  }
  if (live.empty()) return;

  // The queue ends where the engine starts, so that the phases tile the
  // total with no gap (a worker preempted in between once left 5% of a
  // 0.27 ms request in no phase).
  const auto engine_start = Clock::now();
  for (const auto& call : live) {
    call->queued_seconds = std::chrono::duration<double>(engine_start - call->enqueued).count();
  }
  std::vector<absl::StatusOr<GemmReport>> reports;
  if (live.size() == 1) {
    reports.push_back(engine_.Run(device, live.front()->job));
  } else {
    std::vector<const GemmJob*> jobs;
    for (const auto& call : live) jobs.push_back(&call->job);
    reports = engine_.RunBatch(device, jobs);
  }
  const auto engine_done = Clock::now();
  if (live.front()->batch_key != 0) metrics_.RecordBatch(live.size());
  PublishDeviceState(device);
  if (!engine_.healthy(device)) {  // a sticky error takes the other devices with it
    for (size_t d = 0; d < devices_.size(); ++d) PublishDeviceState(static_cast<int>(d));
    if (options_.on_device_lost) options_.on_device_lost();
  }
  // The replies go out on the senders: a batch's all but the first, which
  // its worker sends, and all of them while other requests wait for the
  // worker. A request alone on an idle device is answered with no hand-off.
  const size_t sent_here = dispatcher_.queued() > 0 ? 0 : 1;
  std::vector<std::function<void()>> sends;
  for (size_t i = 0; i < live.size(); ++i) live[i]->engine_done = engine_done;
  for (size_t i = sent_here; i < live.size(); ++i) {
    sends.push_back([this, call = live[i], report = std::move(reports[i]), engine_start]() mutable {
      CompleteMultiply(call, std::move(report), engine_start);
    });
  }
  reply_senders_.Post(std::move(sends));
  if (sent_here == 1) CompleteMultiply(live.front(), std::move(reports.front()), engine_start);
}

void GemmService::CompleteMultiply(const std::shared_ptr<MultiplyCall>& call, absl::StatusOr<GemmReport> report,
                                   Clock::time_point engine_start) {
  if (!report.ok()) {
    absl::Status st = report.status();
    if (st.code() == absl::StatusCode::kCancelled) {
      if (auto why = call->StopReason([] { return "while the GEMM ran; it was dropped"; }); !why.ok()) st = why;
    }
    FinishMultiply(call, st);
    return;
  }

  const GemmJob& job = call->job;
  MultiplyResponse* resp = call->resp;
  auto* shape = resp->mutable_shape();
  *shape = call->req->shape();
  resp->set_step(job.step);
  resp->set_engine(engine_.name());
  resp->set_device(call->device);
  if (options_.sm_clock_mhz) resp->set_sm_clock_mhz(options_.sm_clock_mhz(call->device));

  const VerificationResult& v = report->verification;
  ReportVerification(v, resp->mutable_verification());
  resp->set_d_type(ToProto(job.form.d));
  resp->set_batch_count(static_cast<uint32_t>(job.form.batch));

  const double flops = 2.0 * job.m * job.n * job.k * static_cast<double>(job.form.batch);
  const PhaseSeconds& p = report->seconds;
  const double engine_seconds = std::chrono::duration<double>(call->engine_done - engine_start).count();
  ReportTiming(p, std::chrono::duration<double>(call->enqueued - call->start).count(), call->queued_seconds,
               engine_seconds, report->batch_size, resp->mutable_timing());
  resp->set_tflops(p.kernel > 0 ? flops / p.kernel / 1e12 : 0);

  metrics_.RecordGemm(job.step, call->device, p.kernel, flops * p.repeats, v.performed && !v.passed);

  if (call->d_pending) {
    if (auto st = call->StopReason([] { return "before D was stored"; }); !st.ok()) {  // nobody would learn the handle
      FinishMultiply(call, st);
      return;
    }
    call->d_pending->MarkFilled();
    const std::string reserved = call->d_pending->reserved_handle();
    auto desc = store_.Commit(std::move(call->d_pending));
    if (!desc.ok()) {
      if (!reserved.empty()) engine_.ForgetMatrix(reserved);  // never stored: its device copy goes
      FinishMultiply(call, desc.status());
      return;
    }
    resp->set_d_handle(desc->handle);
    // A call cancelled (or past its deadline) once D was stored never
    // delivers the handle: D is deleted, so that it does not hold quota
    // until someone finds it in ListMatrices.
    call->queued->set_on_done([this, handle = desc->handle, caller = call->caller](bool cancelled) {
      if (!cancelled) return;
      (void)store_.Delete(handle, caller);
      engine_.ForgetMatrix(handle);
      spdlog::info("Multiply cancelled after D was stored: deleted {}, which no client received", handle);
    });
  }
  FinishMultiply(call, absl::OkStatus());
}

void GemmService::PublishDeviceState(int device) {
  const DeviceMemory mem = engine_.memory(device);
  metrics_.SetDeviceMemory(devices_[device].id, mem.total_bytes, mem.pool_bytes, mem.used_bytes);
  metrics_.SetDeviceCache(devices_[device].id, mem.cache_bytes, mem.cache_budget_bytes, mem.cache_hits,
                          mem.cache_misses, mem.cache_evictions);
  metrics_.SetDeviceHealthy(devices_[device].id, engine_.healthy(device));
}

void GemmService::FinishMultiply(const std::shared_ptr<MultiplyCall>& call, const absl::Status& status) {
  const auto now = Clock::now();  // the end of both the total and the reply phase
  const double total = std::chrono::duration<double>(now - call->start).count();
  const std::string step = std::to_string(call->req->step());
  if (status.ok()) {
    auto* t = call->resp->mutable_timing();
    t->set_total_seconds(total);
    t->set_reply_seconds(std::chrono::duration<double>(now - call->engine_done).count());
    for (auto [phase, seconds] : {std::pair{"prepare", t->prepare_seconds()}, {"queue", t->queue_seconds()},
                                  {"upload", t->upload_seconds()}, {"compute", t->compute_seconds()},
                                  {"download", t->download_seconds()}, {"reply", t->reply_seconds()}}) {
      metrics_.RecordPhase(phase, seconds);
    }
  } else {
    call->resp->Clear();  // a refused call carries no half-filled reply
    if (IsPermanent(status)) call->context().AddTrailingMetadata("grpc-retry-pushback-ms", "-1");
  }
  metrics_.RecordRequest("Multiply", call->req->step(), CodeName(status.code()), total);
  metrics_.AddInFlight(-1);
  const auto& s = call->req->shape();
  // The form as validation resolved it (gemm/form.h); numbers and names of
  // this server's own, never the client's text.
  const std::string form = call->job.form.IsPlain() ? "" : " form=\"" + gemm::FormSummary(call->job.form) + "\"";
  if (status.ok()) {
    spdlog::info("Multiply step={} shape={}x{}x{}{} status=OK latency_ms={:.3f} device={} kernel_ms={:.3f} "
                 "tflops={:.2f} verified={} peer={}",
                 step, s.m(), s.n(), s.k(), form, total * 1e3, call->device,
                 call->resp->timing().kernel_seconds() * 1e3, call->resp->tflops(),
                 call->resp->verification().performed()
                     ? (call->resp->verification().mode() == gemm::v1::VERIFICATION_FAST
                            ? (call->resp->verification().passed() ? "passed-fast" : "FAILED-fast")
                            : (call->resp->verification().passed() ? "passed" : "FAILED"))
                     : "skipped",
                 call->context().peer());
  } else {
    spdlog::info("Multiply step={} shape={}x{}x{}{} status={} latency_ms={:.3f} device={} peer={} error={}", step,
                 s.m(), s.n(), s.k(), form, CodeName(status.code()), total * 1e3, call->device, call->context().peer(),
                 QuoteClientText(status.message(), kLoggedMessageBytes));
  }
  if (call->d_pending != nullptr) {  // an unfinished D returns its quota now, and any device copy kept of it
    if (!call->d_pending->reserved_handle().empty()) engine_.ForgetMatrix(call->d_pending->reserved_handle());
    call->d_pending.reset();
  }
  if (status.ok()) SerializeMultiplyResponse(*call->resp, std::move(call->d_inline), &call->response);
  if (status.ok() && before_reply_for_test_) before_reply_for_test_(&call->context());
  call->queued->Finish(call->response, ToGrpc(status));
}

void GemmService::RejectMultiply(QueuedCall* queued, const absl::Status& status) {
  RecordSimple("Multiply", status, Clock::now(), "peer=" + queued->context().peer());
  queued->Finish(grpc::ByteBuffer(), ToGrpc(status));
}

// ---------------------------------------------------------- authentication

grpc::ServerUnaryReactor* GemmService::RejectUnauthenticated(const char* method, grpc::CallbackServerContext* ctx,
                                                             Caller* caller) {
  auto who = options_.identity.Identify(*ctx);
  if (who.ok()) {
    *caller = std::move(*who);
    return nullptr;
  }
  auto* reactor = ctx->DefaultReactor();
  FinishSimple(method, reactor, who.status(), Clock::now(), "peer=" + ctx->peer());
  return reactor;
}

void GemmService::RecordRejected(const char* method, const absl::Status& status) {
  metrics_.RecordRequest(method, std::nullopt, CodeName(status.code()), 0);
  spdlog::info("{} status={} error={}", method, CodeName(status.code()),
               QuoteClientText(status.message(), kLoggedMessageBytes));
}

// ------------------------------------------------------------- ListKernels

grpc::ServerUnaryReactor* GemmService::ListKernels(grpc::CallbackServerContext* ctx,
                                                   const gemm::v1::ListKernelsRequest*,
                                                   gemm::v1::ListKernelsResponse* resp) {
  Caller caller;
  if (auto* rejected = RejectUnauthenticated("ListKernels", ctx, &caller)) return rejected;
  const auto start = Clock::now();
  ListKernelsOf(engine_, devices_,
                {options_.limits, options_.queue_capacity, store_.quota_bytes(), store_.max_matrices()}, resp);
  auto* reactor = ctx->DefaultReactor();
  FinishSimple("ListKernels", reactor, absl::OkStatus(), start, "");
  return reactor;
}

// ---------------------------------------------------------- matrix handles

void GemmService::FinishSimple(const char* method, grpc::ServerUnaryReactor* reactor, const absl::Status& status,
                               Clock::time_point start, const std::string& detail) {
  RecordSimple(method, status, start, detail);
  reactor->Finish(ToGrpc(status));
}

void GemmService::RecordSimple(const char* method, const absl::Status& status, Clock::time_point start,
                               const std::string& detail) {
  const double seconds = SecondsSince(start);
  metrics_.RecordRequest(method, std::nullopt, CodeName(status.code()), seconds);
  if (status.ok()) {
    spdlog::info("{} status=OK latency_ms={:.3f} {}", method, seconds * 1e3, detail);
  } else {
    spdlog::info("{} status={} latency_ms={:.3f} {} error={}", method, CodeName(status.code()), seconds * 1e3, detail,
                 QuoteClientText(status.message(), kLoggedMessageBytes));
  }
}

namespace {

// A streaming call refused before it began: finishes at once.
template <class Reactor>
class Rejected final : public Reactor {
 public:
  explicit Rejected(const grpc::Status& status) { this->Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerReadReactor<grpc::ByteBuffer>* GemmService::UploadMatrix(grpc::CallbackServerContext* ctx,
                                                                     grpc::ByteBuffer* resp) {
  auto caller = options_.identity.Identify(*ctx);
  if (!caller.ok()) {
    RecordRejected("UploadMatrix", caller.status());
    return new Rejected<grpc::ServerReadReactor<grpc::ByteBuffer>>(ToGrpc(caller.status()));
  }
  return StartUpload(ctx, store_, metrics_, watchdog_, std::move(*caller), resp);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* GemmService::DownloadMatrix(grpc::CallbackServerContext* ctx,
                                                                        const grpc::ByteBuffer* request) {
  auto caller = options_.identity.Identify(*ctx);
  if (!caller.ok()) {
    RecordRejected("DownloadMatrix", caller.status());
    return new Rejected<grpc::ServerWriteReactor<grpc::ByteBuffer>>(ToGrpc(caller.status()));
  }
  return StartDownload(ctx, store_, metrics_, watchdog_, *caller, *request, options_.default_chunk_bytes,
                       options_.limits.max_message_bytes);
}

grpc::ServerUnaryReactor* GemmService::DeleteMatrix(grpc::CallbackServerContext* ctx,
                                                    const gemm::v1::DeleteMatrixRequest* req,
                                                    gemm::v1::DeleteMatrixResponse* resp) {
  Caller caller;
  if (auto* rejected = RejectUnauthenticated("DeleteMatrix", ctx, &caller)) return rejected;
  const auto start = Clock::now();
  const int previous_attempts = EchoPreviousAttempts(ctx);
  auto freed = store_.Delete(req->handle(), caller);
  if (freed.ok()) {
    resp->set_freed_bytes(*freed);
    engine_.ForgetMatrix(req->handle());  // its device copies go too
  }
  // A connection lost after the delete but before its reply makes gRPC's
  // retry policy send the call again, and the retry finds nothing.
  if (absl::IsNotFound(freed.status()) && previous_attempts > 0) {
    freed = absl::NotFoundError(std::string(freed.status().message()) + "; this was attempt " +
                                std::to_string(previous_attempts + 1) +
                                " of the call, so an earlier attempt may have deleted it before its reply was lost");
  }
  auto* reactor = ctx->DefaultReactor();
  FinishSimple("DeleteMatrix", reactor, freed.status(), start, "handle=" + QuoteClientText(req->handle()));
  return reactor;
}

grpc::ServerUnaryReactor* GemmService::ListMatrices(grpc::CallbackServerContext* ctx,
                                                    const gemm::v1::ListMatricesRequest* req,
                                                    gemm::v1::ListMatricesResponse* resp) {
  Caller caller;
  if (auto* rejected = RejectUnauthenticated("ListMatrices", ctx, &caller)) return rejected;
  const auto start = Clock::now();
  constexpr uint32_t kMaxPage = 1000;
  const uint32_t page = req->page_size() == 0 ? kMaxPage : std::min(req->page_size(), kMaxPage);
  resp->set_used_bytes(store_.used_bytes());
  resp->set_quota_bytes(store_.quota_bytes());
  // One more than the page tells whether a next page exists; the reply
  // stops early where another entry could push it past one message.
  const auto matrices = store_.List(caller, req->page_token(), page + 1);
  const uint64_t budget = options_.limits.max_message_bytes - 1024;  // 1024: the token and totals
  uint64_t size = resp->ByteSizeLong();
  size_t listed = 0;
  for (; listed < matrices.size() && listed < page; ++listed) {
    const MatrixDescription& d = matrices[listed];
    constexpr uint64_t kEntryFraming = 64;  // tags, lengths and the numbers of one MatrixInfo
    size += d.handle.size() + d.label.size() + kEntryFraming;
    if (size > budget) break;
    FillInfo(d, resp->add_matrices());
  }
  // budget >= 3 KiB always holds one entry (handle + label <= 300 bytes).
  if (listed > 0 && listed < matrices.size()) resp->set_next_page_token(matrices[listed - 1].handle);
  auto* reactor = ctx->DefaultReactor();
  FinishSimple("ListMatrices", reactor, absl::OkStatus(), start, "");
  return reactor;
}

}  // namespace gemmd
