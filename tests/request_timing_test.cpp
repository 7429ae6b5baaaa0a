// Where a request's time goes: the reply's phases follow one another and add
// up to its total, the metrics carry each phase, the client's own phases add
// up to its round trip, and GPU telemetry is absent, not made up, where there
// is no NVML (this test runs the CPU engine).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "server_fixture.h"
#include "telemetry/gpu_telemetry.h"
#include "test_util.h"

namespace gemmd {
namespace {

using namespace gemmd::testing;
using gemm::v1::MultiplyRequest;
using gemm::v1::MultiplyResponse;

double SumOfPhases(const gemm::v1::Timing& t) {
  return t.prepare_seconds() + t.queue_seconds() + t.upload_seconds() + t.compute_seconds() + t.download_seconds() +
         t.reply_seconds();
}

class RequestTimingTest : public ServerFixture {
 protected:
  void SetUp() override { StartServer(); }
};

// Inline A and B in, D inline out; seeded inputs with D stored by handle:
// each reply's phases must account for its total within 5%.
TEST_F(RequestTimingTest, ThePhasesAddUpToTheTotal) {
  MultiplyRequest inline_req = SeededRequest(300, 200, 400, 1, 2);
  inline_req.mutable_a()->set_data(RandomHalfBytes(300, 400, 7));
  inline_req.mutable_b()->set_data(RandomHalfBytes(200, 400, 8));
  inline_req.set_output(gemm::v1::OUTPUT_INLINE);
  MultiplyRequest seeded_req = SeededRequest(256, 256, 512, 3, 4);
  seeded_req.set_output(gemm::v1::OUTPUT_HANDLE);
  seeded_req.set_repeats(3);
  for (const MultiplyRequest& req : {inline_req, seeded_req}) {
    MultiplyResponse resp;
    ASSERT_TRUE(client().Multiply(req, &resp).ok());
    const auto& t = resp.timing();
    for (double phase : {t.prepare_seconds(), t.queue_seconds(), t.upload_seconds(), t.compute_seconds(),
                         t.download_seconds(), t.reply_seconds()}) {
      EXPECT_GE(phase, 0);
    }
    EXPECT_GT(t.upload_seconds(), 0);
    EXPECT_GE(t.compute_seconds(), t.kernel_seconds());  // the repeats run inside compute
    EXPECT_LE(SumOfPhases(t), t.total_seconds() * 1.001);
    EXPECT_GE(SumOfPhases(t), t.total_seconds() * 0.95)
        << "unaccounted: " << (t.total_seconds() - SumOfPhases(t)) * 1e3 << " ms of " << t.total_seconds() * 1e3;
    EXPECT_EQ(resp.sm_clock_mhz(), 0u) << "the CPU engine has no SM clock to report";
  }
}

TEST_F(RequestTimingTest, EveryPhaseIsInTheMetrics) {
  MultiplyResponse resp;
  ASSERT_TRUE(client().Multiply(SeededRequest(128, 128, 128, 1, 2), &resp).ok());
  const std::string text = MetricsText(server());
  for (const char* phase : {"prepare", "queue", "upload", "compute", "download", "reply"}) {
    EXPECT_EQ(Sample(text, std::string("gemm_request_phase_seconds_count{phase=\"") + phase + "\"}"), 1) << phase;
  }
}

// The client's serialize, call and deserialize follow one another: with the
// server's total inside the call, what is left is gRPC and the network.
TEST_F(RequestTimingTest, TheClientsPhasesAddUpToItsRoundTrip) {
  MultiplyRequest req = SeededRequest(200, 300, 100, 5, 6);
  req.set_output(gemm::v1::OUTPUT_INLINE);
  MultiplyResponse resp;
  gemmc::ClientTiming timing;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(client().MultiplyTimed(req, &resp, &timing).ok());
  const double round_trip = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(resp.d().size(), 200u * 300 * 2);
  EXPECT_TRUE(resp.verification().passed());
  const double sum = timing.serialize_seconds + timing.call_seconds + timing.deserialize_seconds;
  EXPECT_LE(sum, round_trip);
  EXPECT_GE(sum, round_trip * 0.95);
  EXPECT_GT(timing.call_seconds, resp.timing().total_seconds());  // the server's work happens inside the call
  // The reply, parsed with D gathered straight from the slices, is what
  // protobuf makes of the same request's reply.
  MultiplyResponse typed;
  ASSERT_TRUE(client().Multiply(req, &typed).ok());
  EXPECT_EQ(resp.d(), typed.d());
  EXPECT_EQ(resp.shape().SerializeAsString(), typed.shape().SerializeAsString());
  EXPECT_EQ(resp.verification().SerializeAsString(), typed.verification().SerializeAsString());
  EXPECT_EQ(resp.device(), typed.device());
}

// D gathered into memory of its own (GatherPieces, whose thread counts its
// own test covers) is the D that protobuf's parse of the same reply gives.
TEST_F(RequestTimingTest, DGatheredIntoItsOwnMemoryIsTheSameD) {
  MultiplyRequest req = SeededRequest(1024, 1000, 16, 7, 8);
  req.set_output(gemm::v1::OUTPUT_INLINE);
  MultiplyResponse resp;
  gemmc::ClientTiming timing;
  gemmc::MatrixBytes d;
  ASSERT_TRUE(client().MultiplyTimed(req, &resp, &timing, &d).ok());
  EXPECT_TRUE(resp.d().empty());
  ASSERT_EQ(d.size, 1024u * 1000 * 2);
  MultiplyResponse typed;
  ASSERT_TRUE(client().Multiply(req, &typed).ok());
  EXPECT_TRUE(typed.d() == d.view());
  EXPECT_TRUE(resp.verification().passed());
}

// A caller's MatrixBytes of D's size is reused for the next D (warm, so the
// gather is a plain copy); one of another size is replaced; a failed call
// leaves it empty, so that no stale bytes read as a D.
TEST_F(RequestTimingTest, DMemoryIsReusedReplacedOrEmptied) {
  MultiplyRequest req = SeededRequest(600, 1000, 32, 3, 4);
  req.set_output(gemm::v1::OUTPUT_INLINE);
  MultiplyResponse resp, typed;
  gemmc::ClientTiming timing;
  gemmc::MatrixBytes d;
  ASSERT_TRUE(client().MultiplyTimed(req, &resp, &timing, &d).ok());
  const char* first = d.data.get();
  req.mutable_a()->mutable_random()->set_seed(5);  // another D of the same size
  ASSERT_TRUE(client().MultiplyTimed(req, &resp, &timing, &d).ok());
  EXPECT_EQ(d.data.get(), first);
  ASSERT_TRUE(client().Multiply(req, &typed).ok());
  EXPECT_TRUE(typed.d() == d.view());

  req.mutable_shape()->set_n(500);  // half the size: new memory of that size
  ASSERT_TRUE(client().MultiplyTimed(req, &resp, &timing, &d).ok());
  EXPECT_EQ(d.size, 600u * 500 * 2);
  ASSERT_TRUE(client().Multiply(req, &typed).ok());
  EXPECT_TRUE(typed.d() == d.view());

  req.set_step(99);
  const auto st = client().MultiplyTimed(req, &resp, &timing, &d);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(d.size, 0u);
  EXPECT_EQ(d.data, nullptr);
}

// Benchmark timing is a request option: accepted, verified all the same.
TEST_F(RequestTimingTest, BenchmarkTimingIsARequestOption) {
  MultiplyRequest req = SeededRequest(96, 80, 72, 1, 2);
  req.set_benchmark(true);
  req.set_repeats(4);
  MultiplyResponse resp;
  ASSERT_TRUE(client().Multiply(req, &resp).ok());
  EXPECT_TRUE(resp.verification().passed());
  EXPECT_EQ(resp.timing().repeats(), 4u);
}

// Without NVML the telemetry does not start and exports no series at all.
TEST(GpuTelemetryTest, WithoutNvmlNothingIsExported) {
  prometheus::Registry registry;
  std::string why;
  auto telemetry = GpuTelemetry::Start({{"cuda:0", "0000:00:00.0"}}, registry, std::chrono::milliseconds(10), &why);
  if (telemetry != nullptr) GTEST_SKIP() << "this machine has NVML (and a GPU at bus 0)";
  EXPECT_THAT(why, ::testing::AnyOf(::testing::HasSubstr("libnvidia-ml"), ::testing::HasSubstr("NVML")));
  EXPECT_TRUE(registry.Collect().empty());
}

}  // namespace
}  // namespace gemmd
