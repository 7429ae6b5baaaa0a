// What a careless or hostile client can do to a running gemmd, end to end
// on a loopback server: strings that would forge log lines or overflow a
// status, upload headers that would squat on the quota, idle streams that
// would hold a shutdown, and the handles of lost matrices.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "server_fixture.h"

namespace gemmd::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Everything gemmd logs while it lives, instead of stderr.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text_);
    auto logger = std::make_shared<spdlog::logger>("captured", sink);
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %l %v");
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() {
    spdlog::default_logger()->flush();
    return text_.str();
  }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> previous_;
};

grpc::Status Delete(gemmc::GemmClient& client, const std::string& handle) { return client.Delete(handle); }

class HostileClientTest : public ServerFixture {};

// A handle is the server's own syntax or nothing: a forged log line, a NUL
// or a megabyte of handle is refused at once, and echoed only as a short
// escaped prefix, in the status and in the log.
TEST_F(HostileClientTest, HandlesThatAreNotTheServersSyntaxAreRefusedAndNeverEchoedRaw) {
  CapturedLog log;
  StartServer();
  const std::string forged = "m-x\n2026-11-26T00:00:00.000+00:00 critical FORGED LINE";
  const std::string with_nul = std::string("m-ab\0cd", 7);
  const std::string huge(1 << 20, 'a');
  for (const std::string& handle : {forged, with_nul, huge}) {
    const grpc::Status st = Delete(client(), handle);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(st.error_message(), HasSubstr("is not a matrix handle"));
    EXPECT_LT(st.error_message().size(), 400u);
    gemm::v1::MultiplyRequest req = SeededRequest(8, 8, 8, 1, 2);
    req.mutable_a()->set_handle(handle);
    gemm::v1::MultiplyResponse resp;
    EXPECT_EQ(client().Multiply(req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    std::string bytes;
    EXPECT_EQ(client().Download(handle, &bytes).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  EXPECT_THAT(Delete(client(), huge).error_message(), HasSubstr("... (1048576 bytes)"));
  EXPECT_THAT(Delete(client(), forged).error_message(), HasSubstr("\\x0a2026-11-26"));
  const std::string text = log.text();
  EXPECT_THAT(text, Not(HasSubstr("\n2026-11-26T00:00:00.000+00:00 critical FORGED LINE")));
  EXPECT_EQ(text.find('\0'), std::string::npos);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) EXPECT_LT(line.size(), 4096u) << line.substr(0, 200);
}

// One header with no data used to take the whole quota from everyone else.
// The quota is charged as bytes arrive; the whole size counts against the
// sender's own quota, and its uploads in progress are bounded.
TEST_F(HostileClientTest, HeadersWithoutDataCannotTakeTheQuotaFromOtherIdentities) {
  ServerConfig c = LoopbackConfig();  // 64 MiB of quota
  c.auth_tokens = {{"tok-mallory", "mallory"}, {"tok-alice", "alice"}};
  c.max_uploads_per_identity = 4;
  c.identity_quota_bytes = 56u << 20;
  StartServer(c);
  auto mallory = ClientWithToken("tok-mallory"), alice = ClientWithToken("tok-alice");
  auto stub = gemm::v1::GemmService::NewStub(mallory->channel());
  struct Squat {
    grpc::ClientContext ctx;
    gemm::v1::MatrixInfo info;
    std::unique_ptr<grpc::ClientWriter<gemm::v1::UploadMatrixRequest>> writer;
  };
  std::vector<std::unique_ptr<Squat>> squats;
  // Waits until the server has taken `n` of Mallory's uploads in (each
  // stream's header is read on its own).
  auto uploading = [&](int n) {
    int seen = -1;
    for (int i = 0; i < 500 && seen != n; ++i) {
      gemm::v1::ListMatricesResponse list;
      if (!mallory->ListMatrices(&list).ok()) break;
      seen = 0;
      for (const auto& m : list.matrices()) seen += m.state() == gemm::v1::MATRIX_UPLOADING;
      if (seen != n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return seen;
  };
  auto squat = [&](int64_t rows, int64_t cols) {
    auto s = std::make_unique<Squat>();
    s->ctx.AddMetadata("authorization", "Bearer tok-mallory");
    s->writer = stub->UploadMatrix(&s->ctx, &s->info);
    gemm::v1::UploadMatrixRequest header;
    header.mutable_header()->set_rows(rows);
    header.mutable_header()->set_cols(cols);
    EXPECT_TRUE(s->writer->Write(header));
    squats.push_back(std::move(s));
  };
  squat(4096, 5120);  // 40 MiB declared
  ASSERT_EQ(uploading(1), 1);
  // Mallory's own quota holds the declared size: a second 40 MiB is refused.
  squat(4096, 5120);
  EXPECT_EQ(squats.back()->writer->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  squats.pop_back();
  for (int i = 2; i <= 4; ++i) {  // four uploads in progress, the limit
    squat(1, 8);
    ASSERT_EQ(uploading(i), i);
  }
  squat(1, 8);
  const grpc::Status fifth = squats.back()->writer->Finish();
  EXPECT_EQ(fifth.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(fifth.error_message(), HasSubstr("uploads in progress"));
  squats.pop_back();

  // Alice stores 48 MiB meanwhile, and multiplies into a handle.
  gemm::v1::MatrixInfo info;
  ASSERT_TRUE(alice->Upload(4096, 6144, std::string(48u << 20, '\0'), "", &info).ok());
  gemm::v1::MultiplyRequest req = SeededRequest(64, 64, 64, 1, 2);
  req.set_output(gemm::v1::OUTPUT_HANDLE);
  gemm::v1::MultiplyResponse resp;
  EXPECT_TRUE(alice->Multiply(req, &resp).ok());
  // Mallory sees its uploads in progress; Alice does not.
  gemm::v1::ListMatricesResponse mine, hers;
  ASSERT_TRUE(mallory->ListMatrices(&mine).ok());
  ASSERT_TRUE(alice->ListMatrices(&hers).ok());
  EXPECT_EQ(uploading(4), 4);
  for (const auto& m : hers.matrices()) EXPECT_EQ(m.state(), gemm::v1::MATRIX_STORED);
  // Mallory's 40 MiB upload, sent now, no longer fits: refused midway with
  // a sentence, and nothing of it stays.
  gemm::v1::UploadMatrixRequest data;
  data.set_data(std::string(2u << 20, '\0'));
  grpc::Status late;
  for (int i = 0; i < 20 && squats.front()->writer->Write(data); ++i) {
  }
  late = squats.front()->writer->Finish();
  EXPECT_EQ(late.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(late.error_message(), HasSubstr("matrix quota exhausted"));
  for (auto& s : squats) s->ctx.TryCancel();
}

// An upload whose client went silent used to hold a SIGTERM for the whole
// grace (30 s by default). It ends within about a second of the shutdown,
// and its client is told why.
TEST_F(HostileClientTest, AnIdleUploadDoesNotHoldTheShutdown) {
  StartServer();
  grpc::ClientContext ctx;
  gemm::v1::MatrixInfo info;
  auto stub = gemm::v1::GemmService::NewStub(client().channel());
  auto writer = stub->UploadMatrix(&ctx, &info);
  gemm::v1::UploadMatrixRequest header;
  header.mutable_header()->set_rows(64);
  header.mutable_header()->set_cols(64);
  ASSERT_TRUE(writer->Write(header));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = std::chrono::steady_clock::now();
  server().Shutdown(std::chrono::seconds(30));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  const grpc::Status st = writer->Finish();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(st.error_message(), HasSubstr("shutting down"));
}

// A second signal ends the grace: a GEMM that would hold the shutdown for
// 30 s is cancelled at once.
class SecondSignalTest : public GatedServerFixture {};

TEST_F(SecondSignalTest, EndGraceCancelsWhatStillRuns) {
  gate_->Close();
  gemmc::ClientOptions opts;  // no deadline: nor waiting for a server that went away
  opts.target = "127.0.0.1:" + std::to_string(server().port());
  opts.timeout_seconds = 0;
  gemmc::GemmClient once(opts);
  grpc::Status held;
  std::atomic<bool> answered{false};
  std::thread call([&] {
    gemm::v1::MultiplyResponse resp;
    held = once.Multiply(SeededRequest(8, 8, 8, 1, 1), &resp);
    answered = true;
  });
  gate_->WaitArrived(1);
  const auto start = std::chrono::steady_clock::now();
  std::thread stop([this] { server().Shutdown(std::chrono::seconds(30)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  server().EndGrace();
  // The GEMM stays held until the client has its answer: let go at once,
  // it could finish and answer OK before the cancellation, which gRPC
  // carries out on its own threads, reached the call.
  for (int i = 0; i < 500 && !answered; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(answered) << "the call was still running 5 s after the second signal";
  gate_->Open();
  stop.join();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  call.join();
  EXPECT_FALSE(held.ok());
}

// A matrix whose file was damaged answers DATA_LOSS to its owner
// everywhere, is NOT_FOUND (not even known to exist) to anyone else, shows
// in its owner's list, and a Delete of it is final, file and all.
class LostMatrixTest : public ServerFixture {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gemmd-lost-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override {
    ServerFixture::TearDown();
    std::filesystem::remove_all(dir_);
  }
  ServerConfig Config() const {
    ServerConfig c = LoopbackConfig();
    c.matrix_dir = dir_.string();
    c.auth_tokens = {{"tok-alice", "alice"}, {"tok-bob", "bob"}};
    return c;
  }
  std::filesystem::path dir_;
};

TEST_F(LostMatrixTest, ALostMatrixIsItsOwnersOneCodeEverywhereAndDeletedForGood) {
  StartServer(Config());
  std::string handle;
  {
    gemm::v1::MatrixInfo info;
    ASSERT_TRUE(ClientWithToken("tok-alice")->Upload(8, 8, std::string(128, '\x3c'), "", &info).ok());
    handle = info.handle();
  }
  StopServer();
  {  // one flipped byte in the data
    std::fstream f(dir_ / (handle + ".gemm"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a');
  }
  StartServer(Config());
  auto alice = ClientWithToken("tok-alice"), bob = ClientWithToken("tok-bob");
  gemm::v1::MultiplyRequest req = SeededRequest(8, 8, 8, 1, 2);
  req.mutable_a()->set_handle(handle);
  gemm::v1::MultiplyResponse resp;
  std::string bytes;
  EXPECT_EQ(alice->Multiply(req, &resp).error_code(), grpc::StatusCode::DATA_LOSS);
  EXPECT_EQ(alice->Download(handle, &bytes).error_code(), grpc::StatusCode::DATA_LOSS);
  EXPECT_EQ(bob->Multiply(req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(bob->Download(handle, &bytes).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Delete(*bob, handle).error_code(), grpc::StatusCode::NOT_FOUND);
  gemm::v1::ListMatricesResponse list;
  ASSERT_TRUE(alice->ListMatrices(&list).ok());
  ASSERT_EQ(list.matrices_size(), 1);
  EXPECT_EQ(list.matrices(0).state(), gemm::v1::MATRIX_LOST);
  EXPECT_THAT(list.matrices(0).problem(), HasSubstr("checksum"));
  list.Clear();
  ASSERT_TRUE(bob->ListMatrices(&list).ok());
  EXPECT_EQ(list.matrices_size(), 0);

  ASSERT_TRUE(Delete(*alice, handle).ok());
  EXPECT_FALSE(std::filesystem::exists(dir_ / (handle + ".gemm.corrupt")));
  alice.reset();
  bob.reset();
  StopServer();
  StartServer(Config());
  EXPECT_EQ(ClientWithToken("tok-alice")->Download(handle, &bytes).error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace gemmd::testing
