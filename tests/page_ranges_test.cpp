// How host copies are split over threads (hostmem/page_ranges.h): the parts
// cover every byte once, in order, and every inner boundary is a page
// boundary, for every remainder the 61f7ed6 bug lost.
#include "hostmem/page_ranges.h"

#include <gtest/gtest.h>

namespace gemm::hostmem {
namespace {

void ExpectTiles(size_t bytes, size_t parts) {
  size_t next = 0;
  for (size_t i = 0; i < parts; ++i) {
    const ByteRange r = PartRange(bytes, parts, i);
    ASSERT_EQ(r.begin, next) << bytes << " bytes, part " << i << " of " << parts;
    ASSERT_LE(r.begin, r.end);
    if (r.end < bytes) EXPECT_EQ(r.end % kPageBytes, 0u) << bytes << " bytes, part " << i << " of " << parts;
    next = r.end;
  }
  EXPECT_EQ(next, bytes) << bytes << " bytes in " << parts << " parts: the last bytes are in no part";
}

TEST(PartRange, PartsCoverEveryByteOnPageBoundaries) {
  for (size_t parts : {1, 2, 3, 4, 7, 8, 16}) {
    for (size_t j : {0, 1, 2, 255, 256}) {
      for (size_t r = 0; r < parts + 2; ++r) ExpectTiles(parts * kPageBytes * j + r, parts);
    }
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{4095}, size_t{4097}, size_t{32} << 20, (size_t{32} << 20) - 1}) {
      ExpectTiles(bytes, parts);
    }
  }
}

TEST(PartRange, ARangeShorterThanOnePagePerPartLeavesTheLastPartsEmpty) {
  // 3 pages over 8 parts: one page each for the first three, none after.
  for (size_t i = 0; i < 8; ++i) {
    const ByteRange r = PartRange(3 * kPageBytes, 8, i);
    EXPECT_EQ(r.end - r.begin, i < 3 ? kPageBytes : 0) << "part " << i;
  }
}

}  // namespace
}  // namespace gemm::hostmem
