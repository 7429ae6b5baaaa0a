// What every Blackwell step file needs besides its one idea: the shared
// primitives, TMEM and the tcgen05 MMA.
#pragma once

#include <cuda_fp16.h>

#include "common/barrier.h"
#include "common/batch.h"
#include "common/kernel_basics.h"
#include "common/step_form.h"
#include "common/tile_layout.h"
#include "gemm/gemm.h"
#include "tmem.h"
#include "umma.h"

namespace gemm::sm100 {

// The primitives both families share (kernels/src/common/).
using namespace gemm::common;

// Steps 1-6 keep one 128×128 fp32 accumulator: 128 TMEM columns.
inline constexpr uint32_t kTileTmemColumns = kTileRows;

// Steps 5+: a stage's "full" barrier (the TMA's bytes) and "empty" one (the
// commit of the MMAs that read it), one arrival each. One thread.
template <int kStages>
__device__ inline void InitStageBarriers(uint64_t (&full)[kStages], uint64_t (&empty)[kStages]) {
  for (int s = 0; s < kStages; ++s) {
    BarrierInit(&full[s], 1);
    BarrierInit(&empty[s], 1);
  }
}

}  // namespace gemm::sm100
