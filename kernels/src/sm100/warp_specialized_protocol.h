// Steps 7-10 on Blackwell: who waits for whom. A CTA (or a pair of CTAs,
// cta_group::2) holds three kinds of actors: one TMA producer thread, one
// MMA-issuing thread for every consumer, and one writeback warpgroup per
// consumer, chained by the seed's four mbarrier arrays:
//
//   tma2mma[stage]  the stage's bytes have landed (the producer's
//                   arrive.expect_tx plus the TMA's complete_tx)
//   mma2tma[stage]  the MMAs that read the stage are done (tcgen05.commit):
//                   it may be refilled
//   mma2ld[slot]    the accumulator in TMEM slot `slot` is complete
//                   (tcgen05.commit)
//   ld2mma[slot]    every writeback thread has read the slot out: the next
//                   tile's MMAs may overwrite it
//
// No machine here can run these kernels, and a wrong count or phase shows
// only as a hang or a wrong D on a B200. So this header is host code too:
// the kernels (warp_specialized.cuh) run the three role loops below with
// device operations, and the CPU model (tests/warp_specialized_model.*)
// runs the very same loops, counts and phase arithmetic over simulated
// barriers under random schedules.
#pragma once

#include <cstdint>

#include "common/tile_layout.h"
#include "common/tile_scheduler.h"

namespace gemm::sm100 {

enum class Barrier { kTma2Mma, kMma2Tma, kMma2Ld, kLd2Mma };

struct WarpSpecializedProtocol {
  int stages;               // PIPE_DEPTH: shared-memory stages of A and B
  int consumers;            // accumulators in flight, each with its writeback warpgroup and A block per stage
  int cta_group;            // 1, or 2: the pair MMA (tcgen05.mma.cta_group::2)
  int accumulator_buffers;  // TMEM accumulators per consumer

  // One consumer's MMA: 128 rows of A per CTA; B is 128 rows per CTA, so
  // the pair's MMA is 256 wide (each CTA holds its 128 rows × 256 of D).
  GEMM_TILE_HD constexpr int MmaM() const { return common::kTileRows * cta_group; }
  GEMM_TILE_HD constexpr int MmaN() const { return common::kTileRows * cta_group; }
  // The output tile of a cluster (of one CTA when cta_group is 1).
  GEMM_TILE_HD constexpr int ClusterTileRows() const { return MmaM() * consumers; }
  GEMM_TILE_HD constexpr int ClusterTileCols() const { return MmaN(); }

  GEMM_TILE_HD constexpr int Slots() const { return consumers * accumulator_buffers; }
  GEMM_TILE_HD constexpr int Slot(int consumer, int buffer) const { return consumer * accumulator_buffers + buffer; }
  GEMM_TILE_HD constexpr uint32_t TmemColumns() const { return static_cast<uint32_t>(Slots() * MmaN()); }
  // The writeback reads and stores a slot 64 columns at a time.
  GEMM_TILE_HD constexpr int WritebackChunks() const { return MmaN() / common::kTileK; }

  // A stage in each CTA: one 128×64 A block per consumer, then one of B.
  GEMM_TILE_HD constexpr int StageBytes() const { return (consumers + 1) * common::kTileBytes; }
  // Writeback warpgroups first, then the warpgroup of the MMA and TMA warps.
  GEMM_TILE_HD constexpr int Threads() const { return 128 * (consumers + 1); }
  GEMM_TILE_HD constexpr int Count(Barrier b) const {
    return b == Barrier::kTma2Mma || b == Barrier::kMma2Tma ? stages : Slots();
  }

  // Arrivals each barrier's phase waits for (bytes apart).
  GEMM_TILE_HD constexpr uint32_t Arrivals(Barrier b) const {
    switch (b) {
      case Barrier::kTma2Mma: return 1;                           // the leader producer's expect_tx
      case Barrier::kMma2Tma: return 1;                           // the issuer's commit
      case Barrier::kMma2Ld: return 1;                            // the slot's issuer's commit
      case Barrier::kLd2Mma: return static_cast<uint32_t>(128 * cta_group);  // each writeback thread of the group
    }
    return 0;
  }

