// Any bytes a client can send as a MultiplyRequest: parsed as gRPC would,
// then validated as the service does. Validation must answer every one
// (no crash, no sanitizer report), and what it lets through must be what
// the engines can take.
#include <cstddef>
#include <cstdint>
#include <cmath>
#include <cstdlib>

#include "api/request_validation.h"
#include "gemm/v1/gemm.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gemm::v1::MultiplyRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  gemmd::RequestLimits limits;
  limits.max_dim = 4096;
  limits.max_request_bytes = 64 << 20;
  limits.max_message_bytes = 8 << 20;
  limits.max_repeats = 100;
  gemm::GemmForm form;
  if (!gemmd::ValidateMultiply(req, limits, nullptr, &form).ok()) return 0;
  const auto& s = req.shape();
  // Accepted: the dimensions are positive and within the limit, and inline
  // operands hold exactly their matrices' bytes.
  if (s.m() < 1 || s.n() < 1 || s.k() < 1 || s.m() > limits.max_dim || s.n() > limits.max_dim ||
      s.k() > limits.max_dim || req.repeats() > limits.max_repeats) {
    std::abort();
  }
  // The form is one the engines take: its types combine, its batch is
  // at least one, its strides share or keep entries apart, and each inline
  // operand holds exactly what the batch spans in its type.
  if (!gemm::CombinationError(form).empty() || form.batch < 1 || !std::isfinite(form.alpha) ||
      !std::isfinite(form.beta) || (form.beta != 0 && !form.has_c)) {
    std::abort();
  }
  const gemm::OperandStorage storages[3] = {gemm::StorageOfA(form, s.m(), s.k()), gemm::StorageOfB(form, s.n(), s.k()),
                                            gemm::StorageOfC(form, s.m(), s.n())};
  const gemm::v1::Operand* operands[3] = {&req.a(), &req.b(), &req.c()};
  for (int i = 0; i < 3; ++i) {
    const gemm::OperandStorage& st = storages[i];
    if (st.stride < 0 || (st.stride != 0 && static_cast<uint64_t>(st.stride) < st.EntryElements())) std::abort();
    if (i == 2 && !form.has_c) continue;
    if (operands[i]->has_data() &&
        operands[i]->data().size() != st.Footprint(form.batch) * gemm::ElementBytes(st.type)) {
      std::abort();
    }
  }
  return 0;
}
