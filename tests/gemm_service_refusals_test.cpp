// End-to-end: every bad input a client can send, refused with the right
// gRPC status and a message a person understands.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gemm_service_fixture.h"

namespace gemmd::testing {
namespace {

using gemm::v1::MultiplyRequest;
using gemm::v1::MultiplyResponse;

TEST_F(GemmServiceTest, RefusesZeroAndNegativeDimensions) {
  ExpectError(Send(RandomRequest(0, 8, 8, 1)), grpc::StatusCode::INVALID_ARGUMENT, "shape.m must be >= 1, got 0");
  ExpectError(Send(RandomRequest(8, -3, 8, 1)), grpc::StatusCode::INVALID_ARGUMENT, "shape.n must be >= 1, got -3");
  ExpectError(Send(RandomRequest(8, 8, -1, 1)), grpc::StatusCode::INVALID_ARGUMENT, "shape.k must be >= 1, got -1");
  MultiplyRequest no_shape;
  ExpectError(Send(no_shape), grpc::StatusCode::INVALID_ARGUMENT, "shape is missing");
}

// Bytes that are no MultiplyRequest at all, sent raw: the server's own wire
// parser refuses them as protobuf would, and the server goes on serving.
TEST_F(GemmServiceTest, RefusesBytesThatAreNotAMultiplyRequest) {
  for (const std::string& bytes : {std::string("\x12\xff\xff\xff\xff\x0f", 6), std::string("\x0b\x08\x01", 3),
                                   std::string("\x12\x02\x0a\x05xy", 6)}) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1), reply;
    ExpectError(client().MultiplyBytes(request, &reply), grpc::StatusCode::INVALID_ARGUMENT, "not a MultiplyRequest in the protobuf wire format");
  }
  EXPECT_TRUE(Send(RandomRequest(8, 8, 8, 1)).ok());
}

TEST_F(GemmServiceTest, RefusesDataOfTheWrongLength) {
  MultiplyRequest req = InlineRequest(16, 8, 4, 1);
  req.mutable_a()->set_data(std::string(100, '\0'));
  ExpectError(Send(req), grpc::StatusCode::INVALID_ARGUMENT,
              "a.data has 100 bytes, but a m x k = 16x4 fp16 matrix needs 128");
  req = InlineRequest(16, 8, 4, 1);
  req.mutable_b()->set_data(std::string(63, '\0'));  // odd: not even whole fp16 elements
  ExpectError(Send(req), grpc::StatusCode::INVALID_ARGUMENT, "b.data has 63 bytes");
}

TEST_F(GemmServiceTest, RefusesAMissingOperand) {
  MultiplyRequest req = RandomRequest(8, 8, 8, 1);
  req.clear_b();
  ExpectError(Send(req), grpc::StatusCode::INVALID_ARGUMENT, "b: no input given");
}

TEST_F(GemmServiceTest, RefusesAnUnknownStep) {
  MultiplyRequest req = RandomRequest(8, 8, 8, 1);
  req.set_step(11);
  ExpectError(Send(req), grpc::StatusCode::INVALID_ARGUMENT, "unknown step 11: steps are 0 (vendor library) to 10");
}

TEST_F(GemmServiceTest, GpuStepsSayWhatTheyNeed) {
  MultiplyRequest req = RandomRequest(256, 256, 256, 1);
  req.set_step(7);
  ExpectError(Send(req), grpc::StatusCode::FAILED_PRECONDITION,
              "step 7 runs on NVIDIA sm_90a or sm_100a GPUs; this server has none");
}

TEST_F(GemmServiceTest, RefusesUnknownEnumValuesAndTooManyRepeats) {
  MultiplyRequest req = RandomRequest(8, 8, 8, 1);
  req.set_verification(static_cast<gemm::v1::Verification>(9));
  ExpectError(Send(req), grpc::StatusCode::INVALID_ARGUMENT, "unknown verification mode 9");
  req = RandomRequest(8, 8, 8, 1);
  req.set_output(static_cast<gemm::v1::OutputMode>(42));
  ExpectError(Send(req), grpc::StatusCode::INVALID_ARGUMENT, "unknown output mode 42");
  req = RandomRequest(8, 8, 8, 1);
  req.set_repeats(config().max_repeats + 1);
  ExpectError(Send(req), grpc::StatusCode::INVALID_ARGUMENT, "repeats = 101 is above this server's limit of 100");
}

