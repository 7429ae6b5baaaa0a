#include "form/request_form.h"

#include <cmath>
#include <string>

namespace gemmd {
namespace {

using gemm::ElementType;
using gemm::Layout;

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

absl::StatusOr<Layout> LayoutOf(gemm::v1::Layout layout, const char* field) {
  switch (layout) {
    case gemm::v1::LAYOUT_K_CONTIGUOUS: return Layout::kKContiguous;
    case gemm::v1::LAYOUT_MN_CONTIGUOUS: return Layout::kMnContiguous;
    default: return Invalid(std::string("unknown ") + field + " " + std::to_string(static_cast<int>(layout)));
  }
}

// One operand's stride: dense when unset, 0 to share, else at least one
// entry (`entry` elements) so that entries do not overlap.
absl::StatusOr<int64_t> StrideOf(bool has, int64_t stride, uint64_t entry, const char* field) {
  if (!has) return static_cast<int64_t>(entry);
  if (stride < 0) return Invalid(std::string("batch.") + field + " = " + std::to_string(stride) + " is negative");
  if (stride != 0 && static_cast<uint64_t>(stride) < entry) {
    return Invalid(std::string("batch.") + field + " = " + std::to_string(stride) +
                   " makes batch entries overlap: one entry is " + std::to_string(entry) +
                   " elements; use at least that, or 0 to share one matrix");
  }
  return stride;
}

absl::Status CheckScale(bool fp8, bool has, double scale, const char* field, const char* operand) {
  if (fp8 && !has) {
    return Invalid(std::string(field) + " is required: fp8 operand " + operand +
                   " needs its per-tensor scale (1.0 when its values are meant as stored)");
  }
  if (!fp8 && has) return Invalid(std::string(field) + " applies to fp8 operands only, and " + operand + " is not fp8");
  if (has && (!std::isfinite(scale) || scale == 0)) {
    return Invalid(std::string(field) + " = " + std::to_string(scale) + " must be finite and not 0");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ElementType> ElementTypeOf(gemm::v1::ElementType type, ElementType unset, const char* field) {
  switch (type) {
    case gemm::v1::ELEMENT_TYPE_UNSPECIFIED: return unset;
    case gemm::v1::FP16: return ElementType::kF16;
    case gemm::v1::BF16: return ElementType::kBF16;
    case gemm::v1::FP32: return ElementType::kF32;
    case gemm::v1::FP8_E4M3: return ElementType::kF8E4M3;
    case gemm::v1::FP8_E5M2: return ElementType::kF8E5M2;
    default: return Invalid(std::string("unknown ") + field + " " + std::to_string(static_cast<int>(type)));
  }
}

gemm::v1::ElementType ToProto(ElementType type) {
  switch (type) {
    case ElementType::kF16: return gemm::v1::FP16;
    case ElementType::kBF16: return gemm::v1::BF16;
    case ElementType::kF32: return gemm::v1::FP32;
    case ElementType::kF8E4M3: return gemm::v1::FP8_E4M3;
    case ElementType::kF8E5M2: return gemm::v1::FP8_E5M2;
  }
  return gemm::v1::ELEMENT_TYPE_UNSPECIFIED;
}

gemm::v1::Layout ToProto(Layout layout) {
  return layout == Layout::kKContiguous ? gemm::v1::LAYOUT_K_CONTIGUOUS : gemm::v1::LAYOUT_MN_CONTIGUOUS;
}

absl::StatusOr<gemm::GemmForm> FormOfRequest(const gemm::v1::MultiplyRequest& req) {
  gemm::GemmForm f;
  auto a = ElementTypeOf(req.a_type(), ElementType::kF16, "a_type");
  if (!a.ok()) return a.status();
  auto b = ElementTypeOf(req.b_type(), ElementType::kF16, "b_type");
  if (!b.ok()) return b.status();
  f.a = *a;
  f.b = *b;
  const ElementType d_default = gemm::IsFp8(f.a) ? ElementType::kBF16 : f.a;
  auto d = ElementTypeOf(req.d_type(), d_default, "d_type");
  if (!d.ok()) return d.status();
  f.d = *d;
  auto c = ElementTypeOf(req.c_type(), f.d, "c_type");
  if (!c.ok()) return c.status();
  f.c = *c;
  auto a_layout = LayoutOf(req.a_layout(), "a_layout");
  if (!a_layout.ok()) return a_layout.status();
  auto b_layout = LayoutOf(req.b_layout(), "b_layout");
  if (!b_layout.ok()) return b_layout.status();
  f.a_layout = *a_layout;
  f.b_layout = *b_layout;
  f.allow_tf32 = req.allow_tf32();
  f.has_c = req.has_c();
  if (auto why = gemm::CombinationError(f); !why.empty()) return Invalid(why);

  f.alpha = req.has_alpha() ? req.alpha() : 1.0;
  f.beta = req.beta();
  if (!std::isfinite(f.alpha)) return Invalid("alpha = " + std::to_string(f.alpha) + " is not finite");
  if (!std::isfinite(f.beta)) return Invalid("beta = " + std::to_string(f.beta) + " is not finite");
  if (f.beta != 0 && !f.has_c) {
    return Invalid("beta = " + std::to_string(f.beta) + " needs an operand c (m x n) to scale; set c, or beta 0");
  }
  if (req.c_type() != gemm::v1::ELEMENT_TYPE_UNSPECIFIED && !f.has_c) {
    return Invalid("c_type is set, but there is no c");
  }
  if (auto st = CheckScale(gemm::IsFp8(f.a), req.has_a_scale(), req.a_scale(), "a_scale", "a"); !st.ok()) return st;
  if (auto st = CheckScale(gemm::IsFp8(f.b), req.has_b_scale(), req.b_scale(), "b_scale", "b"); !st.ok()) return st;
  if (req.has_a_scale()) f.a_scale = req.a_scale();
  if (req.has_b_scale()) f.b_scale = req.b_scale();
  // The engines scale the product in fp32.
  if (!std::isfinite(static_cast<float>(f.ProductScale())) || !std::isfinite(static_cast<float>(f.beta))) {
    return Invalid("alpha·a_scale·b_scale = " + std::to_string(f.ProductScale()) + " and beta = " +
                   std::to_string(f.beta) + " must each fit fp32, in which they scale the sums");
  }

  const auto& s = req.shape();
  const auto& batch = req.batch();
  if (req.has_batch() && batch.count() == 0) {
    return Invalid("batch.count is 0; a batch holds at least one GEMM (leave batch unset for one)");
  }
  if (batch.count() > kMaxBatch) {
    return Invalid("batch.count = " + std::to_string(batch.count()) + " is above " + std::to_string(kMaxBatch) +
                   ", the most one request takes; send several requests");
  }
  f.batch = req.has_batch() ? batch.count() : 1;
  if (!req.has_batch() && (batch.has_stride_a() || batch.has_stride_b() || batch.has_stride_c())) {
    return Invalid("batch strides need batch.count");
  }
  const uint64_t a_entry = static_cast<uint64_t>(s.m()) * static_cast<uint64_t>(s.k());
  const uint64_t b_entry = static_cast<uint64_t>(s.n()) * static_cast<uint64_t>(s.k());
  const uint64_t c_entry = static_cast<uint64_t>(s.m()) * static_cast<uint64_t>(s.n());
  auto sa = StrideOf(batch.has_stride_a(), batch.stride_a(), a_entry, "stride_a");
  if (!sa.ok()) return sa.status();
  auto sb = StrideOf(batch.has_stride_b(), batch.stride_b(), b_entry, "stride_b");
  if (!sb.ok()) return sb.status();
  auto sc = StrideOf(batch.has_stride_c(), batch.stride_c(), c_entry, "stride_c");
  if (!sc.ok()) return sc.status();
  if (batch.has_stride_c() && !f.has_c) return Invalid("batch.stride_c is set, but there is no c");
  f.stride_a = *sa;
  f.stride_b = *sb;
  f.stride_c = *sc;
  return f;
}

}  // namespace gemmd
