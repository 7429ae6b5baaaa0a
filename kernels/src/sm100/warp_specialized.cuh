// The kernel of steps 7-10 on Blackwell: the roles of
// warp_specialized_protocol.h run by their warps, with these device
// operations. Step 7 introduces the warp specialization; steps 8-10 change
// only the protocol's numbers (stages, the pair, the consumers), and where
// the pair is its own hardware, `if constexpr (kCtaGroup == 2)` says so.
//
// Warpgroups 0 .. consumers-1 write back, one per consumer; in the last
// warpgroup, one thread of warp 0 issues every consumer's MMAs (in the
// leader CTA only) and warp 3 issues the TMA loads. Warp 0 of the CTA
// allocates and frees TMEM.
#pragma once

#include "common/cluster.h"
#include "common/persistent_launch.h"
#include "common/tma.h"
#include "cta_pair.h"
#include "step_common.h"
#include "tmem_epilogue.h"
#include "warp_specialized_protocol.h"

namespace gemm::sm100 {

template <int kStep>
struct WarpSpecialized {
  static constexpr WarpSpecializedProtocol kProtocol = WarpSpecializedStep(kStep);
  static constexpr int kCtaGroup = kProtocol.cta_group;
  // D leaves through 128×64 staging tiles: two per writeback warpgroup when
  // there is room (a chunk's store overlaps the next chunk), one in step 10,
  // whose four 48 KB stages leave no more.
  static constexpr int kStagingBuffers = kProtocol.consumers == 1 ? 2 : 1;
  static constexpr int kSmemBytes = kProtocol.stages * kProtocol.StageBytes() +
                                    kProtocol.consumers * kStagingBuffers * kTileBytes + kSmemAlignSlack;
  static_assert(ValidTmemColumns(kProtocol.TmemColumns()), "the accumulators must be one TMEM allocation");
  static_assert(kSmemBytes <= 232448, "sm_100a gives a CTA at most 227 KB of shared memory");
};

// The events of warp_specialized_protocol.h on the device. Each role uses
// its own members; the struct lives in registers. Form: common/step_form.h.
template <int kStep, typename Form>
class WarpSpecializedOps {
  using Config = WarpSpecialized<kStep>;
  static constexpr uint32_t kInstrDesc = InstrDescF16(Config::kProtocol.MmaM(), Config::kProtocol.MmaN(),
                                                      Form::kOperands, Form::kALayout, Form::kBLayout);

 public:
  struct Barriers {
    uint64_t* tma2mma;
    uint64_t* mma2tma;
    uint64_t* mma2ld;
    uint64_t* ld2mma;
  };

  // `c_map`: C's map where the launch mapped it (TmaProblem::c_mapped),
  // else null; `c_full`: a barrier per writeback warpgroup for it.
  __device__ WarpSpecializedOps(Barriers bars, char* stages, char* staging, uint32_t tmem, const CUtensorMap* a_map,
                                const CUtensorMap* b_map, const CUtensorMap* d_map, const ClusterTiles& tiles,
                                int64_t m, int64_t n, uint32_t rank, const EpilogueArgs& epilogue, BatchArgs batch,
                                const CUtensorMap* c_map = nullptr, uint64_t* c_full = nullptr)
      : bars_(bars), stages_(stages), staging_(staging), tmem_(tmem), a_map_(a_map), b_map_(b_map), d_map_(d_map),
        c_map_(c_map), c_full_(c_full), tiles_(tiles), m_(m), n_(n), rank_(rank), batch_(batch),
        epilogue_(epilogue) {}

  // Waits for the round of `parity`; an MMA issue or a TMEM read after it
  // needs the tcgen05 fence, and a warp's TMEM read needs the whole warp.
  __device__ void Wait(Barrier b, int index, uint32_t parity) {
    common::Wait(Bar(b) + index, parity);
    if (b == Barrier::kMma2Tma) return;
    TmemFenceAfterSync();
    if (b == Barrier::kMma2Ld) __syncwarp();
  }

  // Producer: the leader posts the group's bytes; each CTA loads its blocks.
  __device__ void LoadStage(int stage, int tile, int kt) {
    constexpr WarpSpecializedProtocol P = Config::kProtocol;
    SetTile(tile);
    char* base = stages_ + stage * P.StageBytes();
    uint64_t* full = bars_.tma2mma + stage;
    if (rank_ == 0) ArriveExpectTx(full, P.StageTxBytes(m_, n_, m0_, n0_));
    for (int c = 0; c < P.consumers; ++c) {
      const int64_t row = P.ARow(m0_, static_cast<int>(rank_), c);
      if (row < m_) Load<Form::kALayout>(base + c * kTileBytes, a_map_, kt, row, batch_.EntryOfA(entry_), full);
    }
    const int64_t b_row = P.BRow(n0_, static_cast<int>(rank_));
    if (b_row < n_) {
      Load<Form::kBLayout>(base + P.consumers * kTileBytes, b_map_, kt, b_row, batch_.EntryOfB(entry_), full);
    }
  }

