// A thin C++ client of gemm.v1: the calls gemm-client and the tests need,
// with chunked upload/download for matrices larger than one message.
#pragma once

#include <atomic>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gemm/v1/gemm.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace gemmc {

struct ClientOptions {
  std::string target = "localhost:50051";
  // Each call's deadline. Within it, once this client has reached the
  // server, a call that finds it unreachable (restarting, its connection
  // lost) waits for it to come back instead of failing (gRPC's
  // wait-for-ready), so a restart reaches no caller as an error. Before the
  // first connection a call fails fast (a wrong address or certificate is
  // not a restart). 0: no deadline, and then no waiting either.
  double timeout_seconds = 300;
  uint64_t max_message_bytes = 128ull << 20;  // must match the server's
  // TLS: PEM contents (not paths). tls_ca set (or use_tls) means TLS; with
  // an empty tls_ca the system roots are used. tls_cert/tls_key: client
  // certificate for mutual TLS. tls_server_name overrides the name checked
  // against the server's certificate.
  bool use_tls = false;
  std::string tls_ca, tls_cert, tls_key, tls_server_name;
  std::string token;  // sent as 'authorization: Bearer <token>' when set
  // gRPC retries UNAVAILABLE, RESOURCE_EXHAUSTED and CANCELLED with
  // exponential backoff and jitter, within a retry-throttling budget
  // (kRetryServiceConfig); a lost connection is made again within 0.1-1 s
  // (kReconnectBackoffMs), not gRPC's default 1-120 s.
  bool retries = true;
  // A TCP connection of this client's own: channels with the same target
  // and arguments otherwise share one (gRPC's global subchannel pool).
  bool own_connection = false;
  // Multiply's caller polls its completion queue instead of sleeping in it,
  // so the reply is read when it lands rather than after the thread is woken
  // (30-50 us on the GPU machine's VMs, docs/service-path.md). It costs a
  // busy core per blocking call in flight, or per MultiplyPipelined thread:
  // for latency, not for many calls at once.
  bool busy_poll = false;
};

// The channel's service config: which calls gRPC itself retries, and how.
// Multiply, ListKernels, ListMatrices, DeleteMatrix and DownloadMatrix are
// retried on statuses that mostly mean the server did not do the work
// (down, draining, or its queue full). CANCELLED is among them because a
// call that reaches a server just after its shutdown began is cancelled by
// gRPC without running (the soak test saw it at every rolling restart), and
// gemmd's own cancellations, past the shutdown grace, leave the work undone;
// a caller's own cancel is never retried. A connection lost after the server
// did the work but before its reply arrived is UNAVAILABLE too: harmless for
// every call here but DeleteMatrix, whose retry then finds nothing and says
// so (GemmClient::Delete reports the retries). UploadMatrix is not retried:
// a retry would need the whole stream kept to send again, so a caller
// restarts the upload itself.
extern const char kRetryServiceConfig[];
// The reconnect backoff: first, least and most, in milliseconds.
inline constexpr int kReconnectBackoffMs[3] = {100, 100, 1000};

// How many times gRPC retried the call `ctx` made before the attempt that
// got an answer: gemmd echoes gRPC's grpc-previous-rpc-attempts header in
// its trailers as gemmd-previous-attempts. 0 for a first attempt.
int RetriesOf(const grpc::ClientContext& ctx);

// A Multiply's time on the client's side, contiguous: serialize, then the
// call (sending, the server's work, receiving), then deserialize.
struct ClientTiming {
  double serialize_seconds = 0, call_seconds = 0, deserialize_seconds = 0;
};

// A matrix's bytes in memory of their own, left unwritten until they are
// gathered: a big D lands faster when several threads each fault in and
// fill their own pages (a one-shot client's 32 MiB D spent most of its
// 22-26 ms "deserialize" on page faults, one thread at a time). Faulting
// the memory in during the call instead (hostmem/populate_pages.h) cut the
// deserialize to 1.5 ms but slowed the call by 11 ms (H100 host), so the
// client does not.
struct MatrixBytes {
  std::unique_ptr<char[]> data;
  uint64_t size = 0;
  std::string_view view() const { return {data.get(), static_cast<size_t>(size)}; }
};

// Copies the pieces, joined, to dst (which holds their total size) on
// `threads` threads (0: one per 4 MiB, at most 8 and the machine's cores),
// each taking one contiguous, page-aligned range.
void GatherPieces(const std::vector<std::pair<const char*, size_t>>& pieces, char* dst, unsigned threads = 0);

// Called with (bytes done, bytes total) as an upload or download moves.
using Progress = std::function<void(uint64_t, uint64_t)>;

class GemmClient {
 public:
  explicit GemmClient(const ClientOptions& options);

