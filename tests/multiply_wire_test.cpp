// Multiply's zero-copy wire format (api/multiply_wire.h): requests as the
// clients send them, cut into slices, parse to what protobuf would make of
// them while the inline bytes stay in the slices; repeated operands follow
// protobuf's oneof order; malformed bytes are refused; the reply carries D
// as a slice of its own and parses back whole.
#include "api/multiply_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <string>
#include <vector>

#include "gemm_client.h"
#include "test_util.h"

namespace gemmd {
namespace {

using gemm::v1::MultiplyRequest;
using gemm::v1::MultiplyResponse;

// `bytes` cut into slices of `cut` bytes, as gRPC hands a message over.
grpc::ByteBuffer Sliced(const std::string& bytes, size_t cut) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += cut) slices.emplace_back(bytes.data() + at, std::min(cut, bytes.size() - at));
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::string Gathered(const HostBytes& bytes) {
  std::string out(bytes.size(), '\0');
  bytes.CopyTo(out.data(), 0, out.size());
  return out;
}

MultiplyRequest InlineRequest() {
  MultiplyRequest req;
  req.mutable_shape()->set_m(30);
  req.mutable_shape()->set_n(20);
  req.mutable_shape()->set_k(13);
  req.set_step(3);
  req.set_repeats(2);
  req.set_output(gemm::v1::OUTPUT_INLINE);
  req.mutable_a()->set_data(testing::RandomHalfBytes(30, 13, 1));
  req.mutable_b()->set_data(testing::RandomHalfBytes(20, 13, 2));
  req.set_beta(1);
  req.mutable_c()->set_data(testing::RandomHalfBytes(30, 20, 3));
  return req;
}

// The request again with the inline bytes put back, for comparison.
MultiplyRequest Whole(const MultiplyWireRequest& wire) {
  MultiplyRequest req = wire.fields;
  if (req.a().has_data()) req.mutable_a()->set_data(Gathered(wire.a_data));
  if (req.b().has_data()) req.mutable_b()->set_data(Gathered(wire.b_data));
  if (req.c().has_data()) req.mutable_c()->set_data(Gathered(wire.c_data));
  return req;
}

TEST(MultiplyWire, RequestsAsClientsSendThemParseWithTheirBytesLeftInTheSlices) {
  const MultiplyRequest req = InlineRequest();
  grpc::ByteBuffer zero_copy;  // what gemm-client sends: the data as separate occurrences
  gemmc::GemmClient::SerializeWithoutCopyingData(req, &zero_copy);
  std::vector<grpc::Slice> zc_slices;
  ASSERT_TRUE(zero_copy.Dump(&zc_slices).ok());
  std::string zc_bytes;
  for (const auto& s : zc_slices) zc_bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  for (const std::string& bytes : {req.SerializeAsString(), zc_bytes}) {
    for (size_t cut : {size_t{1}, size_t{7}, size_t{4096}, bytes.size()}) {
      MultiplyWireRequest wire;
      ASSERT_TRUE(ParseMultiplyRequest(Sliced(bytes, cut), &wire).ok()) << cut;
      EXPECT_EQ(Whole(wire).SerializeAsString(), req.SerializeAsString()) << cut;
      EXPECT_TRUE(wire.fields.a().data().empty()) << "the bytes were copied into the message";
      EXPECT_TRUE(wire.fields.c().data().empty()) << "C's bytes were copied into the message";
      EXPECT_EQ(wire.c_data.size(), req.c().data().size());
      EXPECT_EQ(wire.a_data.size(), req.a().data().size());
      if (cut < req.a().data().size()) EXPECT_EQ(wire.a_data.block(), nullptr) << "left in pieces";
    }
  }
}

TEST(MultiplyWire, RepeatedOperandsMeanWhatProtobufMakesOfThem) {
  auto operand = [](const std::function<void(gemm::v1::Operand*)>& set) {
    MultiplyRequest r;
    set(r.mutable_a());
    return r.SerializeAsString();
  };
  const std::string data = operand([](auto* o) { o->set_data("abcd"); });
  const std::string handle = operand([](auto* o) { o->set_handle("m-1"); });
  const std::string seed5 = operand([](auto* o) { o->mutable_random()->set_seed(5); });
  const std::string random_empty = operand([](auto* o) { o->mutable_random(); });
  const std::string blocks = operand([](auto* o) { o->mutable_row_blocks()->add_handles("m-2"); });
  for (const std::string& bytes : {data + handle, handle + data, seed5 + data + random_empty, seed5 + random_empty,
                                   data + data + seed5, handle + seed5 + data + data, data + blocks, blocks + data,
                                   blocks + handle + blocks, blocks + blocks}) {
    MultiplyRequest reference;
    ASSERT_TRUE(reference.ParseFromString(bytes));
    MultiplyWireRequest wire;
    ASSERT_TRUE(ParseMultiplyRequest(Sliced(bytes, 3), &wire).ok());
    EXPECT_EQ(Whole(wire).DebugString(), reference.DebugString());
  }
}

TEST(MultiplyWire, MalformedBytesAreRefused) {
  const std::string good = InlineRequest().SerializeAsString();
  for (const std::string& bad : {good.substr(0, good.size() - 1), std::string("\x08", 1), std::string("\x00\x01", 2),
                                 std::string("\x12\xff\xff\xff\xff\x0f", 6), std::string("\x0b\x08\x01", 3),
                                 std::string("\x12\x02\x0a\x05xy", 6)}) {
    MultiplyWireRequest wire;
    const absl::Status st = ParseMultiplyRequest(Sliced(bad, 2), &wire);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("not a MultiplyRequest"));
  }
}

