#include "form_options.h"

#include "form/request_form.h"

namespace gemmc {

namespace {
const std::map<std::string, gemm::v1::ElementType> kTypes = {
    {"fp16", gemm::v1::FP16}, {"bf16", gemm::v1::BF16}, {"fp32", gemm::v1::FP32},
    {"fp8_e4m3", gemm::v1::FP8_E4M3}, {"fp8_e5m2", gemm::v1::FP8_E5M2}};
}  // namespace

gemm::v1::ElementType ToProtoType(gemm::ElementType type) { return gemmd::ToProto(type); }

const char* TypeName(gemm::v1::ElementType type) {
  for (const auto& [name, t] : kTypes) {
    if (t == type) return name.c_str();
  }
  return "fp16";
}

bool ParseElementType(const std::string& name, gemm::v1::ElementType* type) {
  const auto it = kTypes.find(name);
  if (it == kTypes.end()) return false;
  *type = it->second;
  return true;
}

void AddFormOptions(CLI::App* app, FormArgs* a, bool with_c) {
  const auto types = CLI::IsMember({"fp16", "bf16", "fp32", "fp8_e4m3", "fp8_e5m2"});
  app->add_option("--type", a->type, "element type of A and B (and of D, but fp8's D is bf16)")
      ->check(types)->capture_default_str();
  app->add_option("--b-type", a->b_type, "B's type where it differs from A's (an fp8 pair)")->check(types);
  app->add_option("--d-type", a->d_type, "D's type (default: the operands', bf16 for fp8)")->check(types);
  app->add_option("--c-type", a->c_type, "C's type: D's (default) or fp32")->check(types);
  app->add_option("--a-layout", a->a_layout, "A stored m x k (K contiguous) or k x m (M contiguous)")
      ->check(CLI::IsMember({"mxk", "kxm"}))->capture_default_str();
  app->add_option("--b-layout", a->b_layout,
                  "B stored n x k (K contiguous) or k x n (N contiguous: a weight matrix of x @ W)")
      ->check(CLI::IsMember({"nxk", "kxn"}))->capture_default_str();
  app->add_option("--alpha", a->alpha, "D = alpha·op(A)·op(B) + beta·C (default 1)");
  app->add_option("--beta", a->beta, "scale of C; not 0 needs a C (a file, a handle, or generated)")
      ->capture_default_str();
  app->add_option("--batch", a->batch, "GEMMs of this shape in one request (0: one, no batch)")->capture_default_str();
  app->add_option("--stride-a", a->stride_a, "elements between A's batch entries (default dense; 0 shares A)");
  app->add_option("--stride-b", a->stride_b, "elements between B's batch entries (default dense; 0 shares B)");
  app->add_option("--stride-c", a->stride_c, "elements between C's batch entries (default dense; 0 shares C)");
  app->add_option("--a-scale", a->a_scale, "fp8 A's per-tensor scale (default 1)");
  app->add_option("--b-scale", a->b_scale, "fp8 B's per-tensor scale (default 1)");
  app->add_flag("--tf32", a->tf32, "fp32 operands may be rounded to tf32 on the tensor cores");
  if (with_c) {
    auto* file = app->add_option("--c", a->c_file, "C from a raw little-endian file (m*n elements per batch entry)");
    app->add_option("--c-handle", a->c_handle, "C: a stored matrix")->excludes(file);
  }
}

std::string ApplyForm(const FormArgs& a, gemm::v1::MultiplyRequest* req, gemm::GemmForm* form) {
  gemm::v1::ElementType t = gemm::v1::FP16;
  if (!ParseElementType(a.type, &t)) return "unknown --type " + a.type;
  req->set_a_type(t);
  gemm::v1::ElementType b = t;
  if (!a.b_type.empty() && !ParseElementType(a.b_type, &b)) return "unknown --b-type " + a.b_type;
  req->set_b_type(b);
  if (!a.d_type.empty()) {
    gemm::v1::ElementType d;
    if (!ParseElementType(a.d_type, &d)) return "unknown --d-type " + a.d_type;
    req->set_d_type(d);
  }
  if (!a.c_type.empty()) {
    gemm::v1::ElementType c;
    if (!ParseElementType(a.c_type, &c)) return "unknown --c-type " + a.c_type;
    req->set_c_type(c);
  }
  req->set_a_layout(a.a_layout == "kxm" ? gemm::v1::LAYOUT_MN_CONTIGUOUS : gemm::v1::LAYOUT_K_CONTIGUOUS);
  req->set_b_layout(a.b_layout == "kxn" ? gemm::v1::LAYOUT_MN_CONTIGUOUS : gemm::v1::LAYOUT_K_CONTIGUOUS);
  if (a.alpha) req->set_alpha(*a.alpha);
  req->set_beta(a.beta);
  if (a.batch > 0) {
    auto* batch = req->mutable_batch();
    batch->set_count(a.batch);
    if (a.stride_a) batch->set_stride_a(*a.stride_a);
    if (a.stride_b) batch->set_stride_b(*a.stride_b);
    if (a.stride_c) batch->set_stride_c(*a.stride_c);
  } else if (a.stride_a || a.stride_b || a.stride_c) {
    return "--stride-a, --stride-b and --stride-c need --batch";
  }
  const bool fp8_a = t == gemm::v1::FP8_E4M3 || t == gemm::v1::FP8_E5M2;
  const bool fp8_b = b == gemm::v1::FP8_E4M3 || b == gemm::v1::FP8_E5M2;
  if (fp8_a) req->set_a_scale(a.a_scale.value_or(1.0));
  if (fp8_b) req->set_b_scale(a.b_scale.value_or(1.0));
  if ((a.a_scale && !fp8_a) || (a.b_scale && !fp8_b)) return "--a-scale and --b-scale apply to fp8 operands";
  req->set_allow_tf32(a.tf32);
  if (a.beta != 0 && !req->has_c()) req->mutable_c();  // its source is the caller's to set
  auto resolved = gemmd::FormOfRequest(*req);
  if (!resolved.ok()) return std::string(resolved.status().message());
  *form = *resolved;
  return "";
}

std::string GeneratedBytes(gemm::ElementType type, uint64_t count, uint64_t seed, gemm::OperandId operand) {
  std::string bytes(count * gemm::ElementBytes(type), '\0');
  const uint64_t stream = gemm::RandomStream(seed, operand);
  for (uint64_t i = 0; i < count; ++i) gemm::StoreElement(type, bytes.data(), i, gemm::RandomValueAs(type, stream, i));
  return bytes;
}

}  // namespace gemmc
