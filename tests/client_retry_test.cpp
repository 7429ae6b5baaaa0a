// The clients' retry policy (gemmc::kRetryServiceConfig): a refusal that
// means the server did not do the work is retried with backoff until it
// succeeds, the retries are counted, and without the policy the refusal
// comes straight back; a Delete whose reply was lost says, when retried,
// that an earlier attempt may have deleted the matrix. Against a real
// server on loopback.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "reply_losing_proxy.h"
#include "server_fixture.h"
#include "test_util.h"

namespace gemmd {
namespace {

using namespace gemmd::testing;
using gemm::v1::MultiplyRequest;
using gemm::v1::MultiplyResponse;
using MultiplyPath = std::function<grpc::Status(gemmc::GemmClient&, const MultiplyRequest&, MultiplyResponse*, int*)>;

class ClientRetryTest : public GatedServerFixture {
 protected:
  // One call through `call` while the device and its queue are full: it
  // succeeds once there is room, and says it was retried.
  void ExpectAFullQueueRetried(const MultiplyPath& call);
  gemmc::ClientOptions Options(bool retries) {
    gemmc::ClientOptions o;
    o.target = "127.0.0.1:" + std::to_string(server().port());
    o.retries = retries;
    return o;
  }
  // A stored matrix, and a client that reaches the server through a proxy
  // that loses the reply to the first call naming the matrix.
  struct BehindALossyProxy {
    std::string handle;
    std::unique_ptr<ReplyLosingProxy> proxy;
    std::unique_ptr<gemmc::GemmClient> client;
  };
  BehindALossyProxy StoreBehindALossyProxy(bool retries, uint64_t seed) {
    BehindALossyProxy out;
    gemm::v1::MatrixInfo info;
    EXPECT_TRUE(client().Upload(8, 8, RandomHalfBytes(8, 8, seed), "", &info).ok());
    out.handle = info.handle();
    out.proxy = std::make_unique<ReplyLosingProxy>(server().port());
    out.proxy->LoseTheReplyTo(out.handle);
    gemmc::ClientOptions o = Options(retries);
    o.target = "127.0.0.1:" + std::to_string(out.proxy->port());
    out.client = std::make_unique<gemmc::GemmClient>(o);
    return out;
  }
  // One request holds the device at the gate, a second fills the queue.
  std::unique_ptr<HeldRequest> FillDeviceAndQueue(std::thread* second) {
    auto held = HoldDevice();
    *second = std::thread([this] { MultiplyResponse r; (void)client().Multiply(SeededRequest(8, 8, 8, 2, 2), &r); });
    for (int i = 0; i < 1000 && server().queued() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_EQ(server().queued(), 1u);
    return held;
  }
};

void ClientRetryTest::ExpectAFullQueueRetried(const MultiplyPath& call) {
  std::thread second;
  auto held = FillDeviceAndQueue(&second);
  // The gate opens once the third call's first attempt has been refused
  // (its backoff is up to 50 ms, jittered): a later attempt finds room. A
  // fixed 10 ms wait raced the client's start under ASan on a loaded CI
  // machine, and the first attempt came after the gate had opened.
  std::thread opener([this] {
    const std::string refused = "gemm_requests_total{code=\"RESOURCE_EXHAUSTED\",method=\"Multiply\",step=\"0\"}";
    for (int i = 0; i < 5000 && Sample(MetricsText(server()), refused) < 1; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    gate_->Open();
  });
  gemmc::GemmClient retrying(Options(true));
  MultiplyResponse r;
  int retries = -1;
  const grpc::Status st = call(retrying, SeededRequest(8, 8, 8, 3, 3), &r, &retries);
  opener.join();
  held->thread.join();
  second.join();
  EXPECT_TRUE(st.ok()) << gemmc::CodeName(st.error_code()) << ": " << st.error_message();
  EXPECT_TRUE(r.verification().passed());
  EXPECT_GE(retries, 1) << "the first attempt met a full queue";
}

TEST_F(ClientRetryTest, AFullQueueIsRetriedUntilThereIsRoom) {
  ExpectAFullQueueRetried([](gemmc::GemmClient& c, const MultiplyRequest& req, MultiplyResponse* r, int* retries) {
    return c.Multiply(req, r, retries);
  });
}

// The path `run` and `bench --inline` take (the request's bytes built by hand).
TEST_F(ClientRetryTest, AFullQueueIsRetriedOnTheTimedPathToo) {
  ExpectAFullQueueRetried([](gemmc::GemmClient& c, const MultiplyRequest& req, MultiplyResponse* r, int* retries) {
    gemmc::ClientTiming timing;
    return c.MultiplyTimed(req, r, &timing, nullptr, retries);
  });
}

TEST_F(ClientRetryTest, WithoutThePolicyTheRefusalComesStraightBack) {
  std::thread second;
  auto held = FillDeviceAndQueue(&second);
  gemmc::GemmClient plain(Options(false));
  MultiplyResponse r;
  const auto start = std::chrono::steady_clock::now();
  const grpc::Status st = plain.Multiply(SeededRequest(8, 8, 8, 3, 3), &r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_TRUE(ReleaseDevice(*held).ok());
  second.join();
}

// Invalid requests are the caller's to fix: never retried.
TEST_F(ClientRetryTest, ABadRequestIsNotRetried) {
  gemmc::GemmClient retrying(Options(true));
  MultiplyResponse r;
  int retries = -1;
  const grpc::Status st = retrying.Multiply(SeededRequest(0, 8, 8, 1, 1), &r, &retries);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(retries, 0);
}

// A refusal that no retry can fix (here a shape over the server's largest
// dimension) is RESOURCE_EXHAUSTED like a full queue, but the server's
// pushback tells the retry policy not to send it again.
TEST_F(ClientRetryTest, ARefusalNoRetryCanFixIsNotRetried) {
  gemmc::GemmClient retrying(Options(true));
  MultiplyResponse r;
  int retries = -1;
  const grpc::Status st = retrying.Multiply(SeededRequest(70000, 8, 8, 1, 1), &r, &retries);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(st.error_message(), ::testing::HasSubstr("above this server's largest dimension"));
  EXPECT_EQ(retries, 0);
}

// What a server killed between a Delete and its reply does (the soak saw
// it): gRPC retries the call, and the retry finds no matrix. The NOT_FOUND
// then names the attempt, and the client learns it was a retry.
TEST_F(ClientRetryTest, ADeleteWhoseReplyWasLostIsRetriedAndItsNotFoundSaysWhy) {
  const auto lossy = StoreBehindALossyProxy(true, 5);
  int retries = -1;
  const grpc::Status st = lossy.client->Delete(lossy.handle, nullptr, &retries);
  EXPECT_EQ(lossy.proxy->replies_lost(), 1);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND) << st.error_message();
  EXPECT_THAT(st.error_message(), ::testing::HasSubstr("this was attempt 2 of the call, so an earlier attempt may "
                                                       "have deleted it before its reply was lost"));
  EXPECT_EQ(retries, 1);
  std::string bytes;
  EXPECT_EQ(client().Download(lossy.handle, &bytes).error_code(), grpc::StatusCode::NOT_FOUND)
      << "the first attempt deleted it";
}

// Without the policy the lost reply itself comes back; a first attempt's
// NOT_FOUND says nothing about earlier attempts.
TEST_F(ClientRetryTest, WithoutThePolicyALostDeleteReplyIsUnavailable) {
  const auto lossy = StoreBehindALossyProxy(false, 6);
  EXPECT_EQ(lossy.client->Delete(lossy.handle).error_code(), grpc::StatusCode::UNAVAILABLE);
  // Asked again on a connection of its own: the cut one may not yet be
  // known dead, and a call on it is UNAVAILABLE too (CI met that once).
  gemmc::GemmClient direct(Options(false));
  int retries = -1;
  const grpc::Status again = direct.Delete(lossy.handle, nullptr, &retries);
  EXPECT_EQ(again.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(again.error_message(), ::testing::Not(::testing::HasSubstr("earlier attempt")));
  EXPECT_EQ(retries, 0);
}

}  // namespace
}  // namespace gemmd