  // `retries`, when given: how many times gRPC's retry policy retried it.
  grpc::Status Multiply(const gemm::v1::MultiplyRequest& req, gemm::v1::MultiplyResponse* resp,
                        int* retries = nullptr);
  // The same call with the messages serialized and parsed here, through the
  // generic stub, so that each of the client's phases can be timed. With
  // `d`, an inline D is gathered there (GatherPieces) and resp->d stays
  // empty; memory `d` holds already of D's size is reused (warm: the
  // gather is a plain copy), else new memory is taken. Without D (a failed
  // call), `d` is left empty.
  grpc::Status MultiplyTimed(const gemm::v1::MultiplyRequest& req, gemm::v1::MultiplyResponse* resp,
                             ClientTiming* timing, MatrixBytes* d = nullptr, int* retries = nullptr);
  // Multiply with the request already in the wire format and the reply left
  // in it (what MultiplyTimed times; tests send malformed bytes through it).
  grpc::Status MultiplyBytes(const grpc::ByteBuffer& request, grpc::ByteBuffer* reply, int* retries = nullptr);
  // Multiply calls kept up to `depth` in flight on this client's connection
  // by the calling thread (RunPipeline). `next` writes slot `slot`'s next
  // request (false: the slot is done); `done` gets each answer (a reply
  // that does not parse is INTERNAL) with gRPC's retries of it, and returns
  // how long the slot waits before its next call.
  using NextMultiply = std::function<bool(size_t slot, gemm::v1::MultiplyRequest* req)>;
  using MultiplyDone = std::function<double(size_t slot, const grpc::Status& status,
                                            const gemm::v1::MultiplyResponse& resp, double seconds, int retries)>;
  void MultiplyPipelined(size_t depth, const NextMultiply& next, const MultiplyDone& done);
  grpc::Status ListKernels(gemm::v1::ListKernelsResponse* resp);
  // Every page, merged into `resp` (its next_page_token empty).
  grpc::Status ListMatrices(gemm::v1::ListMatricesResponse* resp);
  // One page: `req` names its size and the previous page's token.
  grpc::Status ListMatricesPage(const gemm::v1::ListMatricesRequest& req, gemm::v1::ListMatricesResponse* resp);
  // NOT_FOUND with `retries` > 0 may mean that an earlier attempt deleted
  // the matrix and its reply was lost (kRetryServiceConfig).
  grpc::Status Delete(const std::string& handle, uint64_t* freed = nullptr, int* retries = nullptr);

  // Streams `bytes` (row-major fp16, rows·cols·2 bytes) in chunks.
  grpc::Status Upload(int64_t rows, int64_t cols, std::string_view bytes, const std::string& label,
                      gemm::v1::MatrixInfo* info, const Progress& progress = {}, uint64_t chunk_bytes = 0);
  // The same, with every header field the caller sets (e.g. transient).
  grpc::Status Upload(const gemm::v1::MatrixHeader& header, std::string_view bytes, gemm::v1::MatrixInfo* info,
                      const Progress& progress = {}, uint64_t chunk_bytes = 0);
  grpc::Status Download(const std::string& handle, std::string* bytes, gemm::v1::MatrixInfo* info = nullptr,
                        const Progress& progress = {});
  // Bytes [offset, offset + length) of a stored matrix, written to `dst`,
  // which holds `length` bytes; each chunk must land inside that range.
  grpc::Status DownloadRange(const std::string& handle, uint64_t offset, uint64_t length, char* dst);

  // grpc.health.v1 Check of `service` ("" = the whole server).
  grpc::Status Health(const std::string& service,
                      grpc::health::v1::HealthCheckResponse::ServingStatus* status);

  const ClientOptions& options() const { return options_; }

  // `req` in the protobuf wire format with its inline operand bytes not
  // copied but referenced (the buffer must outlive `out`'s use).
  static void SerializeWithoutCopyingData(const gemm::v1::MultiplyRequest& req, grpc::ByteBuffer* out);
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }

 private:
  void Prepare(grpc::ClientContext* ctx) const;
  // A request over the message cap, refused here with what to do instead
  // (gRPC's own refusal names only the sizes).
  grpc::Status MessageTooLarge(uint64_t bytes) const;
  // One DownloadMatrix chunk as it arrived, its data still in gRPC's slices.
  struct Chunk;
  // Reads DownloadMatrix's stream of [offset, offset + length) (length 0:
  // to the end), handing each chunk to `sink`; a chunk the sink refuses
  // (false) ends the call with DATA_LOSS.
  grpc::Status ReadChunks(const std::string& handle, uint64_t offset, uint64_t length,
                          const std::function<bool(const Chunk&)>& sink);
  // The chunk size uploads and downloads ask for: 4 MiB, or half a message.
  uint64_t ChunkBytes() const { return std::min<uint64_t>(4ull << 20, options_.max_message_bytes / 2); }

  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  mutable std::atomic<bool> reached_server_{false};  // the channel was READY once (Prepare)
  std::unique_ptr<gemm::v1::GemmService::Stub> stub_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
  std::unique_ptr<grpc::GenericStub> generic_;
};

// "OK", "INVALID_ARGUMENT", ...
std::string CodeName(grpc::StatusCode code);

// `count` clients of `client`'s target and options, each on a TCP connection
// of its own: one gRPC connection moves about 1.5 GB/s over loopback, and
// is handled by one thread at a time on each side.
std::vector<std::unique_ptr<GemmClient>> OwnConnections(const GemmClient& client, size_t count);

// A stored matrix of `bytes` bytes, fetched in one range per client at once
// into `out`, which holds `bytes`. Memory the caller has not touched is best:
// each range's thread then maps its own pages, where zeroing the whole
// buffer first (std::string::resize) costs one thread more than a copy.
grpc::Status DownloadParallel(const std::vector<GemmClient*>& clients, const std::string& handle, uint64_t bytes,
                              char* out);

}  // namespace gemmc