  // MMA issuer: consumer c's A block against the stage's B, into `slot`.
  __device__ void Mma(int stage, int consumer, int slot, int /*tile*/, int kt) {
    constexpr WarpSpecializedProtocol P = Config::kProtocol;
    const char* base = stages_ + stage * P.StageBytes();
    IssueKTileMma<Config::kCtaGroup, Form>(tmem_ + static_cast<uint32_t>(slot * P.MmaN()),
                                           base + consumer * kTileBytes, base + P.consumers * kTileBytes, kInstrDesc,
                                           kt > 0);
  }

  __device__ void Commit(Barrier b, int index) {
    uint64_t* bar = Bar(b) + index;
    if constexpr (Config::kCtaGroup == 2) {
      CommitToPair(bar);  // both CTAs' stages and accumulators are this MMA's
    } else {
      CommitTo(bar);
    }
  }

  // Writeback: this thread's row (TMEM lane), 64 columns of the slot.
  __device__ void ReadChunk(int slot, int /*tile*/, int chunk) {
    constexpr WarpSpecializedProtocol P = Config::kProtocol;
    const int warp = (threadIdx.x % 128) / 32;
    const uint32_t column = static_cast<uint32_t>(slot * P.MmaN() + chunk * kTileK);
    cuda::ptx::tcgen05_ld_32x32b(lo_, TmemAddress(tmem_, warp * 32, column));
    cuda::ptx::tcgen05_ld_32x32b(hi_, TmemAddress(tmem_, warp * 32, column + 32));
    cuda::ptx::tcgen05_wait_ld();
  }

  // Every writeback thread of the group arrives, on the leader's barrier.
  __device__ void ReleaseAccumulator(int slot) {
    TmemFenceBeforeSync();
    if constexpr (Config::kCtaGroup == 2) {
      ArriveInCtaReleased(bars_.ld2mma + slot, 0);
    } else {
      Arrive(bars_.ld2mma + slot);
    }
  }

  // The chunk in registers to a staging tile (swizzled, as the operands),
  // then one TMA store of its 128×64 box, waited for only when the staging
  // comes round again. Fused with C mapped, the leader first brings C's box
  // of the same place into the staging by TMA, and each thread writes D
  // over its C: the wait is the writeback warps' alone (kernels/README.md,
  // "How each epilogue reads C").
  __device__ void StoreChunk(int consumer, int tile, int chunk) {
    constexpr WarpSpecializedProtocol P = Config::kProtocol;
    const bool leader = threadIdx.x % 128 == 0;
    const int barrier_id = 1 + consumer;  // this warpgroup's own hardware barrier
    char* buffer = staging_ + (consumer * Config::kStagingBuffers + stores_ % Config::kStagingBuffers) * kTileBytes;
    if (leader) TmaStoreWaitRead<Config::kStagingBuffers - 1>();
    NamedBarrierSync(barrier_id, 128);
    const int row = threadIdx.x % 128;
    int64_t d_row0 = 0, d_col0 = 0;  // D's element of this thread's first value, for a fused epilogue's C
    EpilogueArgs epilogue = epilogue_;
    bool c_in_buffer = false;
    if constexpr (Form::kFused) {
      SetTile(tile);
      d_row0 = P.ARow(m0_, static_cast<int>(rank_), consumer) + row;
      d_col0 = n0_ + int64_t{chunk} * kTileK;
      epilogue = epilogue_.ForEntry(entry_);
      c_in_buffer = c_map_ != nullptr;
      if (c_in_buffer) {  // one arrival a chunk, so the chunk's phase is the parity of stores_
        if (leader) RequestC(buffer, P.ARow(m0_, static_cast<int>(rank_), consumer), d_col0, c_full_ + consumer);
        common::Wait(c_full_ + consumer, static_cast<uint32_t>(stores_ % 2));
      }
    }
#pragma unroll
    for (int j = 0; j < 32; j += 8) {
      if constexpr (Form::kFused) {
        if (c_in_buffer) {  // the addresses written out in both paths: the plain PTX stays as it was
          uint4* lo = reinterpret_cast<uint4*>(buffer + SwizzledChunkOffset(row, j / 8));
          uint4* hi = reinterpret_cast<uint4*>(buffer + SwizzledChunkOffset(row, 4 + j / 8));
          const uint4 c_lo = *lo, c_hi = *hi;
          *lo = FuseEight<Form>(lo_, j, {c_lo.x, c_lo.y, c_lo.z, c_lo.w}, epilogue);
          *hi = FuseEight<Form>(hi_, j, {c_hi.x, c_hi.y, c_hi.z, c_hi.w}, epilogue);
          continue;
        }
      }
      *reinterpret_cast<uint4*>(buffer + SwizzledChunkOffset(row, j / 8)) =
          PackEight<Form>(lo_, j, epilogue, d_row0, d_col0 + j);
      *reinterpret_cast<uint4*>(buffer + SwizzledChunkOffset(row, 4 + j / 8)) =
          PackEight<Form>(hi_, j, epilogue, d_row0, d_col0 + 32 + j);
    }
    FenceSharedForAsyncProxy();
    NamedBarrierSync(barrier_id, 128);
    if (leader) {
      SetTile(tile);
      const int64_t d_row = P.ARow(m0_, static_cast<int>(rank_), consumer), d_col = n0_ + int64_t{chunk} * kTileK;
      if (d_row < m_ && d_col < n_) {
        TmaStore(d_map_, static_cast<int32_t>(d_col), static_cast<int32_t>(d_row), entry_, buffer);
      }
      TmaStoreCommit();  // a group per chunk, stored or not, so the count above holds
    }
    ++stores_;
  }

