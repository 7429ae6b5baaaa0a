// gemm.v1's whole GEMM end to end: a real server (CPU engine) on a loopback
// port, requests in every source an operand has, D checked against an fp64
// product computed here, not by gemmd's verification.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "gemm/form.h"
#include "gemm/steps.h"
#include "gemm/sketch_check.h"
#include "server_fixture.h"
#include "x_times_w.h"

namespace gemmd::testing {
namespace {

using ::testing::HasSubstr;
using gemm::ElementType;
using gemm::v1::MultiplyRequest;
using gemm::v1::MultiplyResponse;

class GemmFormsTest : public ServerFixture {
 protected:
  void SetUp() override { StartServer(); }
};

// The example: y = x @ W + 0.5·r in bf16, W stored K×N and shared
// by a batch of 4, W uploaded once by handle, C inline.
TEST_F(GemmFormsTest, Bf16XTimesWPlusBetaCBatchedWithASharedWMatchesFp64) {
  const XTimesW problem(4, 24, 40, 72);
  MultiplyResponse resp;
  ASSERT_TRUE(client().Multiply(problem.Request(client()), &resp).ok());
  EXPECT_EQ(resp.d_type(), gemm::v1::BF16);
  EXPECT_EQ(resp.batch_count(), 4u);
  EXPECT_TRUE(resp.verification().passed());
  EXPECT_DOUBLE_EQ(resp.verification().rtol(), 1.6e-2);
  EXPECT_THAT(resp.verification().tolerance_source(), HasSubstr("bfloat16"));
  ASSERT_EQ(resp.d().size(), static_cast<size_t>(4 * 24 * 40 * 2));
  EXPECT_EQ(problem.Mismatches(resp.d()), 0);
}

// VERIFICATION_FAST: the report says which check ran, what it used and the
// single-element error it is sure to catch; D is the same product.
TEST_F(GemmFormsTest, TheFastCheckSaysWhatItRanAndWhatItCatches) {
  const XTimesW problem(4, 24, 40, 72);
  gemm::v1::MultiplyRequest req = problem.Request(client());
  req.set_verification(gemm::v1::VERIFICATION_FAST);
  MultiplyResponse resp;
  ASSERT_TRUE(client().Multiply(req, &resp).ok());
  const gemm::v1::VerificationReport& v = resp.verification();
  EXPECT_TRUE(v.passed());
  EXPECT_EQ(v.mode(), gemm::v1::VERIFICATION_FAST);
  EXPECT_EQ(v.reference(), "cpu-sketch-fp64");
  EXPECT_EQ(v.sketch_vectors(), 2u);
  EXPECT_EQ(v.elements(), 4u * 24 * 40) << "fewer elements than samples: every one recomputed";
  EXPECT_GT(v.sure_error(), 0);
  EXPECT_LT(v.worst_line_ratio(), 1);
  EXPECT_EQ(problem.Mismatches(resp.d()), 0);

  gemm::v1::MultiplyRequest plain;
  plain.mutable_shape()->set_m(300);
  plain.mutable_shape()->set_n(200);
  plain.mutable_shape()->set_k(100);
  plain.mutable_a()->mutable_random()->set_seed(1);
  plain.mutable_b()->mutable_random()->set_seed(2);
  plain.set_verification(gemm::v1::VERIFICATION_FAST);
  ASSERT_TRUE(client().Multiply(plain, &resp).ok());
  EXPECT_TRUE(resp.verification().passed());
  EXPECT_EQ(resp.verification().mode(), gemm::v1::VERIFICATION_FAST);
  EXPECT_EQ(resp.verification().elements(), static_cast<uint64_t>(gemm::kSketchSamples));
  plain.set_verification(gemm::v1::VERIFICATION_UNSPECIFIED);
  ASSERT_TRUE(client().Multiply(plain, &resp).ok());
  EXPECT_EQ(resp.verification().mode(), gemm::v1::VERIFICATION_FULL) << "the default";
}

TEST_F(GemmFormsTest, Fp8WithScalesAndFp32DOfFp16AndStoredDsKeepTheirType) {
  const int64_t m = 16, n = 8, k = 32;
  MultiplyRequest req;
  req.mutable_shape()->set_m(m);
  req.mutable_shape()->set_n(n);
  req.mutable_shape()->set_k(k);
  req.set_a_type(gemm::v1::FP8_E4M3);
  req.set_b_type(gemm::v1::FP8_E5M2);
  req.set_a_scale(0.5);
  req.set_b_scale(3);
  req.set_d_type(gemm::v1::FP16);
  req.mutable_a()->mutable_random()->set_seed(4);
  req.mutable_b()->mutable_random()->set_seed(4);
  req.set_output(gemm::v1::OUTPUT_HANDLE);
  MultiplyResponse resp;
  ASSERT_TRUE(client().Multiply(req, &resp).ok());
  EXPECT_TRUE(resp.verification().passed());
  std::string d;
  gemm::v1::MatrixInfo info;
  ASSERT_TRUE(client().Download(resp.d_handle(), &d, &info).ok());
  EXPECT_EQ(info.type(), gemm::v1::FP16);
  EXPECT_EQ(d.size(), static_cast<size_t>(m * n * 2));
  // D[0][0] from the documented generator, rounded to each operand's type.
  const uint64_t sa = gemm::RandomStream(4, gemm::OperandId::kA), sb = gemm::RandomStream(4, gemm::OperandId::kB);
  double want = 0;
  for (int kk = 0; kk < k; ++kk) {
    want += double{gemm::RandomValueAs(ElementType::kF8E4M3, sa, kk)} * gemm::RandomValueAs(ElementType::kF8E5M2, sb, kk);
  }
  want *= 1.5;
  EXPECT_NEAR(gemm::LoadElement(ElementType::kF16, d.data(), 0), want, std::fabs(want) * 0x1p-10 + 1e-4);

  // The stored fp16 D, as C of an fp32-D request with an fp32 C type mismatch refused.
  MultiplyRequest next;
  *next.mutable_shape() = req.shape();
  next.mutable_a()->mutable_random()->set_seed(5);
  next.mutable_b()->mutable_random()->set_seed(5);
  next.set_beta(1);
  next.mutable_c()->set_handle(resp.d_handle());
  next.set_c_type(gemm::v1::FP32);
  next.set_d_type(gemm::v1::FP32);
  grpc::Status st = client().Multiply(next, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("holds fp16, but c is fp32"));
  next.clear_c_type();  // C in D's type: fp32, still not what the handle holds
  next.set_d_type(gemm::v1::FP16);
  ASSERT_TRUE(client().Multiply(next, &resp).ok()) << resp.DebugString();
  EXPECT_TRUE(resp.verification().passed());
}

TEST_F(GemmFormsTest, ALadderStepRefusesWhatItLacksAndNamesStepZero) {
  MultiplyRequest req;
  req.mutable_shape()->set_m(8);
  req.mutable_shape()->set_n(8);
  req.mutable_shape()->set_k(8);
  req.set_step(10);
  req.set_a_type(gemm::v1::BF16);
  req.set_b_type(gemm::v1::BF16);
  req.set_b_layout(gemm::v1::LAYOUT_MN_CONTIGUOUS);
  req.set_beta(0.5);
  req.mutable_c()->mutable_random();
  req.mutable_batch()->set_count(2);
  req.mutable_a()->mutable_random();
  req.mutable_b()->mutable_random();
  MultiplyResponse resp;
  const grpc::Status st = client().Multiply(req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  // The CPU engine offers no ladder step: that refusal comes first.
  EXPECT_THAT(st.error_message(), HasSubstr("step 10"));
  EXPECT_EQ(gemm::FormError(10, gemm::GemmForm{}), "");
  gemm::GemmForm bf16_kn;
  bf16_kn.a = bf16_kn.b = bf16_kn.d = ElementType::kBF16;
  bf16_kn.b_layout = gemm::Layout::kMnContiguous;
  EXPECT_EQ(gemm::FormError(10, bf16_kn), "") << "bf16 x @ W is the ladder's";
  bf16_kn.has_c = true;
  bf16_kn.c = ElementType::kBF16;
  bf16_kn.beta = 0.5;
  EXPECT_EQ(gemm::FormError(10, bf16_kn), "") << "and so is x @ W + beta·C";
  bf16_kn.batch = 2;
  EXPECT_EQ(gemm::FormError(10, bf16_kn), "") << "and a batch of them";
  bf16_kn.d = gemm::ElementType::kF32;
  EXPECT_THAT(gemm::FormError(10, bf16_kn), HasSubstr("fp32 D"));
  EXPECT_THAT(gemm::FormError(10, bf16_kn), HasSubstr("step 0 computes every form"));
}

TEST_F(GemmFormsTest, ListKernelsSaysWhatEachStepComputes) {
  gemm::v1::ListKernelsResponse list;
  ASSERT_TRUE(client().ListKernels(&list).ok());
  ASSERT_GE(list.kernels_size(), 2);
  const auto& vendor = list.kernels(0).capabilities();
  EXPECT_EQ(vendor.operand_types_size(), 5);
  EXPECT_TRUE(vendor.alpha_beta_c());
  EXPECT_TRUE(vendor.batches());
  EXPECT_EQ(vendor.b_layouts_size(), 2);
  const auto& ladder = list.kernels(10).capabilities();
  ASSERT_EQ(ladder.operand_types_size(), 2);
  EXPECT_EQ(ladder.operand_types(0), gemm::v1::FP16);
  EXPECT_EQ(ladder.operand_types(1), gemm::v1::BF16);
  ASSERT_EQ(ladder.d_types_size(), 2);
  EXPECT_EQ(ladder.a_layouts_size(), 2);
  EXPECT_EQ(ladder.b_layouts_size(), 2);
  EXPECT_TRUE(ladder.alpha_beta_c());
  EXPECT_TRUE(ladder.batches());
}

TEST_F(GemmFormsTest, AStoredOperandMustHoldTheRequestsTypeAndSize) {
  gemm::v1::MatrixHeader header;
  header.set_rows(8);
  header.set_cols(4);
  header.set_type(gemm::v1::FP32);
  gemm::v1::MatrixInfo info;
  ASSERT_TRUE(client().Upload(header, RandomBytes(ElementType::kF32, 32, 9), &info).ok());
  EXPECT_EQ(info.bytes(), 128u);
  MultiplyRequest req;
  req.mutable_shape()->set_m(4);
  req.mutable_shape()->set_n(3);
  req.mutable_shape()->set_k(4);
  req.set_a_type(gemm::v1::FP32);
  req.set_b_type(gemm::v1::FP32);
  req.mutable_a()->set_handle(info.handle());  // 8x4 is a batch of two 4x4 A
  req.mutable_b()->mutable_random();
  MultiplyResponse resp;
  grpc::Status st = client().Multiply(req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("needs 4x4"));
  req.mutable_batch()->set_count(2);
  ASSERT_TRUE(client().Multiply(req, &resp).ok()) << resp.DebugString();
  EXPECT_TRUE(resp.verification().passed());
  req.set_a_type(gemm::v1::FP16);
  req.set_b_type(gemm::v1::FP16);
  st = client().Multiply(req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("holds fp32, but a is fp16"));
  // An upload's bytes are counted in its type: 8x4 fp32 is 128 bytes, not 64.
  gemm::v1::MatrixInfo short_info;
  st = client().Upload(header, std::string(64, '\0'), &short_info);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace gemmd::testing
