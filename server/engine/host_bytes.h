// Bytes on the host, in one block or in pieces: a request's inline operand
// as gRPC received it is many slices, and gathering them into one block
// would cost a pass over the operand before the one into pinned staging.
// Copies out of it take any range, across pieces.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

namespace gemmd {

class HostBytes {
 public:
  HostBytes() = default;
  HostBytes(const void* data, size_t size) : block_(static_cast<const char*>(data)), size_(size) {}

  // Adds a piece after the others (a HostBytes made of pieces has no block).
  void Append(const char* data, size_t size) {
    if (size == 0) return;
    starts_.push_back(size_);
    pieces_.emplace_back(data, size);
    size_ += size;
  }

  size_t size() const { return size_; }
  // The bytes as one block, or nullptr when they are in pieces.
  const char* block() const { return pieces_.empty() ? block_ : nullptr; }

  // Bytes [offset, offset + len) to dst; the range must lie within size().
  void CopyTo(char* dst, size_t offset, size_t len) const {
    if (len == 0) return;  // an empty HostBytes may have no block at all
    if (pieces_.empty()) {
      std::memcpy(dst, block_ + offset, len);
      return;
    }
    size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin()) - 1;
    while (len > 0) {
      const size_t within = offset - starts_[i];
      const size_t n = std::min(len, pieces_[i].second - within);
      std::memcpy(dst, pieces_[i].first + within, n);
      dst += n;
      offset += n;
      len -= n;
      ++i;
    }
  }

 private:
  const char* block_ = nullptr;
  std::vector<std::pair<const char*, size_t>> pieces_;
  std::vector<size_t> starts_;  // starts_[i]: where piece i begins
  size_t size_ = 0;
};

}  // namespace gemmd
