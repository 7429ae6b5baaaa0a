// Step 7: warp specialization, with step 6's 2-stage pipeline and chunked D
// (the kernel is in step07_warp_specialized.cuh).
#include "step07_warp_specialized.cuh"
#include "steps_sm90.h"

namespace gemm::sm90 {

cudaError_t PrepareWarpSpecialized2() { return PrepareWarpSpecialized<2>(); }

std::string LaunchWarpSpecialized2(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  return LaunchWarpSpecialized<2>(p, ctx, stream);
}

}  // namespace gemm::sm90
