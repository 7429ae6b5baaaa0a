// Large host-to-host copies split over a few persistent threads. One thread
// moves about 10 GB/s between pageable and pinned memory, a fifth of what
// PCIe Gen5 carries, so the staging copies of a big inline request (into
// pinned memory before H2D, out of it after D2H) were the transfer's
// bottleneck; several threads together keep up with the DMA.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/host_bytes.h"

namespace gemmd {

class HostCopier {
 public:
  // `threads` helpers besides the caller; 0 copies on the caller alone.
  explicit HostCopier(unsigned threads);
  ~HostCopier();
  HostCopier(const HostCopier&) = delete;
  HostCopier& operator=(const HostCopier&) = delete;

  // memcpy(dst, src, bytes); returns once every part is copied. Below
  // kMinSplitBytes the caller copies alone (threads cost more than they save)
  // through the caches; split copies stream past them (streaming_copy.h).
  void Copy(void* dst, const void* src, size_t bytes) { Copy(dst, HostBytes(src, bytes), 0, bytes); }
  // Bytes [offset, offset + bytes) of `src`, in one block or in pieces.
  void Copy(void* dst, const HostBytes& src, size_t offset, size_t bytes);

  static constexpr size_t kMinSplitBytes = 4 << 20;

 private:
  void Worker(unsigned index);

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::vector<std::thread> threads_;
  // The job in hand: part i of `parts` goes to helper i - 1 (the caller does part 0).
  char* dst_ = nullptr;
  const HostBytes* src_ = nullptr;
  size_t offset_ = 0, bytes_ = 0, parts_ = 0;
  unsigned long generation_ = 0;
  unsigned pending_ = 0;
  bool stop_ = false;
  std::mutex copy_mu_;  // one Copy at a time
};

}  // namespace gemmd
