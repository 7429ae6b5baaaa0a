// End-to-end: a real server on a loopback port, a real gRPC channel.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <grpcpp/generic/generic_stub.h>

#include <unistd.h>

#include <filesystem>
#include <latch>
#include <map>
#include <set>
#include <thread>

#include "gemm/random_fill.h"
#include "server_fixture.h"
#include "test_util.h"

namespace gemmd::testing {
namespace {

using ::testing::HasSubstr;
using gemm::v1::MultiplyRequest;
using gemm::v1::MultiplyResponse;

// Well formed, and never made by the server (its handles are random).
constexpr char kUnknownHandle[] = "m-00000000000000000000000000000000";

MultiplyRequest InlineRequest(int64_t m, int64_t n, int64_t k, uint32_t seed) {
  MultiplyRequest req;
  req.mutable_shape()->set_m(m);
  req.mutable_shape()->set_n(n);
  req.mutable_shape()->set_k(k);
  req.mutable_a()->set_data(RandomHalfBytes(m, k, seed));
  req.mutable_b()->set_data(RandomHalfBytes(n, k, seed + 1));
  req.set_output(gemm::v1::OUTPUT_INLINE);
  return req;
}

// A and B by handle, D stored to a handle.
MultiplyRequest HandleRequest(int64_t m, int64_t n, int64_t k, const std::string& a, const std::string& b) {
  MultiplyRequest req;
  req.mutable_shape()->set_m(m);
  req.mutable_shape()->set_n(n);
  req.mutable_shape()->set_k(k);
  req.mutable_a()->set_handle(a);
  req.mutable_b()->set_handle(b);
  req.set_output(gemm::v1::OUTPUT_HANDLE);
  return req;
}

// A and B from the same seed (they differ: the operand is part of the stream).
MultiplyRequest RandomRequest(int64_t m, int64_t n, int64_t k, uint64_t seed) {
  return SeededRequest(m, n, k, seed, seed);
}

void ExpectError(const grpc::Status& st, grpc::StatusCode code, const std::string& text) {
  EXPECT_EQ(st.error_code(), code) << gemmc::CodeName(st.error_code()) << ": " << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr(text));
}

class GemmServiceTest : public ServerFixture {
 protected:
  void SetUp() override { StartServer(); }

