// Step 7 = step 6 + warp specialization, exactly the seed's chain. One
// thread issues the TMA loads, one issues the MMAs, a warpgroup writes
// back, and four barrier arrays pass the work along
// (warp_specialized_protocol.h). On Blackwell this pays more than on
// Hopper: the MMA is issued by a single thread and accumulates in TMEM, not
// in the issuing warps' registers, so the MMA warp never stops to move an
// accumulator. In step 6 every thread waited while the tile's D left TMEM;
// here the MMAs of the next tile run during the writeback, into the second
// of two TMEM accumulators (2 × 128 of the 512 columns), so the tensor core
// idles neither for the epilogue nor for the first loads of a tile.
// PIPE_DEPTH 2, as the seed's step 7.
#include "steps_sm100.h"
#include "warp_specialized.cuh"

namespace gemm::sm100 {

cudaError_t PrepareWarpSpecialized() { return PrepareWarpSpecializedStep<7>(); }

std::string LaunchWarpSpecialized(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  return LaunchWarpSpecializedStep<7>(p, ctx, stream);
}

}  // namespace gemm::sm100
