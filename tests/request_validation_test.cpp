#include "api/request_validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gemmd
