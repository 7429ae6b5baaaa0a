// The Hopper (sm_90a) family of the ladder: steps 1-10.
#include "ladder.h"
#include "sm90/steps_sm90.h"

namespace gemm::detail {

std::span<const LadderKernel> Sm90Kernels() {
  static const LadderKernel kKernels[] = {
      {1, 9, sm90::PrepareSingleTile, sm90::LaunchSingleTile},
      {2, 9, sm90::PrepareKLoop, sm90::LaunchKLoop},
      {3, 9, sm90::PrepareTiled, sm90::LaunchTiled},
      {4, 9, sm90::PrepareTma, sm90::LaunchTma},
      {5, 9, sm90::PreparePipelined, sm90::LaunchPipelined},
      {6, 9, sm90::PreparePersistent, sm90::LaunchPersistent},
      {7, 9, sm90::PrepareWarpSpecialized2, sm90::LaunchWarpSpecialized2},
      {8, 9, sm90::PrepareDeepPipeline, sm90::LaunchDeepPipeline},
      {9, 9, sm90::PrepareClusterMulticast, sm90::LaunchClusterMulticast},
      {10, 9, sm90::PrepareTwoConsumers, sm90::LaunchTwoConsumers},
  };
  return kKernels;
}

}  // namespace gemm::detail
