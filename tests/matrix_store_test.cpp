#include "engine/matrix_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

namespace gemmd {
namespace {

using ::testing::HasSubstr;

std::string Bytes(size_t n, char c = '\x3c') { return std::string(n, c); }

TEST(MatrixStore, UploadCommitGetDelete) {
  uint64_t last_used = 99;
  size_t last_count = 99;
  MatrixStore store(1 << 20, [&](uint64_t used, size_t count) {
    last_used = used;
    last_count = count;
  });
  auto pending = store.Reserve(4, 8, "x");
  ASSERT_TRUE(pending.ok());
  EXPECT_EQ(store.used_bytes(), 64u);
  ASSERT_TRUE((*pending)->Append(Bytes(30)).ok());
  ASSERT_TRUE((*pending)->Append(Bytes(34)).ok());
  auto desc = store.Commit(std::move(*pending));
  ASSERT_TRUE(desc.ok());
  EXPECT_THAT(desc->handle, ::testing::StartsWith("m-"));
  EXPECT_EQ(desc->bytes, 64u);
  EXPECT_EQ(desc->label, "x");

  auto got = store.Get(desc->handle);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)->description().rows, 4);
  EXPECT_EQ(store.List().size(), 1u);

  auto freed = store.Delete(desc->handle);
  ASSERT_TRUE(freed.ok());
  EXPECT_EQ(*freed, 64u);
  // Still in use by `got`: the memory stays until that reference goes.
  EXPECT_EQ(store.used_bytes(), 64u);
  got->reset();
  EXPECT_EQ(store.used_bytes(), 0u);
  EXPECT_EQ(last_used, 0u);
  EXPECT_EQ(last_count, 0u);
  EXPECT_EQ(store.Get(desc->handle).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.Delete(desc->handle).status().code(), absl::StatusCode::kNotFound);
}

TEST(MatrixStore, QuotaIsEnforcedAndReturnedByAbandonedUploads) {
  MatrixStore store(1000);
  auto a = store.Reserve(10, 25, "");  // 500 bytes
  ASSERT_TRUE(a.ok());
  auto b = store.Reserve(10, 26, "");  // 520 bytes: over
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(b.status().message()), HasSubstr("520 bytes asked, 500 of 1000 free"));
  a->reset();  // upload abandoned
  EXPECT_EQ(store.used_bytes(), 0u);
  EXPECT_TRUE(store.Reserve(10, 50, "").ok());
}

TEST(MatrixStore, RefusesBadShapesOverflowAndShortOrLongUploads) {
  MatrixStore store(1 << 20);
  EXPECT_EQ(store.Reserve(0, 5, "").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Reserve(5, -1, "").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Reserve(int64_t{1} << 62, 8, "").status().code(), absl::StatusCode::kResourceExhausted);

  auto p = store.Reserve(2, 2, "");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->Append(Bytes(9)).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE((*p)->Append(Bytes(6)).ok());
  auto short_commit = store.Commit(std::move(*p));
  EXPECT_EQ(short_commit.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(short_commit.status().message()), HasSubstr("after 6 of 8 bytes"));
  EXPECT_EQ(store.used_bytes(), 0u);
}

TEST(MatrixStore, HandlesAreUnique) {
  MatrixStore store(1 << 20);
  std::set<std::string> handles;
  for (int i = 0; i < 200; ++i) {
    auto p = store.Reserve(1, 1, "");
    ASSERT_TRUE(p.ok());
    (*p)->MarkFilled();
    handles.insert(store.Commit(std::move(*p))->handle);
  }
  EXPECT_EQ(handles.size(), 200u);
}

// The usage gauge is published under the store's lock: a thread that read
// the bytes in use before another changed them cannot publish its stale
// value last.
TEST(MatrixStore, UsageIsPublishedInTheOrderItChanged) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint64_t> published;
  bool waiting = false;
  MatrixStore store(1000, [&](uint64_t used, size_t) {
    std::unique_lock lock(mu);
    if (used == 150) {  // the reserving thread's: let the other thread publish meanwhile
      waiting = true;
      cv.notify_all();
      const size_t before = published.size();
      cv.wait_for(lock, std::chrono::milliseconds(300), [&] { return published.size() > before; });
    }
    published.push_back(used);
    cv.notify_all();
  });
  auto first = store.Reserve(10, 5, "");  // 100 bytes
  ASSERT_TRUE(first.ok());
  std::unique_ptr<PendingMatrix> second;
  std::thread reserver([&] { second = std::move(*store.Reserve(5, 5, "")); });  // 50 more: 150
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return waiting; });
  }
  first->reset();  // 100 back: 50 in use
  reserver.join();
  std::lock_guard lock(mu);
  EXPECT_EQ(store.used_bytes(), 50u);
  EXPECT_EQ(published.back(), 50u);
}

}  // namespace
}  // namespace gemmd
