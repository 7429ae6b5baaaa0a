// ListKernels states exactly what each step computes: every form its
// capabilities list is one the step accepts (gemm::FormError), and, for the
// ladder's steps, every form they leave out is one the step refuses. And a
// reply's report carries the engine's verification and phases as they are.
#include "api/kernel_listing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "api/multiply_report.h"
#include "form/request_form.h"
#include "gemm/steps.h"

namespace gemmd {
namespace {

using gemm::ElementType;
using gemm::Layout;

template <typename List, typename Value>
bool Lists(const List& list, Value v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

TEST(KernelListing, EachStepListsExactlyTheFormsItComputes) {
  const ElementType types[] = {ElementType::kF16, ElementType::kBF16, ElementType::kF32, ElementType::kF8E4M3,
                               ElementType::kF8E5M2};
  const Layout layouts[] = {Layout::kKContiguous, Layout::kMnContiguous};
  for (const gemm::StepInfo& info : gemm::AllSteps()) {
    gemm::v1::StepCapabilities caps;
    DescribeCapabilities(info.step, &caps);
    const bool every_form = gemm::FormsOf(info.step).every_form;
    int accepted = 0;
    for (ElementType operands : types) {
      for (ElementType d : types) {
        for (Layout a_layout : layouts) {
          for (Layout b_layout : layouts) {
            for (int epilogue = 0; epilogue < 3; ++epilogue) {  // none, alpha alone, beta·C
              for (int64_t batch : {1, 3}) {
                gemm::GemmForm f;
                f.a = f.b = operands;
                f.d = f.c = d;
                f.a_layout = a_layout;
                f.b_layout = b_layout;
                f.alpha = epilogue == 0 ? 1 : 0.5;
                f.has_c = epilogue == 2;
                f.beta = epilogue == 2 ? 2 : 0;
                f.batch = batch;
                const bool listed = Lists(caps.operand_types(), ToProto(operands)) &&
                                    Lists(caps.d_types(), ToProto(d)) &&
                                    Lists(caps.a_layouts(), ToProto(a_layout)) &&
                                    Lists(caps.b_layouts(), ToProto(b_layout)) &&
                                    (epilogue == 0 || caps.alpha_beta_c()) && (batch == 1 || caps.batches());
                const std::string why = gemm::FormError(info.step, f);
                const std::string what = "step " + std::to_string(info.step) + ": " +
                                         gemm::ElementName(operands) + " operands, " + gemm::ElementName(d) +
                                         " D, epilogue " + std::to_string(epilogue) + ", batch " +
                                         std::to_string(batch);
                if (listed) {
                  EXPECT_EQ(why, "") << what << " is listed but refused";
                  ++accepted;
                } else if (!every_form) {
                  EXPECT_NE(why, "") << what << " is not listed but accepted";
                }
              }
            }
          }
        }
      }
    }
    EXPECT_GT(accepted, 0) << "step " << info.step << " lists no form at all";
  }
}

TEST(KernelListing, StepZeroListsEveryTypeAndTheLadderItsTwo) {
  gemm::v1::StepCapabilities vendor, ladder;
  DescribeCapabilities(0, &vendor);
  DescribeCapabilities(10, &ladder);
  EXPECT_EQ(vendor.operand_types_size(), 5);
  EXPECT_EQ(vendor.d_types_size(), 3);
  ASSERT_EQ(ladder.operand_types_size(), 2);
  EXPECT_EQ(ladder.operand_types(0), gemm::v1::FP16);
  EXPECT_EQ(ladder.operand_types(1), gemm::v1::BF16);
}

TEST(MultiplyReport, TheFastChecksFieldsOnlyWhenItRan) {
  VerificationResult full;
  full.performed = full.passed = true;
  full.elements = 12;
  full.reference = "cublas";
  full.sure_error = 3;  // not the fast check's: not reported
  gemm::v1::VerificationReport report;
  ReportVerification(full, &report);
  EXPECT_EQ(report.mode(), gemm::v1::VERIFICATION_FULL);
  EXPECT_EQ(report.elements(), 12u);
  EXPECT_EQ(report.reference(), "cublas");
  EXPECT_EQ(report.sure_error(), 0);

  VerificationResult fast = full;
  fast.fast = true;
  fast.sketch_vectors = 2;
  fast.worst_line_ratio = 0.25;
  report.Clear();
  ReportVerification(fast, &report);
  EXPECT_EQ(report.mode(), gemm::v1::VERIFICATION_FAST);
  EXPECT_EQ(report.sketch_vectors(), 2u);
  EXPECT_EQ(report.sure_error(), 3);
  EXPECT_EQ(report.worst_line_ratio(), 0.25);

  report.Clear();
  ReportVerification(VerificationResult{}, &report);
  EXPECT_FALSE(report.performed());
  EXPECT_EQ(report.mode(), gemm::v1::VERIFICATION_UNSPECIFIED) << "no mode when nothing was checked";
}

TEST(MultiplyReport, ComputeIsTheEnginesTimeLessItsTransfers) {
  PhaseSeconds p;
  p.upload = 0.002;
  p.download = 0.003;
  p.kernel = 0.0005;
  p.verify = 0.0007;
  p.repeats = 4;
  gemm::v1::Timing t;
  ReportTiming(p, 0.0001, 0.0002, 0.010, 3, &t);
  EXPECT_DOUBLE_EQ(t.prepare_seconds(), 0.0001);
  EXPECT_DOUBLE_EQ(t.queue_seconds(), 0.0002);
  EXPECT_DOUBLE_EQ(t.compute_seconds(), 0.010 - 0.002 - 0.003);
  EXPECT_DOUBLE_EQ(t.kernel_seconds(), 0.0005);
  EXPECT_DOUBLE_EQ(t.verify_seconds(), 0.0007);
  EXPECT_EQ(t.repeats(), 4u);
  EXPECT_EQ(t.batch_size(), 3u);
  // A clock that reads the engine's time shorter than its transfers gives 0, never a negative phase.
  ReportTiming(p, 0, 0, 0.004, 1, &t);
  EXPECT_EQ(t.compute_seconds(), 0);
}

}  // namespace
}  // namespace gemmd
