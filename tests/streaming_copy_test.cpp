// StreamingCopy stores past the caches in 64-byte steps from the first
// 16-byte aligned destination: whatever the alignment of either side and
// whatever the length, it must write exactly what memcpy would and nothing
// outside the destination.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "engine/streaming_copy.h"

namespace gemmd {
namespace {

TEST(StreamingCopy, WritesWhatMemcpyWouldAtEveryAlignmentAndLength) {
  std::mt19937 rng(3);
  std::vector<uint8_t> src(8192 + 64);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  for (size_t dst_shift = 0; dst_shift < 16; ++dst_shift) {
    for (size_t src_shift = 0; src_shift < 16; src_shift += 5) {
      for (size_t bytes : {0, 1, 15, 16, 17, 63, 64, 65, 79, 127, 128, 1000, 4096 + 17, 8192}) {
        alignas(64) static uint8_t dst[8192 + 128];
        std::fill(std::begin(dst), std::end(dst), 0xAB);
        StreamingCopy(dst + dst_shift, src.data() + src_shift, bytes);
        ASSERT_TRUE(std::equal(src.begin() + static_cast<long>(src_shift),
                               src.begin() + static_cast<long>(src_shift + bytes), dst + dst_shift))
            << "dst +" << dst_shift << ", src +" << src_shift << ", " << bytes << " bytes";
        for (size_t i = 0; i < dst_shift; ++i) ASSERT_EQ(dst[i], 0xAB) << "wrote before the destination";
        for (size_t i = dst_shift + bytes; i < sizeof dst; ++i) ASSERT_EQ(dst[i], 0xAB) << "wrote past the end";
      }
    }
  }
}

}  // namespace
}  // namespace gemmd
