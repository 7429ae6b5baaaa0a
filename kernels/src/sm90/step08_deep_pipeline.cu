// Step 8 = step 7 with a 4-stage pipeline: the producer may run up to four
// k-tiles ahead of the consumer, enough to hide TMA latency behind wgmma.
#include "step07_warp_specialized.cuh"
#include "steps_sm90.h"

namespace gemm::sm90 {

constexpr int kDeepStages = 4;

cudaError_t PrepareDeepPipeline() { return PrepareWarpSpecialized<kDeepStages, 1>(); }

std::string LaunchDeepPipeline(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  return LaunchWarpSpecialized<kDeepStages, 1>(p, ctx, stream);
}

}  // namespace gemm::sm90
