// Which output tile a persistent CTA works on next. Tiles are handed out in
// groups of kGroupRows tile-rows, walking down a group's rows before moving
// right, so CTAs running at the same time share A row-blocks and B
// column-blocks in L2 instead of sweeping all of B for each row. A batch's
// entries come one after the other, each walked the same way.
#pragma once

#include <cstdint>

#include "common/tile_layout.h"  // GEMM_TILE_HD

namespace gemm::common {

class TileScheduler {
 public:
  static constexpr int kGroupRows = 8;

  // Tiles of tile_rows × tile_cols; for a cluster, the cluster's tile.
  GEMM_TILE_HD TileScheduler(int64_t m, int64_t n, int tile_rows, int tile_cols, int entries = 1)
      : tiles_m_(static_cast<int>((m + tile_rows - 1) / tile_rows)),
        tiles_n_(static_cast<int>((n + tile_cols - 1) / tile_cols)),
        entries_(entries) {}

  GEMM_TILE_HD int tiles() const { return tiles_m_ * tiles_n_ * entries_; }

  // Tile `t` (0 <= t < tiles()) as (tile row, tile column) of batch entry
  // `entry`. Host too: the CPU model of the sm_100a barrier protocol walks
  // the same tiles.
  GEMM_TILE_HD void Coordinates(int t, int* tile_m, int* tile_n, int* entry) const {
    const int per_entry = tiles_m_ * tiles_n_;
    *entry = t / per_entry;
    Coordinates(t - *entry * per_entry, tile_m, tile_n);
  }
  // The same for a problem without a batch.
  GEMM_TILE_HD void Coordinates(int t, int* tile_m, int* tile_n) const {
    const int per_group = kGroupRows * tiles_n_;
    const int group = t / per_group;
    const int first_m = group * kGroupRows;
    const int rows_in_group = tiles_m_ - first_m < kGroupRows ? tiles_m_ - first_m : kGroupRows;
    const int in_group = t % per_group;
    *tile_m = first_m + in_group % rows_in_group;
    *tile_n = in_group / rows_in_group;
  }

 private:
  int tiles_m_, tiles_n_, entries_;
};

}  // namespace gemm::common
