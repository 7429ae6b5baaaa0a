#include "api/upload_session.h"

#include "form/request_form.h"

namespace gemmd {

absl::Status UploadSession::OnMessage(const gemm::v1::UploadMatrixRequest& msg, const HostBytes& data) {
  if (!pending_) {
    if (!msg.has_header()) return absl::InvalidArgumentError("the first UploadMatrix message must carry the header");
    const auto& h = msg.header();
    if (h.rows() < 1 || h.cols() < 1) {
      return absl::InvalidArgumentError("header.rows and header.cols must be >= 1, got " + std::to_string(h.rows()) +
                                        "x" + std::to_string(h.cols()));
    }
    auto type = ElementTypeOf(h.type(), gemm::ElementType::kF16, "header.type");
    if (!type.ok()) return type.status();
    auto pending = store_.ReserveUpload(h.rows(), h.cols(), h.label(), owner_.identity, h.transient(), *type);
    if (!pending.ok()) return pending.status();
    pending_ = std::move(*pending);
    detail_ = "shape=" + std::to_string(h.rows()) + "x" + std::to_string(h.cols()) +
              (*type != gemm::ElementType::kF16 ? std::string(" type=") + gemm::ElementName(*type) : "") +
              (h.transient() ? " transient=true" : "");
  }
  return pending_->Append(data);
}

absl::StatusOr<MatrixDescription> UploadSession::Finish() {
  if (!pending_) return absl::InvalidArgumentError("upload stream ended before its header");
  return store_.Commit(std::move(pending_));
}

}  // namespace gemmd
