#include "gemm_client.h"

#include "unary_pipeline.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "hostmem/page_ranges.h"
#include "wire/slice_reader.h"

namespace gemmc {

const char kRetryServiceConfig[] = R"({
  "methodConfig": [{
    "name": [{"service": "gemm.v1.GemmService", "method": "Multiply"},
             {"service": "gemm.v1.GemmService", "method": "ListKernels"},
             {"service": "gemm.v1.GemmService", "method": "ListMatrices"},
             {"service": "gemm.v1.GemmService", "method": "DeleteMatrix"},
             {"service": "gemm.v1.GemmService", "method": "DownloadMatrix"}],
    "retryPolicy": {
      "maxAttempts": 5,
      "initialBackoff": "0.05s",
      "maxBackoff": "2s",
      "backoffMultiplier": 2.5,
      "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED", "CANCELLED"]
    }
  }],
  "retryThrottling": {"maxTokens": 1000, "tokenRatio": 1.0}
})";

int RetriesOf(const grpc::ClientContext& ctx) {
  const auto& trailers = ctx.GetServerTrailingMetadata();
  const auto it = trailers.find("gemmd-previous-attempts");
  return it == trailers.end() ? 0 : std::atoi(std::string(it->second.data(), it->second.size()).c_str());
}

std::string CodeName(grpc::StatusCode code) {
  static const char* const kNames[] = {
      "OK",       "CANCELLED",          "UNKNOWN",      "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
      "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  const int i = static_cast<int>(code);
  return i >= 0 && i < 17 ? kNames[i] : "CODE_" + std::to_string(i);
}

GemmClient::GemmClient(const ClientOptions& options) : options_(options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(options_.max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(options_.max_message_bytes));
  // dns:/// targets with several addresses spread calls over every replica.
  args.SetLoadBalancingPolicyName("round_robin");
  if (options_.retries) args.SetServiceConfigJSON(kRetryServiceConfig);
  // gRPC's default waits 1 s after a lost connection, then 1.6 times longer
  // each time: a server back 50 ms after a restart was unreachable for a
  // second, longer than the retry policy's attempts last.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, kReconnectBackoffMs[0]);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kReconnectBackoffMs[1]);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kReconnectBackoffMs[2]);
  if (options_.own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (options_.use_tls || !options_.tls_ca.empty() || !options_.tls_cert.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options_.tls_ca;
    ssl.pem_cert_chain = options_.tls_cert;
    ssl.pem_private_key = options_.tls_key;
    credentials = grpc::SslCredentials(ssl);
    if (!options_.tls_server_name.empty()) args.SetSslTargetNameOverride(options_.tls_server_name);
  }
  channel_ = grpc::CreateCustomChannel(options_.target, credentials, args);
  stub_ = gemm::v1::GemmService::NewStub(channel_);
  health_ = grpc::health::v1::Health::NewStub(channel_);
  generic_ = std::make_unique<grpc::GenericStub>(channel_);
}

void GemmClient::Prepare(grpc::ClientContext* ctx) const {
  if (!options_.token.empty()) ctx->AddMetadata("authorization", "Bearer " + options_.token);
  if (options_.timeout_seconds > 0) {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::microseconds(static_cast<int64_t>(options_.timeout_seconds * 1e6)));
    // Once this client has reached the server, a restart within the
    // deadline is waited out, not reported. Until then a call fails fast:
    // a wrong address or certificate is not a restart.
    if (options_.retries && !reached_server_.load(std::memory_order_relaxed) &&
        channel_->GetState(false) == GRPC_CHANNEL_READY) {
      reached_server_.store(true, std::memory_order_relaxed);
    }
    if (options_.retries && reached_server_.load(std::memory_order_relaxed)) ctx->set_wait_for_ready(true);
  }
}

namespace {

// Waits for the one event a unary call posts to its own queue, then drains
// the queue; false if it shut down first. Busy, it polls without sleeping.
bool AwaitOne(grpc::CompletionQueue& cq, bool busy) {
  void* tag = nullptr;
  bool ok = false;
  const bool got = NextEvent(cq, busy, &tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return got;
}

grpc::Status QueueShutDown() {
  return grpc::Status(grpc::StatusCode::INTERNAL, "the Multiply call's completion queue shut down");
}

}  // namespace

grpc::Status GemmClient::Multiply(const gemm::v1::MultiplyRequest& req, gemm::v1::MultiplyResponse* resp,
                                  int* retries) {
  if (const uint64_t bytes = req.ByteSizeLong(); bytes > options_.max_message_bytes) return MessageTooLarge(bytes);
  grpc::ClientContext ctx;
  Prepare(&ctx);
  grpc::Status st;
  if (options_.busy_poll) {
    grpc::CompletionQueue cq;
    auto call = stub_->AsyncMultiply(&ctx, req, &cq);
    call->Finish(resp, &st, reinterpret_cast<void*>(1));
    if (!AwaitOne(cq, true)) st = QueueShutDown();
  } else {
    st = stub_->Multiply(&ctx, req, resp);
  }
  if (retries) *retries = RetriesOf(ctx);
  return st;
}

namespace {

using gemm::wire::AppendVarint;

// The generated stub's own stream factories with byte buffers for messages,
// so that a matrix's bytes are not copied into and out of protobuf messages
// (gRPC's public generic stub has no blocking streams).
const grpc::internal::RpcMethod kUploadMethod("/gemm.v1.GemmService/UploadMatrix",
                                              grpc::internal::RpcMethod::CLIENT_STREAMING);
const grpc::internal::RpcMethod kDownloadMethod("/gemm.v1.GemmService/DownloadMatrix",
                                                grpc::internal::RpcMethod::SERVER_STREAMING);

}  // namespace

struct GemmClient::Chunk {
  std::vector<grpc::Slice> slices;
  gemm::v1::MatrixChunk fields;  // every field but data (info in the first chunk only)
  gemm::wire::BytesField data;   // in the slices
  bool Parse(const grpc::ByteBuffer& buffer) {
    slices.clear();
    std::string rest;
    return buffer.Dump(&slices).ok() && gemm::wire::SplitBytesField(slices, 3, &data, &rest) &&
           fields.ParseFromString(rest);
  }
  void CopyTo(char* dst) const {
    for (const auto& [p, n] : data.pieces) dst = static_cast<char*>(std::memcpy(dst, p, n)) + n;
  }
};

void GatherPieces(const std::vector<std::pair<const char*, size_t>>& pieces, char* dst, unsigned threads) {
  std::vector<uint64_t> starts;  // starts[i]: where piece i begins
  uint64_t size = 0;
  for (const auto& [p, n] : pieces) {
    starts.push_back(size);
    size += n;
  }
  if (threads == 0) {
    constexpr uint64_t kBytesPerThread = 4 << 20;
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    threads = static_cast<unsigned>(std::clamp<uint64_t>(size / kBytesPerThread, 1, std::min(8u, cores)));
  }
  const auto copy = [&](uint64_t begin, uint64_t end) {
    if (begin >= end) return;
    size_t i = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), begin) - starts.begin()) - 1;
    for (; begin < end; ++i) {
      const uint64_t within = begin - starts[i];
      const uint64_t n = std::min<uint64_t>(end - begin, pieces[i].second - within);
      std::memcpy(dst + begin, pieces[i].first + within, n);
      begin += n;
    }
  };
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < threads; ++t) {
    const auto part = gemm::hostmem::PartRange(size, threads, t);
    helpers.emplace_back(copy, part.begin, part.end);
  }
  const auto first = gemm::hostmem::PartRange(size, threads, 0);
  copy(first.begin, first.end);
  for (auto& h : helpers) h.join();
}

