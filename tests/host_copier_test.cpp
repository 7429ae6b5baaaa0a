// HostCopier splits big copies over threads: every byte must land where a
// memcpy would put it, whatever the size, the alignment or the thread count.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "engine/host_copier.h"

namespace gemmd {
namespace {

TEST(HostCopier, CopiesExactlyWhatMemcpyWould) {
  std::mt19937 rng(7);
  for (unsigned threads : {0u, 1u, 3u, 7u}) {
    HostCopier copier(threads);
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{4095}, HostCopier::kMinSplitBytes - 1,
                         HostCopier::kMinSplitBytes, HostCopier::kMinSplitBytes * 3 + 12345}) {
      std::vector<uint8_t> src(bytes + 3), dst(bytes + 3, 0xAB);
      for (auto& b : src) b = static_cast<uint8_t>(rng());
      copier.Copy(dst.data() + 1, src.data() + 2, bytes);  // misaligned on both sides
      EXPECT_EQ(dst[0], 0xAB) << "wrote before the destination";
      EXPECT_TRUE(std::equal(src.begin() + 2, src.begin() + 2 + static_cast<long>(bytes), dst.begin() + 1))
          << threads << " threads, " << bytes << " bytes";
      EXPECT_EQ(dst[bytes + 1], 0xAB) << "wrote past the end";
    }
  }
}

TEST(HostCopier, BackToBackCopiesDoNotMix) {
  HostCopier copier(3);
  const size_t bytes = HostCopier::kMinSplitBytes * 2;
  for (int round = 0; round < 20; ++round) {
    std::vector<uint8_t> src(bytes, static_cast<uint8_t>(round)), dst(bytes, 0xFF);
    copier.Copy(dst.data(), src.data(), bytes);
    ASSERT_EQ(dst, src) << round;
  }
}

}  // namespace
}  // namespace gemmd
