#include "api/matrix_wire.h"

#include <string>

#include "wire/slice_reader.h"

namespace gemmd {
namespace {

constexpr uint64_t kUploadData = 2;  // UploadMatrixRequest.data
constexpr uint64_t kChunkData = gemm::wire::Tag(3, gemm::wire::kLengthDelimited);  // MatrixChunk.data

absl::Status Malformed() {
  return absl::InvalidArgumentError("the message is not an UploadMatrixRequest in the protobuf wire format");
}

}  // namespace

absl::Status ParseUploadMessage(const grpc::ByteBuffer& buffer, UploadWireMessage* out) {
  out->data = HostBytes();
  out->slices.clear();
  gemm::wire::BytesField data;
  std::string rest;  // every field but data, for protobuf
  if (!buffer.Dump(&out->slices).ok() || !gemm::wire::SplitBytesField(out->slices, kUploadData, &data, &rest) ||
      !out->fields.ParseFromString(rest)) {
    return Malformed();
  }
  for (const auto& [p, n] : data.pieces) out->data.Append(p, n);
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