TEST(MultiplyWire, TheReplyCarriesDAsASliceAndParsesBackWhole) {
  auto pool = ReplyBuffers::Create(uint64_t{64} << 20);
  MultiplyResponse resp;
  resp.set_step(10);
  resp.set_device("cuda:0");
  resp.mutable_timing()->set_total_seconds(0.25);
  MultiplyResponse original = resp;
  original.set_d(testing::RandomHalfBytes(64, 33, 3));
  auto d = pool->Take(original.d().size());
  std::copy(original.d().begin(), original.d().end(), d->data());
  const char* d_bytes = d->data();
  grpc::ByteBuffer out;
  SerializeMultiplyResponse(resp, std::move(d), &out);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(out.Dump(&slices).ok());
  EXPECT_EQ(slices.back().size(), original.d().size()) << "D is a slice of its own";
  EXPECT_EQ(reinterpret_cast<const char*>(slices.back().begin()), d_bytes) << "D was handed over, not copied";
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  MultiplyResponse back;
  ASSERT_TRUE(back.ParseFromString(bytes));
  EXPECT_EQ(back.SerializeAsString(), original.SerializeAsString());

  MultiplyResponse no_d;  // a reply without D is its fields alone
  no_d.set_d_handle("m-7");
  SerializeMultiplyResponse(no_d, nullptr, &out);
  ASSERT_TRUE(out.Dump(&slices).ok());
  ASSERT_EQ(slices.size(), 1u);
  ASSERT_TRUE(back.ParseFromArray(slices[0].begin(), static_cast<int>(slices[0].size())));
  EXPECT_EQ(back.d_handle(), "m-7");
}

// D from a recycled buffer: the same message, and once gRPC lets go of the
// bytes the buffer is back in its pool for the next reply.
TEST(MultiplyWire, DFromAReplyBufferGoesBackToItsPoolOnceSent) {
  auto pool = ReplyBuffers::Create(uint64_t{64} << 20);
  const std::string d = testing::RandomHalfBytes(1024, 600, 5);  // 1.2 MB: a kept size
  MultiplyResponse fields;
  fields.set_step(3);
  fields.set_device("cuda:0");
  auto buffer = pool->Take(d.size());
  std::copy(d.begin(), d.end(), buffer->data());
  {
    grpc::ByteBuffer out;
    SerializeMultiplyResponse(fields, std::move(buffer), &out);
    EXPECT_EQ(pool->kept_bytes(), 0u) << "the reply still holds D";
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(out.Dump(&slices).ok());
    EXPECT_EQ(slices.back().size(), d.size()) << "D is a slice of its own";
    std::string bytes;
    for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    MultiplyResponse back;
    ASSERT_TRUE(back.ParseFromString(bytes));
    EXPECT_EQ(back.d(), d);
    EXPECT_EQ(back.step(), 3u);
    EXPECT_EQ(back.device(), "cuda:0");
  }
  EXPECT_EQ(pool->kept_bytes(), d.size());
}

}  // namespace
}  // namespace gemmd
