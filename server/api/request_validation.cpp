#include "api/request_validation.h"

#include <string>

#include "form/request_form.h"
#include "engine/permanent_refusal.h"
#include "gemm/steps.h"

namespace gemmd {
namespace {

using gemm::v1::MultiplyRequest;
using gemm::v1::Operand;

std::string Dims(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

// `want` is the operand's size in bytes, `what` says how it comes about.
absl::Status CheckOperand(const char* name, const Operand& op, uint64_t want, const std::string& what,
                          const uint64_t* inline_bytes) {
  switch (op.source_case()) {
    case Operand::SOURCE_NOT_SET:
      return absl::InvalidArgumentError(std::string(name) +
                                        ": no input given; set data, handle, row_blocks or random");
    case Operand::kData: {
      const uint64_t have = inline_bytes != nullptr ? *inline_bytes : op.data().size();
      if (have != want) {
        return absl::InvalidArgumentError(std::string(name) + ".data has " + std::to_string(have) + " bytes, but " +
                                          what + " needs " + std::to_string(want));
      }
      return absl::OkStatus();
    }
    case Operand::kHandle:
      if (op.handle().empty()) {
        return absl::InvalidArgumentError(std::string(name) + ".handle is empty");
      }
      return absl::OkStatus();
    case Operand::kRowBlocks: {
      const auto& handles = op.row_blocks().handles();
      if (handles.empty()) return absl::InvalidArgumentError(std::string(name) + ".row_blocks lists no handles");
      if (handles.size() > kMaxRowBlocks) {
        return absl::InvalidArgumentError(std::string(name) + ".row_blocks lists " + std::to_string(handles.size()) +
                                          " handles; at most " + std::to_string(kMaxRowBlocks));
      }
      for (int i = 0; i < handles.size(); ++i) {
        if (handles[i].empty()) {
          return absl::InvalidArgumentError(std::string(name) + ".row_blocks.handles[" + std::to_string(i) +
                                            "] is empty");
        }
      }
      return absl::OkStatus();
    }
    case Operand::kRandom:
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError(std::string(name) + ": unknown input kind");
}

}  // namespace

bool MatrixBytes(int64_t rows, int64_t cols, uint64_t* bytes, gemm::ElementType type) {
  return !__builtin_mul_overflow(static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), bytes) &&
         !__builtin_mul_overflow(*bytes, uint64_t{gemm::ElementBytes(type)}, bytes);
}

absl::Status ValidateMultiply(const MultiplyRequest& req, const RequestLimits& limits,
                              const std::array<uint64_t, 3>* inline_bytes, gemm::GemmForm* form_out) {
  if (!req.has_shape()) return absl::InvalidArgumentError("shape is missing: set m, n and k");
  const auto& s = req.shape();
  for (auto [dim, value] : {std::pair{"m", s.m()}, {"n", s.n()}, {"k", s.k()}}) {
    if (value < 1) {
      return absl::InvalidArgumentError(std::string("shape.") + dim + " must be >= 1, got " +
                                        std::to_string(value));
    }
    if (value > limits.max_dim) {
      return Permanent(absl::ResourceExhaustedError(std::string("shape.") + dim + " = " + std::to_string(value) +
                                                    " is above this server's largest dimension, " +
                                                    std::to_string(limits.max_dim)));
    }
  }
  if (gemm::FindStep(req.step()) == nullptr) {
    return absl::InvalidArgumentError("unknown step " + std::to_string(req.step()) + ": steps are " +
                                      std::to_string(gemm::kVendorStep) + " (vendor library) to " +
                                      std::to_string(gemm::kLastStep) + "; ListKernels lists them");
  }
  if (!gemm::v1::Verification_IsValid(req.verification())) {
    return absl::InvalidArgumentError("unknown verification mode " + std::to_string(req.verification()));
  }
  if (!gemm::v1::OutputMode_IsValid(req.output())) {
    return absl::InvalidArgumentError("unknown output mode " + std::to_string(req.output()));
  }
  if (req.transient_output() && req.output() != gemm::v1::OUTPUT_HANDLE) {
    return absl::InvalidArgumentError("transient_output applies to a D stored by handle (OUTPUT_HANDLE), and this "
                                      "request asks for output " + gemm::v1::OutputMode_Name(req.output()));
  }
  if (req.repeats() > limits.max_repeats) {
    return absl::InvalidArgumentError("repeats = " + std::to_string(req.repeats()) +
                                      " is above this server's limit of " +
                                      std::to_string(limits.max_repeats));
  }

  auto form = FormOfRequest(req);
  if (!form.ok()) return form.status();
  const gemm::GemmForm& f = *form;

  // Each operand's bytes over the whole batch; D is dense.
  struct Sized {
    const char* name;
    const Operand* op;
    gemm::OperandStorage storage;
    const char* dims;
    uint64_t bytes = 0;
  };
  Sized sides[3] = {{"a", &req.a(), gemm::StorageOfA(f, s.m(), s.k()), gemm::StoredDimsOfA(f)},
                    {"b", &req.b(), gemm::StorageOfB(f, s.n(), s.k()), gemm::StoredDimsOfB(f)},
                    {"c", &req.c(), gemm::StorageOfC(f, s.m(), s.n()), gemm::StoredDimsOfC()}};
  const auto overflow = [&s] {
    return Permanent(absl::ResourceExhaustedError("shape " + std::to_string(s.m()) + "x" + std::to_string(s.n()) +
                                                  "x" + std::to_string(s.k()) + " overflows 64-bit byte counts"));
  };
  uint64_t total = 0, d = 0;
  for (Sized& side : sides) {
    if (side.name[0] == 'c' && !f.has_c) continue;
    const uint64_t elements = side.storage.Footprint(f.batch);
    if (elements == 0 || __builtin_mul_overflow(elements, uint64_t{gemm::ElementBytes(side.storage.type)}, &side.bytes) ||
        __builtin_add_overflow(total, side.bytes, &total)) {
      return overflow();
    }
  }
  if (!MatrixBytes(s.m(), s.n(), &d, f.d) || __builtin_mul_overflow(d, static_cast<uint64_t>(f.batch), &d) ||
      __builtin_add_overflow(total, d, &total)) {
    return overflow();
  }
  if (total > limits.max_request_bytes) {
    return Permanent(absl::ResourceExhaustedError(
        "shape " + std::to_string(s.m()) + "x" + std::to_string(s.n()) + "x" + std::to_string(s.k()) +
        (f.batch > 1 ? " times a batch of " + std::to_string(f.batch) : std::string()) + " needs " +
        std::to_string(total) + " bytes for A, B" + (f.has_c ? ", C" : "") +
        " and D, above this server's limit of " + std::to_string(limits.max_request_bytes)));
  }
  // Room for the rest of the reply (report, field tags) beside D.
  constexpr uint64_t kReplyOverhead = 64 * 1024;
  if (req.output() == gemm::v1::OUTPUT_INLINE && d + kReplyOverhead > limits.max_message_bytes) {
    return Permanent(absl::ResourceExhaustedError(
        "D is " + std::to_string(d) + " bytes, too large to return inline under the max message size of " +
        std::to_string(limits.max_message_bytes) + " bytes; ask for OUTPUT_HANDLE and DownloadMatrix"));
  }

  for (int i = 0; i < 3; ++i) {
    const Sized& side = sides[i];
    if (i == 2 && !f.has_c) break;
    const std::string what =
        "a " + std::string(side.dims) + " = " + Dims(side.storage.rows, side.storage.cols) + " " +
        gemm::ElementName(side.storage.type) + " matrix" +
        (f.batch > 1 ? (side.storage.stride == 0 ? " (shared by the batch)"
                                                 : " times a batch of " + std::to_string(f.batch) + " entries " +
                                                       std::to_string(side.storage.stride) + " elements apart")
                     : std::string());
    if (auto st = CheckOperand(side.name, *side.op, side.bytes, what, inline_bytes ? &(*inline_bytes)[i] : nullptr);
        !st.ok()) {
      return st;
    }
  }
  if (form_out != nullptr) *form_out = f;
  return absl::OkStatus();
}

}  // namespace gemmd