 private:
  // The leader, once the staging is read out: C's 128×64 box at (row, col)
  // into `buffer`, arriving on `full`; no bytes where the box lies outside
  // m×n (no D is stored there either).
  __device__ void RequestC(char* buffer, int64_t row, int64_t col, uint64_t* full) const {
    TmaLoadBoxOrArrive(buffer, c_map_, static_cast<int32_t>(col), static_cast<int32_t>(row),
                       epilogue_.CMapEntry(entry_), full, kTileBytes, row < m_ && col < n_);
  }

  __device__ uint64_t* Bar(Barrier b) const {
    switch (b) {
      case Barrier::kTma2Mma: return bars_.tma2mma;
      case Barrier::kMma2Tma: return bars_.mma2tma;
      case Barrier::kMma2Ld: return bars_.mma2ld;
      default: return bars_.ld2mma;
    }
  }

  __device__ void SetTile(int tile) {
    if (tile == tile_) return;
    tile_ = tile;
    tiles_.Origin(tile, &m0_, &n0_, &entry_);
  }

  // One 128-row block of an operand (common/tile_layout.h): one box
  // K-contiguous, two 64-row boxes MN-contiguous.
  template <Layout kLayout>
  __device__ void Load(char* smem, const CUtensorMap* map, int kt, int64_t row, int32_t entry, uint64_t* full) {
    if constexpr (Config::kCtaGroup == 2) {
      ForEachTileBox<kLayout, kTileRows>(kt * kTileK, static_cast<int32_t>(row), [&](int offset, int32_t x, int32_t y) {
        TmaLoadToLeader(smem + offset, map, x, y, entry, full);
      });
    } else {
      TmaLoadTile<kLayout, kTileRows>(smem, map, kt * kTileK, static_cast<int32_t>(row), entry, full);
    }
  }

