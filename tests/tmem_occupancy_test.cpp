// Steps 3-4 on sm_100a: an SM must hold no more CTAs than TMEM has room
// for, or the extra ones wait inside tcgen05.alloc (tmem_occupancy.h).
#include <gtest/gtest.h>

#include "common/tile_layout.h"
#include "sm100/tmem_occupancy.h"

namespace gemm::sm100 {
namespace {

// Steps 3-4's A and B tiles and the 1 KB alignment slack (kSmemAlignSlack,
// common/kernel_basics.h, which is device code).
constexpr int kTileSmem = 2 * common::kTileBytes + 1024;

TEST(TmemOccupancy, TheTilesAloneWouldPutSixCtasOnAnSmForFourTmemAllocations) {
  EXPECT_EQ(CtasBySmem(kTileSmem), 6);
  EXPECT_EQ(kTmemColumnsPerSm / common::kTileRows, 4u);
}

TEST(TmemOccupancy, TheBoundedRequestHoldsExactlyAsManyAsTmem) {
  const int bounded = TmemBoundSmemBytes(kTileSmem, common::kTileRows);
  EXPECT_GE(bounded, kTileSmem);
  // Whatever the kernel's own __shared__ variables add, never a fifth.
  for (int static_bytes : {0, 16, 64, 1024}) {
    EXPECT_EQ(CtasBySmem(bounded, static_bytes), 4) << static_bytes;
  }
  // A request already above the bound is kept as it is.
  EXPECT_EQ(TmemBoundSmemBytes(100 * 1024, common::kTileRows), 100 * 1024);
  // 256 columns each: two fit in TMEM, and two by shared memory.
  EXPECT_EQ(CtasBySmem(TmemBoundSmemBytes(kTileSmem, 256)), 2);
}

}  // namespace
}  // namespace gemm::sm100
