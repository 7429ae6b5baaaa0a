// Fresh pages faulted in ahead of their first write (hostmem/
// populate_pages.h): after a populate, every whole page of the range is
// resident (mincore), and no byte has changed, even where another thread
// was writing the same pages meanwhile. Skipped where the kernel has no
// MADV_POPULATE_WRITE (Linux before 5.14).
#include "hostmem/populate_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <thread>

#include "resident_pages.h"

namespace gemm::hostmem {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Fresh anonymous memory, never touched: no page is resident yet.
class FreshMapping {
 public:
  explicit FreshMapping(size_t bytes) : bytes_(bytes) {
    p_ = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~FreshMapping() {
    if (p_ != MAP_FAILED) munmap(p_, bytes_);
  }
  char* data() const { return p_; }
  bool ok() const { return p_ != MAP_FAILED; }
  size_t ResidentPages() const { return gemm::testing::ResidentPages(p_, bytes_).first; }
  size_t pages() const { return bytes_ / 4096; }

 private:
  size_t bytes_;
  char* p_;
};

using gemm::testing::KernelPopulates;

TEST(PopulatePages, EveryWholePageIsResidentAndReadsZero) {
  if (!KernelPopulates()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  FreshMapping m(8 * kMiB);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m.ResidentPages(), 0u);
  ASSERT_TRUE(PopulatePages(m.data(), 8 * kMiB));
  EXPECT_EQ(m.ResidentPages(), m.pages());
  for (size_t at = 0; at < 8 * kMiB; at += 4093) ASSERT_EQ(m.data()[at], 0) << at;
}

TEST(PopulatePages, PartialPagesAtTheEndsAreLeftAlone) {
  if (!KernelPopulates()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  FreshMapping m(4 * 4096);
  ASSERT_TRUE(m.ok());
  // [100, 3 pages + 100) holds two whole pages: the second and the third.
  ASSERT_TRUE(PopulatePages(m.data() + 100, 3 * 4096));
  EXPECT_EQ(m.ResidentPages(), 2u);
  EXPECT_TRUE(PopulatePages(m.data() + 100, 200));  // no whole page: nothing to do
}

TEST(PopulatePages, BytesWrittenBeforeOrMeanwhileSurvive) {
  if (!KernelPopulates()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  const size_t bytes = 16 * kMiB;
  FreshMapping m(bytes);
  ASSERT_TRUE(m.ok());
  std::memset(m.data(), 0x5A, kMiB);  // before
  std::atomic<bool> go{false};
  std::thread writer([&] {  // meanwhile, the way D's copy overlaps a populate
    while (!go.load()) {
    }
    for (size_t at = kMiB; at < bytes; at += 4096) m.data()[at + 7] = static_cast<char>(at / 4096);
  });
  go = true;
  EXPECT_TRUE(PopulatePages(m.data(), bytes));
  writer.join();
  for (size_t at = 0; at < kMiB; ++at) ASSERT_EQ(m.data()[at], 0x5A) << at;
  for (size_t at = kMiB; at < bytes; at += 4096) {
    ASSERT_EQ(m.data()[at + 7], static_cast<char>(at / 4096)) << at;
    ASSERT_EQ(m.data()[at + 8], 0) << at;
  }
}

TEST(PagePopulator, ASubmittedRangeIsResidentOnceIdle) {
  if (!KernelPopulates()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  PagePopulator populator(3);
  // 9 pieces and a short tenth, over three threads.
  const size_t bytes = 9 * PagePopulator::kPieceBytes + 5 * 4096;
  FreshMapping m(bytes);
  ASSERT_TRUE(m.ok());
  populator.Submit(nullptr, m.data(), bytes);
  populator.WaitIdle();
  EXPECT_EQ(m.ResidentPages(), m.pages());
  EXPECT_TRUE(populator.supported());
}

TEST(PagePopulator, ARangeOffAPageBoundaryHasEveryWholePageResident) {
  if (!KernelPopulates()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  PagePopulator populator(2);
  // What new char[] returns: 16 bytes past a page boundary. Pieces cut every
  // kPieceBytes from there would leave each page they split unpopulated.
  const size_t bytes = 6 * PagePopulator::kPieceBytes;
  FreshMapping m(bytes);
  ASSERT_TRUE(m.ok());
  populator.Submit(nullptr, m.data() + 16, bytes - 16);
  populator.WaitIdle();
  EXPECT_EQ(m.ResidentPages(), m.pages() - 1) << "all but the first page, which the range holds only part of";
}

TEST(PagePopulator, KeepsTheMemoryUntilItIsDone) {
  PagePopulator populator(2);
  std::atomic<bool> freed{false};
  const size_t bytes = 32 * kMiB;
  char* p = new char[bytes];
  std::shared_ptr<char[]> owner(p, [&freed](char* q) {
    delete[] q;
    freed = true;
  });
  populator.Submit(owner, p, bytes);
  owner.reset();  // the caller lets go; the populator's handle keeps it
  populator.WaitIdle();
  EXPECT_TRUE(freed.load()) << "the last piece done, the memory goes";
}

TEST(PagePopulator, WithoutThreadsNothingIsHeld) {
  PagePopulator none(0);
  auto owner = std::make_shared<int>(0);
  none.Submit(owner, reinterpret_cast<char*>(owner.get()), sizeof(int));
  none.WaitIdle();
  EXPECT_EQ(owner.use_count(), 1);
}

}  // namespace
}  // namespace gemm::hostmem
