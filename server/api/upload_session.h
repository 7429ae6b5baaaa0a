// The state of one UploadMatrix stream, apart from gRPC: the first message
// must carry the header (its shape reserves the quota), every message may
// carry data, and the end of the stream commits a matrix whose every byte
// arrived. Any other sequence ends with a status that says what was wrong,
// and the reservation goes back. The reactor (matrix_streams.cpp) feeds it;
// so does the fuzzer (tests/fuzz/upload_sequence_fuzz.cpp).
#pragma once

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <memory>
#include <string>

#include "engine/host_bytes.h"
#include "engine/matrix_store.h"
#include "gemm/v1/gemm.pb.h"

namespace gemmd {

class UploadSession {
 public:
  UploadSession(MatrixStore& store, Caller owner) : store_(store), owner_(std::move(owner)) {}

  // One message of the stream, its data apart (matrix_wire.h); not OK ends
  // the upload.
  absl::Status OnMessage(const gemm::v1::UploadMatrixRequest& fields, const HostBytes& data);
  // The client closed its side: the matrix, committed, or why not.
  absl::StatusOr<MatrixDescription> Finish();
  // Gives the reservation back now (a broken or cancelled upload).
  void Abandon() { pending_.reset(); }

  // "shape=RxC" once the header arrived, for the log.
  const std::string& detail() const { return detail_; }

 private:
  MatrixStore& store_;
  Caller owner_;
  std::unique_ptr<PendingMatrix> pending_;
  std::string detail_;
};

}  // namespace gemmd
