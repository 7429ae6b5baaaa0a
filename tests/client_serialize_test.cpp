// gemm-client's zero-copy request encoding: what the server parses must be
// exactly the request, for every field of MultiplyRequest and every operand
// source, and inline bytes must be referenced, not copied.
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gemm_client.h"

namespace gemmc {
namespace {

gemm::v1::MultiplyRequest Parse(grpc::ByteBuffer& buffer) {
  gemm::v1::MultiplyRequest parsed;
  grpc::ProtoBufferReader reader(&buffer);
  EXPECT_TRUE(parsed.ParseFromZeroCopyStream(&reader));
  return parsed;
}

gemm::v1::MultiplyRequest EveryField() {
  gemm::v1::MultiplyRequest req;
  req.mutable_shape()->set_m(3);
  req.mutable_shape()->set_n(5);
  req.mutable_shape()->set_k(200);
  req.mutable_a()->set_data(std::string(3 * 200 * 2, '\x11'));
  req.mutable_b()->set_data(std::string(5 * 200 * 2, '\x22'));
  req.set_step(7);
  req.set_verification(gemm::v1::VERIFICATION_NONE);
  req.set_output(gemm::v1::OUTPUT_HANDLE);
  req.set_repeats(9);
  req.set_benchmark(true);
  req.set_transient_output(true);
  req.set_a_type(gemm::v1::BF16);
  req.set_b_type(gemm::v1::BF16);
  req.set_d_type(gemm::v1::FP32);
  req.set_c_type(gemm::v1::FP32);
  req.set_a_layout(gemm::v1::LAYOUT_MN_CONTIGUOUS);
  req.set_b_layout(gemm::v1::LAYOUT_MN_CONTIGUOUS);
  req.set_alpha(0.5);
  req.set_beta(2);
  req.mutable_c()->set_data(std::string(3 * 5 * 4, '\x33'));
  req.mutable_batch()->set_count(1);
  req.set_a_scale(2);
  req.set_b_scale(4);
  req.set_allow_tf32(true);
  return req;
}

TEST(ClientSerialize, EveryFieldOfTheRequestArrives) {
  const gemm::v1::MultiplyRequest req = EveryField();
  std::vector<const google::protobuf::FieldDescriptor*> set;
  req.GetReflection()->ListFields(req, &set);
  ASSERT_EQ(static_cast<int>(set.size()), req.GetDescriptor()->field_count())
      << "a new MultiplyRequest field: set it in EveryField() and copy it in SerializeWithoutCopyingData";
  grpc::ByteBuffer buffer;
  GemmClient::SerializeWithoutCopyingData(req, &buffer);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(Parse(buffer), req));
}

TEST(ClientSerialize, HandlesSeedsAndMixedSourcesArriveToo) {
  gemm::v1::MultiplyRequest req = EveryField();
  req.mutable_a()->set_handle("m-1234");
  req.mutable_b()->mutable_random()->set_seed(42);
  grpc::ByteBuffer buffer;
  GemmClient::SerializeWithoutCopyingData(req, &buffer);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(Parse(buffer), req));
  gemm::v1::MultiplyRequest only_b_inline = EveryField();
  only_b_inline.mutable_a()->mutable_random()->set_seed(1);
  GemmClient::SerializeWithoutCopyingData(only_b_inline, &buffer);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(Parse(buffer), only_b_inline));
}

// The operand's bytes go out as a slice of the caller's own buffer.
TEST(ClientSerialize, InlineBytesAreReferencedNotCopied) {
  const gemm::v1::MultiplyRequest req = EveryField();
  grpc::ByteBuffer buffer;
  GemmClient::SerializeWithoutCopyingData(req, &buffer);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(buffer.Dump(&slices).ok());
  bool a_referenced = false, b_referenced = false, c_referenced = false;
  for (const grpc::Slice& s : slices) {
    a_referenced |= s.begin() == reinterpret_cast<const uint8_t*>(req.a().data().data());
    b_referenced |= s.begin() == reinterpret_cast<const uint8_t*>(req.b().data().data());
    c_referenced |= s.begin() == reinterpret_cast<const uint8_t*>(req.c().data().data());
  }
  EXPECT_TRUE(a_referenced);
  EXPECT_TRUE(b_referenced);
  EXPECT_TRUE(c_referenced);
}

}  // namespace
}  // namespace gemmc
