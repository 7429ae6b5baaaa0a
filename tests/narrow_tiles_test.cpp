// When step 10 takes its narrow tile (kernels/src/common/narrow_tiles.h),
// on the CPU, with an H100's 132 SMs: only where the wide pair tiles leave
// over half the SMs idle and the narrow tiles fit in one wave.
#include <gtest/gtest.h>

#include <cstdint>

#include "common/narrow_tiles.h"

namespace {

using gemm::common::PreferNarrowTiles;

constexpr int kSms = 132;
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
// Step 10's tiles: wide, 256×256 per pair of CTAs; narrow, 128×64 per CTA.
int WideCtas(int64_t m, int64_t n) { return static_cast<int>(2 * CeilDiv(m, 256) * CeilDiv(n, 256)); }
int NarrowCtas(int64_t m, int64_t n) { return static_cast<int>(CeilDiv(m, 128) * CeilDiv(n, 64)); }
bool Narrow(int64_t m, int64_t n) { return PreferNarrowTiles(WideCtas(m, n), NarrowCtas(m, n), kSms); }

TEST(NarrowTiles, TinyAndSmallProblemsTakeTheNarrowTile) {
  EXPECT_TRUE(Narrow(64, 64));     // 2 wide CTAs, 1 narrow
  EXPECT_TRUE(Narrow(1, 1));
  EXPECT_TRUE(Narrow(432, 74));    // 4 wide, 8 narrow
  EXPECT_TRUE(Narrow(1209, 717));  // 30 wide, 120 narrow
  EXPECT_TRUE(Narrow(1000, 1001)); // 32 wide, 128 narrow
}

TEST(NarrowTiles, ProblemsThatFillTheGpuKeepTheWideTile) {
  EXPECT_FALSE(Narrow(4096, 4096));  // 512 wide CTAs
  EXPECT_FALSE(Narrow(8192, 8192));
  EXPECT_FALSE(Narrow(2000, 2000));  // 128 wide: most SMs busy
  EXPECT_FALSE(Narrow(20330, 14));   // 160 wide
}

TEST(NarrowTiles, BeyondOneNarrowWaveTheWideTileStays) {
  // 1024×1100: 40 wide CTAs leave most SMs idle, but 144 narrow CTAs would
  // need a second wave.
  EXPECT_EQ(WideCtas(1024, 1100), 40);
  EXPECT_EQ(NarrowCtas(1024, 1100), 144);
  EXPECT_FALSE(Narrow(1024, 1100));
}

TEST(NarrowTiles, TheBoundariesAreInclusive) {
  EXPECT_TRUE(PreferNarrowTiles(66, 132, kSms));
  EXPECT_FALSE(PreferNarrowTiles(67, 132, kSms));
  EXPECT_FALSE(PreferNarrowTiles(66, 133, kSms));
}

}  // namespace
