// UploadMatrix and DownloadMatrix: a matrix streamed in chunks into the
// store, or out of it, as raw messages (matrix_wire.h) so that its bytes
// are copied once on the way in and not at all on the way out. Each stream is watched: one that makes no progress
// for the idle limit is cancelled, so a stalled client cannot hold an
// upload's quota or a download's matrix forever.
#pragma once

#include <grpcpp/grpcpp.h>

#include "api/stream_watchdog.h"
#include "engine/matrix_store.h"
#include "gemm/v1/gemm.pb.h"
#include "metrics/metrics.h"

namespace gemmd {

void FillInfo(const MatrixDescription& d, gemm::v1::MatrixInfo* out);

// The reactor of one UploadMatrix call, storing for `owner`; it deletes
// itself when done. `resp` gets the MatrixInfo.
grpc::ServerReadReactor<grpc::ByteBuffer>* StartUpload(grpc::CallbackServerContext* ctx, MatrixStore& store,
                                                       Metrics& metrics, StreamWatchdog& watchdog, Caller owner,
                                                       grpc::ByteBuffer* resp);

// The reactor of one DownloadMatrix call (`request`, a DownloadMatrixRequest)
// of a matrix `caller` sees, in chunks of the asked size (or
// `default_chunk`) within `max_message`; it deletes itself when done.
grpc::ServerWriteReactor<grpc::ByteBuffer>* StartDownload(grpc::CallbackServerContext* ctx, MatrixStore& store,
                                                          Metrics& metrics, StreamWatchdog& watchdog,
                                                          const Caller& caller, const grpc::ByteBuffer& request,
                                                          uint64_t default_chunk, uint64_t max_message);

}  // namespace gemmd
