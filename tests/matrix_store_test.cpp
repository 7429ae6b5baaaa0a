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

const std::string kOwner = "alice";
const Caller kAlice{"alice", false};

TEST(MatrixStore, UploadCommitGetDelete) {
  uint64_t last_used = 99;
  size_t last_count = 99;
  MatrixStore store(1 << 20, [&](uint64_t used, size_t count) {
    last_used = used;
    last_count = count;
  });
  auto pending = store.Reserve(4, 8, "x", kOwner);
  ASSERT_TRUE(pending.ok());
  constexpr uint64_t kCharge = MatrixStore::Charge(64, 1);  // data, label "x", bookkeeping
  EXPECT_EQ(store.used_bytes(), kCharge);
  ASSERT_TRUE((*pending)->Append(Bytes(30)).ok());
  ASSERT_TRUE((*pending)->Append(Bytes(34)).ok());
  auto desc = store.Commit(std::move(*pending));
  ASSERT_TRUE(desc.ok());
  EXPECT_THAT(desc->handle, ::testing::StartsWith("m-"));
  EXPECT_EQ(desc->bytes, 64u);
  EXPECT_EQ(desc->label, "x");

  auto got = store.Get(desc->handle, kAlice);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)->description().rows, 4);
  EXPECT_EQ(store.List(kAlice).size(), 1u);

  auto freed = store.Delete(desc->handle, kAlice);
  ASSERT_TRUE(freed.ok());
  EXPECT_EQ(*freed, 64u);
  // Still in use by `got`: the memory stays until that reference goes.
  EXPECT_EQ(store.used_bytes(), kCharge);
  got->reset();
  EXPECT_EQ(store.used_bytes(), 0u);
  EXPECT_EQ(last_used, 0u);
  EXPECT_EQ(last_count, 0u);
  EXPECT_EQ(store.Get(desc->handle, kAlice).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.Delete(desc->handle, kAlice).status().code(), absl::StatusCode::kNotFound);
}

// A result's handle is chosen before the engine runs (the engine may keep
// D's device copy under it) but is nobody's to Get until the commit.
TEST(MatrixStore, AReservedHandleIsPublishedAtCommitAndNotBefore) {
  MatrixStore store(1 << 20, [](uint64_t, size_t) {});
  auto pending = store.Reserve(4, 8, "D", kOwner);
  ASSERT_TRUE(pending.ok());
  const std::string handle = (*pending)->ReserveHandle();
  EXPECT_EQ(MatrixStore::CheckHandle(handle), absl::OkStatus());
  EXPECT_EQ((*pending)->ReserveHandle(), handle) << "reserved once";
  EXPECT_EQ(store.Get(handle, kAlice).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store.List(kAlice).empty());
  (*pending)->MarkFilled();
  auto desc = store.Commit(std::move(*pending));
  ASSERT_TRUE(desc.ok()) << desc.status();
  EXPECT_EQ(desc->handle, handle);
  EXPECT_TRUE(store.Get(handle, kAlice).ok());

  auto other = store.Reserve(4, 8, "D", kOwner);  // no reservation: a handle of its own at commit
  ASSERT_TRUE(other.ok());
  (*other)->MarkFilled();
  auto second = store.Commit(std::move(*other));
  ASSERT_TRUE(second.ok());
  EXPECT_NE(second->handle, handle);
}

TEST(MatrixStore, QuotaIsEnforcedAndReturnedByAbandonedUploads) {
  MatrixStore store(1000 + 2 * MatrixStore::kOverheadBytes);
  auto a = store.Reserve(10, 25, "", kOwner);  // 500 bytes + overhead
  ASSERT_TRUE(a.ok());
  auto b = store.Reserve(10, 26, "", kOwner);  // 520 bytes + overhead: over
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(b.status().message()), HasSubstr("776 bytes asked (data, label and 256 bytes of "
                                                           "bookkeeping), 756 of 1512 free"));
  a->reset();  // upload abandoned
  EXPECT_EQ(store.used_bytes(), 0u);
  EXPECT_TRUE(store.Reserve(10, 50, "", kOwner).ok());
}

