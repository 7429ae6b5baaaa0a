// Step 10 = step 9 + two consumer warpgroups. The CTA tile doubles to
// 128×256 and each consumer owns 64 rows of it, multiplied against all 256
// columns of B with the widest wgmma (m64n256k16): per MAC, shared memory
// then serves A once per 256 columns instead of once per 128, and each CTA
// pulls 32 KB per k-tile from L2 for twice step 9's work. The pair of CTAs
// still shares B, now 256 rows, 128 loaded by each and multicast.
//
// Its 192 KB of stages allow one CTA per SM, so no second CTA fills the
// tensor cores while a consumer waits: each consumer keeps one wgmma group
// in flight instead, issuing k-tile t, then waiting for k-tile t-1 and
// freeing that stage. Each consumer writes its own 64 rows of D in
// 64-column chunks through a small staging buffer, which leaves shared
// memory for four 48 KB stages.
#include "barrier.h"
#include "cluster.h"
#include "cluster_pair_tiles.h"
#include "persistent_launch.h"
#include "smem_epilogue.h"
#include "step_common.h"
#include "steps_sm90.h"

namespace gemm::sm90 {
namespace {

constexpr int kStages = 4;
constexpr int kConsumers = 2;
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kTileCols = 256;                         // N of the CTA tile (M stays kTileRows)
constexpr int kConsumerRows = kTileRows / kConsumers;  // 64: one wgmma's M
static_assert(kConsumerRows == kDChunkRows, "a consumer stores its rows as one row of D chunks");
constexpr int kATileBytes = kTileBytes;                // 128×64
constexpr int kBTileBytes = 2 * kTileBytes;            // 256×64
using PairTiles = ClusterPairTiles<kTileCols, kATileBytes, kBTileBytes>;
constexpr int kClusterSize = PairTiles::kClusterSize;
constexpr int kStageBytes = PairTiles::kStageBytes;
constexpr int kChunksPerPass = 2;  // D chunks (64×64) a consumer stages at once
constexpr int kStagingBytes = kConsumers * kChunksPerPass * kDChunkBytes;
constexpr int kSmemBytes = kStages * kStageBytes + kStagingBytes + kSmemAlignSlack;

__global__ void __cluster_dims__(kClusterSize, 1, 1) __launch_bounds__(kThreads, 1)
    TwoConsumersKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                       const __grid_constant__ CUtensorMap d_map, int64_t m, int64_t n, int64_t k) {
  extern __shared__ char smem_raw[];
  char* stages = AlignTo1024(smem_raw);
  char* staging = stages + kStages * kStageBytes;
  __shared__ uint64_t full[kStages];
  __shared__ uint64_t empty[kStages];  // both consumers of both CTAs are done
  const PairTiles pair(m, n, k);
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      BarrierInit(&full[s], 1);
      BarrierInit(&empty[s], PairTiles::EmptyArrivals(kConsumers));
    }
    FenceBarrierInit();
  }
  ClusterSync();

  if (warpgroup == 0) {  // ---------------------------------------- producer
    ReleaseRegisters<kProducerRegisters>();
    if (threadIdx.x == 0) pair.Produce<kStages>(&a_map, &b_map, stages, full, empty);
  } else {  // ----------------------------------------------------- consumers
    ClaimRegisters<ConsumerRegisters(1, kConsumers)>();
    const int consumer = warpgroup - 1;
    const bool leader = threadIdx.x % 128 == 0;
    float acc[128];
    int it = 0;  // this CTA's (tile, k-tile) iteration, as the producer counts them
    for (int tile = 0; tile < pair.tiles(); ++tile) {
      for (int kt = 0; kt < pair.k_tiles(); ++kt, ++it) {
        const int s = it % kStages;
        Wait(&full[s], (it / kStages) % 2);
        const char* a_rows = stages + s * kStageBytes + consumer * kConsumerRows * 128;
        const char* b_tile = stages + s * kStageBytes + kATileBytes;

        IssueWideTileMma(acc, a_rows, b_tile, /*accumulate=*/kt > 0);
        WaitForMma<1>(acc);  // k-tile kt-1 is done once at most this one is pending
        if (leader && kt > 0) PairTiles::Release(&empty[(it - 1) % kStages]);
      }
      WaitForMma<0>(acc);
      if (leader) PairTiles::Release(&empty[(it - 1) % kStages]);
      int64_t m0, n0;
      pair.Origin(tile, &m0, &n0);
      const int64_t row0 = m0 + consumer * kConsumerRows;
      if (row0 < m) {
        StoreRowsInChunks<kTileCols, kChunksPerPass>(acc, staging + consumer * kChunksPerPass * kDChunkBytes,
                                                     1 + consumer, leader, &d_map, row0, n0, n);
      }
    }
    DrainChunkStores(leader);
  }
  ClusterSync();
}

}  // namespace

cudaError_t PrepareTwoConsumers() {
  return cudaFuncSetAttribute(TwoConsumersKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
}

std::string LaunchTwoConsumers(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  return LaunchOnResidentGrid<TwoConsumersKernel, kThreads, kSmemBytes, kClusterSize>(
      p, ctx, stream, PairTiles::WorkCtas(p.m, p.n), TmaBoxRows{kTileRows, PairTiles::kBShareRows, kDChunkRows});
}

}  // namespace gemm::sm90
