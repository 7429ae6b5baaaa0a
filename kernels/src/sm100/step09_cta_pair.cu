// Step 9 = step 8 + the 2-CTA MMA. Two CTAs of a cluster act as one: the
// leader's single thread issues tcgen05.mma.cta_group::2, 256 × 256 × 16,
// which reads each CTA's own 128 rows of A and the two CTAs' 128-row halves
// of B, and leaves each CTA's 128 × 256 of D in its own TMEM. Each CTA
// still loads 32 KB per k-tile, but for twice step 8's work: per MAC, the
// pair moves half the B bytes from L2 and reads half from shared memory.
// What the pair changes in the protocol: the TMA bytes of both CTAs count on
// the leader's tma2mma, commits arrive in both CTAs (cta_mask 0b11), the
// leader's ld2mma waits for both CTAs' 256 writeback threads, TMEM is
// allocated and freed with cta_group::2 in both CTAs, a cluster barrier
// comes before the free, and the tile scheduler hands out 256 × 256 cluster
// tiles. The accumulators stay double-buffered: 2 × 256 columns.
#include "steps_sm100.h"
#include "warp_specialized.cuh"

namespace gemm::sm100 {

cudaError_t PrepareCtaPair() { return PrepareWarpSpecializedStep<9>(); }

std::string LaunchCtaPair(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  return LaunchWarpSpecializedStep<9>(p, ctx, stream);
}

}  // namespace gemm::sm100
