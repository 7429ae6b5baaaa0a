// Step 10's second tile (sm90/step10_two_consumers.cu says why it pays):
// when its wide pair tiles would leave most SMs without work, a narrow tile
// of a quarter the columns, one CTA per SM, spreads the same M·N over four
// times as many SMs and multiplies less padding. No CUDA types, so that the
// CPU tests check the rule.
#pragma once

namespace gemm::common {

// Narrow when the wide tiles give work to at most half the SMs and the
// narrow tiles all fit in one wave (one narrow CTA per SM). Beyond one wave
// the narrow tile's extra L2 traffic per MAC (a 128×64 tile reads 24 KB per
// k-tile for a quarter of the wide tile's work) would cost more than the
// idle SMs it fills; below, the wide tile's idle SMs cost more.
constexpr bool PreferNarrowTiles(int wide_ctas, int narrow_ctas, int sm_count) {
  return 2 * wide_ctas <= sm_count && narrow_ctas <= sm_count;
}

}  // namespace gemm::common
