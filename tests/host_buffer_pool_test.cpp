// The host memory that deleted matrices leave for the next of their size:
// what is reused, what is freed, the bound, (through the store) that a
// reused buffer never shows its last matrix's bytes, and that a new buffer
// is faulted in ahead when asked, once.
#include "engine/host_buffer_pool.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "engine/matrix_store.h"
#include "resident_pages.h"

namespace gemmd {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(HostBufferPool, AFreedBufferServesTheNextTakeOfItsSize) {
  std::vector<uint64_t> seen;
  auto pool = HostBufferPool::Create(8 * kMiB, [&](uint64_t kept) { seen.push_back(kept); });
  HostBuffer a = pool->Take(2 * kMiB);
  ASSERT_TRUE(a);
  uint16_t* const first = a.get();
  a = HostBuffer();  // freed: kept
  EXPECT_EQ(pool->kept_bytes(), 2 * kMiB);
  HostBuffer other = pool->Take(4 * kMiB);  // another size: fresh memory
  EXPECT_NE(other.get(), first);
  EXPECT_EQ(pool->reused(), 0u);
  HostBuffer b = pool->Take(2 * kMiB);
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(pool->reused(), 1u);
  EXPECT_EQ(pool->kept_bytes(), 0u);
  EXPECT_EQ(seen, (std::vector<uint64_t>{2 * kMiB, 0}));
}

TEST(HostBufferPool, TheOldestAreFreedPastTheBound) {
  auto pool = HostBufferPool::Create(2 * kMiB);
  std::vector<HostBuffer> held;
  for (int i = 0; i < 3; ++i) held.push_back(pool->Take(kMiB));
  uint16_t* const newest = held[2].get();
  held.clear();  // freed oldest first: the first is dropped when the third comes
  EXPECT_EQ(pool->kept_bytes(), 2 * kMiB);
  HostBuffer big = pool->Take(3 * kMiB);
  big = HostBuffer();  // larger than the bound: never kept
  EXPECT_EQ(pool->kept_bytes(), 2 * kMiB);
  EXPECT_EQ(pool->Take(kMiB).get(), newest) << "the most recently freed is reused first";
}

TEST(HostBufferPool, SmallBuffersAndAZeroBoundKeepNothing) {
  auto pool = HostBufferPool::Create(8 * kMiB);
  { HostBuffer small = pool->Take(HostBufferPool::kMinKeptBytes / 2); }
  EXPECT_EQ(pool->kept_bytes(), 0u);
  auto none = HostBufferPool::Create(0);
  { HostBuffer b = none->Take(2 * kMiB); }
  EXPECT_EQ(none->kept_bytes(), 0u);
  EXPECT_EQ(none->reused(), 0u);
}

TEST(HostBufferPool, ABufferMayOutliveItsLastOtherOwner) {
  auto pool = HostBufferPool::Create(8 * kMiB);
  HostBuffer b = pool->Take(2 * kMiB);
  std::weak_ptr<HostBufferPool> alive = pool;
  pool.reset();
  EXPECT_FALSE(alive.expired()) << "the buffer holds its pool";
  b = HostBuffer();
  EXPECT_TRUE(alive.expired());
}

// Through the store: a deleted matrix's memory holds the next upload of its
// size, which reads back as what was uploaded, never the old bytes; an
// upload broken off gives its memory back too.
TEST(HostBufferPool, TheStoreReusesDeletedMatricesAndServesOnlyNewBytes) {
  auto pool = HostBufferPool::Create(64 * kMiB);
  MatrixStore store(256 * kMiB, [](uint64_t, size_t) {}, MatrixStore::kDefaultMaxMatrices, pool);
  const Caller alice{"alice", false};
  auto store_one = [&](char fill) {
    auto pending = store.Reserve(1024, 1024, "", "alice");  // 2 MiB
    EXPECT_TRUE(pending.ok());
    EXPECT_TRUE((*pending)->Append(std::string(2 * kMiB, fill)).ok());
    return store.Commit(std::move(*pending));
  };
  auto first = store_one('\x11');
  ASSERT_TRUE(first.ok());
  const char* first_data = (*store.Get(first->handle, alice))->data();
  ASSERT_TRUE(store.Delete(first->handle, alice).ok());
  EXPECT_EQ(pool->kept_bytes(), 2 * kMiB);

  auto second = store_one('\x22');
  ASSERT_TRUE(second.ok());
  auto got = store.Get(second->handle, alice);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)->data(), first_data) << "the deleted matrix's memory was reused";
  EXPECT_EQ(pool->reused(), 1u);
  const auto* bytes = reinterpret_cast<const char*>((*got)->data());
  EXPECT_EQ(std::string(bytes, 2 * kMiB), std::string(2 * kMiB, '\x22'));

  {
    auto broken = store.Reserve(512, 1024, "", "alice");  // 1 MiB, abandoned half written
    ASSERT_TRUE(broken.ok());
    ASSERT_TRUE((*broken)->Append(std::string(kMiB / 2, '\x33')).ok());
    EXPECT_FALSE(store.Commit(std::move(*broken)).ok());
  }
  EXPECT_EQ(pool->kept_bytes(), kMiB);
}

using gemm::testing::KernelPopulates;
using gemm::testing::ResidentPages;

TEST(HostBufferPool, ANewBufferIsPopulatedAheadAndAKeptFreshOneStillIs) {
  if (!KernelPopulates()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  auto populator = std::make_shared<gemm::hostmem::PagePopulator>(2);
  auto pool = HostBufferPool::Create(64 * kMiB, [](uint64_t) {}, populator);
  HostBuffer a = pool->Take(24 * kMiB);
  a.PopulateAhead();
  populator->WaitIdle();
  auto [resident, pages] = ResidentPages(a.get(), 24 * kMiB);
  EXPECT_EQ(resident, pages);

  // Taken, never written (its GEMM stopped in the queue), and freed: the
  // next Take of its size still has it populated.
  HostBuffer b = pool->Take(20 * kMiB);
  uint16_t* const where = b.get();
  b = HostBuffer();
  HostBuffer c = pool->Take(20 * kMiB);
  ASSERT_EQ(c.get(), where);
  c.PopulateAhead();
  populator->WaitIdle();
  std::tie(resident, pages) = ResidentPages(c.get(), 20 * kMiB);
  EXPECT_EQ(resident, pages);
}

// Freed while its populate runs, a buffer's memory stays mapped until the
// populator is done with it (ASan checks), and goes after.
TEST(HostBufferPool, ABufferFreedWhilePopulatedIsHeldUntilDone) {
  auto populator = std::make_shared<gemm::hostmem::PagePopulator>(2);
  auto pool = HostBufferPool::Create(0, [](uint64_t) {}, populator);  // keeps nothing: freed on release
  for (int i = 0; i < 8; ++i) {
    HostBuffer a = pool->Take(16 * kMiB);
    a.PopulateAhead();
    a = HostBuffer();
  }
  populator->WaitIdle();
  EXPECT_EQ(pool->kept_bytes(), 0u);
}

}  // namespace
}  // namespace gemmd