namespace {

// D (field 3) gathered from gRPC's slices into one string reserved at its
// size, or into `d_out`, and the other fields parsed by protobuf:
// protobuf's own parse of a 32 MiB D took 23 ms on an H100 machine.
bool ParseMultiplyResponse(const grpc::ByteBuffer& buffer, gemm::v1::MultiplyResponse* out, MatrixBytes* d_out) {
  std::vector<grpc::Slice> slices;
  gemm::wire::BytesField d;
  std::string rest;
  if (!buffer.Dump(&slices).ok() || !gemm::wire::SplitBytesField(slices, 3, &d, &rest) ||
      !out->ParseFromString(rest)) {
    return false;
  }
  if (d.present && d_out != nullptr) {
    if (d_out->size != d.size || d_out->data == nullptr) {  // not D's size after all: fresh memory
      d_out->data.reset(new char[d.size == 0 ? 1 : d.size]);
      d_out->size = d.size;
    }
    GatherPieces(d.pieces, d_out->data.get());
  } else if (d_out != nullptr) {
    *d_out = MatrixBytes{};  // no D came: none is left to read
  } else if (d.present) {
    std::string bytes;
    bytes.reserve(d.size);
    for (const auto& [p, n] : d.pieces) bytes.append(p, n);
    out->set_d(std::move(bytes));
  }
  return true;
}

}  // namespace

