// GemmClient::MultiplyPipelined (client/unary_pipeline.h), gemm-client
// bench's driver: one thread keeps `depth` Multiply calls in flight, each
// reply goes to the slot that asked, a refusal comes back with its status,
// a slot's back-off holds neither the thread nor the other slots, and a
// deadline or an absent server ends the calls. Against a real server on
// loopback.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include "server_fixture.h"
#include "test_util.h"

namespace gemmd {
namespace {

using namespace gemmd::testing;
using gemm::v1::MultiplyRequest;
using gemm::v1::MultiplyResponse;
using Clock = std::chrono::steady_clock;

template <class Fixture>
class PipelineFixture : public Fixture {
 protected:
  gemmc::ClientOptions Options() {
    gemmc::ClientOptions o;
    o.target = "127.0.0.1:" + std::to_string(this->server().port());
    o.max_message_bytes = this->config().max_message_bytes;
    return o;
  }
};

class MultiplyPipelineTest : public PipelineFixture<ServerFixture> {
 protected:
  void SetUp() override { StartServer(); }
};

// One device held busy on cue, and a queue of one.
class GatedMultiplyPipelineTest : public PipelineFixture<GatedServerFixture> {};

TEST_F(MultiplyPipelineTest, EachSlotGetsTheReplyToItsOwnRequest) {
  gemmc::GemmClient client(Options());
  constexpr size_t kDepth = 4, kRequests = 40;
  size_t sent = 0, in_flight = 0, most_in_flight = 0;
  std::vector<int64_t> m_of(kDepth);
  std::map<int64_t, MultiplyResponse> replies;
  client.MultiplyPipelined(
      kDepth,
      [&](size_t slot, MultiplyRequest* req) {
        if (sent == kRequests) return false;
        m_of[slot] = static_cast<int64_t>(10 + sent++);  // every request its own shape
        *req = SeededRequest(m_of[slot], 24, 16, sent, sent + 100);
        req->set_output(gemm::v1::OUTPUT_INLINE);
        most_in_flight = std::max(most_in_flight, ++in_flight);
        return true;
      },
      [&](size_t slot, const grpc::Status& st, const MultiplyResponse& resp, double seconds, int retries) {
        --in_flight;
        EXPECT_TRUE(st.ok()) << st.error_message();
        EXPECT_GT(seconds, 0);
        EXPECT_EQ(retries, 0);
        EXPECT_EQ(resp.shape().m(), m_of[slot]) << "slot " << slot << " got another slot's reply";
        EXPECT_EQ(resp.d().size(), static_cast<size_t>(m_of[slot]) * 24 * 2);
        replies[m_of[slot]] = resp;
        return 0.0;
      });
  EXPECT_EQ(most_in_flight, kDepth);
  EXPECT_EQ(in_flight, 0u);
  ASSERT_EQ(replies.size(), kRequests);
  // The same request by the blocking call gets the same D.
  MultiplyRequest req = SeededRequest(23, 24, 16, 14, 114);
  req.set_output(gemm::v1::OUTPUT_INLINE);
  MultiplyResponse alone;
  ASSERT_TRUE(client.Multiply(req, &alone).ok());
  EXPECT_TRUE(replies[23].verification().passed());
  EXPECT_EQ(replies[23].d(), alone.d());
}

TEST_F(MultiplyPipelineTest, ARefusedRequestComesBackWithItsStatus) {
  gemmc::GemmClient client(Options());
  int sent = 0;
  std::map<int, grpc::Status> status_of;
  std::vector<int> number_of(2);
  client.MultiplyPipelined(
      2,
      [&](size_t slot, MultiplyRequest* req) {
        if (sent == 6) return false;
        number_of[slot] = sent;
        *req = SeededRequest(sent == 3 ? 0 : 8, 8, 8, 1, 2);  // the fourth has no rows
        ++sent;
        return true;
      },
      [&](size_t slot, const grpc::Status& st, const MultiplyResponse&, double, int) {
        status_of[number_of[slot]] = st;
        return 0.0;
      });
  ASSERT_EQ(status_of.size(), 6u);
  for (auto& [number, st] : status_of) {
    if (number == 3) {
      EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
      EXPECT_FALSE(st.error_message().empty());
    } else {
      EXPECT_TRUE(st.ok()) << number << ": " << st.error_message();
    }
  }
}

TEST_F(MultiplyPipelineTest, ASlotsBackOffHoldsNeitherTheThreadNorTheOtherSlot) {
  gemmc::GemmClient client(Options());
  constexpr double kBackoff = 0.3;
  Clock::time_point backed_off_at{}, resumed_at{};
  int slot0_calls = 0, slot1_calls_during_backoff = 0;
  bool stop = false;
  client.MultiplyPipelined(
      2,
      [&](size_t slot, MultiplyRequest* req) {
        if (stop) return false;
        if (slot == 0 && ++slot0_calls == 2) {
          resumed_at = Clock::now();
          stop = true;
        }
        *req = SeededRequest(8, 8, 8, 1, 2);
        return true;
      },
      [&](size_t slot, const grpc::Status& st, const MultiplyResponse&, double, int) {
        EXPECT_TRUE(st.ok()) << st.error_message();
        if (slot == 0 && slot0_calls == 1) {
          backed_off_at = Clock::now();
          return kBackoff;
        }
        if (slot == 1 && backed_off_at != Clock::time_point{} && resumed_at == Clock::time_point{}) {
          ++slot1_calls_during_backoff;
        }
        return 0.0;
      });
  ASSERT_EQ(slot0_calls, 2);
  EXPECT_GE(std::chrono::duration<double>(resumed_at - backed_off_at).count(), kBackoff * 0.95);
  EXPECT_GE(slot1_calls_during_backoff, 3) << "slot 1 waited for slot 0's back-off";
}

TEST_F(GatedMultiplyPipelineTest, TheDeadlineEndsACallThatWaits) {
  auto held = HoldDevice();
  gemmc::ClientOptions o = Options();
  o.timeout_seconds = 0.2;
  gemmc::GemmClient client(o);
  bool sent = false;
  grpc::Status got;
  const auto start = Clock::now();
  client.MultiplyPipelined(
      1,
      [&](size_t, MultiplyRequest* req) {
        if (sent) return false;
        sent = true;
        *req = SeededRequest(8, 8, 8, 3, 3);
        return true;
      },
      [&](size_t, const grpc::Status& st, const MultiplyResponse&, double, int) {
        got = st;
        return 0.0;
      });
  EXPECT_EQ(got.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << got.error_message();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(ReleaseDevice(*held).ok());
}

TEST_F(MultiplyPipelineTest, NoServerFailsEachCallAndThePipelineEnds) {
  gemmc::ClientOptions o = Options();
  o.target = "127.0.0.1:1";  // nothing listens on port 1
  o.retries = false;
  for (bool polling : {false, true}) {
    o.busy_poll = polling;
    gemmc::GemmClient client(o);
    int sent = 0, unavailable = 0;
    client.MultiplyPipelined(
        3,
        [&](size_t, MultiplyRequest* req) {
          if (sent == 5) return false;
          ++sent;
          *req = SeededRequest(8, 8, 8, 3, 3);
          return true;
        },
        [&](size_t, const grpc::Status& st, const MultiplyResponse&, double, int) {
          unavailable += st.error_code() == grpc::StatusCode::UNAVAILABLE ? 1 : 0;
          return 0.0;
        });
    EXPECT_EQ(unavailable, 5) << (polling ? "polling" : "sleeping");
  }
}

}  // namespace
}  // namespace gemmd
