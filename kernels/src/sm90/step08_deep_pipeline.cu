// Step 8 = step 7 with a deeper pipeline: three stages per CTA instead of
// two, at two CTAs per SM (six stages in flight per SM), so the producer
// runs further ahead of the consumer. Three stages are what two CTAs fit:
// four would allow only one CTA per SM, which measured far slower
// (kernels/README.md).
#include "step07_warp_specialized.cuh"
#include "steps_sm90.h"

namespace gemm::sm90 {

constexpr int kDeepStages = 3;

cudaError_t PrepareDeepPipeline() { return PrepareWarpSpecialized<kDeepStages>(); }

std::string LaunchDeepPipeline(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  return LaunchWarpSpecialized<kDeepStages>(p, ctx, stream);
}

}  // namespace gemm::sm90
