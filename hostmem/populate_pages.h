// Fresh memory's page faults taken ahead of its first write, on other
// threads and without writing it. A fresh 32 MiB buffer costs 8,192 page
// faults when it is first written: 9 ms on one core of the development
// machine, and the slow first download of every fresh gemmd (3.3-7.9 GB/s
// against 20-30 after it, on H100 hosts). Where memory is known before its
// bytes arrive (the server's inline D, sized by the request's shape),
// MADV_POPULATE_WRITE (Linux 5.14) faults it in while the request runs. It
// never changes the bytes, so it may overlap writes into the same pages; a
// range freed meanwhile only makes the call fail.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace gemm::hostmem {

// Faults in the whole pages within [p, p + bytes), writable, on the calling
// thread. false, with errno set, where the kernel has no MADV_POPULATE_WRITE
// (EINVAL) or the range is not mapped: the pages not populated then fault on
// their first write, as they would have anyway.
bool PopulatePages(void* p, size_t bytes);

// Persistent threads that populate the ranges handed to them, a piece each
// at a time, so that a big buffer's faults are spread over all of them.
// Pieces are the 2 MiB that one page table maps, on its boundaries, so
// that no two threads take the same page-table lock. A populate holds the
// process's memory-map lock for reading while it faults a piece in, and
// anything that maps memory meanwhile (malloc growing a heap) waits for it:
// only the server populates, and only once the request's own bytes are in.
class PagePopulator {
 public:
  static constexpr size_t kPieceBytes = size_t{2} << 20;

  explicit PagePopulator(unsigned threads);
  // A quarter of the cores, 1-4: four fault in 32 MiB in a few ms.
  static unsigned DefaultThreads();
  ~PagePopulator();  // drops the pieces not started, finishes those in hand
  PagePopulator(const PagePopulator&) = delete;
  PagePopulator& operator=(const PagePopulator&) = delete;

  // Populates [p, p + bytes) in the background; `keep` holds the memory
  // until the last piece is done. Nothing happens once the kernel has
  // refused (no MADV_POPULATE_WRITE).
  void Submit(std::shared_ptr<const void> keep, char* p, size_t bytes);
  // Until every submitted piece is done (tests).
  void WaitIdle();
  // false once the kernel has refused MADV_POPULATE_WRITE.
  bool supported() const;

 private:
  struct Piece {
    std::shared_ptr<const void> keep;
    char* p;
    size_t bytes;
  };
  void Worker();

  mutable std::mutex mu_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<Piece> pieces_;
  unsigned in_hand_ = 0;
  bool stop_ = false, supported_ = true;
  std::vector<std::thread> threads_;
};

}  // namespace gemm::hostmem