// The protobuf wire format lets a message field appear more than once (the
// parser merges the occurrences) and in any order. So the request is
// serialized without its inline operands, and each operand follows as its
// own field 2 (a) or 3 (b) whose bytes are the caller's buffer itself, not
// a copy: for a 4096^3 inline request that is 64 MB protobuf no longer
// copies. The caller's `req` must outlive the call (it does: the call is
// synchronous).
void GemmClient::SerializeWithoutCopyingData(const gemm::v1::MultiplyRequest& req, grpc::ByteBuffer* out) {
  // Every field but inline operand data (tests/client_serialize_test.cpp
  // holds this list to the message's fields).
  gemm::v1::MultiplyRequest rest;
  *rest.mutable_shape() = req.shape();
  rest.set_step(req.step());
  rest.set_verification(req.verification());
  rest.set_output(req.output());
  rest.set_repeats(req.repeats());
  rest.set_benchmark(req.benchmark());
  rest.set_transient_output(req.transient_output());
  rest.set_a_type(req.a_type());
  rest.set_b_type(req.b_type());
  rest.set_d_type(req.d_type());
  rest.set_c_type(req.c_type());
  rest.set_a_layout(req.a_layout());
  rest.set_b_layout(req.b_layout());
  if (req.has_alpha()) rest.set_alpha(req.alpha());
  rest.set_beta(req.beta());
  if (req.has_batch()) *rest.mutable_batch() = req.batch();
  if (req.has_a_scale()) rest.set_a_scale(req.a_scale());
  if (req.has_b_scale()) rest.set_b_scale(req.b_scale());
  rest.set_allow_tf32(req.allow_tf32());
  std::vector<std::pair<uint64_t, const std::string*>> inline_data;
  auto take = [&](uint64_t field, const gemm::v1::Operand& op, gemm::v1::Operand* (gemm::v1::MultiplyRequest::*copy)()) {
    if (op.source_case() == gemm::v1::Operand::kData) {
      inline_data.emplace_back(field, &op.data());
    } else {
      *(rest.*copy)() = op;
    }
  };
  take(2, req.a(), &gemm::v1::MultiplyRequest::mutable_a);
  take(3, req.b(), &gemm::v1::MultiplyRequest::mutable_b);
  if (req.has_c()) take(18, req.c(), &gemm::v1::MultiplyRequest::mutable_c);

  std::vector<grpc::Slice> slices;
  slices.emplace_back(rest.SerializeAsString());
  for (const auto& [field, data] : inline_data) {
    std::string inner;  // the Operand's field 1 (data), length-delimited, up to its bytes
    AppendVarint(&inner, (1 << 3) | 2);
    AppendVarint(&inner, data->size());
    std::string header;
    AppendVarint(&header, (field << 3) | 2);
    AppendVarint(&header, inner.size() + data->size());
    header += inner;
    slices.emplace_back(std::move(header));
    slices.emplace_back(data->data(), data->size(), grpc::Slice::STATIC_SLICE);
  }
  *out = grpc::ByteBuffer(slices.data(), slices.size());
}

