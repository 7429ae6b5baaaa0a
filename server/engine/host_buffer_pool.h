// Host memory of deleted matrices, kept for the next matrix of the same
// size. A fresh allocation of tens of MB is new pages that the kernel maps
// and zeroes on first touch: writing 32 MB into them costs several times
// the copy itself (D of a 4096² GEMM stored at 6.8 GB/s, against 29 GB/s
// into warm memory, measured on an H100 machine). Workloads repeat their
// shapes, so the same sizes come back.
//
// A kept buffer holds what its last matrix left. That is safe because the
// store publishes a matrix only once every byte of it was written (Commit),
// so old contents are never read. What is kept is bounded; beyond the bound
// the oldest buffers are freed.
//
// A new buffer's first write still pays: a fresh server's first 4096³
// request over four connections wrote D into the store at 4.08 ms against
// 1.0-1.2 after it (H100). So a new buffer can be faulted in
// ahead, on the server's populator threads (hostmem/populate_pages.h), while
// its GEMM uploads and runs: PopulateAhead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "hostmem/populate_pages.h"

namespace gemmd {

class HostBufferPool;

// One matrix's memory: back to its pool when destroyed, or freed.
class HostBuffer {
 public:
  HostBuffer() = default;
  ~HostBuffer();
  HostBuffer(HostBuffer&& other) noexcept { *this = std::move(other); }
  HostBuffer& operator=(HostBuffer&& other) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  uint16_t* get() const { return data_.get(); }
  explicit operator bool() const { return data_ != nullptr; }
  // A buffer never written nor populated yet is faulted in on the pool's
  // populator from now on; nothing for one that was, or without a populator.
  void PopulateAhead();
  // Its pages are in: a later PopulateAhead, here or after reuse, skips it.
  void MarkWritten() { fresh_ = false; }

 private:
  friend class HostBufferPool;
  HostBuffer(std::shared_ptr<uint16_t[]> data, uint64_t bytes, std::shared_ptr<HostBufferPool> pool, bool fresh)
      : data_(std::move(data)), bytes_(bytes), pool_(std::move(pool)), fresh_(fresh) {}
  void Release();

  std::shared_ptr<uint16_t[]> data_;  // shared with the populator while it works on it
  uint64_t bytes_ = 0;
  std::shared_ptr<HostBufferPool> pool_;
  bool fresh_ = false;
};

class HostBufferPool : public std::enable_shared_from_this<HostBufferPool> {
 public:
  // Smaller buffers are not kept: malloc serves them from warm memory itself.
  static constexpr uint64_t kMinKeptBytes = 1 << 20;
  static constexpr size_t kMaxKept = 64;

  // Keeps up to `capacity_bytes` of freed buffers; `on_kept` sees the bytes
  // kept after every change (it must not call back into the pool).
  // `populator` serves PopulateAhead (none: it does nothing).
  static std::shared_ptr<HostBufferPool> Create(uint64_t capacity_bytes,
                                                std::function<void(uint64_t)> on_kept = [](uint64_t) {},
                                                std::shared_ptr<gemm::hostmem::PagePopulator> populator = nullptr);

  // `bytes` bytes (even), a kept buffer of that size when there is one;
  // empty when the host is out of memory. Contents unspecified.
  HostBuffer Take(uint64_t bytes);

  uint64_t kept_bytes() const;
  uint64_t reused() const;  // Takes served from kept buffers

 private:
  friend class HostBuffer;
  HostBufferPool(uint64_t capacity_bytes, std::function<void(uint64_t)> on_kept,
                 std::shared_ptr<gemm::hostmem::PagePopulator> populator)
      : capacity_(capacity_bytes), on_kept_(std::move(on_kept)), populator_(std::move(populator)) {}
  void Give(std::shared_ptr<uint16_t[]> data, uint64_t bytes, bool fresh);

  struct Kept {
    uint64_t bytes;
    std::shared_ptr<uint16_t[]> data;
    bool fresh;  // never written nor populated
  };
  const uint64_t capacity_;
  std::function<void(uint64_t)> on_kept_;
  const std::shared_ptr<gemm::hostmem::PagePopulator> populator_;  // may be null
  mutable std::mutex mu_;
  std::deque<Kept> kept_;  // oldest first
  uint64_t kept_bytes_ = 0, reused_ = 0;
};

}  // namespace gemmd