  // Where CTA `rank`'s blocks of the cluster tile at (m0, n0) start:
  // consumer c's MMA covers MmaM() rows, 128 from each CTA of the group.
  GEMM_TILE_HD constexpr int64_t ARow(int64_t m0, int rank, int consumer) const {
    return m0 + int64_t{consumer * cta_group + rank} * common::kTileRows;
  }
  GEMM_TILE_HD constexpr int64_t BRow(int64_t n0, int rank) const { return n0 + int64_t{rank} * common::kTileRows; }

  // Bytes that land on the leader's tma2mma for one stage of the cluster
  // tile at (m0, n0): every block that starts inside the m×n problem (the
  // TMA zero-fills the rest of a ragged one; a block wholly outside is not
  // loaded). Every CTA of the group computes the same count.
  GEMM_TILE_HD constexpr uint32_t StageTxBytes(int64_t m, int64_t n, int64_t m0, int64_t n0) const {
    uint32_t bytes = 0;
    for (int r = 0; r < cta_group; ++r) {
      for (int c = 0; c < consumers; ++c) bytes += ARow(m0, r, c) < m ? common::kTileBytes : 0;
      bytes += BRow(n0, r) < n ? common::kTileBytes : 0;
    }
    return bytes;
  }
};

// The seed's steps 7-10. Each double-buffers its accumulators in TMEM where
// the 512 columns allow (kernels/README.md, "Blackwell", says why).
GEMM_TILE_HD constexpr WarpSpecializedProtocol WarpSpecializedStep(int step) {
  switch (step) {
    case 7: return {/*stages=*/2, /*consumers=*/1, /*cta_group=*/1, /*accumulator_buffers=*/2};
    case 8: return {4, 1, 1, 2};
    case 9: return {4, 1, 2, 2};
    default: return {4, 2, 2, 1};  // step 10: two consumers fill TMEM, one accumulator each
  }
}

// A ring's position: slot `index` in round `phase` (mod 2). The side that
// fills a ring starts at phase 1, so its first wait on each slot's "free"
// barrier passes at once (every slot starts free); the side that drains it
// starts at phase 0 and waits for the first fill.
struct PipelineState {
  int index;
  uint32_t phase;
  int size;
  GEMM_TILE_HD void Advance() {
    if (++index == size) {
      index = 0;
      phase ^= 1;
    }
  }
};
GEMM_TILE_HD constexpr PipelineState FillerStart(int size) { return {0, 1, size}; }
GEMM_TILE_HD constexpr PipelineState DrainerStart(int size) { return {0, 0, size}; }

// The cluster tiles of cluster `cluster` (of `clusters`), over a batch's
// `entries`, in the grouped order every persistent step uses; both CTAs of
// a pair walk the same list.
class ClusterTiles {
 public:
  GEMM_TILE_HD ClusterTiles(const WarpSpecializedProtocol& p, int64_t m, int64_t n, int cluster, int clusters,
                            int entries = 1)
      : scheduler_(m, n, p.ClusterTileRows(), p.ClusterTileCols(), entries),
        rows_(p.ClusterTileRows()),
        cols_(p.ClusterTileCols()),
        cluster_(cluster),
        clusters_(clusters) {}
  GEMM_TILE_HD int count() const { return (scheduler_.tiles() - cluster_ + clusters_ - 1) / clusters_; }
  GEMM_TILE_HD int total() const { return scheduler_.tiles(); }
  // Top-left corner of this cluster's `tile`-th tile, and its batch entry.
  GEMM_TILE_HD void Origin(int tile, int64_t* m0, int64_t* n0, int* entry) const {
    int tile_m, tile_n;
    scheduler_.Coordinates(cluster_ + tile * clusters_, &tile_m, &tile_n, entry);
    *m0 = int64_t{tile_m} * rows_;
    *n0 = int64_t{tile_n} * cols_;
  }

