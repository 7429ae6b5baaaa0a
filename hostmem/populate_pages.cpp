#include "hostmem/populate_pages.h"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "hostmem/page_ranges.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14's value; older headers lack it
#endif

namespace gemm::hostmem {

bool PopulatePages(void* p, size_t bytes) {
  // madvise takes whole pages: the range's partial first and last pages are
  // left to fault on their first write.
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t begin = (start + kPageBytes - 1) / kPageBytes * kPageBytes;
  const uintptr_t end = (start + bytes) / kPageBytes * kPageBytes;
  if (end <= begin) return true;
  return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) == 0;
}

PagePopulator::PagePopulator(unsigned threads) {
  for (unsigned i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "page-populator");  // as run.sh's CPU table lists it
      Worker();
    });
  }
}

unsigned PagePopulator::DefaultThreads() { return std::clamp(std::thread::hardware_concurrency() / 4, 1u, 4u); }

PagePopulator::~PagePopulator() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    pieces_.clear();
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void PagePopulator::Submit(std::shared_ptr<const void> keep, char* p, size_t bytes) {
  {
    std::lock_guard lock(mu_);
    if (!supported_ || threads_.empty()) return;
    // Pieces end on kPieceBytes boundaries, which are page boundaries too: a
    // page split between two pieces would be whole in neither, and neither
    // would populate it.
    char* const end = p + bytes;
    for (char* at = p; at < end;) {
      const uintptr_t boundary = (reinterpret_cast<uintptr_t>(at) / kPieceBytes + 1) * kPieceBytes;
      char* const stop = std::min(end, reinterpret_cast<char*>(boundary));
      pieces_.push_back({keep, at, static_cast<size_t>(stop - at)});
      at = stop;
    }
  }
  work_cv_.notify_all();
}

void PagePopulator::WaitIdle() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] { return pieces_.empty() && in_hand_ == 0; });
}

bool PagePopulator::supported() const {
  std::lock_guard lock(mu_);
  return supported_;
}

void PagePopulator::Worker() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [this] { return stop_ || !pieces_.empty(); });
    if (stop_) return;
    Piece piece = std::move(pieces_.front());
    pieces_.pop_front();
    ++in_hand_;
    lock.unlock();
    const int error = PopulatePages(piece.p, piece.bytes) ? 0 : errno;
    piece.keep.reset();  // the memory may go now, outside the lock
    lock.lock();
    if (error == EINVAL) {  // no MADV_POPULATE_WRITE in this kernel: stop asking
      supported_ = false;
      pieces_.clear();
    }
    if (--in_hand_ == 0 && pieces_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace gemm::hostmem
