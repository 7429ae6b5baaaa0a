// UploadMatrix's and DownloadMatrix's zero-copy wire format
// (api/matrix_wire.h): upload messages, cut into slices, parse to what
// protobuf makes of them with their data left in the slices; malformed
// bytes are refused; a download chunk carries its data as a slice of the
// stored matrix, holds the matrix until sent, and parses back whole.
#include "api/matrix_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "test_util.h"

namespace gemmd {
namespace {

using gemm::v1::UploadMatrixRequest;

grpc::ByteBuffer Sliced(const std::string& bytes, size_t cut) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += cut) slices.emplace_back(bytes.data() + at, std::min(cut, bytes.size() - at));
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// The message again with its data put back, for comparison with protobuf.
UploadMatrixRequest Whole(const UploadWireMessage& wire) {
  UploadMatrixRequest msg = wire.fields;
  std::string data(wire.data.size(), '\0');
  wire.data.CopyTo(data.data(), 0, data.size());
  msg.set_data(data);
  return msg;
}

TEST(MatrixWire, UploadMessagesParseWithTheirDataLeftInTheSlices) {
  UploadMatrixRequest first;
  first.mutable_header()->set_rows(40);
  first.mutable_header()->set_cols(9);
  first.mutable_header()->set_label("weights");
  first.set_data(testing::RandomHalfBytes(40, 9, 1));
  UploadMatrixRequest later;
  later.set_data(testing::RandomHalfBytes(7, 9, 2));
  for (const UploadMatrixRequest& msg : {first, later, UploadMatrixRequest()}) {
    const std::string bytes = msg.SerializeAsString();
    for (size_t cut : {size_t{1}, size_t{5}, size_t{4096}}) {
      UploadWireMessage wire;
      ASSERT_TRUE(ParseUploadMessage(Sliced(bytes, cut), &wire).ok()) << cut;
      EXPECT_EQ(Whole(wire).SerializeAsString(), bytes) << cut;
      EXPECT_TRUE(wire.fields.data().empty()) << "the bytes were copied into the message";
      if (cut < msg.data().size()) EXPECT_EQ(wire.data.block(), nullptr) << "left in pieces";
    }
  }
}

TEST(MatrixWire, RepeatedFieldsMeanWhatProtobufMakesOfThem) {
  auto message = [](const std::function<void(UploadMatrixRequest*)>& set) {
    UploadMatrixRequest m;
    set(&m);
    return m.SerializeAsString();
  };
  const std::string data1 = message([](auto* m) { m->set_data("abcd"); });
  const std::string data2 = message([](auto* m) { m->set_data("efghij"); });
  const std::string rows = message([](auto* m) { m->mutable_header()->set_rows(3); });
  const std::string cols = message([](auto* m) { m->mutable_header()->set_cols(5); });
  const std::string unknown("\x38\x07", 2);  // field 7, a varint this server does not know
  const std::string data_as_varint("\x10\x05", 2);  // field 2 with the wrong wire type: unknown to protobuf
  for (const std::string& bytes : {data1 + data2, data2 + data1, rows + data1 + cols, data1 + unknown + rows,
                                   data1 + data_as_varint, data_as_varint + data2}) {
    UploadMatrixRequest reference;
    ASSERT_TRUE(reference.ParseFromString(bytes));
    UploadWireMessage wire;
    ASSERT_TRUE(ParseUploadMessage(Sliced(bytes, 3), &wire).ok());
    UploadMatrixRequest mine = Whole(wire);
    mine.DiscardUnknownFields();
    reference.DiscardUnknownFields();
    EXPECT_EQ(mine.DebugString(), reference.DebugString());
  }
}

TEST(MatrixWire, MalformedUploadMessagesAreRefused) {
  UploadMatrixRequest msg;
  msg.set_data("0123456789");
  const std::string good = msg.SerializeAsString();
  for (const std::string& bad : {good.substr(0, good.size() - 1), std::string("\x12", 1), std::string("\x00\x01", 2),
                                 std::string("\x12\xff\xff\xff\xff\x0f", 6), std::string("\x0a\x05xy", 4)}) {
    UploadWireMessage wire;
    const absl::Status st = ParseUploadMessage(Sliced(bad, 2), &wire);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("not an UploadMatrixRequest"));
  }
}

TEST(MatrixWire, AChunkCarriesTheStoredBytesThemselvesAndHoldsThemUntilSent) {
  auto stored = std::make_shared<std::string>(testing::RandomHalfBytes(64, 50, 3));
  std::weak_ptr<std::string> alive = stored;
  gemm::v1::MatrixInfo info;
  info.set_handle("m-1");
  info.set_rows(64);
  info.set_cols(50);
  info.set_bytes(stored->size());
  grpc::ByteBuffer out;
  const char* range = stored->data() + 1000;
  SerializeMatrixChunk(&info, 1000, range, 2000, stored, &out);
  stored.reset();
  EXPECT_FALSE(alive.expired()) << "the chunk holds what it points into";

  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(out.Dump(&slices).ok());
  EXPECT_EQ(reinterpret_cast<const char*>(slices.back().begin()), range) << "the data was handed over, not copied";
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  gemm::v1::MatrixChunk expected;
  *expected.mutable_info() = info;
  expected.set_offset(1000);
  expected.set_data(std::string(range, 2000));
  EXPECT_EQ(bytes, expected.SerializeAsString());

  slices.clear();
  out.Clear();
  EXPECT_TRUE(alive.expired()) << "sent: the stored matrix is let go";

  SerializeMatrixChunk(nullptr, 0, nullptr, 0, nullptr, &out);  // an empty range: no data field, as protobuf
  ASSERT_TRUE(out.Dump(&slices).ok());
  bytes.clear();
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_EQ(bytes, gemm::v1::MatrixChunk().SerializeAsString());
}

}  // namespace
}  // namespace gemmd
