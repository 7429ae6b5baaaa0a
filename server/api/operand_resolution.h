// A Multiply's operand, as the request names it (inline bytes, a seed, a
// stored handle or stacked row blocks), resolved to what the engine reads:
// host bytes in one block or in pieces, or a seed. Stored matrices are
// looked up for the caller, checked against the operand's type and
// storage, and kept alive for the job.
#pragma once

#include <absl/status/status.h>

#include <memory>
#include <vector>

#include "api/caller_identity.h"
#include "engine/engine.h"
#include "engine/matrix_store.h"
#include "gemm/form.h"
#include "gemm/v1/gemm.pb.h"

namespace gemmd {

struct OperandRequest {
  const char* name;                  // "a", "b" or "c", as the request's fields are named
  const char* dims;                  // "m x k" or "k x m", ... (gemm::StoredDimsOfA)
  const gemm::v1::Operand& operand;  // validated: its source is set
  gemm::OperandStorage storage;      // one batch entry's rows and columns, and the stride
  int64_t batch = 1;
  const HostBytes& inline_data;      // inline bytes as the wire parser left them in gRPC's slices
};

// Fills *view, and appends each stored matrix it reads to *keep. A refusal
// names the request's field and what the operand needed.
absl::Status ResolveOperand(const OperandRequest& request, const MatrixStore& store, const Caller& caller,
                            OperandView* view, std::vector<std::shared_ptr<const StoredMatrix>>* keep);

}  // namespace gemmd
