// The clients' retry policy (gemmc::kRetryServiceConfig): a refusal that
// means the server did not do the work is retried with backoff until it
// succeeds, the retries are counted, and without the policy the refusal
// comes straight back. Against a real server on loopback.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "server_fixture.h"
#include "test_util.h"

namespace gemmd {
namespace {

using namespace gemmd::testing;
using gemm::v1::MultiplyResponse;

class ClientRetryTest : public GatedServerFixture {
 protected:
  gemmc::ClientOptions Options(bool retries) {
    gemmc::ClientOptions o;
    o.target = "127.0.0.1:" + std::to_string(server().port());
    o.retries = retries;
    return o;
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

TEST_F(ClientRetryTest, AFullQueueIsRetriedUntilThereIsRoom) {
  std::thread second;
  auto held = FillDeviceAndQueue(&second);
  // The gate opens 10 ms into the third call's first backoff (50 ms at most,
  // jittered): its first attempt is refused, a later one finds room.
  std::thread opener([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    gate_->Open();
  });
  gemmc::GemmClient retrying(Options(true));
  MultiplyResponse r;
  int retries = -1;
  const grpc::Status st = retrying.Multiply(SeededRequest(8, 8, 8, 3, 3), &r, &retries);
  opener.join();
  held->thread.join();
  second.join();
  EXPECT_TRUE(st.ok()) << gemmc::CodeName(st.error_code()) << ": " << st.error_message();
  EXPECT_TRUE(r.verification().passed());
  EXPECT_GE(retries, 1) << "the first attempt met a full queue";
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

}  // namespace
}  // namespace gemmd
