// UploadMatrix's and DownloadMatrix's messages on the wire without copying
// the matrix bytes (as multiply_wire.h does for Multiply). An upload chunk's
// data is read where it lies in gRPC's slices and copied once, into the
// stored matrix; a download chunk's data goes out as a slice of the stored
// matrix itself, which a protobuf message would copy twice (into its field,
// then into the serialized bytes).
#pragma once

#include <absl/status/status.h>
#include <grpcpp/support/byte_buffer.h>

#include <memory>
#include <vector>

#include "engine/host_bytes.h"
#include "gemm/v1/gemm.pb.h"

namespace gemmd {

struct UploadWireMessage {
  // The message as protobuf would parse it, except that `data` is empty
  // here: its bytes are in `data`, pointing into `slices`.
  gemm::v1::UploadMatrixRequest fields;
  HostBytes data;
  std::vector<grpc::Slice> slices;
};

// INVALID_ARGUMENT when `buffer` is not an UploadMatrixRequest in the
// protobuf wire format. Repeated fields mean what they mean to protobuf: the
// last data wins, headers merge.
absl::Status ParseUploadMessage(const grpc::ByteBuffer& buffer, UploadWireMessage* out);

// A MatrixChunk: `info` when not null, `offset`, and `len` bytes at `data`,
// which go out as a slice of their own that keeps `owner` alive until gRPC
// has sent them.
void SerializeMatrixChunk(const gemm::v1::MatrixInfo* info, uint64_t offset, const char* data, size_t len,
                          std::shared_ptr<const void> owner, grpc::ByteBuffer* out);

}  // namespace gemmd
