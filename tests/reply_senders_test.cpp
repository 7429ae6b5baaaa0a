// ReplySenders: sends run on the caller with no threads, side by side on the
// threads otherwise, and nothing posted is dropped when the senders stop.
#include "api/reply_senders.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace gemmd {
namespace {

TEST(ReplySenders, WithoutThreadsEachSendRunsOnTheCallerInOrder) {
  ReplySenders senders(0);
  std::vector<int> order;
  std::vector<std::thread::id> ran_on;
  std::vector<std::function<void()>> sends;
  for (int i = 0; i < 3; ++i) {
    sends.push_back([&, i] {
      order.push_back(i);
      ran_on.push_back(std::this_thread::get_id());
    });
  }
  senders.Post(std::move(sends));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  for (auto id : ran_on) EXPECT_EQ(id, std::this_thread::get_id());
}

// Three sends that each wait (up to 10 s) until all three have started can
// only finish promptly if three threads run them at once.
TEST(ReplySenders, PostedSendsRunSideBySide) {
  ReplySenders senders(3);
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  std::atomic<int> saw_all{0};
  std::vector<std::function<void()>> sends;
  for (int i = 0; i < 3; ++i) {
    sends.push_back([&] {
      std::unique_lock lock(mu);
      ++started;
      cv.notify_all();
      if (cv.wait_for(lock, std::chrono::seconds(10), [&] { return started == 3; })) ++saw_all;
    });
  }
  const auto start = std::chrono::steady_clock::now();
  senders.Post(std::move(sends));
  while (saw_all < 3 && std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(saw_all, 3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ReplySenders, StoppingSendsEverythingPostedFirst) {
  std::atomic<int> sent{0};
  {
    ReplySenders senders(2);
    for (int batch = 0; batch < 50; ++batch) {
      std::vector<std::function<void()>> sends;
      for (int i = 0; i < 4; ++i) sends.push_back([&] { ++sent; });
      senders.Post(std::move(sends));
    }
    senders.Post({});  // nothing to send: no effect
  }
  EXPECT_EQ(sent, 200);
}

}  // namespace
}  // namespace gemmd
