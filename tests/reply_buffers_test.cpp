// Inline D's recycled buffers (server/api/reply_buffers.h): a buffer comes
// back for the next reply of its size, the pool keeps no more than its cap,
// a buffer outlives the service's handle on the pool, and a new buffer is
// faulted in by the pool's populator before D is written into it.
#include "api/reply_buffers.h"

#include <gtest/gtest.h>
#include <vector>

#include "resident_pages.h"

namespace gemmd {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(ReplyBuffers, ABufferComesBackForTheNextReplyOfItsSize) {
  auto pool = ReplyBuffers::Create(64 * kMiB);
  auto first = pool->Take(32 * kMiB);
  char* where = first->data();
  first.reset();
  EXPECT_EQ(pool->kept_bytes(), 32 * kMiB);
  auto second = pool->Take(32 * kMiB);
  EXPECT_EQ(second->data(), where);
  EXPECT_EQ(second->size(), 32 * kMiB);
  EXPECT_EQ(pool->kept_bytes(), 0u);
  auto smaller = pool->Take(20 * kMiB);  // nothing kept now: a new one
  EXPECT_NE(smaller->data(), where);
}

TEST(ReplyBuffers, AKeptBufferServesSizesDownToHalfItsCapacity) {
  auto pool = ReplyBuffers::Create(64 * kMiB);
  pool->Take(8 * kMiB).reset();
  auto half = pool->Take(4 * kMiB);
  EXPECT_EQ(half->size(), 4 * kMiB);
  EXPECT_EQ(pool->kept_bytes(), 0u);
  half.reset();
  auto quarter = pool->Take(2 * kMiB);  // under half: the 8 MiB one stays kept
  EXPECT_EQ(pool->kept_bytes(), 8 * kMiB);
  auto larger = pool->Take(9 * kMiB);  // too small to serve it
  EXPECT_EQ(pool->kept_bytes(), 8 * kMiB);
}

TEST(ReplyBuffers, NoMoreThanTheCapWaitsAndSmallBuffersAreNotKept) {
  auto pool = ReplyBuffers::Create(10 * kMiB);
  std::vector<std::unique_ptr<ReplyBuffer>> out;
  for (int i = 0; i < 5; ++i) out.push_back(pool->Take(4 * kMiB));
  out.clear();
  EXPECT_EQ(pool->kept_bytes(), 8 * kMiB);  // two of five fit under 10 MiB
  pool->Take(ReplyBuffers::kMinKeptBytes - 1).reset();
  EXPECT_EQ(pool->kept_bytes(), 8 * kMiB);
}

TEST(ReplyBuffers, ABufferOutlivesTheLastOtherHandleOnItsPool) {
  auto pool = ReplyBuffers::Create(64 * kMiB);
  auto buffer = pool->Take(2 * kMiB);
  buffer->data()[2 * kMiB - 1] = 7;
  pool.reset();  // the service is gone; the slice still holds D
  EXPECT_EQ(buffer->data()[2 * kMiB - 1], 7);
  buffer.reset();  // returns to a pool that only it kept alive (ASan checks)
}

using gemm::testing::KernelPopulates;
using gemm::testing::ResidentPages;

TEST(ReplyBuffers, ANewBufferIsFaultedInBeforeDIsWritten) {
  if (!KernelPopulates()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  auto populator = std::make_shared<gemm::hostmem::PagePopulator>(2);
  auto pool = ReplyBuffers::Create(64 * kMiB, populator);
  auto buffer = pool->Take(24 * kMiB + 100);
  buffer->PopulateAhead();  // its request runs
  populator->WaitIdle();
  const auto [resident, pages] = ResidentPages(buffer->data(), buffer->size());
  EXPECT_EQ(resident, pages);
}

// A buffer whose request stopped in the queue comes back never populated;
// the next request that takes it has it populated.
TEST(ReplyBuffers, ABufferKeptUnpopulatedIsPopulatedWhenNextTaken) {
  if (!KernelPopulates()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  auto populator = std::make_shared<gemm::hostmem::PagePopulator>(2);
  auto pool = ReplyBuffers::Create(64 * kMiB, populator);
  auto first = pool->Take(24 * kMiB);
  const char* where = first->data();
  first.reset();  // stopped in the queue: PopulateAhead never ran
  auto again = pool->Take(24 * kMiB);
  ASSERT_EQ(again->data(), where);
  again->PopulateAhead();
  populator->WaitIdle();
  const auto [resident, pages] = ResidentPages(again->data(), again->size());
  EXPECT_EQ(resident, pages);
}

}  // namespace
}  // namespace gemmd
