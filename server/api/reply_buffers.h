// Where an inline reply's D is written: buffers recycled from earlier
// replies. A fresh 32 MiB buffer (4096² fp16) costs 8,192 page faults on
// its first write, 16-19 ms on the H100 machine, which was the whole of the
// server's "prepare" phase for an inline 4096³ request (zero-filling a
// std::string). A recycled one was faulted in already, and nothing zeroes
// it: the engine writes every byte of D before the reply leaves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

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

 private:
  friend class ReplyBuffers;
  ReplyBuffer(std::shared_ptr<ReplyBuffers> home, std::unique_ptr<char[]> bytes, size_t capacity, size_t size)
      : home_(std::move(home)), bytes_(std::move(bytes)), capacity_(capacity), size_(size) {}
  std::shared_ptr<ReplyBuffers> home_;  // keeps the pool alive while a slice holds this
  std::unique_ptr<char[]> bytes_;
  size_t capacity_, size_;
};

class ReplyBuffers : public std::enable_shared_from_this<ReplyBuffers> {
 public:
  // Buffers under kMinKeptBytes are not worth keeping (a few faults);
  // at most `max_kept_bytes` wait for reuse.
  static constexpr size_t kMinKeptBytes = size_t{1} << 20;
  static std::shared_ptr<ReplyBuffers> Create(uint64_t max_kept_bytes);

  // A buffer of `size` bytes: a kept one of 1-2× that capacity, else new.
  std::unique_ptr<ReplyBuffer> Take(size_t size);
  uint64_t kept_bytes() const;

 private:
  friend class ReplyBuffer;
  explicit ReplyBuffers(uint64_t max_kept_bytes) : max_kept_bytes_(max_kept_bytes) {}
  void Return(std::unique_ptr<char[]> bytes, size_t capacity);

  const uint64_t max_kept_bytes_;
  mutable std::mutex mu_;
  std::multimap<size_t, std::unique_ptr<char[]>> kept_;  // by capacity
  uint64_t kept_bytes_ = 0;
};

}  // namespace gemmd
