// gemmc::ClientOptions::busy_poll: a client that polls for Multiply's reply
// instead of sleeping gets the same answers, its deadlines still end the
// wait, an unreachable server still fails the call, and gRPC's retries are
// still counted. Against a real server on loopback.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "server_fixture.h"
#include "test_util.h"

namespace gemmd {
namespace {

using namespace gemmd::testing;
using gemm::v1::MultiplyRequest;
using gemm::v1::MultiplyResponse;

class ClientBusyPollTest : public GatedServerFixture {
 protected:
  gemmc::ClientOptions Polling() {
    gemmc::ClientOptions o;
    o.target = "127.0.0.1:" + std::to_string(server().port());
    o.max_message_bytes = config().max_message_bytes;
    o.busy_poll = true;
    return o;
  }
};

TEST_F(ClientBusyPollTest, RepliesAreTheSameAsASleepingClientGets) {
  gemmc::GemmClient polling(Polling());
  MultiplyRequest req = SeededRequest(70, 33, 45, 5, 6);
  req.set_output(gemm::v1::OUTPUT_INLINE);
  MultiplyResponse slept, polled;
  ASSERT_TRUE(client().Multiply(req, &slept).ok());
  ASSERT_TRUE(polling.Multiply(req, &polled).ok());
  EXPECT_TRUE(polled.verification().passed());
  ASSERT_EQ(polled.d().size(), 70u * 33u * 2u);
  EXPECT_EQ(polled.d(), slept.d());

  // The inline path (MultiplyTimed: the request's bytes built by hand, D
  // gathered into the caller's memory) polls too.
  req.mutable_a()->set_data(RandomHalfBytes(70, 45, 11));
  req.mutable_b()->set_data(RandomHalfBytes(33, 45, 12));
  req.mutable_a()->clear_random();
  req.mutable_b()->clear_random();
  gemmc::MatrixBytes d_slept, d_polled;
  gemmc::ClientTiming t;
  ASSERT_TRUE(client().MultiplyTimed(req, &slept, &t, &d_slept).ok());
  ASSERT_TRUE(polling.MultiplyTimed(req, &polled, &t, &d_polled).ok());
  EXPECT_TRUE(polled.verification().passed());
  ASSERT_EQ(d_polled.size, 70u * 33u * 2u);
  EXPECT_EQ(d_polled.view(), d_slept.view());
}

TEST_F(ClientBusyPollTest, TheDeadlineEndsThePolling) {
  auto held = HoldDevice();
  gemmc::ClientOptions o = Polling();
  o.timeout_seconds = 0.2;
  gemmc::GemmClient polling(o);
  MultiplyResponse r;
  const auto start = std::chrono::steady_clock::now();
  const grpc::Status st = polling.Multiply(SeededRequest(8, 8, 8, 3, 3), &r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << st.error_message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(ReleaseDevice(*held).ok());
}

TEST_F(ClientBusyPollTest, NoServerFailsTheCallInsteadOfPollingForever) {
  gemmc::ClientOptions o = Polling();
  o.target = "127.0.0.1:1";  // nothing listens on port 1
  o.retries = false;
  gemmc::GemmClient polling(o);
  MultiplyResponse r;
  EXPECT_EQ(polling.Multiply(SeededRequest(8, 8, 8, 3, 3), &r).error_code(), grpc::StatusCode::UNAVAILABLE);
  gemmc::MatrixBytes d;
  gemmc::ClientTiming t;
  EXPECT_EQ(polling.MultiplyTimed(SeededRequest(8, 8, 8, 3, 3), &r, &t, &d).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(ClientBusyPollTest, RetriesAreCountedWhilePolling) {
  auto held = HoldDevice();
  std::thread second([this] { MultiplyResponse r; (void)client().Multiply(SeededRequest(8, 8, 8, 2, 2), &r); });
  for (int i = 0; i < 1000 && server().queued() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(server().queued(), 1u);
  // The queue is full: the polling client's first attempt is refused, and
  // the device is freed once that refusal is in the metrics.
  std::thread opener([this, &held] {
    const std::string refused = "gemm_requests_total{code=\"RESOURCE_EXHAUSTED\",method=\"Multiply\",step=\"0\"}";
    for (int i = 0; i < 5000 && Sample(MetricsText(server()), refused) < 1; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_TRUE(ReleaseDevice(*held).ok());
  });
  gemmc::GemmClient polling(Polling());
  MultiplyResponse r;
  int retries = -1;
  const grpc::Status st = polling.Multiply(SeededRequest(8, 8, 8, 3, 3), &r, &retries);
  opener.join();
  second.join();
  EXPECT_TRUE(st.ok()) << gemmc::CodeName(st.error_code()) << ": " << st.error_message();
  EXPECT_TRUE(r.verification().passed());
  EXPECT_GE(retries, 1) << "the first attempt met a full queue";
}

}  // namespace
}  // namespace gemmd
