// Steps 9-10: clusters of two CTAs stacked along M. The scheduler hands out
// cluster tiles (two CTA tiles high); CTA `rank` of the pair takes the upper
// or lower one. Both need the same B tile, so each CTA loads its own A tile
// and one half of B, and the TMA multicasts that half into both CTAs' shared
// memory. Because the peer's TMA writes into this CTA's stages too, a stage
// may be refilled only when the consumers of both CTAs are done with it:
// every consumer arrives on the "empty" barrier of both CTAs. The producer
// also decides when its CTA may exit (Produce's tail).
//
// A unit of work is a whole cluster tile (Units::kWhole); or a cluster tile
// and one of `splits` ranges of its k-tiles (kSplit, common/split_k.h); or,
// for a split tail (kSplitTail, common/split_k.h: SplitTail), a whole tile
// for the first `whole_tiles` tiles and a tile and a range for each later
// one. kWhole and kSplit fold to the code they had before split tails.
//
// With kCtas = 1 the same schedule runs without the pair: a plain CTA
// loads all of B itself and frees stages locally. Step 10 takes it for
// problems so small that nothing is left to share (its medium and narrow
// tiles).
#pragma once

#include <cstdint>

#include "common/barrier.h"
#include "common/batch.h"
#include "common/cluster.h"
#include "common/split_k.h"
#include "common/tile_layout.h"
#include "common/tile_scheduler.h"
#include "common/tma.h"
#include "planted_fault.h"
#include "smem_epilogue.h"

namespace gemm::sm90 {

using namespace gemm::common;  // the primitives both families share

// What one producer thread loads (ClusterPairTiles::Produce).
enum class Loads { kBoth, kA, kB };

// What a launch's units are (above).
enum class Units { kWhole, kSplit, kSplitTail };

// A stage holds one kRows × kTileK tile of A (kATileBytes) and one
// kTileCols × kTileK tile of B (kBTileBytes), B right after A.
template <int kTileCols, int kATileBytes, int kBTileBytes, Units kUnits = Units::kWhole, int kCtas = 2,
          int kRows = kTileRows>
class ClusterPairTiles {
 public:
  static_assert(kCtas == 1 || kCtas == 2, "a pair, or a CTA alone");
  static_assert(kATileBytes == kRows * kTileK * 2, "A's tile is kRows rows of one k-tile");
  static constexpr int kClusterSize = kCtas;
  static constexpr int kStageBytes = kATileBytes + kBTileBytes;
  static constexpr int kBShareRows = kTileCols / kClusterSize;  // rows of the B tile each CTA loads
  static constexpr int kBShareBytes = kBTileBytes / kClusterSize;
  // Arrivals that free a stage: each consumer warpgroup of both CTAs.
  static constexpr uint32_t EmptyArrivals(int consumers) { return static_cast<uint32_t>(consumers * kClusterSize); }
  // Arrivals that fill one: each producer thread (Produce's kLoads).
  static constexpr uint32_t FullArrivals(bool loads_split) { return loads_split ? 2u : 1u; }

  // Cluster tiles of an m×n problem, over a batch's `entries`.
  __host__ __device__ static int Tiles(int64_t m, int64_t n, int entries = 1) {
    return TileScheduler(m, n, kClusterSize * kRows, kTileCols, entries).tiles();
  }
  // CTAs with work for an m×n problem: two per unit.
  __host__ __device__ static int WorkCtas(int64_t m, int64_t n, int splits = 1, int entries = 1) {
    return Tiles(m, n, entries) * splits * kClusterSize;
  }

  __device__ ClusterPairTiles(int64_t m, int64_t n, int64_t k, int splits = 1, BatchArgs batch = {},
                              int whole_tiles = 0)
      : scheduler_(m, n, kClusterSize * kRows, kTileCols, batch.entries),
        batch_(batch),
        rank_(kClusterSize == 1 ? 0 : ClusterRank()),
        cluster_(static_cast<int>(blockIdx.x) / kClusterSize),
        clusters_(static_cast<int>(gridDim.x) / kClusterSize),
        k_tiles_(static_cast<int>((k + kTileK - 1) / kTileK)),
        m_(m),
        n_(n),
        splits_(splits),
        whole_tiles_(whole_tiles) {}

  __device__ int k_tiles() const { return k_tiles_; }
  // Units of this CTA (`tile` below counts them); the same count in both CTAs of the pair.
  __device__ int tiles() const { return (UnitCount() - cluster_ + clusters_ - 1) / clusters_; }

