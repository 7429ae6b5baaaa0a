// Step 10 = step 9 + two MMA consumers. Each stage holds two A blocks and
// one B block per CTA (48 KB); MMA warp c multiplies A block c by the B
// pair into its own 256 TMEM columns, and writeback warpgroup c reads
// them. The cluster tile grows to 512 × 256: every B byte loaded now feeds
// two MMAs, so a CTA moves 48 KB per k-tile for twice step 9's work, and
// while one consumer's accumulator drains, the other's MMAs keep the
// tensor core busy. TMEM is full (2 × 256 columns), so each consumer has
// one accumulator, and the mma2ld and ld2mma slots are indexed by
// consumer. The writeback reads 64 columns at a time, so 256 columns of D
// never sit in registers at once.
#include "steps_sm100.h"
#include "warp_specialized.cuh"

namespace gemm::sm100 {

cudaError_t PrepareTwoConsumers() { return PrepareWarpSpecializedStep<10>(); }

std::string LaunchTwoConsumers(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  return LaunchWarpSpecializedStep<10>(p, ctx, stream);
}

}  // namespace gemm::sm100
