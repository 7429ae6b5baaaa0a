#include "api/matrix_streams.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>

#include "api/gemm_service.h"  // ToGrpc
#include "api/matrix_wire.h"
#include "form/request_form.h"
#include "api/upload_session.h"
#include "client_text.h"

namespace gemmd {

using Clock = std::chrono::steady_clock;
using gemm::v1::MatrixInfo;

namespace {

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string CodeName(absl::StatusCode code) { return absl::StatusCodeToString(code); }

}  // namespace

void FillInfo(const MatrixDescription& d, MatrixInfo* out) {
  out->set_handle(d.handle);
  out->set_rows(d.rows);
  out->set_cols(d.cols);
  out->set_type(ToProto(d.type));
  out->set_bytes(d.bytes);
  out->set_label(d.label);
  out->set_owner(d.owner);
  out->set_transient(d.transient);
  switch (d.state) {
    case MatrixDescription::State::kStored:
      out->set_state(gemm::v1::MATRIX_STORED);
      break;
    case MatrixDescription::State::kUploading:
      out->set_state(gemm::v1::MATRIX_UPLOADING);
      out->set_received_bytes(d.received_bytes);
      break;
    case MatrixDescription::State::kLost:
      out->set_state(gemm::v1::MATRIX_LOST);
      out->set_problem(d.problem);
      break;
  }
}

namespace {

class UploadReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  UploadReactor(grpc::CallbackServerContext* ctx, MatrixStore& store, Metrics& metrics, StreamWatchdog& watchdog,
                Caller owner, grpc::ByteBuffer* resp)
      : ctx_(ctx),
        store_(store),
        metrics_(metrics),
        watchdog_(watchdog),
        owner_(owner),
        resp_(resp),
        session_(store, std::move(owner)) {
    // Finished with the watchdog's status while the read is pending, so
    // that the client learns why (a TryCancel would reach it as CANCELLED).
    watch_ = watchdog_.Watch("upload", [this](const absl::Status& why) {
      std::lock_guard lock(mu_);
      if (!finished_) Done(why);
    });
    StartRead(&msg_);
  }

  void OnReadDone(bool ok) override {
    watchdog_.Touch(watch_);
    std::lock_guard lock(mu_);
    if (finished_) return;  // the watchdog ended the stream meanwhile
    if (!ok) {  // the client closed its side: the upload is complete, or short
      auto desc = session_.Finish();
      if (!desc.ok()) return Done(desc.status());
      handle_ = desc->handle;
      MatrixInfo info;
      FillInfo(*desc, &info);
      grpc::Slice reply(info.SerializeAsString());
      *resp_ = grpc::ByteBuffer(&reply, 1);
      return Done(absl::OkStatus());
    }
    auto st = ParseUploadMessage(msg_, &wire_);
    if (st.ok()) st = session_.OnMessage(wire_.fields, wire_.data);
    if (!st.ok()) return Done(st);
    wire_.slices.clear();  // the chunk is in the store: its slices go back to gRPC
    msg_.Clear();
    StartRead(&msg_);
  }

  void OnCancel() override { cancelled_ = true; }
  void OnDone() override {
    watchdog_.Forget(watch_);  // once it returns, the watchdog's callback is not running
    // Cancelled after the commit: nobody holds the handle, so free it.
    if (cancelled_ && !handle_.empty()) (void)store_.Delete(handle_, owner_);
    delete this;
  }

 private:
  // Under mu_.
  void Done(const absl::Status& status) {
    finished_ = true;
    session_.Abandon();  // a broken upload gives its quota back at once
    const double seconds = SecondsSince(start_);
    metrics_.RecordRequest("UploadMatrix", std::nullopt, CodeName(status.code()), seconds);
    spdlog::info("UploadMatrix status={} latency_ms={:.3f} {} handle={}{}", CodeName(status.code()),
                 seconds * 1e3, session_.detail(), handle_,
                 status.ok() ? "" : " error=" + QuoteClientText(status.message(), kLoggedMessageBytes));
    Finish(ToGrpc(status));
  }