  // Whether this CTA's `tile`-th unit is one range of a split tile.
  __device__ bool IsSplit(int tile) const {
    if constexpr (kUnits == Units::kSplitTail) return Unit(tile) >= whole_tiles_;
    return kUnits == Units::kSplit;
  }
  // The scheduler's index of the `tile`-th unit's output tile.
  __device__ int TileIndex(int tile) const {
    if constexpr (kUnits == Units::kSplit) return Unit(tile) / splits_;
    return IsSplit(tile) ? whole_tiles_ + (Unit(tile) - whole_tiles_) / splits_ : Unit(tile);
  }
  __device__ int whole_tiles() const { return whole_tiles_; }

  // Top-left corner of this CTA's `tile`-th output tile, and its batch
  // entry. Below the matrix (m0 >= m) for the lower CTA of a pair on the
  // last tile-row of an odd count.
  __device__ void Origin(int tile, int64_t* m0, int64_t* n0, int* entry) const {
    int tile_m, tile_n;
    scheduler_.Coordinates(TileIndex(tile), &tile_m, &tile_n, entry);
    *m0 = (int64_t{tile_m} * kClusterSize + rank_) * kRows;
    *n0 = int64_t{tile_n} * kTileCols;
  }
  // Which range of K the `tile`-th unit covers (0 for a whole tile), and its k-tiles [begin, end).
  __device__ int Split(int tile) const {
    if constexpr (kUnits == Units::kSplit) return Unit(tile) % splits_;
    return IsSplit(tile) ? (Unit(tile) - whole_tiles_) % splits_ : 0;
  }
  __device__ void KTiles(int tile, int* begin, int* end) const {
    if (IsSplit(tile)) {
      SplitKRange(Split(tile), splits_, k_tiles_, begin, end);
    } else {
      *begin = 0;
      *end = k_tiles_;
    }
  }

  // The producer thread's whole loop, over every (tile, k-tile) of this CTA:
  // wait until stage s is empty in both CTAs, then load this CTA's share of
  // B (into both CTAs) and its A tile. A tile's origin is worked out before
  // its k-tiles, not between a stage's release and its refill. Then the
  // tail: wait until every stage has been released once more, that is,
  // until both CTAs' consumers have made their last arrivals on this CTA's
  // barriers. Every multicast into this CTA has landed by then too (its
  // consumer waited for each one), so the CTA may exit: the tail is what
  // keeps its shared memory alive for the peer, where a cluster-wide barrier
  // at exit cost about 3% (ncu, H100, 4096³: 289K cycles without, 298K with).
  //
  // kTileC (step 9's fused form): where c_by_tma, each tile's C follows its
  // k-tiles into the next stage (CTileLoad, smem_epilogue.h). Both CTAs of
  // the pair load theirs at the same iteration, so the stage's release
  // counts as every other's.
  //
  // kLoads: which operands this producer thread loads. A CTA alone whose
  // k-tiles are short (step 10's half-height tile) has two producer
  // threads, one per operand, each arriving on the full barrier with its
  // own bytes (FullArrivals): one thread issuing both operands' loads and
  // waiting out each stage paced that tile's k-loop (fp16 1024²×8192: 36.2
  // against 32.5 µs; bf16 x @ W, whose B takes two boxes a k-tile, 22.9
  // against 19.9 at 1024²×4096;
  // bench/results/h200_2026-11-29_two_producer_threads_summary.txt).
  template <int kStages, typename Form, bool kTileC = false, Loads kLoads = Loads::kBoth>
  __device__ void Produce(const CUtensorMap* a_map, const CUtensorMap* b_map, char* stages, uint64_t* full,
                          uint64_t* empty, bool c_by_tma = false, const CTileLoad& load_c = {}) const {
    static_assert(kLoads == Loads::kBoth || (kClusterSize == 1 && !kTileC), "split loads: a CTA alone, no tile C");
    // Until iteration `i`'s stage is free; the first round finds every stage free.
    auto wait_until_free = [&](int i) { Wait(&empty[i % kStages], ((i / kStages) % 2) ^ 1); };
    int it = 0;
    for (int tile = 0; tile < tiles(); ++tile) {
      int64_t m0, n0;
      int entry;
      Origin(tile, &m0, &n0, &entry);
      const int32_t a_entry = batch_.EntryOfA(entry), b_entry = batch_.EntryOfB(entry);
      const uint32_t bytes = ThreadStageBytes<kLoads>(m0, n0);
      const bool load_a = kLoads != Loads::kB && m0 < m_;
      const bool load_b = kLoads != Loads::kA && n0 + rank_ * kBShareRows < n_;
      const int32_t a_row = static_cast<int32_t>(PlantedARows(m0)), b_row = static_cast<int32_t>(n0 + rank_ * kBShareRows);
      int kt_begin, kt_end;
      KTiles(tile, &kt_begin, &kt_end);
      for (int kt = kt_begin; kt < kt_end; ++kt, ++it) {
        const int s = it % kStages;
        wait_until_free(it);
        char* a_tile = stages + s * kStageBytes;
        ArriveExpectTx(&full[s], bytes);
        if (load_b) {  // first: the peer's stage waits for this share too
          if constexpr (kClusterSize == 1) {
            TmaLoadTile<Form::kBLayout, kBShareRows>(a_tile + kATileBytes, b_map, kt * kTileK, b_row, b_entry,
                                                     &full[s]);
          } else {
            TmaLoadTileMulticast<Form::kBLayout, kBShareRows>(a_tile + kATileBytes + rank_ * kBShareBytes, b_map,
                                                              kt * kTileK, b_row, b_entry, &full[s], kWholeCluster);
          }
        }
        if (load_a) TmaLoadTile<Form::kALayout, kRows>(a_tile, a_map, kt * kTileK, a_row, a_entry, &full[s]);
      }
      if constexpr (kTileC) {
        if (c_by_tma) {
          wait_until_free(it);
          load_c(stages + (it % kStages) * kStageBytes, m0, n0, entry, &full[it % kStages]);
          ++it;
        }
      }
    }
    for (int tail = 0; tail < kStages; ++tail, ++it) wait_until_free(it);
  }

