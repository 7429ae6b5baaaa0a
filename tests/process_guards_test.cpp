// The process-level guards: the listener probe tells a listener that
// accepts from one that stopped, and the memory trimmer gives memory back
// only once the server is idle.
#include <gtest/gtest.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "process/listener_probe.h"
#include "process/memory_trimmer.h"

namespace gemmd {
namespace {

using namespace std::chrono_literals;

// A loopback listening socket; its port.
int Listen(int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(::listen(fd, 16), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

TEST(ListenerProbe, ASocketThatIsListenedOnButNeverAcceptedIsSilent) {
  int port = 0;
  const int fd = Listen(&port);  // the kernel completes handshakes; nobody accepts
  EXPECT_EQ(ListenerProbe::ProbeOnce("127.0.0.1", port, 200ms), ListenerProbe::Outcome::kSilent);
  ::close(fd);
}

TEST(ListenerProbe, AServerThatAcceptsAndAnswersOrClosesIsAlive) {
  int port = 0;
  const int fd = Listen(&port);
  std::thread server([fd] {
    for (int i = 0; i < 2; ++i) {
      const int conn = ::accept(fd, nullptr, nullptr);
      if (i == 0) (void)::send(conn, "\0\0\0\4\0\0\0\0\0", 9, MSG_NOSIGNAL);  // an HTTP/2 SETTINGS frame
      ::close(conn);  // the second: closed at once, as a TLS server does with a bad hello
    }
  });
  EXPECT_EQ(ListenerProbe::ProbeOnce("127.0.0.1", port, 2000ms), ListenerProbe::Outcome::kAnswered);
  EXPECT_EQ(ListenerProbe::ProbeOnce("127.0.0.1", port, 2000ms), ListenerProbe::Outcome::kAnswered);
  server.join();
  ::close(fd);
}

TEST(ListenerProbe, ReportsADeadListenerOnceAfterTheSilentProbesInARow) {
  int port = 0;
  const int fd = Listen(&port);
  std::atomic<int> reports{0};
  std::string why;
  {
    ListenerProbe::Options o;
    o.port = port;
    o.period = 20ms;
    o.timeout = 50ms;
    o.failures = 3;
    ListenerProbe probe(o, [&](const std::string& sentence) {
      why = sentence;
      ++reports;
    });
    for (int i = 0; i < 200 && reports == 0; ++i) std::this_thread::sleep_for(10ms);
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(reports.load(), 1);
  EXPECT_NE(why.find("stopped accepting connections"), std::string::npos) << why;
  ::close(fd);
}

TEST(ListenerProbe, TheHostOfAWildcardListenAddressIsLoopback) {
  EXPECT_EQ(ProbeHostFor("0.0.0.0:50051"), "127.0.0.1");
  EXPECT_EQ(ProbeHostFor("[::]:50051"), "::1");
  EXPECT_EQ(ProbeHostFor("127.0.0.2:1"), "127.0.0.2");
  EXPECT_EQ(ProbeHostFor("[::1]:7"), "::1");
}

// The trimmer runs once per quiet spell, never while requests arrive or
// one is in flight.
TEST(MemoryTrimmer, TrimsOnceAfterActivityWhenIdleAndNeverUnderLoad) {
  std::atomic<uint64_t> activity{0};
  std::atomic<bool> busy{false};
  MemoryTrimmer trimmer([&] { return activity.load(); }, [&] { return busy.load(); }, 100ms);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(trimmer.trims(), 0u) << "nothing happened: nothing to give back";
  for (int i = 0; i < 30; ++i) {  // steady load: 300 ms of requests every 10 ms
    ++activity;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(trimmer.trims(), 0u);
  busy = true;  // a long request in flight
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(trimmer.trims(), 0u);
  busy = false;
  for (int i = 0; i < 100 && trimmer.trims() == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(trimmer.trims(), 1u);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(trimmer.trims(), 1u) << "once per quiet spell";
}

#if !defined(__SANITIZE_ADDRESS__)
// With glibc's own trimming off, as gemmd runs, memory freed after a burst
// stays resident until the trimmer runs.
TEST(MemoryTrimmer, GivesFreedHeapMemoryBackToTheSystem) {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT32_MAX);
  constexpr size_t kBlocks = 64, kBlock = 4 << 20;  // 256 MiB in blocks a request's size
  std::vector<char*> blocks;
  for (size_t i = 0; i < kBlocks; ++i) {
    blocks.push_back(static_cast<char*>(std::malloc(kBlock)));
    std::memset(blocks.back(), 1, kBlock);
  }
  char* kept = static_cast<char*>(std::malloc(4096));  // above them: the heap's top cannot shrink past it
  for (char* b : blocks) std::free(b);
  const uint64_t before = MemoryTrimmer::ResidentBytes();
  std::atomic<uint64_t> activity{1};
  int64_t returned = 0;
  {
    MemoryTrimmer trimmer([&] { return activity.load(); }, [] { return false; }, 50ms,
                          [&](int64_t bytes) { returned = bytes; });
    ++activity;
    for (int i = 0; i < 200 && trimmer.trims() == 0; ++i) std::this_thread::sleep_for(10ms);
  }
  std::free(kept);
  EXPECT_GT(before - MemoryTrimmer::ResidentBytes(), uint64_t{200} << 20);
  EXPECT_GT(returned, int64_t{200} << 20);
  mallopt(M_MMAP_MAX, 65536);
}
#endif

}  // namespace
}  // namespace gemmd
