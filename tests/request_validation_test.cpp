#include "api/request_validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace gemmd {
namespace {

using ::testing::HasSubstr;

gemm::v1::MultiplyRequest Valid() {
  gemm::v1::MultiplyRequest r;
  r.mutable_shape()->set_m(4);
  r.mutable_shape()->set_n(3);
  r.mutable_shape()->set_k(2);
  r.mutable_a()->set_data(std::string(16, '\0'));
  r.mutable_b()->mutable_random()->set_seed(1);
  return r;
}

TEST(RequestValidation, AcceptsAValidRequest) { EXPECT_TRUE(ValidateMultiply(Valid(), {}).ok()); }

TEST(RequestValidation, ReportsABadShapeBeforeABadStep) {
  auto r = Valid();
  r.mutable_shape()->set_n(0);
  r.set_step(99);
  // The shape is reported first: it is what the person got most wrong.
  EXPECT_THAT(std::string(ValidateMultiply(r, {}).message()), HasSubstr("shape.n must be >= 1"));
}

TEST(RequestValidation, HandleOperandMustNameSomething) {
  auto r = Valid();
  r.mutable_b()->set_handle("");
  auto st = ValidateMultiply(r, {});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("b.handle is empty"));
}

TEST(RequestValidation, ByteLimitCountsAPlusBPlusD) {
  auto r = Valid();  // A 16 + B 12 + D 24 = 52 bytes
  RequestLimits l;
  l.max_request_bytes = 52;
  EXPECT_TRUE(ValidateMultiply(r, l).ok());
  l.max_request_bytes = 51;
  EXPECT_EQ(ValidateMultiply(r, l).code(), absl::StatusCode::kResourceExhausted);
}

TEST(RequestValidation, MatrixBytesDetectsOverflow) {
  uint64_t bytes = 0;
  EXPECT_TRUE(MatrixBytes(3, 5, &bytes));
  EXPECT_EQ(bytes, 30u);
  EXPECT_FALSE(MatrixBytes(int64_t{1} << 32, int64_t{1} << 32, &bytes));
  EXPECT_FALSE(MatrixBytes(int64_t{1} << 62, 2, &bytes));
}

// gemm.v1's general form: each malformed combination, refused with a
// sentence that names the field.
struct Refusal {
  const char* what;
  std::function<void(gemm::v1::MultiplyRequest&)> change;
  const char* says;
};

TEST(RequestValidation, RefusesEachMalformedForm) {
  const Refusal refusals[] = {
      {"fp8 without its scale", [](auto& r) { r.set_a_type(gemm::v1::FP8_E4M3), r.set_b_type(gemm::v1::FP8_E4M3); },
       "a_scale is required"},
      {"a scale on fp16", [](auto& r) { r.set_a_scale(2); }, "a_scale applies to fp8 operands only"},
      {"a zero scale",
       [](auto& r) {
         r.set_a_type(gemm::v1::FP8_E4M3), r.set_b_type(gemm::v1::FP8_E4M3), r.set_a_scale(0), r.set_b_scale(1);
       },
       "must be finite and not 0"},
      {"e5m2 x e5m2",
       [](auto& r) {
         r.set_a_type(gemm::v1::FP8_E5M2), r.set_b_type(gemm::v1::FP8_E5M2), r.set_a_scale(1), r.set_b_scale(1);
       },
       "one operand must be fp8_e4m3"},
      {"mixed 16-bit types", [](auto& r) { r.set_b_type(gemm::v1::BF16); }, "both operands must have one type"},
      {"fp32 D from fp32 only", [](auto& r) { r.set_a_type(gemm::v1::FP32), r.set_b_type(gemm::v1::FP32), r.set_d_type(gemm::v1::FP16); },
       "fp32 operands write D as fp32"},
      {"tf32 on fp16", [](auto& r) { r.set_allow_tf32(true); }, "allow_tf32 applies to fp32 operands"},
      {"beta without C", [](auto& r) { r.set_beta(1); }, "needs an operand c"},
      {"C of the wrong size", [](auto& r) { r.set_beta(1), r.mutable_c()->set_data(std::string(10, '\0')); },
       "c.data has 10 bytes, but a m x n = 4x3 fp16 matrix needs 24"},
      {"C in another 16-bit type",
       [](auto& r) { r.set_beta(1), r.set_c_type(gemm::v1::BF16), r.mutable_c()->mutable_random(); },
       "it must be D's type (fp16) or fp32"},
      {"a batch of zero", [](auto& r) { r.mutable_batch()->set_count(0); }, "batch.count is 0"},
      {"a batch too large", [](auto& r) { r.mutable_batch()->set_count(65536); }, "is above 65535"},
      {"a scale fp32 cannot hold",
       [](auto& r) {
         r.set_a_type(gemm::v1::FP8_E4M3), r.set_b_type(gemm::v1::FP8_E4M3), r.set_a_scale(1e30), r.set_b_scale(1e30);
       },
       "must each fit fp32"},
      {"strides that overlap", [](auto& r) { r.mutable_batch()->set_count(2), r.mutable_batch()->set_stride_a(5); },
       "batch.stride_a = 5 makes batch entries overlap"},
      {"a negative stride", [](auto& r) { r.mutable_batch()->set_count(2), r.mutable_batch()->set_stride_b(-1); },
       "is negative"},
      {"inline bytes short of the batch", [](auto& r) { r.mutable_batch()->set_count(2); },
       "a.data has 16 bytes, but a m x k = 4x2 fp16 matrix times a batch of 2"},
      {"an unknown type", [](auto& r) { r.set_a_type(static_cast<gemm::v1::ElementType>(42)); }, "unknown a_type 42"},
      {"an unknown layout", [](auto& r) { r.set_b_layout(static_cast<gemm::v1::Layout>(7)); }, "unknown b_layout 7"},
      {"infinite alpha", [](auto& r) { r.set_alpha(INFINITY); }, "alpha = inf is not finite"},
  };
  for (const Refusal& refusal : refusals) {
    auto r = Valid();
    refusal.change(r);
    const absl::Status st = ValidateMultiply(r, {});
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << refusal.what;
    EXPECT_THAT(std::string(st.message()), HasSubstr(refusal.says)) << refusal.what;
  }
}

