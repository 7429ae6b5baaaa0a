#include "api/multiply_report.h"

#include <algorithm>

namespace gemmd {

void ReportVerification(const VerificationResult& v, gemm::v1::VerificationReport* report) {
  report->set_performed(v.performed);
  report->set_passed(v.passed);
  report->set_max_abs_error(v.max_abs_error);
  report->set_mismatches(v.mismatches);
  report->set_non_finite(v.non_finite);
  report->set_elements(v.elements);
  report->set_rtol(v.rtol);
  report->set_atol(v.atol);
  report->set_accumulation_atol(v.accumulation_atol);
  report->set_reference(v.reference);
  report->set_tolerance_source(v.tolerance_source);
  if (v.performed) report->set_mode(v.fast ? gemm::v1::VERIFICATION_FAST : gemm::v1::VERIFICATION_FULL);
  if (v.fast) {
    report->set_sketch_vectors(v.sketch_vectors);
    report->set_sure_error(v.sure_error);
    report->set_worst_line_ratio(v.worst_line_ratio);
  }
}

void ReportTiming(const PhaseSeconds& p, double prepare_seconds, double queue_seconds, double engine_seconds,
                  uint32_t batch_size, gemm::v1::Timing* timing) {
  timing->set_prepare_seconds(prepare_seconds);
  timing->set_queue_seconds(queue_seconds);
  timing->set_upload_seconds(p.upload);
  timing->set_compute_seconds(std::max(0.0, engine_seconds - p.upload - p.download));
  timing->set_kernel_seconds(p.kernel);
  timing->set_download_seconds(p.download);
  timing->set_verify_seconds(p.verify);
  timing->set_repeats(p.repeats);
  timing->set_batch_size(batch_size);
}

}  // namespace gemmd
