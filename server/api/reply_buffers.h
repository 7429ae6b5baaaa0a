// Where an inline reply's D is written: buffers recycled from earlier
// replies. A fresh 32 MiB buffer (4096² fp16) costs 8,192 page faults on
// its first write, 16-19 ms on the H100 machine, which was the whole of the
// server's "prepare" phase for an inline 4096³ request (zero-filling a
// std::string). A recycled one was faulted in already, and nothing zeroes
// it: the engine writes every byte of D before the reply leaves. A new one
// is faulted in by the server's populator threads (hostmem/populate_pages.h)
// while its request uploads and runs, instead of by D's first write: a
// fresh server's first download of each size was 3.3-7.9 GB/s against
// 20-30 after it. Only once its request runs: a queued request of a few
// bytes may ask for a D of 64 MiB, and the queue holds 64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "hostmem/populate_pages.h"

namespace gemmd {

class ReplyBuffers;

// One reply's D: `size` bytes at `data`, uninitialized. Destroyed (by the
// gRPC slice that carries it, once sent), it goes back to its pool.
class ReplyBuffer {
 public:
  ~ReplyBuffer();
  ReplyBuffer(const ReplyBuffer&) = delete;
  ReplyBuffer& operator=(const ReplyBuffer&) = delete;
  char* data() { return bytes_.get(); }
  size_t size() const { return size_; }
  // A new buffer's pages faulted in on the populator's threads, from
  // now until D's copy reaches them; nothing for a recycled one.
  void PopulateAhead();

 private:
  friend class ReplyBuffers;
  ReplyBuffer(std::shared_ptr<ReplyBuffers> home, std::shared_ptr<char[]> bytes, size_t capacity, size_t size,
              bool fresh)
      : home_(std::move(home)), bytes_(std::move(bytes)), capacity_(capacity), size_(size), fresh_(fresh) {}
  std::shared_ptr<ReplyBuffers> home_;  // keeps the pool alive while a slice holds this
  std::shared_ptr<char[]> bytes_;       // shared with the populator while it works on them
  size_t capacity_, size_;
  // Never populated nor written: new, or kept from a request that stopped
  // in the queue.
  bool fresh_;
};

class ReplyBuffers : public std::enable_shared_from_this<ReplyBuffers> {
 public:
  // Buffers under kMinKeptBytes are not worth keeping or populating (a few
  // faults); at most `max_kept_bytes` wait for reuse. `populator` faults in
  // new ones (none: nothing does).
  static constexpr size_t kMinKeptBytes = size_t{1} << 20;
  static std::shared_ptr<ReplyBuffers> Create(uint64_t max_kept_bytes,
                                              std::shared_ptr<gemm::hostmem::PagePopulator> populator = nullptr);

  // A buffer of `size` bytes: a kept one of 1-2× that capacity, else new.
  std::unique_ptr<ReplyBuffer> Take(size_t size);
  uint64_t kept_bytes() const;

 private:
  friend class ReplyBuffer;
  ReplyBuffers(uint64_t max_kept_bytes, std::shared_ptr<gemm::hostmem::PagePopulator> populator)
      : max_kept_bytes_(max_kept_bytes), populator_(std::move(populator)) {}
  void Return(std::shared_ptr<char[]> bytes, size_t capacity, bool fresh);

  const uint64_t max_kept_bytes_;
  const std::shared_ptr<gemm::hostmem::PagePopulator> populator_;  // may be null
  mutable std::mutex mu_;
  struct Kept {
    std::shared_ptr<char[]> bytes;
    bool fresh;
  };
  std::multimap<size_t, Kept> kept_;  // by capacity
  uint64_t kept_bytes_ = 0;
};

}  // namespace gemmd