 private:
  common::TileScheduler scheduler_;
  int rows_, cols_, cluster_, clusters_;
};

// --- the three roles ---------------------------------------------------------
// `ops` is the device (warp_specialized.cuh) or the model. Each call is one
// protocol event; everything else a role does lives inside the calls.

// The TMA producer of each CTA: wait until the stage is free in this CTA,
// then load this CTA's blocks (the leader also posts the pair's bytes).
// The tail waits for each stage's last release, so no commit is still
// arriving on this CTA's barriers when it exits.
template <class Ops>
GEMM_TILE_HD void ProduceStages(const WarpSpecializedProtocol& p, int tiles, int k_tiles, Ops& ops) {
  PipelineState stage = FillerStart(p.stages);
  for (int t = 0; t < tiles; ++t) {
    for (int kt = 0; kt < k_tiles; ++kt) {
      ops.Wait(Barrier::kMma2Tma, stage.index, stage.phase);
      ops.LoadStage(stage.index, t, kt);
      stage.Advance();
    }
  }
  for (int tail = 0; tail < p.stages; ++tail) {
    ops.Wait(Barrier::kMma2Tma, stage.index, stage.phase);
    stage.Advance();
  }
}

// The MMA issuer (one thread, in the leader CTA only): per tile, wait until
// each consumer's TMEM accumulator is free, multiply every k-tile into
// each of them (the stage's B against consumer c's A block), releasing the
// stage by one commit, then commit each accumulator to its writeback.
// One thread issues for every consumer, as CUTLASS and DeepGEMM do: the
// PTX ISA allows several issuing threads, but no public B200 kernel is
// known to use them (kernels/README.md, "Blackwell").
template <class Ops>
GEMM_TILE_HD void IssueMmas(const WarpSpecializedProtocol& p, int tiles, int k_tiles, Ops& ops) {
  PipelineState stage = DrainerStart(p.stages);
  PipelineState accumulator = FillerStart(p.accumulator_buffers);
  for (int t = 0; t < tiles; ++t) {
    for (int c = 0; c < p.consumers; ++c) ops.Wait(Barrier::kLd2Mma, p.Slot(c, accumulator.index), accumulator.phase);
    for (int kt = 0; kt < k_tiles; ++kt) {
      ops.Wait(Barrier::kTma2Mma, stage.index, stage.phase);
      for (int c = 0; c < p.consumers; ++c) ops.Mma(stage.index, c, p.Slot(c, accumulator.index), t, kt);
      ops.Commit(Barrier::kMma2Tma, stage.index);
      stage.Advance();
    }
    for (int c = 0; c < p.consumers; ++c) ops.Commit(Barrier::kMma2Ld, p.Slot(c, accumulator.index));
    accumulator.Advance();
  }
}

// One writeback warpgroup (each CTA of the group has its own): per tile,
// wait for the accumulator, read it out 64 columns at a time, release it
// to the MMA issuer as soon as the last columns are in registers, and
// store each chunk of D.
template <class Ops>
GEMM_TILE_HD void WriteBack(const WarpSpecializedProtocol& p, int consumer, int tiles, Ops& ops) {
  PipelineState accumulator = DrainerStart(p.accumulator_buffers);
  for (int t = 0; t < tiles; ++t) {
    const int slot = p.Slot(consumer, accumulator.index);
    ops.Wait(Barrier::kMma2Ld, slot, accumulator.phase);
    for (int chunk = 0; chunk < p.WritebackChunks(); ++chunk) {
      ops.ReadChunk(slot, t, chunk);
      if (chunk == p.WritebackChunks() - 1) ops.ReleaseAccumulator(slot);
      ops.StoreChunk(consumer, t, chunk);
    }
    accumulator.Advance();
  }
}

}  // namespace gemm::sm100
