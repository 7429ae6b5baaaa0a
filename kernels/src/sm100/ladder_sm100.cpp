// The Blackwell (sm_100a) family of the ladder: steps 1-10. None of
// it has run on a B200 (kernels/README.md, "Blackwell"): the start-up
// self-test withdraws any step that fails there.
#include "ladder.h"
#include "sm100/steps_sm100.h"

namespace gemm::detail {

std::span<const LadderKernel> Sm100Kernels() {
  static const LadderKernel kKernels[] = {
      {1, 10, sm100::PrepareSingleTile, sm100::LaunchSingleTile},
      {2, 10, sm100::PrepareKLoop, sm100::LaunchKLoop},
      {3, 10, sm100::PrepareTiled, sm100::LaunchTiled},
      {4, 10, sm100::PrepareTma, sm100::LaunchTma},
      {5, 10, sm100::PreparePipelined, sm100::LaunchPipelined},
      {6, 10, sm100::PreparePersistent, sm100::LaunchPersistent},
      {7, 10, sm100::PrepareWarpSpecialized, sm100::LaunchWarpSpecialized},
      {8, 10, sm100::PrepareDeepPipeline, sm100::LaunchDeepPipeline},
      {9, 10, sm100::PrepareCtaPair, sm100::LaunchCtaPair},
      {10, 10, sm100::PrepareTwoConsumers, sm100::LaunchTwoConsumers},
  };
  return kKernels;
}

}  // namespace gemm::detail
