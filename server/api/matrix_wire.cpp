#include "api/matrix_wire.h"

#include <string>

#include "wire/slice_reader.h"

namespace gemmd {
namespace {

using gemm::wire::SliceReader;
constexpr uint64_t kUploadData = gemm::wire::Tag(2, gemm::wire::kLengthDelimited);  // UploadMatrixRequest.data
constexpr uint64_t kChunkData = gemm::wire::Tag(3, gemm::wire::kLengthDelimited);   // MatrixChunk.data

absl::Status Malformed() {
  return absl::InvalidArgumentError("the message is not an UploadMatrixRequest in the protobuf wire format");
}

}  // namespace

absl::Status ParseUploadMessage(const grpc::ByteBuffer& buffer, UploadWireMessage* out) {
  out->data = HostBytes();
  out->slices.clear();
  if (!buffer.Dump(&out->slices).ok()) return Malformed();
  SliceReader r(out->slices);
  std::string rest;  // every field but data, for protobuf
  while (r.remaining() > 0) {
    uint64_t tag;
    if (!r.ReadVarint(&tag) || (tag >> 3) == 0) return Malformed();
    if (tag == kUploadData) {
      uint64_t len;
      if (!r.ReadVarint(&len)) return Malformed();
      out->data = HostBytes();
      if (!r.Walk(len, [out](const char* p, size_t n) { out->data.Append(p, n); })) return Malformed();
    } else if (!gemm::wire::CopyField(r, tag, &rest)) {
      return Malformed();
    }
  }
  if (!out->fields.ParseFromString(rest)) return Malformed();
  return absl::OkStatus();
}

void SerializeMatrixChunk(const gemm::v1::MatrixInfo* info, uint64_t offset, const char* data, size_t len,
                          std::shared_ptr<const void> owner, grpc::ByteBuffer* out) {
  gemm::v1::MatrixChunk head;
  if (info != nullptr) *head.mutable_info() = *info;
  head.set_offset(offset);
  std::string bytes = head.SerializeAsString();
  if (len == 0) {  // as protobuf writes an empty bytes field: not at all
    grpc::Slice slice(bytes);
    *out = grpc::ByteBuffer(&slice, 1);
    return;
  }
  gemm::wire::AppendVarint(&bytes, kChunkData);
  gemm::wire::AppendVarint(&bytes, len);
  auto* held = new std::shared_ptr<const void>(std::move(owner));
  grpc::Slice slices[2] = {
      grpc::Slice(bytes),
      grpc::Slice(const_cast<char*>(data), len, [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); },
                  held)};
  *out = grpc::ByteBuffer(slices, 2);
}

}  // namespace gemmd
