#include "api/kernel_listing.h"

#include <string>

#include "engine/matrix_store.h"
#include "gemm/steps.h"
#include "version.h"

namespace gemmd {

void DescribeCapabilities(int step, gemm::v1::StepCapabilities* caps) {
  const auto forms = gemm::FormsOf(step);
  if (forms.every_form) {
    for (auto t : {gemm::v1::FP16, gemm::v1::BF16, gemm::v1::FP32, gemm::v1::FP8_E4M3, gemm::v1::FP8_E5M2}) {
      caps->add_operand_types(t);
    }
    for (auto t : {gemm::v1::FP16, gemm::v1::BF16, gemm::v1::FP32}) caps->add_d_types(t);
    for (auto l : {gemm::v1::LAYOUT_K_CONTIGUOUS, gemm::v1::LAYOUT_MN_CONTIGUOUS}) {
      caps->add_a_layouts(l);
      caps->add_b_layouts(l);
    }
    caps->set_alpha_beta_c(true);
    caps->set_batches(true);
    return;
  }
  caps->add_operand_types(gemm::v1::FP16);
  caps->add_d_types(gemm::v1::FP16);
  if (forms.bf16) {  // A and B of one type (gemm::IsLadderForm)
    caps->add_operand_types(gemm::v1::BF16);
    caps->add_d_types(gemm::v1::BF16);
  }
  caps->add_a_layouts(gemm::v1::LAYOUT_K_CONTIGUOUS);
  caps->add_b_layouts(gemm::v1::LAYOUT_K_CONTIGUOUS);
  if (forms.mn_contiguous) {
    caps->add_a_layouts(gemm::v1::LAYOUT_MN_CONTIGUOUS);
    caps->add_b_layouts(gemm::v1::LAYOUT_MN_CONTIGUOUS);
  }
  caps->set_alpha_beta_c(forms.alpha_beta_c);  // C of D's type
  caps->set_batches(forms.batches);
}

void ListKernelsOf(const Engine& engine, const std::vector<DeviceDescription>& devices, const ListedLimits& limits,
                   gemm::v1::ListKernelsResponse* resp) {
  for (const gemm::StepInfo& info : gemm::AllSteps()) {
    auto* k = resp->add_kernels();
    k->set_step(info.step);
    k->set_name(std::string(info.name));
    k->set_description(std::string(info.description));
    k->set_poor_fit(std::string(info.poor_fit));
    k->mutable_limits()->set_max_m(info.max_m);
    k->mutable_limits()->set_max_n(info.max_n);
    k->mutable_limits()->set_max_k(info.max_k);
    DescribeCapabilities(info.step, k->mutable_capabilities());
    const StepAvailability any = AvailabilityOnAnyDevice(engine, info.step);
    k->set_available(any.available);
    k->set_unavailable_reason(any.reason);
  }
  for (size_t d = 0; d < devices.size(); ++d) {
    const DeviceDescription& desc = devices[d];
    auto* dev = resp->add_devices();
    dev->set_index(static_cast<uint32_t>(d));
    dev->set_id(desc.id);
    dev->set_name(desc.name);
    dev->set_kind(desc.kind);
    dev->set_arch(desc.arch);
    dev->set_memory_bytes(desc.memory_bytes);
    dev->set_healthy(engine.healthy(static_cast<int>(d)));
    for (const gemm::StepInfo& info : gemm::AllSteps()) {
      if (engine.availability(info.step, static_cast<int>(d)).available) dev->add_available_steps(info.step);
    }
  }
  resp->set_engine(engine.name());
  resp->set_server_version(kGemmdVersion);
  auto* l = resp->mutable_limits();
  l->set_max_dim(limits.request.max_dim);
  l->set_max_request_bytes(limits.request.max_request_bytes);
  l->set_max_message_bytes(limits.request.max_message_bytes);
  l->set_matrix_quota_bytes(limits.matrix_quota_bytes);
  l->set_max_repeats(limits.request.max_repeats);
  l->set_queue_capacity(limits.queue_capacity);
  l->set_max_matrices(limits.max_matrices);
  l->set_max_label_bytes(MatrixStore::kMaxLabelBytes);
  l->set_matrix_overhead_bytes(MatrixStore::kOverheadBytes);
}

}  // namespace gemmd
