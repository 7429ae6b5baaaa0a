// The Hopper (sm_90a) family of the ladder. Steps are listed as they land.
#include "ladder.h"

namespace gemm::detail {

std::span<const LadderKernel> Sm90Kernels() { return {}; }

}  // namespace gemm::detail
