// End-to-end: a real server on a loopback port, a real gRPC channel; what
// a request that goes right gets. Refusals: gemm_service_refusals_test.cpp;
// full queues, deadlines, cancellations and lost devices:
// gemm_service_disruption_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <grpcpp/generic/generic_stub.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "gemm/random_fill.h"
#include "gemm_service_fixture.h"

namespace gemmd::testing {
namespace {

using ::testing::HasSubstr;
using gemm::v1::MultiplyRequest;
using gemm::v1::MultiplyResponse;

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

}  // namespace
}  // namespace gemmd::testing
