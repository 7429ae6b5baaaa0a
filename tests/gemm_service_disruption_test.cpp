// End-to-end: requests that do not go as planned: a full queue, an expired
// deadline, a cancelled call or upload, a stalled stream, a lost device.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <latch>
#include <set>
#include <thread>
#include "gemm_service_fixture.h"

namespace gemmd::testing {
namespace {

using ::testing::HasSubstr;
using gemm::v1::MultiplyRequest;
using gemm::v1::MultiplyResponse;

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