grpc::Status GemmClient::MultiplyTimed(const gemm::v1::MultiplyRequest& req, gemm::v1::MultiplyResponse* resp,
                                       ClientTiming* timing, MatrixBytes* d, int* retries) {
  // The phases share their boundaries, and each one's teardown (the context,
  // the buffers) falls inside it, so they add up to the call of this function.
  using Clock = std::chrono::steady_clock;
  auto mark = Clock::now();
  auto lap = [&mark] {
    const auto now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - mark).count();
    mark = now;
    return seconds;
  };
  grpc::ByteBuffer request, reply;
  SerializeWithoutCopyingData(req, &request);
  timing->serialize_seconds = lap();

  grpc::Status status = MultiplyBytes(request, &reply, retries);
  request.Clear();
  timing->call_seconds = lap();
  if (!status.ok()) {
    if (d != nullptr) *d = MatrixBytes{};
    return status;
  }

  if (!ParseMultiplyResponse(reply, resp, d)) {
    status = grpc::Status(grpc::StatusCode::INTERNAL, "the reply is not a MultiplyResponse in the protobuf wire format");
    if (d != nullptr) *d = MatrixBytes{};
  }
  reply.Clear();
  timing->deserialize_seconds = lap();
  return status;
}

grpc::Status GemmClient::MessageTooLarge(uint64_t bytes) const {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      "the request is " + std::to_string(bytes) + " bytes, over the largest message of " +
                          std::to_string(options_.max_message_bytes) +
                          " bytes (--max-message-bytes, the server's too): upload A and B and multiply by handle "
                          "(gemm-client run does so by itself unless told --transport inline)");
}

grpc::Status GemmClient::MultiplyBytes(const grpc::ByteBuffer& request, grpc::ByteBuffer* reply, int* retries) {
  if (request.Length() > options_.max_message_bytes) return MessageTooLarge(request.Length());
  // On the calling thread's own completion queue, as a generated blocking
  // stub calls and as the bare-gRPC floor (grpc-echo-bench) is measured: the
  // callback API answered on threads of its own, which a process started at
  // its first call (1-4 ms of a one-shot gemm-client run's Multiply) and
  // which then woke this thread.
  grpc::ClientContext ctx;
  Prepare(&ctx);
  grpc::CompletionQueue cq;
  grpc::Status status;
  auto call = generic_->PrepareUnaryCall(&ctx, "/gemm.v1.GemmService/Multiply", request, &cq);
  call->StartCall();
  call->Finish(reply, &status, reinterpret_cast<void*>(1));
  if (!AwaitOne(cq, options_.busy_poll)) return QueueShutDown();
  if (retries) *retries = RetriesOf(ctx);
  return status;
}

void GemmClient::MultiplyPipelined(size_t depth, const NextMultiply& next, const MultiplyDone& done) {
  // Each slot's request stays here while its call is in flight: its
  // serialized form refers to the request's inline bytes.
  std::vector<gemm::v1::MultiplyRequest> requests(depth);
  gemm::v1::MultiplyResponse resp;
  PipelineHooks hooks;
  hooks.next = [&](size_t slot, grpc::ClientContext* ctx, grpc::ByteBuffer* request) {
    requests[slot].Clear();
    if (!next(slot, &requests[slot])) return false;
    Prepare(ctx);
    SerializeWithoutCopyingData(requests[slot], request);
    return true;
  };
  hooks.done = [&](size_t slot, const grpc::ClientContext& ctx, const grpc::Status& status,
                   const grpc::ByteBuffer& reply, double seconds) {
    resp.Clear();
    grpc::Status st = status;
    if (st.ok() && !ParseMultiplyResponse(reply, &resp, nullptr)) {
      st = grpc::Status(grpc::StatusCode::INTERNAL, "the reply is not a MultiplyResponse in the protobuf wire format");
    }
    return done(slot, st, resp, seconds, RetriesOf(ctx));
  };
  RunPipeline(*generic_, "/gemm.v1.GemmService/Multiply", depth, options_.busy_poll, hooks);
}

