// What every Hopper step file needs besides its one idea: the shared
// primitives, and wgmma.
#pragma once

#include <cuda_fp16.h>

#include "gemm/gemm.h"
#include "common/batch.h"
#include "common/kernel_basics.h"
#include "common/step_form.h"
#include "common/tile_layout.h"
#include "wgmma.h"

namespace gemm::sm90 {

// The primitives both families share (kernels/src/common/).
using namespace gemm::common;

// Moves registers between warpgroups: the TMA producer needs few, the MMA
// consumers many. Needs __launch_bounds__(threads, 1) on the kernel.
template <int kRegisters>
__device__ inline void ReleaseRegisters() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ inline void ClaimRegisters() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

// The budgets: a producer warpgroup keeps 40 registers; each of a CTA's
// `consumers` warpgroups gets what the SM's 64K registers leave once every
// resident CTA's producer has its share, rounded down to setmaxnreg's
// multiple of 8 (two CTAs of one consumer: 216; one CTA of two: 232), and
// at most kMostConsumerRegisters: setmaxnreg takes no more than 256, and
// one CTA of one consumer (step 10's half-height tile) would be given 472.
inline constexpr int kProducerRegisters = 40;
inline constexpr int kMostConsumerRegisters = 240;
constexpr int ConsumerRegisters(int ctas_per_sm, int consumers = 1) {
  const int share = (65536 / ctas_per_sm - 128 * kProducerRegisters) / (128 * consumers) / 8 * 8;
  return share < kMostConsumerRegisters ? share : kMostConsumerRegisters;
}

}  // namespace gemm::sm90