TEST_F(GemmServiceTest, RefusesATransientOutputThatIsNotStored) {
  for (auto output : {gemm::v1::OUTPUT_INLINE, gemm::v1::OUTPUT_NONE, gemm::v1::OUTPUT_UNSPECIFIED}) {
    MultiplyRequest req = RandomRequest(8, 8, 8, 1);
    req.set_output(output);
    req.set_transient_output(true);
    ExpectError(Send(req), grpc::StatusCode::INVALID_ARGUMENT,
                "transient_output applies to a D stored by handle (OUTPUT_HANDLE), and this request asks for output " +
                    gemm::v1::OutputMode_Name(output));
  }
}

TEST_F(GemmServiceTest, RefusesDimensionsAboveTheLimit) {
  ExpectError(Send(RandomRequest(8, 8, config().max_dim + 1, 1)), grpc::StatusCode::RESOURCE_EXHAUSTED,
              "shape.k = 65537 is above this server's largest dimension, 65536");
}

TEST_F(GemmServiceTest, RefusesRequestsAboveTheByteLimit) {
  // 65536 x 65536 x 65536: 24 GiB of operands, above the default 4 GiB.
  ExpectError(Send(RandomRequest(65536, 65536, 65536, 1)), grpc::StatusCode::RESOURCE_EXHAUSTED,
              "bytes for A, B and D, above this server's limit of 4294967296");
}

TEST_F(GemmServiceTest, RefusesAnInlineDTooLargeForOneMessage) {
  MultiplyRequest req = RandomRequest(2048, 2048, 8, 1);  // D: 8 MiB > 4 MiB
  req.set_output(gemm::v1::OUTPUT_INLINE);
  ExpectError(Send(req), grpc::StatusCode::RESOURCE_EXHAUSTED, "ask for OUTPUT_HANDLE and DownloadMatrix");
}