  grpc::Status Send(const MultiplyRequest& req, MultiplyResponse* resp = nullptr) {
    MultiplyResponse local;
    return client().Multiply(req, resp ? resp : &local);
  }
};

// ------------------------------------------------------------ happy paths

TEST_F(GemmServiceTest, InlineDataMatchesAnIndependentReference) {
  const int64_t m = 64, n = 48, k = 100;
  MultiplyRequest req = InlineRequest(m, n, k, 7);
  MultiplyResponse resp;
  ASSERT_TRUE(Send(req, &resp).ok());
  const auto ref = ReferenceGemm(ToDouble(req.a().data()), ToDouble(req.b().data()), m, n, k);
  EXPECT_EQ(CountMismatches(resp.d(), ref), 0);
  EXPECT_TRUE(resp.verification().performed());
  EXPECT_TRUE(resp.verification().passed());
  EXPECT_EQ(resp.verification().elements(), static_cast<uint64_t>(m * n));
  EXPECT_EQ(resp.verification().reference(), "openblas-dgemm-fp64");
  EXPECT_DOUBLE_EQ(resp.verification().rtol(), 1e-3);
  EXPECT_DOUBLE_EQ(resp.verification().atol(), 1e-2);
  EXPECT_EQ(resp.engine(), "cpu");
  EXPECT_EQ(resp.device(), "cpu:0");
  EXPECT_GT(resp.timing().kernel_seconds(), 0);
  EXPECT_GE(resp.timing().total_seconds(), resp.timing().kernel_seconds());
  EXPECT_NEAR(resp.tflops(), 2.0 * m * n * k / resp.timing().kernel_seconds() / 1e12, 1e-9);
}

struct Shape {
  int64_t m, n, k;
};
class RaggedShapeTest : public GemmServiceTest, public ::testing::WithParamInterface<Shape> {};

TEST_P(RaggedShapeTest, MatchesReference) {
  const Shape s = GetParam();
  MultiplyRequest req = InlineRequest(s.m, s.n, s.k, static_cast<uint32_t>(s.m * 31 + s.n * 7 + s.k));
  MultiplyResponse resp;
  ASSERT_TRUE(Send(req, &resp).ok());
  EXPECT_TRUE(resp.verification().passed());
  const auto ref = ReferenceGemm(ToDouble(req.a().data()), ToDouble(req.b().data()), s.m, s.n, s.k);
  EXPECT_EQ(CountMismatches(resp.d(), ref), 0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, RaggedShapeTest,
                         ::testing::Values(Shape{1, 1, 1}, Shape{129, 77, 1000}, Shape{1, 257, 3}, Shape{300, 1, 64},
                                           Shape{17, 33, 9}),
                         [](const auto& info) {
                           return std::to_string(info.param.m) + "x" + std::to_string(info.param.n) + "x" +
                                  std::to_string(info.param.k);
                         });

TEST_F(GemmServiceTest, ServerGeneratedInputsFollowTheDocumentedGenerator) {
  const int64_t m = 33, n = 20, k = 70;
  MultiplyRequest req = RandomRequest(m, n, k, 12345);
  req.set_output(gemm::v1::OUTPUT_INLINE);
  MultiplyResponse first, second, other;
  ASSERT_TRUE(Send(req, &first).ok());
  ASSERT_TRUE(Send(req, &second).ok());
  EXPECT_EQ(first.d(), second.d());
  EXPECT_TRUE(first.verification().passed());

  // The client can rebuild the inputs from the seed (gemm/random_fill.h).
  const auto a = SeededOperand(12345, gemm::OperandId::kA, m * k);
  const auto b = SeededOperand(12345, gemm::OperandId::kB, n * k);
  EXPECT_EQ(CountMismatches(first.d(), ReferenceGemm(a, b, m, n, k)), 0);

  req.mutable_a()->mutable_random()->set_seed(54321);
  ASSERT_TRUE(Send(req, &other).ok());
  EXPECT_NE(first.d(), other.d());
}

TEST_F(GemmServiceTest, RepeatsReportTheMedianAndVerificationCanBeSkipped) {
  MultiplyRequest req = RandomRequest(96, 96, 96, 3);
  req.set_repeats(5);
  req.set_verification(gemm::v1::VERIFICATION_NONE);
  MultiplyResponse resp;
  ASSERT_TRUE(Send(req, &resp).ok());
  EXPECT_EQ(resp.timing().repeats(), 5u);
  EXPECT_FALSE(resp.verification().performed());
  EXPECT_TRUE(resp.d().empty());  // OUTPUT_NONE by default
}

TEST_F(GemmServiceTest, ChunkedUploadMultiplyByHandleAndChunkedDownload) {
  // A is larger than one 4 MiB message: it must travel in chunks.
  const int64_t m = 1100, n = 64, k = 2048;
  const std::string a = RandomHalfBytes(m, k, 1), b = RandomHalfBytes(n, k, 2);
  ASSERT_GT(a.size(), config().max_message_bytes);
  gemm::v1::MatrixInfo ai, bi;
  uint64_t progress_calls = 0;
  ASSERT_TRUE(client().Upload(m, k, a, "A", &ai, [&](uint64_t, uint64_t) { ++progress_calls; }, 1 << 20).ok());
  ASSERT_TRUE(client().Upload(n, k, b, "B", &bi, {}, 999'998).ok());  // odd chunking is fine
  EXPECT_GE(progress_calls, 4u);
  EXPECT_EQ(ai.rows(), m);
  EXPECT_EQ(ai.bytes(), a.size());

  MultiplyRequest req = HandleRequest(m, n, k, ai.handle(), bi.handle());
  MultiplyResponse resp;
  ASSERT_TRUE(Send(req, &resp).ok());
  EXPECT_TRUE(resp.verification().passed());
  ASSERT_FALSE(resp.d_handle().empty());

  std::string d;
  gemm::v1::MatrixInfo di;
  ASSERT_TRUE(client().Download(resp.d_handle(), &d, &di).ok());
  EXPECT_EQ(di.rows(), m);
  EXPECT_EQ(di.cols(), n);
  EXPECT_EQ(CountMismatches(d, ReferenceGemm(ToDouble(a), ToDouble(b), m, n, k)), 0);

  gemm::v1::ListMatricesResponse list;
  ASSERT_TRUE(client().ListMatrices(&list).ok());
  EXPECT_EQ(list.matrices_size(), 3);
  uint64_t charged = 0;  // each matrix: data, label and the store's bookkeeping
  for (const auto& info : list.matrices()) charged += MatrixStore::Charge(info.bytes(), info.label().size());
  EXPECT_EQ(charged, MatrixStore::Charge(a.size(), 1) + MatrixStore::Charge(b.size(), 1) +
                         MatrixStore::Charge(d.size(), std::string("D of a step 0 multiply").size()));
  EXPECT_EQ(list.used_bytes(), charged);

  for (const auto& h : {ai.handle(), bi.handle(), resp.d_handle()}) ASSERT_TRUE(client().Delete(h).ok());
  ASSERT_TRUE(client().ListMatrices(&list).ok());
  EXPECT_EQ(list.matrices_size(), 0);
  EXPECT_EQ(list.used_bytes(), 0u);
}

TEST_F(GemmServiceTest, OperandsInRowBlocksMultiplyAsTheWholeMatrices) {
  const int64_t m = 100, n = 70, k = 96;
  const std::string a = RandomHalfBytes(m, k, 11), b = RandomHalfBytes(n, k, 12);
  // A in three uneven blocks, B in two; each block a matrix of its own.
  auto upload_blocks = [&](const std::string& bytes, std::vector<int64_t> rows, gemm::v1::Operand* op) {
    int64_t at = 0;
    for (int64_t r : rows) {
      gemm::v1::MatrixInfo info;
      ASSERT_TRUE(client().Upload(r, k, std::string_view(bytes).substr(at * k * 2, r * k * 2), "block", &info).ok());
      op->mutable_row_blocks()->add_handles(info.handle());
      at += r;
    }
  };
  MultiplyRequest req;
  req.mutable_shape()->set_m(m);
  req.mutable_shape()->set_n(n);
  req.mutable_shape()->set_k(k);
  upload_blocks(a, {1, 60, 39}, req.mutable_a());
  upload_blocks(b, {35, 35}, req.mutable_b());
  req.set_output(gemm::v1::OUTPUT_INLINE);
  MultiplyResponse resp;
  ASSERT_TRUE(Send(req, &resp).ok());
  EXPECT_TRUE(resp.verification().passed());
  EXPECT_EQ(CountMismatches(resp.d(), ReferenceGemm(ToDouble(a), ToDouble(b), m, n, k)), 0);
}

TEST_F(GemmServiceTest, RowBlocksThatDoNotMakeTheOperandAreRefused) {
  const int64_t k = 16;
  auto upload = [&](int64_t rows, int64_t cols) {
    gemm::v1::MatrixInfo info;
    EXPECT_TRUE(client().Upload(rows, cols, RandomHalfBytes(rows, cols, 1), "block", &info).ok());
    return info.handle();
  };
  const std::string r10 = upload(10, k), r20 = upload(20, k), wide = upload(10, k + 1);
  struct Case {
    std::vector<std::string> handles;
    grpc::StatusCode code;
    std::string text;
  };
  const std::vector<Case> cases = {
      {{r10, kUnknownHandle}, grpc::StatusCode::NOT_FOUND, "a.row_blocks.handles[1]: "},
      {{r10, "m-no-such"}, grpc::StatusCode::INVALID_ARGUMENT, "a.row_blocks.handles[1]: \"m-no-such\" is not a matrix handle"},
      {{r10, wide}, grpc::StatusCode::INVALID_ARGUMENT, "a.row_blocks.handles[1] " + wide + " is 10x17, but m x k = 30x16"},
      {{r10, r10}, grpc::StatusCode::INVALID_ARGUMENT, "a.row_blocks have 20 rows in all, but m x k = 30x16"},
      {{r20, r20}, grpc::StatusCode::INVALID_ARGUMENT, "and the blocks before it have 20 rows"},
      {{}, grpc::StatusCode::INVALID_ARGUMENT, "a.row_blocks lists no handles"},
      {std::vector<std::string>(65, r10), grpc::StatusCode::INVALID_ARGUMENT, "lists 65 handles; at most 64"},
      {{r10, ""}, grpc::StatusCode::INVALID_ARGUMENT, "a.row_blocks.handles[1] is empty"},
  };
  for (const Case& c : cases) {
    MultiplyRequest req = RandomRequest(30, 8, k, 1);
    auto* blocks = req.mutable_a()->mutable_row_blocks();
    for (const auto& h : c.handles) blocks->add_handles(h);
    ExpectError(Send(req), c.code, c.text);
  }
  // The refusals kept nothing: only the three uploads are stored.
  gemm::v1::ListMatricesResponse list;
  ASSERT_TRUE(client().ListMatrices(&list).ok());
  EXPECT_EQ(list.matrices_size(), 3);
}

TEST_F(GemmServiceTest, ADownloadRangeSendsExactlyThoseBytes) {
  // Larger than one message, so that a range can span several chunks.
  const int64_t rows = 1100, cols = 2048;
  const std::string m = RandomHalfBytes(rows, cols, 3);
  ASSERT_GT(m.size(), config().max_message_bytes);
  gemm::v1::MatrixInfo info;
  ASSERT_TRUE(client().Upload(rows, cols, m, "ranged", &info).ok());
  const uint64_t total = m.size();
  struct Range {
    uint64_t offset, length;
  };
  for (const Range r : {Range{0, 1000}, Range{1001, 777}, Range{100, total - 200}, Range{total - 5, 5}}) {
    std::string got(r.length, '\0');
    ASSERT_TRUE(client().DownloadRange(info.handle(), r.offset, r.length, got.data()).ok()) << r.offset;
    EXPECT_EQ(got, m.substr(r.offset, r.length)) << r.offset << "+" << r.length;
  }
  // On the wire, length 0 means "to the end"; each chunk names its offset
  // in the whole matrix.
  auto stub = gemm::v1::GemmService::NewStub(client().channel());
  for (const uint64_t offset : {uint64_t{0}, uint64_t{12345}, total}) {
    grpc::ClientContext ctx;
    gemm::v1::DownloadMatrixRequest req;
    req.set_handle(info.handle());
    req.set_offset(offset);
    auto reader = stub->DownloadMatrix(&ctx, req);
    gemm::v1::MatrixChunk chunk;
    std::string got;
    int chunks = 0;
    while (reader->Read(&chunk)) {
      EXPECT_EQ(chunk.offset(), offset + got.size());
      EXPECT_EQ(chunk.has_info(), chunks++ == 0);  // the first chunk only
      got += chunk.data();
    }
    ASSERT_TRUE(reader->Finish().ok()) << offset;
    EXPECT_EQ(got, m.substr(offset)) << offset;
  }
}

TEST_F(GemmServiceTest, ARangePastTheMatrixEndIsOutOfRange) {
  const std::string m = RandomHalfBytes(10, 10, 4);  // 200 bytes
  gemm::v1::MatrixInfo info;
  ASSERT_TRUE(client().Upload(10, 10, m, "small", &info).ok());
  char buf[512];
  struct Range {
    uint64_t offset, length;
  };
  for (const Range r : {Range{201, 0}, Range{150, 51}, Range{0, 201}, Range{1, UINT64_MAX}, Range{UINT64_MAX, 2}}) {
    ExpectError(client().DownloadRange(info.handle(), r.offset, r.length, buf), grpc::StatusCode::OUT_OF_RANGE,
                "past the end of " + info.handle() + ", which has 200 bytes");
  }
  ExpectError(client().DownloadRange(kUnknownHandle, 0, 10, buf), grpc::StatusCode::NOT_FOUND, "");
  // The server is unharmed, and the matrix still whole.
  std::string whole;
  ASSERT_TRUE(client().Download(info.handle(), &whole).ok());
  EXPECT_EQ(whole, m);
}

TEST_F(GemmServiceTest, AParallelDownloadOverOwnConnectionsReassemblesTheMatrix) {
  const int64_t rows = 1100, cols = 2047;  // not a multiple of the connections
  const std::string m = RandomHalfBytes(rows, cols, 5);
  gemm::v1::MatrixInfo info;
  ASSERT_TRUE(client().Upload(rows, cols, m, "parallel", &info).ok());
  for (size_t n : {1, 3, 4}) {
    const auto own = gemmc::OwnConnections(client(), n);
    std::vector<gemmc::GemmClient*> clients;
    for (const auto& c : own) clients.push_back(c.get());
    std::string got(m.size(), '\0');
    ASSERT_TRUE(gemmc::DownloadParallel(clients, info.handle(), m.size(), got.data()).ok()) << n;
    EXPECT_EQ(got, m) << n << " connections";
  }
}

TEST_F(GemmServiceTest, ListKernelsDescribesEveryStepDeviceAndLimit) {
  gemm::v1::ListKernelsResponse r;
  ASSERT_TRUE(client().ListKernels(&r).ok());
  ASSERT_EQ(r.kernels_size(), 11);
  EXPECT_EQ(r.engine(), "cpu");
  EXPECT_TRUE(r.kernels(0).available());
  for (int s = 1; s <= 10; ++s) {
    EXPECT_EQ(r.kernels(s).step(), static_cast<uint32_t>(s));
    EXPECT_FALSE(r.kernels(s).available());
    EXPECT_THAT(r.kernels(s).unavailable_reason(), HasSubstr("runs on NVIDIA sm_90a"));
    EXPECT_FALSE(r.kernels(s).description().empty());
  }
  EXPECT_EQ(r.kernels(1).limits().max_k(), 64);
  EXPECT_EQ(r.kernels(2).limits().max_m(), 128);
  // Where a step's design serves shapes poorly, ListKernels says so.
  EXPECT_TRUE(r.kernels(0).poor_fit().empty());
  EXPECT_THAT(r.kernels(10).poor_fit(), ::testing::AllOf(HasSubstr("SMs idle"), HasSubstr("splits K")));
  ASSERT_EQ(r.devices_size(), 1);
  EXPECT_EQ(r.devices(0).id(), "cpu:0");
  EXPECT_TRUE(r.devices(0).healthy());
  EXPECT_THAT(r.devices(0).available_steps(), ::testing::ElementsAre(0u));
  EXPECT_EQ(r.limits().max_message_bytes(), config().max_message_bytes);
  EXPECT_EQ(r.limits().matrix_quota_bytes(), config().matrix_quota_bytes);
}

TEST_F(GemmServiceTest, HealthIsServingForTheServerAndTheService) {
  grpc::health::v1::HealthCheckResponse::ServingStatus status{};
  ASSERT_TRUE(client().Health("", &status).ok());
  EXPECT_EQ(status, grpc::health::v1::HealthCheckResponse::SERVING);
  ASSERT_TRUE(client().Health("gemm.v1.GemmService", &status).ok());
  EXPECT_EQ(status, grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(client().Health("no.such.Service", &status).error_code(), grpc::StatusCode::NOT_FOUND);
}

// What grpcurl does first: ask the reflection service to list the services.
// Sent as raw bytes (ServerReflectionRequest{list_services: ""}) because the
// reflection stubs live inside libgrpc++_reflection already.
TEST_F(GemmServiceTest, ReflectionListsTheService) {
  grpc::GenericStub stub(client().channel());
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto await = [&](intptr_t want) {
    void* tag = nullptr;
    bool ok = false;
    EXPECT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(reinterpret_cast<intptr_t>(tag), want);
    return ok;
  };
  auto call = stub.PrepareCall(&ctx, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(await(1));
  grpc::Slice request(std::string("\x3a\x00", 2));  // field 7 (list_services), empty string
  grpc::ByteBuffer out(&request, 1);
  call->Write(out, reinterpret_cast<void*>(2));
  ASSERT_TRUE(await(2));
  call->WritesDone(reinterpret_cast<void*>(3));
  ASSERT_TRUE(await(3));
  grpc::ByteBuffer in;
  call->Read(&in, reinterpret_cast<void*>(4));
  ASSERT_TRUE(await(4));
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(in.Dump(&slices).ok());
  std::string reply;
  for (const auto& s : slices) reply.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_THAT(reply, HasSubstr("gemm.v1.GemmService"));
  EXPECT_THAT(reply, HasSubstr("grpc.health.v1.Health"));
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  await(5);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(GemmServiceTest, ManyConcurrentClientsAllGetVerifiedResults) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        MultiplyResponse resp;
        if (Send(RandomRequest(40 + t, 50 + i, 60, t * 100 + i), &resp).ok() && resp.verification().passed()) ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 40);
}

// ------------------------------------------------------------- bad inputs

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

// A server that keeps its matrices on disk (--matrix-dir), as the container
// image runs it.
class DurableStoreTest : public ServerFixture {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gemmd-service-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    ServerConfig c = LoopbackConfig();
    c.matrix_dir = dir_.string();
    StartServer(c);
  }
  void TearDown() override {
    ServerFixture::TearDown();
    std::filesystem::remove_all(dir_);
  }
  // The matrices on disk: their handles.
  std::set<std::string> Files() const {
    std::set<std::string> handles;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      if (entry.path().extension() == ".gemm") handles.insert(entry.path().stem().string());
    }
    return handles;
  }

  std::filesystem::path dir_;
};

TEST_F(DurableStoreTest, TransientUploadsAndResultsStayOffTheDisk) {
  const int64_t m = 40, n = 24, k = 64;
  const std::string a = RandomHalfBytes(m, k, 1), b = RandomHalfBytes(n, k, 2);
  gemm::v1::MatrixInfo ai, bi;
  ASSERT_TRUE(client().Upload(m, k, a, "A, durable", &ai).ok());
  gemm::v1::MatrixHeader header;
  header.set_rows(n);
  header.set_cols(k);
  header.set_label("B, scratch");
  header.set_transient(true);
  ASSERT_TRUE(client().Upload(header, b, &bi).ok());
  EXPECT_FALSE(ai.transient());
  EXPECT_TRUE(bi.transient());
  EXPECT_EQ(Files(), std::set<std::string>{ai.handle()});

  MultiplyRequest req = HandleRequest(m, n, k, ai.handle(), bi.handle());
  req.set_transient_output(true);
  MultiplyResponse scratch_d;
  ASSERT_TRUE(client().Multiply(req, &scratch_d).ok());
  ASSERT_TRUE(scratch_d.verification().passed());
  req.set_transient_output(false);
  MultiplyResponse durable_d;
  ASSERT_TRUE(client().Multiply(req, &durable_d).ok());
  EXPECT_EQ(Files(), (std::set<std::string>{ai.handle(), durable_d.d_handle()}));

  gemm::v1::ListMatricesResponse list;
  ASSERT_TRUE(client().ListMatrices(&list).ok());
  std::map<std::string, bool> transient;
  for (const auto& info : list.matrices()) transient[info.handle()] = info.transient();
  EXPECT_EQ(transient, (std::map<std::string, bool>{{ai.handle(), false},
                                                    {bi.handle(), true},
                                                    {scratch_d.d_handle(), true},
                                                    {durable_d.d_handle(), false}}));
  std::string d;
  ASSERT_TRUE(client().Download(scratch_d.d_handle(), &d).ok());
  EXPECT_EQ(CountMismatches(d, ReferenceGemm(ToDouble(a), ToDouble(b), m, n, k)), 0);
  for (const auto& h : {ai.handle(), bi.handle(), scratch_d.d_handle(), durable_d.d_handle()}) {
    ASSERT_TRUE(client().Delete(h).ok()) << h;
  }
  EXPECT_TRUE(Files().empty());
}

// The smallest message the server allows: ListMatrices must page, and a
// download's first chunk must leave room for its header.
class SmallMessagesTest : public ServerFixture {
 protected:
  void SetUp() override {
    ServerConfig c = LoopbackConfig();
    c.max_message_bytes = 4096;
    StartServer(c);
  }
};

// Reproduced once: after uploads with long labels, every ListMatrices call
// failed with RESOURCE_EXHAUSTED ("Sent message larger than max").
TEST_F(SmallMessagesTest, ListMatricesPagesWithinOneMessage) {
  std::set<std::string> uploaded;
  for (int i = 0; i < 40; ++i) {
    gemm::v1::MatrixInfo info;
    ASSERT_TRUE(client().Upload(1, 1, std::string(2, '\0'), std::string(200, 'a' + i % 26), &info).ok());
    uploaded.insert(info.handle());
  }
  gemm::v1::ListMatricesRequest req;
  gemm::v1::ListMatricesResponse page;
  ASSERT_TRUE(client().ListMatricesPage(req, &page).ok());  // 40 x ~250 bytes: more than one 4 KiB reply
  EXPECT_GT(page.matrices_size(), 0);
  EXPECT_LT(page.matrices_size(), 40);
  EXPECT_FALSE(page.next_page_token().empty());

  req.set_page_size(5);
  std::set<std::string> listed;
  int pages = 0;
  do {
    ASSERT_TRUE(client().ListMatricesPage(req, &page).ok());
    EXPECT_LE(page.matrices_size(), 5);
    for (const auto& m : page.matrices()) EXPECT_TRUE(listed.insert(m.handle()).second) << "listed twice";
    req.set_page_token(page.next_page_token());
    ++pages;
  } while (!req.page_token().empty() && pages < 100);
  EXPECT_EQ(pages, 8);
  EXPECT_EQ(listed, uploaded);

  gemm::v1::ListMatricesResponse all;  // the client library follows the pages
  ASSERT_TRUE(client().ListMatrices(&all).ok());
  EXPECT_EQ(all.matrices_size(), 40);
}

TEST_F(SmallMessagesTest, ADownloadsFirstChunkLeavesRoomForItsHeader) {
  gemm::v1::MatrixInfo info;
  const std::string bytes(64 * 64 * 2, '\x3c');
  ASSERT_TRUE(client().Upload(64, 64, bytes, std::string(256, 'L'), &info).ok());
  std::string back;
  ASSERT_TRUE(client().Download(info.handle(), &back).ok());
  EXPECT_EQ(back, bytes);
}

TEST_F(WideLimitsTest, DimensionsWhoseProductOverflowsAreRefused) {
  const int64_t big = int64_t{1} << 31;
  MultiplyResponse resp;
  ExpectError(client().Multiply(RandomRequest(big, big, big, 1), &resp), grpc::StatusCode::RESOURCE_EXHAUSTED,
              "overflows 64-bit byte counts");
}

// ------------------------------------ queueing, deadlines, cancellation

using GatedServiceTest = GatedServerFixture;

// A worker thread's first calls into cuBLAS cost its first request (a fresh
// server's first 4096^3 kernel x1.2-1.55 on an H100): each worker warms
// itself before the server says SERVING.
using WorkerWarmupTest = ServerFixture;

TEST_F(WorkerWarmupTest, EveryWorkerRunsTheEnginesWarmUpOnceBeforeServing) {
  auto engine = std::make_unique<GatedEngine>();
  GatedEngine* gated = engine.get();
  ServerConfig c = LoopbackConfig();
  c.workers_per_device = 3;
  StartServer(c, std::move(engine));
  const std::vector<std::thread::id> threads = gated->warmed_by();
  EXPECT_EQ(threads.size(), 3u);
  EXPECT_EQ(std::set<std::thread::id>(threads.begin(), threads.end()).size(), 3u) << "each on a worker of its own";
  EXPECT_EQ(std::count(threads.begin(), threads.end(), std::this_thread::get_id()), 0);
  EXPECT_EQ(gated->runs(), 0) << "no request ran before it";
}

TEST_F(GatedServiceTest, AFullQueueIsResourceExhausted) {
  auto held = HoldDevice();
  MultiplyResponse r2;
  grpc::Status s2;
  std::thread t2([&] { s2 = client().Multiply(RandomRequest(8, 8, 8, 2), &r2); });
  // Once the second one sits in the queue (capacity 1), a third is refused.
  for (int i = 0; i < 1000 && server().queued() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(server().queued(), 1u);
  MultiplyResponse r3;
  ExpectError(client().Multiply(RandomRequest(8, 8, 8, 3), &r3), grpc::StatusCode::RESOURCE_EXHAUSTED,
              "queue is full (1 requests waiting)");
  EXPECT_TRUE(ReleaseDevice(*held).ok());
  t2.join();
  EXPECT_TRUE(s2.ok());
}

TEST_F(GatedServiceTest, AnExpiredDeadlineDropsTheWork) {
  auto held = HoldDevice();

  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  auto stub = gemm::v1::GemmService::NewStub(client().channel());
  MultiplyResponse r2;
  grpc::Status s2 = stub->Multiply(&ctx, RandomRequest(8, 8, 8, 2), &r2);
  EXPECT_EQ(s2.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server's copy of the deadline is the client's timeout counted from
  // arrival, a little later than the client's: let it pass there too.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  EXPECT_TRUE(ReleaseDevice(*held).ok());
  // The expired request leaves the (one-slot) queue just after request 1's reply.
  for (int i = 0; i < 1000 && server().queued() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  // A later request still works, and the expired one never reached the GEMM.
  MultiplyResponse r3;
  EXPECT_TRUE(client().Multiply(RandomRequest(8, 8, 8, 3), &r3).ok());
  EXPECT_EQ(gate_->runs(), 2);
  // Counted as what it was: a deadline miss (the error-ratio alert sees
  // those), not a client's cancellation.
  const std::string metrics = MetricsText(server());
  EXPECT_EQ(Sample(metrics, "gemm_requests_total{code=\"DEADLINE_EXCEEDED\",method=\"Multiply\",step=\"0\"}"), 1);
  EXPECT_LE(Sample(metrics, "gemm_requests_total{code=\"CANCELLED\",method=\"Multiply\",step=\"0\"}"), 0);
}

TEST_F(GatedServiceTest, ACancelledRequestIsDroppedAndLeaksNothing) {
  auto held = HoldDevice();

  // Queued behind the first, holding quota for its D; then cancelled.
  grpc::ClientContext ctx;
  auto stub = gemm::v1::GemmService::NewStub(client().channel());
  MultiplyRequest req = RandomRequest(512, 512, 8, 2);
  req.set_output(gemm::v1::OUTPUT_HANDLE);
  MultiplyResponse r2;
  grpc::Status s2;
  std::thread t2([&] { s2 = stub->Multiply(&ctx, req, &r2); });
  // D's quota is held while queued.
  const uint64_t d_charge = MatrixStore::Charge(512 * 512 * 2, std::string("D of a step 0 multiply").size());
  EXPECT_EQ(WaitForUsedBytes(d_charge), d_charge);
  ctx.TryCancel();
  t2.join();
  EXPECT_EQ(s2.error_code(), grpc::StatusCode::CANCELLED);
  // The client knows at once; the server hears of it over the connection a
  // moment later. Give it that moment before the device frees up.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  EXPECT_TRUE(ReleaseDevice(*held).ok());
  EXPECT_EQ(WaitForUsedBytes(0), 0u);
  EXPECT_EQ(gate_->runs(), 1);  // the cancelled GEMM never ran
}

TEST_F(GatedServiceTest, AnUploadCancelledMidwayGivesItsQuotaBack) {
  grpc::ClientContext ctx;
  gemm::v1::MatrixInfo info;
  auto stub = gemm::v1::GemmService::NewStub(client().channel());
  auto writer = stub->UploadMatrix(&ctx, &info);
  gemm::v1::UploadMatrixRequest msg;
  msg.mutable_header()->set_rows(1024);
  msg.mutable_header()->set_cols(1024);
  msg.set_data(std::string(1 << 20, '\1'));  // half of it
  ASSERT_TRUE(writer->Write(msg));
  // Charged as it arrives: the half received and the bookkeeping.
  EXPECT_EQ(WaitForUsedBytes(MatrixStore::Charge(1u << 20, 0)), MatrixStore::Charge(1u << 20, 0));
  ctx.TryCancel();
  EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(WaitForUsedBytes(0), 0u);
  gemm::v1::ListMatricesResponse list;
  ASSERT_TRUE(client().ListMatrices(&list).ok());
  EXPECT_EQ(list.matrices_size(), 0);
}

// A client that cancels after D was stored under a handle never learns the
// handle: the server deletes it instead of holding its quota forever.
class CancelAfterCommitTest : public ServerFixture {};

TEST_F(CancelAfterCommitTest, AResultHandleIsDeletedWhenTheCallIsCancelledBeforeTheReply) {
  std::latch reply_ready(1);
  StartServer(LoopbackConfig(), nullptr, [&](GemmServer& s) {
    s.SetBeforeReplyHookForTest([&](grpc::ServerContextBase* ctx) {
      reply_ready.count_down();  // D is committed; hold the reply until the cancellation arrives
      for (int i = 0; i < 500 && !ctx->IsCancelled(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    });
  });
  grpc::ClientContext ctx;
  auto stub = gemm::v1::GemmService::NewStub(client().channel());
  MultiplyRequest req = RandomRequest(64, 64, 64, 1);
  req.set_output(gemm::v1::OUTPUT_HANDLE);
  MultiplyResponse resp;
  grpc::Status status;
  std::thread call([&] { status = stub->Multiply(&ctx, req, &resp); });
  reply_ready.wait();
  ctx.TryCancel();
  call.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(WaitForUsedBytes(0), 0u);
  gemm::v1::ListMatricesResponse list;
  ASSERT_TRUE(client().ListMatrices(&list).ok());
  EXPECT_EQ(list.matrices_size(), 0);
}

// A client that sends an upload's header for most of the quota and then
// nothing used to block every other upload and OUTPUT_HANDLE request for
// good. The stream is cancelled after --stream-idle-seconds and its quota
// comes back.
class StalledStreamTest : public ServerFixture {
 protected:
  void SetUp() override {
    ServerConfig c = LoopbackConfig();
    c.stream_idle_seconds = 0.5;
    StartServer(c);
  }
};

TEST_F(StalledStreamTest, AnUploadThatSendsNothingEndsWithDeadlineExceededAndHeldNoQuota) {
  grpc::ClientContext ctx;
  gemm::v1::MatrixInfo info;
  auto stub = gemm::v1::GemmService::NewStub(client().channel());
  auto writer = stub->UploadMatrix(&ctx, &info);
  gemm::v1::UploadMatrixRequest header;
  header.mutable_header()->set_rows(4096);
  header.mutable_header()->set_cols(6144);  // 48 MiB of the 64 MiB quota
  ASSERT_TRUE(writer->Write(header));
  // While it stalls, the caller sees its upload in progress, and the
  // quota holds only its bookkeeping: another upload of the same size fits.
  gemm::v1::ListMatricesResponse list;
  for (int i = 0; i < 100 && list.matrices_size() == 0; ++i) {
    list.Clear();
    ASSERT_TRUE(client().ListMatrices(&list).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(list.matrices_size(), 1);
  EXPECT_EQ(list.matrices(0).state(), gemm::v1::MATRIX_UPLOADING);
  EXPECT_EQ(list.matrices(0).rows(), 4096);
  EXPECT_EQ(list.matrices(0).received_bytes(), 0u);
  EXPECT_EQ(list.used_bytes(), MatrixStore::kOverheadBytes);
  // After the idle limit the stream ends, and the client is told why.
  const grpc::Status st = writer->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(st.error_message(), HasSubstr("the upload moved no data for"));
  EXPECT_THAT(st.error_message(), HasSubstr("--stream-idle-seconds"));
  EXPECT_EQ(WaitForUsedBytes(0), 0u);
  gemm::v1::MatrixInfo other;
  EXPECT_TRUE(client().Upload(4096, 6144, std::string(48u << 20, '\0'), "", &other).ok());
}

// A download whose client stops reading holds its matrix (a deleted one
// too) until the watchdog cancels it.
TEST_F(StalledStreamTest, ADownloadNobodyReadsIsCancelledAndLetsItsMatrixGo) {
  gemm::v1::MatrixInfo info;
  ASSERT_TRUE(client().Upload(2048, 4096, std::string(16u << 20, '\x3c'), "", &info).ok());
  grpc::ClientContext ctx;
  auto stub = gemm::v1::GemmService::NewStub(client().channel());
  gemm::v1::DownloadMatrixRequest req;
  req.set_handle(info.handle());
  auto reader = stub->DownloadMatrix(&ctx, req);
  gemm::v1::MatrixChunk chunk;
  ASSERT_TRUE(reader->Read(&chunk));  // started; then the client reads no more
  ASSERT_TRUE(client().Delete(info.handle()).ok());
  gemm::v1::ListMatricesResponse list;
  ASSERT_TRUE(client().ListMatrices(&list).ok());
  EXPECT_GT(list.used_bytes(), 16u << 20);  // the stalled download still holds it
  EXPECT_EQ(WaitForUsedBytes(0), 0u);
  ctx.TryCancel();
}

TEST_F(StalledStreamTest, AStreamThatKeepsMovingIsNotCancelled) {
  grpc::ClientContext ctx;
  gemm::v1::MatrixInfo info;
  auto stub = gemm::v1::GemmService::NewStub(client().channel());
  auto writer = stub->UploadMatrix(&ctx, &info);
  gemm::v1::UploadMatrixRequest msg;
  msg.mutable_header()->set_rows(1);
  msg.mutable_header()->set_cols(8);
  ASSERT_TRUE(writer->Write(msg));
  msg.Clear();
  for (int i = 0; i < 8; ++i) {  // 2 bytes every 0.2 s: 1.6 s in all, never 0.5 s idle
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    msg.set_data(std::string(2, '\0'));
    ASSERT_TRUE(writer->Write(msg));
  }
  ASSERT_TRUE(writer->WritesDone());
  EXPECT_TRUE(writer->Finish().ok());
  EXPECT_EQ(info.bytes(), 16u);
}

// ------------------------------------------------------------ lost devices

// A CPU engine whose one device a test can lose, the way the CUDA engine
// loses its GPUs after a sticky error: the GEMM that finds the fault fails
// INTERNAL and the device is unhealthy from then on (device_fault_gpu_test
// plants a real one on a GPU).
class LosableEngine final : public Engine {
 public:
  std::string name() const override { return inner_.name(); }
  std::vector<DeviceDescription> devices() const override { return inner_.devices(); }
  StepAvailability availability(int step, int device) const override { return inner_.availability(step, device); }
  bool healthy(int) const override { return !lost_; }
  absl::Status Warmup(int device) override { return inner_.Warmup(device); }
  absl::StatusOr<GemmReport> Run(int device, const GemmJob& job) override {
    if (fault_planted_.exchange(false)) {
      lost_ = true;
      return absl::InternalError("cpu:0: planted fault (the device's context is lost; it serves no more requests)");
    }
    if (lost_) return absl::UnavailableError("cpu:0 is out of service");
    return inner_.Run(device, job);
  }
  void PlantFault() { fault_planted_ = true; }

 private:
  CpuEngine inner_;
  std::atomic<bool> fault_planted_{false}, lost_{false};
};

class LostDeviceTest : public ServerFixture {
 protected:
  void SetUp() override {
    auto engine = std::make_unique<LosableEngine>();
    engine_ = engine.get();
    StartServer(LoopbackConfig(), std::move(engine),
                [this](GemmServer& s) { s.OnAllDevicesLost([this] { ++lost_callbacks_; }); });
  }
  grpc::health::v1::HealthCheckResponse::ServingStatus Health() {
    grpc::health::v1::HealthCheckResponse::ServingStatus status{};
    EXPECT_TRUE(client().Health("", &status).ok());
    return status;
  }
  LosableEngine* engine_ = nullptr;
  std::atomic<int> lost_callbacks_{0};  // gemmd's main drains and exits for a restart on this
};

TEST_F(LostDeviceTest, TheServerSaysSoEverywhereAndRefusesWorkAsUnavailable) {
  MultiplyResponse resp;
  ASSERT_TRUE(client().Multiply(RandomRequest(16, 16, 16, 1), &resp).ok());
  EXPECT_EQ(Health(), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(Sample(MetricsText(server()), "gemm_device_healthy{device=\"cpu:0\"}"), 1);

  EXPECT_EQ(lost_callbacks_.load(), 0);

  engine_->PlantFault();
  ExpectError(client().Multiply(RandomRequest(16, 16, 16, 2), &resp), grpc::StatusCode::INTERNAL,
              "context is lost");
  EXPECT_EQ(lost_callbacks_.load(), 1);
  EXPECT_EQ(Health(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  grpc::health::v1::HealthCheckResponse::ServingStatus service{};
  ASSERT_TRUE(client().Health("gemm.v1.GemmService", &service).ok());
  EXPECT_EQ(service, grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(Sample(MetricsText(server()), "gemm_device_healthy{device=\"cpu:0\"}"), 0);
  gemm::v1::ListKernelsResponse kernels;
  ASSERT_TRUE(client().ListKernels(&kernels).ok());
  ASSERT_EQ(kernels.devices_size(), 1);
  EXPECT_FALSE(kernels.devices(0).healthy());

  // Later work is refused before it queues, as the server's state (retry
  // elsewhere), not as the request's fault.
  ExpectError(client().Multiply(RandomRequest(16, 16, 16, 3), &resp), grpc::StatusCode::UNAVAILABLE,
              "every device of this server is out of service");
  EXPECT_EQ(server().queued(), 0u);
  EXPECT_EQ(lost_callbacks_.load(), 1);  // once, not per request
}

}  // namespace
}  // namespace gemmd::testing
