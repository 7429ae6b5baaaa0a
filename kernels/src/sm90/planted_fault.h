// Faults a test plants in the Hopper kernels, one per build of a step file,
// to prove on the chip that the pattern diagnostics (gemm/diagnose.h) name
// each typical fault of a hand-written tensor-core GEMM as itself.
//
// The library compiles with none: every use below is a constexpr choice on
// kPlantedFault, so its kernels' code is what it would be without this
// header. tests/gpu/planted_faults/ compiles step files again with
// GEMM_SM90_PLANTED_FAULT set to one of the enumerators, each into a
// namespace of its own so that they link beside the real steps.
#pragma once

#include <cstdint>

#include "common/tile_layout.h"

namespace gemm::sm90 {

enum class PlantedFault {
  kNone,
  kKAdvance,       // A's start address advanced to K16 slice 2 where slice 1 is due, and back
  kStrideOffset,   // A's descriptor with stride byte offset 0: every 8-row group reads the first
  kEpilogueRows,   // each thread writes its accumulator rows to its neighbour's (lane quad ^ 1)
  kAccumulateFlag, // a tile's first k-tile adds onto the accumulators instead of overwriting them
  kPairLoads,      // each CTA of a cluster pair loads the other's A rows
  kStagePhase,     // the MMA reads a stage one phase early: what it held a round before (steps 7-8)
};

#ifdef GEMM_SM90_PLANTED_FAULT
inline constexpr PlantedFault kPlantedFault = PlantedFault::GEMM_SM90_PLANTED_FAULT;
#else
inline constexpr PlantedFault kPlantedFault = PlantedFault::kNone;
#endif

// A's shared-memory descriptor, as the kernel builds it.
__device__ inline uint64_t PlantedADescriptor(uint64_t desc) {
  if constexpr (kPlantedFault == PlantedFault::kStrideOffset) return desc & ~(uint64_t{0x3FFF} << 32);
  return desc;
}

// Bytes from the start of A's k-tile to its K16 slice kk (tile_layout.h).
template <bool kMnContiguous>
__device__ constexpr uint32_t PlantedASliceBytes(int kk) {
  if constexpr (kPlantedFault == PlantedFault::kKAdvance) kk = kk == 1 ? 2 : kk == 2 ? 1 : kk;
  return common::KSliceBytes(kMnContiguous, kk);
}

// Whether a tile's first K16 step adds onto the accumulators.
__device__ constexpr bool PlantedAccumulate(bool accumulate) {
  return kPlantedFault == PlantedFault::kAccumulateFlag || accumulate;
}

// The row, within a warp's 16, that lane quad `quad` (lane / 4) writes.
__device__ constexpr int PlantedQuadRow(int quad) {
  if constexpr (kPlantedFault == PlantedFault::kEpilogueRows) return quad ^ 1;
  return quad;
}

}  // namespace gemm::sm90