TEST_F(GemmServiceTest, RefusesAMessageAboveTheMaxMessageSize) {
  MultiplyRequest req = InlineRequest(1024, 8, 2048, 1);  // A alone is 4 MiB + tags
  EXPECT_EQ(Send(req).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST_F(GemmServiceTest, UnknownAndDeletedHandlesAreNotFound) {
  MultiplyRequest req = RandomRequest(8, 8, 8, 1);
  req.mutable_a()->set_handle(kUnknownHandle);
  ExpectError(Send(req), grpc::StatusCode::NOT_FOUND,
              std::string("a.handle: no matrix with handle ") + kUnknownHandle + " (never uploaded, or deleted)");

  gemm::v1::MatrixInfo info;
  ASSERT_TRUE(client().Upload(8, 8, RandomHalfBytes(8, 8, 1), "", &info).ok());
  ASSERT_TRUE(client().Delete(info.handle()).ok());
  req.mutable_a()->set_handle(info.handle());
  ExpectError(Send(req), grpc::StatusCode::NOT_FOUND, "no matrix with handle");
  ExpectError(client().Delete(info.handle()), grpc::StatusCode::NOT_FOUND, "deleted already");
  std::string bytes;
  ExpectError(client().Download(info.handle(), &bytes), grpc::StatusCode::NOT_FOUND, "no matrix with handle");
}

TEST_F(GemmServiceTest, RefusesAHandleOfTheWrongShape) {
  gemm::v1::MatrixInfo info;
  ASSERT_TRUE(client().Upload(8, 4, RandomHalfBytes(8, 4, 1), "", &info).ok());
  MultiplyRequest req = RandomRequest(8, 8, 8, 1);
  req.mutable_b()->set_handle(info.handle());
  ExpectError(Send(req), grpc::StatusCode::INVALID_ARGUMENT, "is 8x4, but n x k = 8x8");
}

TEST_F(GemmServiceTest, RefusesBrokenUploads) {
  gemm::v1::MatrixInfo info;
  ExpectError(client().Upload(0, 4, "", "", &info), grpc::StatusCode::INVALID_ARGUMENT,
              "header.rows and header.cols must be >= 1");
  ExpectError(client().Upload(8, 8, std::string(100, '\0'), "", &info), grpc::StatusCode::INVALID_ARGUMENT,
              "upload ended after 100 of 128 bytes");
  ExpectError(client().Upload(8, 8, std::string(130, '\0'), "", &info), grpc::StatusCode::INVALID_ARGUMENT,
              "upload sends more than the matrix's 128 bytes (8x8 fp16 elements)");
  // 64 MiB quota: a 8192x8192 matrix (128 MiB) does not fit.
  ExpectError(client().Upload(8192, 8192, std::string(2, '\0'), "", &info), grpc::StatusCode::RESOURCE_EXHAUSTED,
              "matrix quota exhausted");
  gemm::v1::ListMatricesResponse list;
  ASSERT_TRUE(client().ListMatrices(&list).ok());
  EXPECT_EQ(list.used_bytes(), 0u);  // every broken upload gave its quota back
}

TEST_F(GemmServiceTest, AnUploadWithoutHeaderIsRefused) {
  grpc::ClientContext ctx;
  gemm::v1::MatrixInfo info;
  auto stub = gemm::v1::GemmService::NewStub(client().channel());
  auto writer = stub->UploadMatrix(&ctx, &info);
  gemm::v1::UploadMatrixRequest msg;
  msg.set_data("abcd");
  writer->Write(msg);
  writer->WritesDone();
  ExpectError(writer->Finish(), grpc::StatusCode::INVALID_ARGUMENT, "first UploadMatrix message must carry the header");
}

// Bytes that are no message at all, where the server reads the matrix
// streams' messages itself (api/matrix_wire.h).
TEST_F(GemmServiceTest, MatrixStreamsRefuseBytesThatAreNotTheirMessages) {
  const std::string garbage("\x12\xff\xff\xff\xff\x0f", 6);  // data longer than the message
  grpc::Slice slice(garbage);
  const grpc::ByteBuffer bad(&slice, 1);
  {
    grpc::ClientContext ctx;
    gemm::v1::MatrixInfo info;
    std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> writer(grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(
        client().channel().get(),
        grpc::internal::RpcMethod("/gemm.v1.GemmService/UploadMatrix", grpc::internal::RpcMethod::CLIENT_STREAMING),
        &ctx, &info));
    writer->Write(bad);
    writer->WritesDone();
    ExpectError(writer->Finish(), grpc::StatusCode::INVALID_ARGUMENT,
                "the message is not an UploadMatrixRequest in the protobuf wire format");
  }
  {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(
        client().channel().get(),
        grpc::internal::RpcMethod("/gemm.v1.GemmService/DownloadMatrix", grpc::internal::RpcMethod::SERVER_STREAMING),
        &ctx, bad));
    grpc::ByteBuffer chunk;
    EXPECT_FALSE(reader->Read(&chunk));
    ExpectError(reader->Finish(), grpc::StatusCode::INVALID_ARGUMENT,
                "the request is not a DownloadMatrixRequest in the protobuf wire format");
  }
  gemm::v1::ListMatricesResponse list;
  ASSERT_TRUE(client().ListMatrices(&list).ok());
  EXPECT_EQ(list.used_bytes(), 0u);
}

TEST_F(GemmServiceTest, ALabelOverTheLimitIsRefused) {
  gemm::v1::MatrixInfo info;
  ExpectError(client().Upload(1, 1, std::string(2, '\0'), std::string(3 << 20, 'x'), &info),
              grpc::StatusCode::INVALID_ARGUMENT, "the label is 3145728 bytes; at most 256");
  gemm::v1::ListMatricesResponse list;
  ASSERT_TRUE(client().ListMatrices(&list).ok());
  EXPECT_EQ(list.used_bytes(), 0u);
}

TEST_F(GemmServiceTest, OutputHandleBeyondTheQuotaIsRefused) {
  MultiplyRequest req = RandomRequest(8192, 8192, 1, 1);  // D: 128 MiB > 64 MiB quota
  req.set_output(gemm::v1::OUTPUT_HANDLE);
  MultiplyResponse resp;
  int retries = -1;
  ExpectError(client().Multiply(req, &resp, &retries), grpc::StatusCode::RESOURCE_EXHAUSTED,
              "larger than the whole quota");
  EXPECT_EQ(retries, 0) << "no retry can make it fit: the server's pushback stops the retry policy";
}

class WideLimitsTest : public ServerFixture {
 protected:
  void SetUp() override {
    ServerConfig c = LoopbackConfig();
    c.max_dim = int64_t{1} << 31;
    StartServer(c);
  }
};

TEST_F(WideLimitsTest, DimensionsWhoseProductOverflowsAreRefused) {
  const int64_t big = int64_t{1} << 31;
  MultiplyResponse resp;
  ExpectError(client().Multiply(RandomRequest(big, big, big, 1), &resp), grpc::StatusCode::RESOURCE_EXHAUSTED,
              "overflows 64-bit byte counts");
}

}  // namespace
}  // namespace gemmd::testing
