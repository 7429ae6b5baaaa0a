// Any sequence of UploadMatrix messages (headers and chunks, in any order,
// of any size, in any bytes at all) through the server's wire parser
// (api/matrix_wire.h) and the upload state machine into a real store, then
// the stream's end. The parser must mean what protobuf means on every
// message protobuf accepts (it may accept some protobuf refuses: those go
// on through the state machine like any other). Whatever the sequence, the
// store must stay consistent: a committed matrix has exactly its bytes, and
// once it is deleted (and every broken upload abandoned) the quota is all
// free again. A header may name any element type: a matrix's bytes are its
// rows, columns and that type's size.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/matrix_wire.h"
#include "api/upload_session.h"
#include "engine/matrix_store.h"
#include "gemm/element_type.h"
#include "gemm/v1/gemm.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gemmd::MatrixStore store(1 << 20, [](uint64_t, size_t) {}, 4);
  const gemmd::Caller caller{"fuzz", false};
  gemmd::UploadSession session(store, caller);
  // The input is a list of messages, each prefixed by a 2-byte length.
  bool broken = false;
  while (size >= 2 && !broken) {
    const size_t len = std::min<size_t>(size - 2, static_cast<size_t>(data[0]) | (static_cast<size_t>(data[1]) << 8));
    // Cut into slices as gRPC may hand them over: the length's low byte says where.
    const size_t cut = 1 + data[0] % 16;
    std::vector<grpc::Slice> slices;
    for (size_t at = 0; at < len; at += cut) slices.emplace_back(data + 2 + at, std::min(cut, len - at));
    gemmd::UploadWireMessage wire;
    const bool ours = gemmd::ParseUploadMessage(grpc::ByteBuffer(slices.data(), slices.size()), &wire).ok();
    gemm::v1::UploadMatrixRequest reference;
    if (reference.ParseFromArray(data + 2, static_cast<int>(len))) {
      if (!ours) std::abort();  // protobuf took it, so must we
      gemm::v1::UploadMatrixRequest mine = wire.fields;
      std::string bytes(wire.data.size(), '\0');
      wire.data.CopyTo(bytes.data(), 0, bytes.size());
      mine.set_data(bytes);
      mine.DiscardUnknownFields();
      reference.DiscardUnknownFields();
      if (mine.SerializeAsString() != reference.SerializeAsString()) std::abort();
    }
    if (ours) broken = !session.OnMessage(wire.fields, wire.data).ok();
    data += 2 + len;
    size -= 2 + len;
  }
  if (broken) {
    session.Abandon();
  } else if (auto desc = session.Finish(); desc.ok()) {
    auto m = store.Get(desc->handle, caller);
    const uint64_t bytes = static_cast<uint64_t>(desc->rows) * desc->cols * gemm::ElementBytes(desc->type);
    if (!m.ok() || (*m)->description().type != desc->type || (*m)->description().bytes != bytes) std::abort();
    m->reset();
    if (!store.Delete(desc->handle, caller).ok()) std::abort();
  }
  if (store.used_bytes() != 0) std::abort();  // nothing a stream does may leak quota
  return 0;
}
