// How the ladder's kernels plug into Launch(): each GPU family lists the
// steps it has, with the compute capability they need.
#pragma once

#include <span>
#include <string>

#include "gemm/gemm.h"

namespace gemm::detail {

struct LadderKernel {
  int step;
  int cc_major;  // 9: sm_90a (Hopper), 10: sm_100a (Blackwell)
  // Sets kernel attributes (dynamic shared memory) once per device.
  cudaError_t (*prepare)();
  std::string (*launch)(const Problem& p, const DeviceContext& ctx, cudaStream_t stream);
};

std::span<const LadderKernel> Sm90Kernels();
std::span<const LadderKernel> Sm100Kernels();

}  // namespace gemm::detail
