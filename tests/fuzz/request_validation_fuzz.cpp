// Any bytes a client can send as a MultiplyRequest: parsed as gRPC would,
// then validated as the service does. Validation must answer every one
// (no crash, no sanitizer report), and what it lets through must be what
// the engines can take.
#include <cstddef>
#include <cstdint>
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
  if (!gemmd::ValidateMultiply(req, limits).ok()) return 0;
  const auto& s = req.shape();
  // Accepted: the dimensions are positive and within the limit, and inline
  // operands hold exactly their matrices' bytes.
  if (s.m() < 1 || s.n() < 1 || s.k() < 1 || s.m() > limits.max_dim || s.n() > limits.max_dim ||
      s.k() > limits.max_dim || req.repeats() > limits.max_repeats) {
    std::abort();
  }
  if (req.a().has_data() && req.a().data().size() != static_cast<size_t>(s.m() * s.k() * 2)) std::abort();
  if (req.b().has_data() && req.b().data().size() != static_cast<size_t>(s.n() * s.k() * 2)) std::abort();
  return 0;
}
