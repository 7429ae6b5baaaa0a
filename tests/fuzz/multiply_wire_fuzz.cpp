// Any bytes a client can send as a MultiplyRequest, cut into slices as gRPC
// may hand them over: the server's own wire parser (api/multiply_wire.h),
// which leaves the operands' bytes in the slices, must never crash, and on
// every input protobuf accepts it must accept too and mean the same
// request, inline bytes included. (It may accept some input protobuf
// refuses, a non-canonical varint for one: those requests are still
// validated like any other.)
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "api/multiply_wire.h"
#include "gemm/v1/gemm.pb.h"

namespace {

std::string Gather(const gemmd::HostBytes& bytes) {
  std::string out(bytes.size(), '\0');
  bytes.CopyTo(out.data(), 0, out.size());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // The first byte says where to cut the rest into slices.
  const size_t cut = 1 + data[0] % 16;
  std::vector<grpc::Slice> slices;
  for (size_t at = 1; at < size; at += cut) {
    slices.emplace_back(data + at, std::min(cut, size - at));
  }
  const grpc::ByteBuffer buffer(slices.data(), slices.size());
  gemmd::MultiplyWireRequest wire;
  const bool ours = gemmd::ParseMultiplyRequest(buffer, &wire).ok();

  gemm::v1::MultiplyRequest reference;
  if (!reference.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
  if (!ours) std::abort();  // protobuf took it, so must we
  gemm::v1::MultiplyRequest mine = wire.fields;
  // The inline bytes go back where protobuf keeps them, then the two must match.
  if (mine.a().has_data()) mine.mutable_a()->set_data(Gather(wire.a_data));
  if (mine.b().has_data()) mine.mutable_b()->set_data(Gather(wire.b_data));
  if (mine.c().has_data()) mine.mutable_c()->set_data(Gather(wire.c_data));
  if (!mine.a().has_data() && wire.a_data.size() != 0) std::abort();
  if (!mine.b().has_data() && wire.b_data.size() != 0) std::abort();
  if (!mine.c().has_data() && wire.c_data.size() != 0) std::abort();
  mine.DiscardUnknownFields();
  reference.DiscardUnknownFields();
  if (mine.SerializeAsString() != reference.SerializeAsString()) std::abort();
  return 0;
}
