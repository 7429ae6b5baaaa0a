// Checks a MultiplyRequest before any work is queued: every refusal here
// carries the gRPC code a client can act on and a sentence a person can read.
#pragma once

#include <array>

#include <absl/status/status.h>

#include <cstdint>

#include "gemm/form.h"
#include "gemm/v1/gemm.pb.h"

namespace gemmd {

struct RequestLimits {
  int64_t max_dim = 65536;
  uint64_t max_request_bytes = 4ull << 30;
  uint64_t max_message_bytes = 64ull << 20;
  uint32_t max_repeats = 100;
};

// The most row blocks one operand may name (Operand.row_blocks).
inline constexpr int kMaxRowBlocks = 64;

// Shape, step number, enum values, repeat count, the GEMM's form
// (request_form.h), operand sizes, and the byte limits. Does not look at
// handles (the store does) or at whether this server offers the step (the
// engine does). The resolved form goes to *form when given.
// `inline_bytes`, when given, are the sizes of A's, B's and C's inline data
// where the request itself does not hold them (the zero-copy path:
// multiply_wire.h).
absl::Status ValidateMultiply(const gemm::v1::MultiplyRequest& req, const RequestLimits& limits,
                              const std::array<uint64_t, 3>* inline_bytes = nullptr, gemm::GemmForm* form = nullptr);

// Bytes of a rows×cols matrix of `type` (fp16 unless said); false on overflow.
bool MatrixBytes(int64_t rows, int64_t cols, uint64_t* bytes, gemm::ElementType type = gemm::ElementType::kF16);

}  // namespace gemmd