  grpc::CallbackServerContext* ctx_;
  MatrixStore& store_;
  Metrics& metrics_;
  StreamWatchdog& watchdog_;
  StreamWatchdog::Id watch_ = 0;
  Caller owner_;
  grpc::ByteBuffer* resp_;
  std::string handle_;  // once committed
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;  // the reader's callbacks against the watchdog's
  bool finished_ = false;
  grpc::ByteBuffer msg_;
  UploadWireMessage wire_;
  UploadSession session_;
  Clock::time_point start_ = Clock::now();
};

class DownloadReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  DownloadReactor(grpc::CallbackServerContext* ctx, MatrixStore& store, Metrics& metrics, StreamWatchdog& watchdog,
                  const Caller& caller, const grpc::ByteBuffer& request, uint64_t default_chunk,
                  uint64_t max_message)
      : metrics_(metrics), watchdog_(watchdog) {
    // A client that reads nothing would not read a status either: cancel.
    watch_ = watchdog_.Watch("download", [this, ctx](const absl::Status& why) {
      {
        std::lock_guard lock(mu_);
        idle_ = why;
      }
      ctx->TryCancel();
    });
    gemm::v1::DownloadMatrixRequest req;
    if (grpc::ByteBuffer bytes = request;  // GenericDeserialize empties what it reads
        !grpc::GenericDeserialize<grpc::ProtoBufferReader, gemm::v1::DownloadMatrixRequest>(&bytes, &req).ok()) {
      Done(absl::InvalidArgumentError("the request is not a DownloadMatrixRequest in the protobuf wire format"));
      return;
    }
    auto m = store.Get(req.handle(), caller);
    if (!m.ok()) {
      Done(m.status());
      return;
    }
    matrix_ = *m;
    const uint64_t total = matrix_->description().bytes;
    if (req.offset() > total || req.length() > total - req.offset()) {
      Done(absl::OutOfRangeError("offset " + std::to_string(req.offset()) + " and length " +
                                 std::to_string(req.length()) + " reach past the end of " + req.handle() +
                                 ", which has " + std::to_string(total) + " bytes"));
      return;
    }
    offset_ = req.offset();
    end_ = req.length() == 0 ? total : req.offset() + req.length();
    FillInfo(matrix_->description(), &info_);
    // The first chunk carries the info: the margin is its real size plus
    // the offset and the data field's own framing.
    const uint64_t framing = info_.ByteSizeLong() + 32;
    chunk_ = req.chunk_bytes() == 0 ? default_chunk : req.chunk_bytes();
    chunk_ = std::min<uint64_t>(chunk_, max_message - std::min(max_message - 2, framing));
    chunk_ = std::max<uint64_t>(chunk_ & ~uint64_t{1}, 2);  // whole fp16 elements
    WriteNext();
  }

  void OnWriteDone(bool ok) override {
    watchdog_.Touch(watch_);
    if (!ok) {
      std::lock_guard lock(mu_);
      if (!idle_.ok()) return Done(idle_);
      return Done(absl::CancelledError("the client went away during the download"));
    }
    if (offset_ >= end_) return Done(absl::OkStatus());
    WriteNext();
  }
  void OnDone() override {
    watchdog_.Forget(watch_);
    delete this;
  }

 private:
  void WriteNext() {
    const uint64_t len = std::min(chunk_, end_ - offset_);
    // The chunk's data is the stored matrix's own memory, held until sent.
    SerializeMatrixChunk(sent_ == 0 ? &info_ : nullptr, offset_,
                         reinterpret_cast<const char*>(matrix_->data()) + offset_, len, matrix_, &chunk_msg_);
    offset_ += len;
    sent_ += len;
    StartWrite(&chunk_msg_);
  }

  void Done(const absl::Status& status) {
    const double seconds = SecondsSince(start_);
    metrics_.RecordRequest("DownloadMatrix", std::nullopt, CodeName(status.code()), seconds);
    spdlog::info("DownloadMatrix status={} latency_ms={:.3f} bytes={}{}", CodeName(status.code()),
                 seconds * 1e3, sent_,
                 status.ok() ? "" : " error=" + QuoteClientText(status.message(), kLoggedMessageBytes));
    matrix_.reset();
    Finish(ToGrpc(status));
  }

  Metrics& metrics_;
  StreamWatchdog& watchdog_;
  StreamWatchdog::Id watch_ = 0;
  std::mutex mu_;
  absl::Status idle_;  // why the watchdog cancelled the stream
  std::shared_ptr<const StoredMatrix> matrix_;
  uint64_t chunk_ = 0;
  uint64_t offset_ = 0, end_ = 0;  // the range still to send
  uint64_t sent_ = 0;  // the first chunk (none sent yet) carries info_
  MatrixInfo info_;
  grpc::ByteBuffer chunk_msg_;
  Clock::time_point start_ = Clock::now();
};


}  // namespace

grpc::ServerReadReactor<grpc::ByteBuffer>* StartUpload(grpc::CallbackServerContext* ctx, MatrixStore& store,
                                                       Metrics& metrics, StreamWatchdog& watchdog, Caller owner,
                                                       grpc::ByteBuffer* resp) {
  return new UploadReactor(ctx, store, metrics, watchdog, std::move(owner), resp);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* StartDownload(grpc::CallbackServerContext* ctx, MatrixStore& store,
                                                          Metrics& metrics, StreamWatchdog& watchdog,
                                                          const Caller& caller, const grpc::ByteBuffer& request,
                                                          uint64_t default_chunk, uint64_t max_message) {
  return new DownloadReactor(ctx, store, metrics, watchdog, caller, request, default_chunk, max_message);
}

}  // namespace gemmd
