// Step 8 = step 7 with a deeper pipeline: three stages per CTA instead of
// two, at two CTAs per SM (six stages in flight per SM), so the producer
// runs further ahead of the consumer. Two CTAs with three stages and a
// whole 32 KB D tile each do not fit in an SM's 228 KB of shared memory, so
// D now leaves in 64×64 chunks through one 8 KB buffer. Four stages would
// allow only one CTA per SM, which measured far slower (kernels/README.md).
#include "step07_warp_specialized.cuh"
#include "steps_sm90.h"

namespace gemm::sm90 {

constexpr int kDeepStages = 3;

cudaError_t PrepareDeepPipeline() { return PrepareWarpSpecialized<kDeepStages, DStaging::kChunks>(); }

std::string LaunchDeepPipeline(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  return LaunchWarpSpecialized<kDeepStages, DStaging::kChunks>(p, ctx, stream);
}

}  // namespace gemm::sm90