grpc::Status GemmClient::ListKernels(gemm::v1::ListKernelsResponse* resp) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  return stub_->ListKernels(&ctx, {}, resp);
}

grpc::Status GemmClient::ListMatricesPage(const gemm::v1::ListMatricesRequest& req,
                                          gemm::v1::ListMatricesResponse* resp) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  return stub_->ListMatrices(&ctx, req, resp);
}

grpc::Status GemmClient::ListMatrices(gemm::v1::ListMatricesResponse* resp) {
  resp->Clear();
  gemm::v1::ListMatricesRequest req;
  do {
    gemm::v1::ListMatricesResponse page;
    if (auto st = ListMatricesPage(req, &page); !st.ok()) return st;
    for (auto& m : *page.mutable_matrices()) *resp->add_matrices() = std::move(m);
    resp->set_used_bytes(page.used_bytes());
    resp->set_quota_bytes(page.quota_bytes());
    req.set_page_token(page.next_page_token());
  } while (!req.page_token().empty());
  return grpc::Status::OK;
}

grpc::Status GemmClient::Delete(const std::string& handle, uint64_t* freed, int* retries) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  gemm::v1::DeleteMatrixRequest req;
  req.set_handle(handle);
  gemm::v1::DeleteMatrixResponse resp;
  grpc::Status st = stub_->DeleteMatrix(&ctx, req, &resp);
  if (freed) *freed = resp.freed_bytes();
  if (retries) *retries = RetriesOf(ctx);
  return st;
}

grpc::Status GemmClient::Upload(int64_t rows, int64_t cols, std::string_view bytes, const std::string& label,
                                gemm::v1::MatrixInfo* info, const Progress& progress, uint64_t chunk_bytes) {
  gemm::v1::MatrixHeader header;
  header.set_rows(rows);
  header.set_cols(cols);
  header.set_label(label);
  return Upload(header, bytes, info, progress, chunk_bytes);
}

grpc::Status GemmClient::Upload(const gemm::v1::MatrixHeader& header, std::string_view bytes,
                                gemm::v1::MatrixInfo* info, const Progress& progress, uint64_t chunk_bytes) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> writer(
      grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(channel_.get(), kUploadMethod, &ctx, info));
  if (chunk_bytes == 0) chunk_bytes = ChunkBytes();
  gemm::v1::UploadMatrixRequest first;  // the header, in the first message only
  *first.mutable_header() = header;
  uint64_t offset = 0;
  do {
    // The message's fields, then its data (field 2) as a slice of `bytes`
    // itself, which outlives the call.
    const uint64_t len = std::min<uint64_t>(chunk_bytes, bytes.size() - offset);
    std::string head = offset == 0 ? first.SerializeAsString() : std::string();
    AppendVarint(&head, gemm::wire::Tag(2, gemm::wire::kLengthDelimited));
    AppendVarint(&head, len);
    grpc::Slice slices[2] = {grpc::Slice(head), grpc::Slice(bytes.data() + offset, len, grpc::Slice::STATIC_SLICE)};
    if (!writer->Write(grpc::ByteBuffer(slices, len == 0 ? 1 : 2))) break;  // the server ended the call; Finish says why
    offset += len;
    if (progress) progress(offset, bytes.size());
  } while (offset < bytes.size());
  writer->WritesDone();
  return writer->Finish();
}