TEST(RequestValidation, ResolvesTheFormsDefaultsAndStrides) {
  auto r = Valid();  // A 4x2 inline fp16, B random
  r.set_a_type(gemm::v1::BF16);
  r.set_b_type(gemm::v1::BF16);
  r.set_b_layout(gemm::v1::LAYOUT_MN_CONTIGUOUS);
  r.mutable_batch()->set_count(3);
  r.mutable_batch()->set_stride_b(0);  // one B for every A
  r.set_beta(0.5);
  r.mutable_c()->mutable_random()->set_seed(3);
  r.mutable_a()->set_data(std::string(3 * 4 * 2 * 2, '\0'));
  gemm::GemmForm f;
  ASSERT_TRUE(ValidateMultiply(r, {}, nullptr, &f).ok());
  EXPECT_EQ(f.d, gemm::ElementType::kBF16) << "D defaults to the operands' type";
  EXPECT_EQ(f.c, gemm::ElementType::kBF16) << "C defaults to D's type";
  EXPECT_EQ(f.alpha, 1.0);
  EXPECT_EQ(f.batch, 3);
  EXPECT_EQ(f.stride_a, 8) << "dense when unset";
  EXPECT_EQ(f.stride_b, 0);
  EXPECT_EQ(f.stride_c, 12);
  EXPECT_TRUE(f.ReadsC());

  auto fp8 = Valid();
  fp8.set_a_type(gemm::v1::FP8_E4M3);
  fp8.set_b_type(gemm::v1::FP8_E4M3);
  fp8.set_a_scale(0.25);
  fp8.set_b_scale(4);
  fp8.mutable_a()->set_data(std::string(8, '\0'));  // 4x2 of one byte
  ASSERT_TRUE(ValidateMultiply(fp8, {}, nullptr, &f).ok());
  EXPECT_EQ(f.d, gemm::ElementType::kBF16) << "fp8's D defaults to bf16";
}

TEST(RequestValidation, ByteLimitCountsCAndTheWholeBatch) {
  auto r = Valid();  // per entry: A 16 + B 12 + D 24
  r.mutable_batch()->set_count(2);
  r.mutable_batch()->set_stride_a(0);
  r.set_beta(1);
  r.mutable_c()->mutable_random();  // 2 x 24
  RequestLimits l;
  l.max_request_bytes = 16 + 2 * 12 + 2 * 24 + 2 * 24;
  EXPECT_TRUE(ValidateMultiply(r, l).ok());
  l.max_request_bytes -= 1;
  EXPECT_EQ(ValidateMultiply(r, l).code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace gemmd
