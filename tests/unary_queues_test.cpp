// Multiply served from completion queues (api/unary_queues.h): a burst of
// calls beyond those asked for ahead on a queue is served in full, on one
// queue thread and on several; a server stopped with calls still asked for
// shuts down cleanly, and so does one that never built. Against a real
// server on loopback.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "server_fixture.h"
#include "test_util.h"

namespace gemmd {
namespace {

using namespace gemmd::testing;
using gemm::v1::MultiplyResponse;

class UnaryQueuesTest : public ServerFixture, public ::testing::WithParamInterface<uint32_t> {};

// Each queue asks for 16 calls ahead; 64 at once on their own connections
// need the threads to ask again as calls arrive.
TEST_P(UnaryQueuesTest, ABurstBeyondTheCallsAskedForAheadIsServed) {
  ServerConfig c = LoopbackConfig();
  c.multiply_threads = GetParam();
  c.queue_capacity = 256;
  StartServer(c);
  constexpr int kCalls = 64;
  std::atomic<int> ok{0}, verified{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back([&, i] {
      gemmc::ClientOptions o;
      o.target = "127.0.0.1:" + std::to_string(server().port());
      o.own_connection = i % 2 == 0;
      gemmc::GemmClient own(o);
      MultiplyResponse r;
      if (own.Multiply(SeededRequest(16, 8, 24, i + 1, i + 2), &r).ok()) {
        ++ok;
        if (r.verification().passed()) ++verified;
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(ok.load(), kCalls);
  EXPECT_EQ(verified.load(), kCalls);
}

INSTANTIATE_TEST_SUITE_P(Threads, UnaryQueuesTest, ::testing::Values(1u, 3u));

TEST(UnaryQueuesShutdownTest, AServerStoppedWithCallsAskedForShutsDownCleanly) {
  for (uint32_t threads : {1u, 4u}) {
    ServerConfig c = LoopbackConfig();
    c.multiply_threads = threads;
    GemmServer server(c, std::make_unique<CpuEngine>());
    ASSERT_TRUE(server.Start().ok());
    server.Shutdown(std::chrono::seconds(1));  // every call asked for comes back unused, under ASan too
  }
}

TEST(UnaryQueuesShutdownTest, AServerThatCannotListenStopsCleanly) {
  ServerConfig c = LoopbackConfig();
  c.listen = "unix:/nonexistent-gemmd-dir/socket";  // cannot bind: the server never builds
  GemmServer server(c, std::make_unique<CpuEngine>());
  EXPECT_FALSE(server.Start().ok());
  server.Shutdown(std::chrono::seconds(1));  // the queues were never started
}

}  // namespace
}  // namespace gemmd
