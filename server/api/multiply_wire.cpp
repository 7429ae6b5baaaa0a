#include "api/multiply_wire.h"

#include <string>

#include "wire/slice_reader.h"

namespace gemmd {
namespace {

using gemm::wire::AppendVarint;
using gemm::wire::CopyField;
using gemm::wire::SliceReader;
constexpr int kWireLengthDelimited = gemm::wire::kLengthDelimited;
constexpr uint64_t kFieldA = 2, kFieldB = 3, kFieldC = 18;  // MultiplyRequest.a, .b, .c
constexpr uint64_t kFieldData = 1;                 // Operand.data
constexpr uint64_t kFieldHandle = 2, kFieldRandom = 3, kFieldRowBlocks = 4;  // Operand's other oneof members

// One operand across all its occurrences, merged as protobuf merges them:
// the oneof member set last wins, and a data field drops what an earlier
// handle or random set.
struct OperandParts {
  bool seen = false;
  bool data_last = false;  // the oneof's last member was data
  HostBytes data;
  std::string oneof_fields;  // handle, random and row_blocks occurrences since the last data
  std::string other_fields;  // fields this server does not know
};

bool ReadOperand(SliceReader& r, OperandParts* op) {
  uint64_t len;
  if (!r.ReadVarint(&len) || len > r.remaining()) return false;
  op->seen = true;
  const uint64_t end = r.remaining() - len;  // remaining() once the operand is read
  while (r.remaining() > end) {
    uint64_t tag;
    if (!r.ReadVarint(&tag) || (tag >> 3) == 0) return false;
    const uint64_t field = tag >> 3;
    if (field == kFieldData && (tag & 7) == kWireLengthDelimited) {
      uint64_t n;
      if (!r.ReadVarint(&n) || n > r.remaining() - end) return false;
      op->data = HostBytes();
      if (!r.Walk(n, [op](const char* p, size_t len) { op->data.Append(p, len); })) return false;
      op->data_last = true;
      op->oneof_fields.clear();
    } else if ((field == kFieldHandle || field == kFieldRandom || field == kFieldRowBlocks) &&
               (tag & 7) == kWireLengthDelimited) {
      if (!CopyField(r, tag, &op->oneof_fields)) return false;
      op->data_last = false;
    } else {
      if (!CopyField(r, tag, &op->other_fields)) return false;
    }
    if (r.remaining() < end) return false;  // a field ran past the operand's end
  }
  return true;
}

absl::Status Malformed() {
  return absl::InvalidArgumentError("the request is not a MultiplyRequest in the protobuf wire format");
}

}  // namespace

absl::Status ParseMultiplyRequest(const grpc::ByteBuffer& buffer, MultiplyWireRequest* out) {
  if (!buffer.Dump(&out->slices).ok()) return Malformed();
  SliceReader r(out->slices);
  std::string rest;
  OperandParts a, b, c;
  while (r.remaining() > 0) {
    uint64_t tag;
    if (!r.ReadVarint(&tag) || (tag >> 3) == 0) return Malformed();
    const uint64_t field = tag >> 3;
    if ((field == kFieldA || field == kFieldB || field == kFieldC) && (tag & 7) == kWireLengthDelimited) {
      if (!ReadOperand(r, field == kFieldA ? &a : field == kFieldB ? &b : &c)) return Malformed();
    } else if (!CopyField(r, tag, &rest)) {
      return Malformed();
    }
  }
  if (!out->fields.ParseFromString(rest)) return Malformed();
  for (auto [parts, operand, data] : {std::tuple{&a, out->fields.mutable_a(), &out->a_data},
                                      std::tuple{&b, out->fields.mutable_b(), &out->b_data},
                                      std::tuple{&c, out->fields.mutable_c(), &out->c_data}}) {
    if (!parts->seen) continue;
    if (!operand->ParseFromString(parts->other_fields + parts->oneof_fields)) return Malformed();
    if (parts->data_last) {
      operand->set_data("");
      *data = std::move(parts->data);
    }
  }
  if (!a.seen) out->fields.clear_a();
  if (!b.seen) out->fields.clear_b();
  if (!c.seen) out->fields.clear_c();
  return absl::OkStatus();
}

void SerializeMultiplyResponse(const gemm::v1::MultiplyResponse& resp, std::unique_ptr<ReplyBuffer> d,
                               grpc::ByteBuffer* out) {
  std::string head = resp.SerializeAsString();
  if (d == nullptr || d->size() == 0) {
    grpc::Slice slice(head);
    *out = grpc::ByteBuffer(&slice, 1);
    return;
  }
  // Then field 3 (MultiplyResponse.d): its bytes are the buffer's own, never
  // copied into the message.
  const size_t size = d->size();
  AppendVarint(&head, (3 << 3) | kWireLengthDelimited);
  AppendVarint(&head, size);
  ReplyBuffer* owned = d.release();
  grpc::Slice slices[2] = {
      grpc::Slice(head),
      grpc::Slice(owned->data(), size, [](void* b) { delete static_cast<ReplyBuffer*>(b); }, owned)};
  *out = grpc::ByteBuffer(slices, 2);
}

}  // namespace gemmd