  // Every thread, after thread 0 initialised the barriers: the pair syncs
  // the cluster (the peer arrives on this CTA's barriers), a CTA alone
  // only itself.
  __device__ static void SyncBarrierInit() {
    if constexpr (kClusterSize == 1) {
      __syncthreads();
    } else {
      ClusterSync();
    }
  }

  // A consumer warpgroup's leader, done with a stage: frees it in both CTAs.
  __device__ static void Release(uint64_t* empty_stage) {
    if constexpr (kClusterSize == 1) {
      Arrive(empty_stage);
    } else {
      for (uint32_t r = 0; r < kClusterSize; ++r) ArriveInCta(empty_stage, r);
    }
  }

 private:
  static constexpr uint16_t kWholeCluster = (1u << kClusterSize) - 1;

  // Every unit of the launch, and the `tile`-th of this CTA's.
  __device__ int UnitCount() const {
    if constexpr (kUnits == Units::kSplit) return scheduler_.tiles() * splits_;
    if constexpr (kUnits == Units::kSplitTail) return whole_tiles_ + (scheduler_.tiles() - whole_tiles_) * splits_;
    return scheduler_.tiles();
  }
  __device__ int Unit(int tile) const { return cluster_ + tile * clusters_; }

  // The first row of the A tile this CTA loads for its tile at m0: its own,
  // unless a test planted the pair fault (planted_fault.h), where both CTAs
  // of the pair have rows.
  __device__ int64_t PlantedARows(int64_t m0) const {
    if constexpr (kPlantedFault == PlantedFault::kPairLoads && kClusterSize == 2) {
      const int64_t peer_m0 = rank_ == 0 ? m0 + kRows : m0 - kRows;
      if (m0 < m_ && peer_m0 < m_) return peer_m0;
    }
    return m0;
  }

  // Bytes landing in one CTA's stage: its A tile (not loaded when it lies
  // wholly below the matrix) and every CTA's share of B that lies inside
  // the matrix. Both CTAs of the pair compute the same answer for B.
  __device__ uint32_t StageBytes(int64_t m0, int64_t n0) const {
    uint32_t bytes = m0 < m_ ? kATileBytes : 0;
    for (int r = 0; r < kClusterSize; ++r) bytes += n0 + r * kBShareRows < n_ ? kBShareBytes : 0;
    return bytes;
  }

  // The share of StageBytes that a producer thread loading kLoads brings.
  template <Loads kLoads>
  __device__ uint32_t ThreadStageBytes(int64_t m0, int64_t n0) const {
    const uint32_t a_bytes = m0 < m_ ? kATileBytes : 0;
    if constexpr (kLoads == Loads::kA) return a_bytes;
    if constexpr (kLoads == Loads::kB) return StageBytes(m0, n0) - a_bytes;
    return StageBytes(m0, n0);
  }

  TileScheduler scheduler_;
  BatchArgs batch_;
  uint32_t rank_;
  int cluster_, clusters_, k_tiles_;
  int64_t m_, n_;
  int splits_;
  int whole_tiles_;  // kSplitTail: tiles before the split ones
};

}  // namespace gemm::sm90
