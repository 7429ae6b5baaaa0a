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

#include "engine/streaming_copy.h"

namespace gemmd {

// How a copy writes its destination: through the caches (small enough to
// stay there) or streaming past them (HostCopier's split copies, into and
// out of the pinned staging; see streaming_copy.h).
enum class Stores { kCached, kStreaming };

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
  void CopyTo(char* dst, size_t offset, size_t len, Stores stores = Stores::kCached) const {
    if (len == 0) return;  // an empty HostBytes may have no block at all
    const auto move = [stores](char* to, const char* from, size_t n) {
      if (stores == Stores::kStreaming) {
        StreamingCopy(to, from, n);
      } else {
        std::memcpy(to, from, n);
      }
    };
    if (pieces_.empty()) {
      move(dst, block_ + offset, len);
      return;
    }
    size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin()) - 1;
    while (len > 0) {
      const size_t within = offset - starts_[i];
      const size_t n = std::min(len, pieces_[i].second - within);
      move(dst, pieces_[i].first + within, n);
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
