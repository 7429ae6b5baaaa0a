// Steps 7-9: a consumer warpgroup's k-loop over one 128×128 output tile,
// fed by a ring of kStages stages (A tile, then B tile) that a producer
// fills in (tile, k-tile) order, and where C comes by TMA, the tile's C
// in the stage after its last k-tile.
#pragma once

#include <cstdint>

#include "common/barrier.h"
#include "gemm/element_type.h"
#include "common/tile_layout.h"
#include "planted_fault.h"
#include "wgmma.h"

namespace gemm::sm90 {

using namespace gemm::common;  // the primitives both families share

// For each k-tile: wait until its stage is full, multiply, wait for the
// wgmma, and let the leader hand the stage back with release(&empty[s]).
// Waiting for every k-tile's wgmma drains the tensor cores at each k-tile;
// a second CTA on the SM fills that gap (keeping a group in flight instead
// measured slower at two CTAs per SM, kernels/README.md). `it` is this
// CTA's (tile, k-tile) iteration as the producer counts them; it advances
// by k_tiles.
template <typename Form, int kStages, int kStageBytes, typename Release>
__device__ inline void MultiplyTile(float (&acc)[2][64], const char* stages, uint64_t* full, uint64_t* empty,
                                    int k_tiles, int& it, bool leader, Release release) {
  for (int kt = 0; kt < k_tiles; ++kt, ++it) {
    const int s = it % kStages;
    if constexpr (kPlantedFault == PlantedFault::kStagePhase) {
      // Planted (planted_fault.h): from the second round on, the MMA reads
      // its stage one phase early, while it still holds the previous
      // round's k-tile. Made certain rather than a race: the stage is
      // released only after that read, and its refill is waited for (so
      // that no load is in flight at exit) but read only a round later.
      // A producer that waits at exit for every stage's last release
      // (step 9's) would wait forever: not planted there.
      if (it < kStages) Wait(&full[s], 0);
      IssueTileMma<Form>(acc, stages + s * kStageBytes, stages + s * kStageBytes + kTileBytes, /*accumulate=*/kt > 0);
      WaitForTileMma<0>(acc);
      if (it >= kStages) {
        if (leader) release(&empty[s]);
        Wait(&full[s], (it / kStages) % 2);
      }
      continue;
    }
    Wait(&full[s], (it / kStages) % 2);
    const char* a_tile = stages + s * kStageBytes;
    IssueTileMma<Form>(acc, a_tile, a_tile + kTileBytes, /*accumulate=*/kt > 0);
    WaitForTileMma<0>(acc);
    if (leader) release(&empty[s]);
  }
}

// Where C comes by TMA (CTileLoad), the stage after a tile's k-tiles holds
// the tile's C: WaitForTileC waits until it is full and returns it for the
// epilogue (StoreTileInChunks); once every thread has read it, by the
// epilogue's last barrier (StoreStagedChunk), ReleaseTileC lets the leader
// hand it back and moves `it` past it, as the producer counts.
template <int kStages, int kStageBytes>
__device__ inline const char* WaitForTileC(const char* stages, uint64_t* full, int it) {
  Wait(&full[it % kStages], (it / kStages) % 2);
  return stages + (it % kStages) * kStageBytes;
}
template <int kStages, typename Release>
__device__ inline void ReleaseTileC(uint64_t* empty, int& it, bool leader, Release release) {
  if (leader) release(&empty[it % kStages]);
  ++it;
}

}  // namespace gemm::sm90
