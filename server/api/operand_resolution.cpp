#include "api/operand_resolution.h"

#include <string>

#include "engine/device_matrix_cache.h"

namespace gemmd {
namespace {

// "b = k x n = 4096x1024 bf16 over a batch of 8 (...)": what a stored
// operand was expected to be. Worded only for a refusal: formatting costs
// a small request time.
std::string ShapeText(const OperandRequest& r) {
  const gemm::OperandStorage& s = r.storage;
  const uint64_t elements = s.Footprint(r.batch);
  return std::string(r.dims) + " = " + std::to_string(s.rows) + "x" + std::to_string(s.cols) +
         " " + gemm::ElementName(s.type) +
         (r.batch > 1 && s.stride != 0
              ? " over a batch of " + std::to_string(r.batch) + " (" + std::to_string(elements) + " elements)"
              : std::string());
}

}  // namespace

absl::Status ResolveOperand(const OperandRequest& r, const MatrixStore& store, const Caller& caller,
                            OperandView* view, std::vector<std::shared_ptr<const StoredMatrix>>* keep) {
  const gemm::v1::Operand& op = r.operand;
  switch (op.source_case()) {
    case gemm::v1::Operand::kData:
      view->kind = OperandView::Kind::kHost;
      view->host = r.inline_data;
      return absl::OkStatus();
    case gemm::v1::Operand::kRandom:
      view->kind = OperandView::Kind::kRandom;
      view->seed = op.random().seed();
      return absl::OkStatus();
    case gemm::v1::Operand::kHandle:
    case gemm::v1::Operand::kRowBlocks:
      break;
    case gemm::v1::Operand::SOURCE_NOT_SET:
      return absl::OkStatus();  // refused by ValidateMultiply
  }
  // One handle is one block. Several are stacked: the job reads them as
  // one operand in pieces, with no copy to join them.
  const bool one = op.source_case() == gemm::v1::Operand::kHandle;
  const int blocks = one ? 1 : op.row_blocks().handles_size();
  const int64_t cols = r.storage.cols;
  const uint64_t elements = r.storage.Footprint(r.batch);
  const int64_t want_rows = r.storage.StoredRows(r.batch);
  if (want_rows == 0) {
    return absl::InvalidArgumentError(std::string(r.name) + " spans " + std::to_string(elements) + " elements (" +
                                      ShapeText(r) + "), not a whole number of its " + std::to_string(cols) +
                                      "-element rows: a stored operand needs batch strides that are whole rows");
  }
  int64_t rows = 0;
  HostBytes pieces;
  for (int i = 0; i < blocks; ++i) {
    const std::string& handle = one ? op.handle() : op.row_blocks().handles(i);
    const auto field = [&] {
      return std::string(r.name) + (one ? ".handle" : ".row_blocks.handles[" + std::to_string(i) + "]");
    };
    auto stored = store.Get(handle, caller);
    if (!stored.ok()) {  // the store's own code: NOT_FOUND, DATA_LOSS, INVALID_ARGUMENT
      return absl::Status(stored.status().code(), field() + ": " + std::string(stored.status().message()));
    }
    const auto& desc = (*stored)->description();
    if (desc.type != r.storage.type) {
      return absl::InvalidArgumentError(field() + " " + desc.handle + " holds " + gemm::ElementName(desc.type) +
                                        ", but " + r.name + " is " + gemm::ElementName(r.storage.type) +
                                        " (the request's " + r.name + "_type)");
    }
    const bool fits =
        one ? desc.rows == want_rows && desc.cols == cols : desc.cols == cols && desc.rows <= want_rows - rows;
    if (!fits) {
      return absl::InvalidArgumentError(field() + " " + desc.handle + " is " + std::to_string(desc.rows) + "x" +
                                        std::to_string(desc.cols) + ", but " + ShapeText(r) + " needs " +
                                        std::to_string(want_rows) + "x" + std::to_string(cols) +
                                        (one ? "" : ", and the blocks before it have " + std::to_string(rows) +
                                                        " rows"));
    }
    rows += desc.rows;
    pieces.Append((*stored)->data(), desc.bytes);
    keep->push_back(*stored);
  }
  if (rows != want_rows) {
    return absl::InvalidArgumentError(std::string(r.name) + ".row_blocks have " + std::to_string(rows) +
                                      " rows in all, but " + ShapeText(r) + " needs " + std::to_string(want_rows));
  }
  view->kind = OperandView::Kind::kHost;
  view->cache_key = one ? op.handle() : CacheKey({op.row_blocks().handles().begin(), op.row_blocks().handles().end()});
  // One block stays one block: the engine copies a block without walking pieces.
  view->host = blocks == 1 ? HostBytes(keep->back()->data(), elements * gemm::ElementBytes(r.storage.type))
                           : std::move(pieces);
  return absl::OkStatus();
}

}  // namespace gemmd