  Barriers bars_;
  char *stages_, *staging_;
  uint32_t tmem_;
  const CUtensorMap *a_map_, *b_map_, *d_map_, *c_map_;
  uint64_t* c_full_;
  ClusterTiles tiles_;
  int64_t m_, n_;
  uint32_t rank_;
  BatchArgs batch_;
  int tile_ = -1;
  int64_t m0_ = 0, n0_ = 0;
  int entry_ = 0;
  int stores_ = 0;
  uint32_t lo_[32], hi_[32];
  EpilogueArgs epilogue_;
};

template <int kStep, typename Form>
__global__ void __cluster_dims__(WarpSpecialized<kStep>::kCtaGroup, 1, 1)
    __launch_bounds__(WarpSpecialized<kStep>::kProtocol.Threads(), 1)
        WarpSpecializedKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                              const __grid_constant__ CUtensorMap d_map, const __grid_constant__ CUtensorMap c_map,
                              bool c_mapped, int64_t m, int64_t n, int64_t k, EpilogueArgs e, BatchArgs batch) {
  using Config = WarpSpecialized<kStep>;
  constexpr WarpSpecializedProtocol P = Config::kProtocol;
  constexpr int kCtaGroup = Config::kCtaGroup;
  extern __shared__ char smem_raw[];
  char* stages = AlignTo1024(smem_raw);
  char* staging = stages + P.stages * P.StageBytes();
  __shared__ uint64_t tma2mma[P.stages], mma2tma[P.stages], mma2ld[P.Slots()], ld2mma[P.Slots()];
  __shared__ uint64_t c_full[P.consumers];  // C by TMA: a writeback warpgroup's box has landed
  const bool c_by_tma = Form::kFused && c_mapped;
  __shared__ uint32_t tmem_slot;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warpgroup = warp / 4;

  if (threadIdx.x == 0) {
    for (int s = 0; s < P.stages; ++s) {
      BarrierInit(&tma2mma[s], P.Arrivals(Barrier::kTma2Mma));
      BarrierInit(&mma2tma[s], P.Arrivals(Barrier::kMma2Tma));
    }
    for (int s = 0; s < P.Slots(); ++s) {
      BarrierInit(&mma2ld[s], P.Arrivals(Barrier::kMma2Ld));
      BarrierInit(&ld2mma[s], P.Arrivals(Barrier::kLd2Mma));
    }
    if (c_by_tma) {
      for (int c = 0; c < P.consumers; ++c) BarrierInit(&c_full[c], 1);
    }
    FenceBarrierInit();
  }
  __syncwarp();  // warp 0 converges after thread 0's set-up: tcgen05.alloc is .sync.aligned
  if (warp == 0) AllocateTmem<P.TmemColumns(), kCtaGroup>(&tmem_slot);
  TmemFenceBeforeSync();
  // The pair: both CTAs' barriers and TMEM exist before either uses the other's.
  if constexpr (kCtaGroup == 2) {
    ClusterSync();
  } else {
    __syncthreads();
  }
  TmemFenceAfterSync();

  const uint32_t rank = kCtaGroup == 2 ? ClusterRank() : 0;
  const ClusterTiles tiles(P, m, n, static_cast<int>(blockIdx.x) / kCtaGroup, static_cast<int>(gridDim.x) / kCtaGroup,
                           batch.entries);
  const int k_tiles = static_cast<int>((k + kTileK - 1) / kTileK);
  WarpSpecializedOps<kStep, Form> ops({tma2mma, mma2tma, mma2ld, ld2mma}, stages, staging, tmem_slot, &a_map, &b_map,
                                        &d_map, tiles, m, n, rank, e, batch, c_by_tma ? &c_map : nullptr, c_full);

  if (warpgroup < P.consumers) {
    WriteBack(P, warpgroup, tiles.count(), ops);
    if (threadIdx.x % 128 == 0) TmaStoreWaitRead<0>();  // the staging outlives its last store
  } else if (warp % 4 == 3) {
    if (lane == 0) ProduceStages(P, tiles.count(), k_tiles, ops);
  } else if (warp % 4 == 0 && rank == 0) {
    if (lane == 0) IssueMmas(P, tiles.count(), k_tiles, ops);
  }
  __syncwarp();

  // Every TMEM read is done (and, for the pair, the peer's too) before
  // warp 0 frees the columns.
  TmemFenceBeforeSync();
  if constexpr (kCtaGroup == 2) {
    ClusterSync();
  } else {
    __syncthreads();
  }
  if (warp == 0) {
    TmemFenceAfterSync();
    FreeTmem<P.TmemColumns(), kCtaGroup>(tmem_slot);
  }
}

template <int kStep>
cudaError_t PrepareWarpSpecializedStep() {
  return ForEachStepForm([](auto form) {
    return cudaFuncSetAttribute(WarpSpecializedKernel<kStep, decltype(form)>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize, WarpSpecialized<kStep>::kSmemBytes);
  });
}

template <int kStep>
std::string LaunchWarpSpecializedStep(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  using Config = WarpSpecialized<kStep>;
  constexpr WarpSpecializedProtocol P = Config::kProtocol;
  const int cluster_tiles = ClusterTiles(P, p.m, p.n, 0, 1, BatchOf(p).entries).total();
  return WithStepForm(p, [&](auto form) {
    return LaunchOnResidentGrid<WarpSpecializedKernel<kStep, decltype(form)>, P.Threads(), Config::kSmemBytes,
                                Config::kCtaGroup, /*kCMap=*/true>(p, ctx, stream, cluster_tiles * Config::kCtaGroup);
  });
}

}  // namespace gemm::sm100
