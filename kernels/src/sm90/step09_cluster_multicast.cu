// Step 9 = step 8 + clusters of two CTAs. The pair's output tiles sit one
// above the other, so both need the same B tile: each CTA loads one 64-row
// half of it and the TMA multicasts that half into both CTAs' shared memory.
// Each CTA now pulls 24 KB per k-tile from L2 instead of 32 KB. Because the
// peer's TMA writes into this CTA's stages too, a stage may be refilled only
// when the consumers of both CTAs are done with it: each consumer arrives
// on the "empty" barrier of both CTAs, and that barrier waits for two. The
// pair's tiles, loads and releases are in cluster_pair_tiles.h (step 10
// shares them).
#include "common/barrier.h"
#include "common/cluster.h"
#include "cluster_pair_tiles.h"
#include "common/persistent_launch.h"
#include "smem_epilogue.h"
#include "step_common.h"
#include "steps_sm90.h"
#include "tile_consumer.h"

namespace gemm::sm90 {
namespace {

constexpr int kStages = 3;  // as step 8, with D staged in chunks: two CTAs per SM
constexpr int kCtasPerSm = 2;
constexpr int kThreads = 256;  // producer + consumer warpgroup
using PairTiles = ClusterPairTiles<kTileRows, kTileBytes, kTileBytes>;
constexpr int kClusterSize = PairTiles::kClusterSize;
constexpr int kStageBytes = PairTiles::kStageBytes;
constexpr int kSmemBytes = kStages * kStageBytes + kDChunkBytes + kSmemAlignSlack;

template <typename Form>
__global__ void __cluster_dims__(kClusterSize, 1, 1) __launch_bounds__(kThreads, kCtasPerSm)
    ClusterMulticastKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                           const __grid_constant__ CUtensorMap d_map, const __grid_constant__ CUtensorMap c_map,
                           bool c_mapped, int64_t m, int64_t n, int64_t k, EpilogueArgs e, BatchArgs batch) {
  extern __shared__ char smem_raw[];
  char* stages = AlignTo1024(smem_raw);
  char* d_staging = stages + kStages * kStageBytes;
  __shared__ uint64_t full[kStages];   // TMA -> MMA: A and both shares of B landed
  __shared__ uint64_t empty[kStages];  // MMA -> TMA: both CTAs' consumers are done
  const PairTiles pair(m, n, k, 1, batch);
  const int warpgroup = threadIdx.x / 128;
  const bool c_by_tma = Form::kFused && c_mapped;  // as in step 8

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      BarrierInit(&full[s], 1);
      BarrierInit(&empty[s], PairTiles::EmptyArrivals(1));  // one consumer per CTA
    }
    FenceBarrierInit();
  }
  ClusterSync();  // both CTAs' barriers exist before either TMA or consumer uses them

  if (warpgroup == 0) {  // ---------------------------------------- producer
    ReleaseRegisters<kProducerRegisters>();
    if (threadIdx.x == 0) {
      pair.template Produce<kStages, Form, Form::kFused>(&a_map, &b_map, stages, full, empty, c_by_tma,
                                                         CTileLoad{&c_map, m, n, e.c_stride == 0});
    }
  } else {  // ------------------------------------------------------ consumer
    ClaimRegisters<ConsumerRegisters(kCtasPerSm)>();
    const bool leader = threadIdx.x % 128 == 0;
    float acc[2][64] = {};
    int it = 0;
    for (int tile = 0; tile < pair.tiles(); ++tile) {  // as step 8, releasing in both CTAs
      MultiplyTile<Form, kStages, kStageBytes>(acc, stages, full, empty, pair.k_tiles(), it, leader,
                                               PairTiles::Release);
      int64_t m0, n0;
      int entry;
      pair.Origin(tile, &m0, &n0, &entry);
      const char* c_tile = c_by_tma ? WaitForTileC<kStages, kStageBytes>(stages, full, it) : nullptr;
      StoreTileInChunks<Form>(acc, d_staging, 1, leader, &d_map, m0, n0, entry, m, n, e.ForEntry(entry), c_tile);
      if (c_by_tma) ReleaseTileC<kStages>(empty, it, leader, PairTiles::Release);
    }
    DrainChunkStores(leader);
  }
  // No barrier at exit: the producer's tail keeps this CTA alive until the
  // peer is done with its barriers and shared memory (cluster_pair_tiles.h).
}

}  // namespace

cudaError_t PrepareClusterMulticast() {
  return ForEachStepForm([](auto form) {
    return cudaFuncSetAttribute(ClusterMulticastKernel<decltype(form)>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                kSmemBytes);
  });
}

std::string LaunchClusterMulticast(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  return WithStepForm(p, [&](auto form) {
    return LaunchOnResidentGrid<ClusterMulticastKernel<decltype(form)>, kThreads, kSmemBytes, kClusterSize,
                                /*kCMap=*/true>(
        p, ctx, stream, PairTiles::WorkCtas(p.m, p.n, 1, BatchOf(p).entries),
        TmaBoxRows{kTileRows, PairTiles::kBShareRows, kDChunkRows});
  });
}

}  // namespace gemm::sm90