grpc::Status GemmClient::ReadChunks(const std::string& handle, uint64_t offset, uint64_t length,
                                    const std::function<bool(const Chunk&)>& sink) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  gemm::v1::DownloadMatrixRequest req;
  req.set_handle(handle);
  req.set_chunk_bytes(ChunkBytes());
  req.set_offset(offset);
  req.set_length(length);
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel_.get(), kDownloadMethod, &ctx, req));
  grpc::ByteBuffer message;
  Chunk chunk;
  while (reader->Read(&message)) {
    if (!chunk.Parse(message)) {
      ctx.TryCancel();
      reader->Finish();
      return grpc::Status(grpc::StatusCode::DATA_LOSS, "a download chunk is not a MatrixChunk");
    }
    if (!sink(chunk)) {
      ctx.TryCancel();
      reader->Finish();
      return grpc::Status(grpc::StatusCode::DATA_LOSS, "a download chunk arrived out of order or outside the range "
                                                       "asked for");
    }
  }
  return reader->Finish();
}

grpc::Status GemmClient::Download(const std::string& handle, std::string* bytes, gemm::v1::MatrixInfo* info,
                                  const Progress& progress) {
  bytes->clear();
  uint64_t total = 0;
  return ReadChunks(handle, 0, 0, [&](const Chunk& chunk) {
    if (chunk.fields.has_info()) {
      total = chunk.fields.info().bytes();
      bytes->reserve(total);
      if (info) *info = chunk.fields.info();
    }
    if (chunk.fields.offset() != bytes->size() || chunk.data.size > total - bytes->size()) return false;
    for (const auto& [p, n] : chunk.data.pieces) bytes->append(p, n);
    if (progress) progress(bytes->size(), total);
    return true;
  });
}

grpc::Status GemmClient::DownloadRange(const std::string& handle, uint64_t offset, uint64_t length, char* dst) {
  uint64_t done = 0;
  grpc::Status st = ReadChunks(handle, offset, length, [&](const Chunk& chunk) {
    if (chunk.fields.offset() != offset + done || chunk.data.size > length - done) return false;
    chunk.CopyTo(dst + done);
    done += chunk.data.size;
    return true;
  });
  if (st.ok() && done != length) {
    return grpc::Status(grpc::StatusCode::DATA_LOSS, "the download ended after " + std::to_string(done) + " of " +
                                                         std::to_string(length) + " bytes");
  }
  return st;
}

std::vector<std::unique_ptr<GemmClient>> OwnConnections(const GemmClient& client, size_t count) {
  std::vector<std::unique_ptr<GemmClient>> clients;
  ClientOptions own = client.options();
  own.own_connection = true;
  for (size_t i = 0; i < count; ++i) clients.push_back(std::make_unique<GemmClient>(own));
  return clients;
}

grpc::Status DownloadParallel(const std::vector<GemmClient*>& clients, const std::string& handle, uint64_t bytes,
                              char* out) {
  const uint64_t n = clients.size();
  // Whole fp16 elements per range; the last takes the rest.
  const uint64_t share = bytes / n / 2 * 2;
  std::vector<grpc::Status> status(n);
  std::vector<std::thread> threads;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t offset = i * share, length = i + 1 == n ? bytes - offset : share;
    threads.emplace_back([&, i, offset, length] {
      status[i] = length == 0 ? grpc::Status::OK : clients[i]->DownloadRange(handle, offset, length, out + offset);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& st : status) {
    if (!st.ok()) return st;
  }
  return grpc::Status::OK;
}

grpc::Status GemmClient::Health(const std::string& service,
                                grpc::health::v1::HealthCheckResponse::ServingStatus* status) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  // Health says how the server is now: it never waits for one that does
  // not answer, whatever the client's deadline.
  constexpr double kHealthDeadlineSeconds = 5;
  const double seconds = options_.timeout_seconds > 0 ? std::min(options_.timeout_seconds, kHealthDeadlineSeconds)
                                                      : kHealthDeadlineSeconds;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6)));
  ctx.set_wait_for_ready(false);
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status st = health_->Check(&ctx, req, &resp);
  *status = resp.status();
  return st;
}

}  // namespace gemmc
