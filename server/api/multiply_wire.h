// Multiply's messages on the wire without copying the matrices. The request
// is read straight from gRPC's slices: protobuf parses every field but the
// operands' inline bytes, which stay in the slices and reach the engine as
// HostBytes pieces, so they are copied once (into pinned staging) instead
// of twice. The reply goes out as its other fields and D as a slice of D's
// own buffer, which a serialization would copy.
#pragma once

#include <absl/status/status.h>
#include <grpcpp/support/byte_buffer.h>

#include <memory>
#include <vector>

#include "api/reply_buffers.h"
#include "engine/host_bytes.h"
#include "gemm/v1/gemm.pb.h"

namespace gemmd {

struct MultiplyWireRequest {
  // The request as protobuf would parse it, except that an operand sent
  // inline has its `data` empty here: its bytes are in a_data, b_data or
  // c_data.
  gemm::v1::MultiplyRequest fields;
  HostBytes a_data, b_data, c_data;
  std::vector<grpc::Slice> slices;  // hold the bytes the *_data point into
};

// INVALID_ARGUMENT when `buffer` is not a MultiplyRequest in the protobuf
// wire format. Every field, repeated occurrences and oneof order included,
// means what it means to protobuf (tests/fuzz/multiply_wire_fuzz.cpp holds
// the parser to protobuf's own on arbitrary bytes).
absl::Status ParseMultiplyRequest(const grpc::ByteBuffer& buffer, MultiplyWireRequest* out);

// `resp` in the wire format, with D (when `d` is not null) as a slice of
// its own: the slice owns the buffer (reply_buffers.h), which goes back to
// its pool once gRPC has sent it. resp.d() is not used.
void SerializeMultiplyResponse(const gemm::v1::MultiplyResponse& resp, std::unique_ptr<ReplyBuffer> d,
                               grpc::ByteBuffer* out);

}  // namespace gemmd
