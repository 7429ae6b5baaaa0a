// Step 8 = step 7 with PIPE_DEPTH 4. With two stages the producer runs at
// most one k-tile ahead, so a TMA load that takes longer than one k-tile's
// MMAs (about 256 cycles for 128×128×64 on a B200) stalls the tensor core.
// Four 32 KB stages keep three loads in flight; 160 KB of shared memory
// then leaves one CTA per SM.
#include "steps_sm100.h"
#include "warp_specialized.cuh"

namespace gemm::sm100 {

cudaError_t PrepareDeepPipeline() { return PrepareWarpSpecializedStep<8>(); }

std::string LaunchDeepPipeline(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  return LaunchWarpSpecializedStep<8>(p, ctx, stream);
}

}  // namespace gemm::sm100
