// How a host copy is split over threads: contiguous parts on page (4 KB)
// boundaries, so that no two threads write, or fault in, the same page.
// The server's HostCopier, the client's gathering of D and the page
// populator all split this way.
#pragma once

#include <algorithm>
#include <cstddef>

namespace gemm::hostmem {

constexpr size_t kPageBytes = 4096;

struct ByteRange {
  size_t begin = 0, end = 0;
};

// Part `i` of `parts` of [0, bytes). The parts' length is bytes / parts
// rounded up, then up to a page, so that they cover every byte; the last
// parts may be short or empty. (Rounded down before it was rounded up, a
// range of parts * 4096 * j + r bytes, 0 < r < parts, lost its last r
// bytes: the server's bug fixed in 61f7ed6.)
constexpr ByteRange PartRange(size_t bytes, size_t parts, size_t i) {
  const size_t per = ((bytes + parts - 1) / parts + kPageBytes - 1) / kPageBytes * kPageBytes;
  const size_t begin = std::min(bytes, i * per);
  return {begin, std::min(bytes, begin + per)};
}

}  // namespace gemm::hostmem
