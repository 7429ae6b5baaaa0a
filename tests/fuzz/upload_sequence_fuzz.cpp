// Any sequence of UploadMatrix messages (headers and chunks, in any order,
// of any size) through the upload state machine into a real store, then the
// stream's end. Whatever the sequence, the store must stay consistent: a
// committed matrix has exactly its bytes, and once it is deleted (and every
// broken upload abandoned) the quota is all free again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "api/upload_session.h"
#include "engine/matrix_store.h"
#include "gemm/v1/gemm.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gemmd::MatrixStore store(1 << 20, [](uint64_t, size_t) {}, 4);
  const gemmd::Caller caller{"fuzz", false};
  gemmd::UploadSession session(store, caller);
  // The input is a list of messages, each prefixed by a 2-byte length.
  bool broken = false;
  while (size >= 2 && !broken) {
    const size_t len = std::min<size_t>(size - 2, static_cast<size_t>(data[0]) | (static_cast<size_t>(data[1]) << 8));
    gemm::v1::UploadMatrixRequest msg;
    if (msg.ParseFromArray(data + 2, static_cast<int>(len))) broken = !session.OnMessage(msg).ok();
    data += 2 + len;
    size -= 2 + len;
  }
  if (broken) {
    session.Abandon();
  } else if (auto desc = session.Finish(); desc.ok()) {
    auto m = store.Get(desc->handle, caller);
    if (!m.ok() || (*m)->description().bytes != static_cast<uint64_t>(desc->rows) * desc->cols * 2) std::abort();
    m->reset();
    if (!store.Delete(desc->handle, caller).ok()) std::abort();
  }
  if (store.used_bytes() != 0) std::abort();  // nothing a stream does may leak quota
  return 0;
}