// Reproduced once: 25 uploads of a 1x1 matrix with a 3 MiB label each held
// 98 MB against 50 bytes of quota. Labels are capped and, with a fixed
// per-matrix overhead, charged to the quota; the count of matrices is capped.
TEST(MatrixStore, LabelsAndManyTinyMatricesCannotEscapeTheQuota) {
  MatrixStore store(1 << 20, [](uint64_t, size_t) {}, /*max_matrices=*/3);
  auto long_label = store.Reserve(1, 1, std::string(MatrixStore::kMaxLabelBytes + 1, 'x'), kOwner);
  EXPECT_EQ(long_label.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(long_label.status().message()), HasSubstr("the label is 257 bytes; at most 256"));

  auto a = store.Reserve(1, 1, std::string(MatrixStore::kMaxLabelBytes, 'x'), kOwner);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(store.used_bytes(), 2 + MatrixStore::kOverheadBytes + MatrixStore::kMaxLabelBytes);
  auto b = store.Reserve(1, 1, "", kOwner);
  auto c = store.Reserve(1, 1, "", kOwner);
  ASSERT_TRUE(b.ok() && c.ok());
  auto d = store.Reserve(1, 1, "", kOwner);  // a fourth, pending ones counted
  EXPECT_EQ(d.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("holds 3 matrices, its limit"));
  b->reset();
  EXPECT_TRUE(store.Reserve(1, 1, "", kOwner).ok());

  MatrixStore tiny(3 * MatrixStore::Charge(2, 0));  // three 1x1 matrices fill it
  std::vector<std::unique_ptr<PendingMatrix>> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::move(*tiny.Reserve(1, 1, "", kOwner)));
  EXPECT_EQ(tiny.Reserve(1, 1, "", kOwner).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(MatrixStore, ListPagesInHandleOrder) {
  MatrixStore store(1 << 20);
  std::set<std::string> handles;
  for (int i = 0; i < 7; ++i) {
    auto p = store.Reserve(1, 1, "", kOwner);
    ASSERT_TRUE((*p)->Append(Bytes(2)).ok());
    handles.insert(store.Commit(std::move(*p))->handle);
  }
  std::vector<std::string> seen;
  std::string after;
  for (;;) {
    const auto page = store.List(kAlice, after, 3);
    EXPECT_LE(page.size(), 3u);
    if (page.empty()) break;
    for (const auto& m : page) seen.push_back(m.handle);
    after = page.back().handle;
  }
  EXPECT_EQ(seen, std::vector<std::string>(handles.begin(), handles.end()));
}

TEST(MatrixStore, RefusesBadShapesOverflowAndShortOrLongUploads) {
  MatrixStore store(1 << 20);
  EXPECT_EQ(store.Reserve(0, 5, "", kOwner).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Reserve(5, -1, "", kOwner).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Reserve(int64_t{1} << 62, 8, "", kOwner).status().code(), absl::StatusCode::kResourceExhausted);
  // 2^64 - 128 bytes: no product overflows, but adding the bookkeeping to
  // it would wrap to a charge of a few hundred bytes (the fuzzer found it).
  const auto near_wrap = store.Reserve((int64_t{1} << 62) - 16, 4, "x", kOwner);
  EXPECT_EQ(near_wrap.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(near_wrap.status().message()), HasSubstr("larger than the whole quota of 1048576 bytes"));
  EXPECT_EQ(store.used_bytes(), 0u);

  auto p = store.Reserve(2, 2, "", kOwner);
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
    auto p = store.Reserve(1, 1, "", kOwner);
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
  constexpr uint64_t kFirst = MatrixStore::Charge(100, 0), kSecond = MatrixStore::Charge(50, 0);
  constexpr uint64_t kBoth = kFirst + kSecond;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint64_t> published;
  bool waiting = false;
  MatrixStore store(2 * kBoth, [&](uint64_t used, size_t) {
    std::unique_lock lock(mu);
    if (used == kBoth) {  // the reserving thread's: let the other thread publish meanwhile
      waiting = true;
      cv.notify_all();
      const size_t before = published.size();
      cv.wait_for(lock, std::chrono::milliseconds(300), [&] { return published.size() > before; });
    }
    published.push_back(used);
    cv.notify_all();
  });
  auto first = store.Reserve(10, 5, "", kOwner);  // 100 bytes
  ASSERT_TRUE(first.ok());
  std::unique_ptr<PendingMatrix> second;
  std::thread reserver([&] { second = std::move(*store.Reserve(5, 5, "", kOwner)); });  // 50 more
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return waiting; });
  }
  first->reset();  // the first back: the second's charge in use
  reserver.join();
  std::lock_guard lock(mu);
  EXPECT_EQ(store.used_bytes(), kSecond);
  EXPECT_EQ(published.back(), kSecond);
}

// Handles are unguessable, but a server shared by teams must not rely on
// that: a matrix is its owner's, and anyone else's Get, Delete and List
// treat it as absent. An operator sees all.
TEST(MatrixStore, AMatrixIsItsOwnersAndAnOperatorsOnly) {
  MatrixStore store(1 << 20);
  auto stored = [&](const std::string& owner) {
    auto p = store.Reserve(1, 1, "", owner);
    EXPECT_TRUE((*p)->Append(Bytes(2)).ok());
    return store.Commit(std::move(*p))->handle;
  };
  const std::string alices = stored("alice"), bobs = stored("bob");
  const Caller bob{"bob", false}, ops{"ops", true};
  EXPECT_EQ(store.Get(bobs, kAlice).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.Get(alices, bob).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.Delete(alices, bob).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(store.Get(alices, bob).status().message()), HasSubstr("never uploaded, or deleted"));
  ASSERT_EQ(store.List(kAlice).size(), 1u);
  EXPECT_EQ(store.List(kAlice)[0].handle, alices);
  EXPECT_EQ(store.List(kAlice)[0].owner, "alice");
  ASSERT_EQ(store.List(bob).size(), 1u);
  EXPECT_EQ(store.List(bob)[0].handle, bobs);
  EXPECT_EQ(store.List(ops).size(), 2u);
  EXPECT_TRUE(store.Get(alices, kAlice).ok());
  EXPECT_TRUE(store.Get(bobs, ops).ok());
  EXPECT_TRUE(store.Delete(bobs, ops).ok());
  EXPECT_TRUE(store.Delete(alices, kAlice).ok());
  EXPECT_EQ(store.used_bytes(), 0u);
}

}  // namespace
}  // namespace gemmd
