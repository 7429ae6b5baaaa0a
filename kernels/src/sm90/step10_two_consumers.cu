// Step 10 = step 9 + two consumer warpgroups. The CTA tile doubles to
// 128×256 and each consumer owns 64 rows of it, multiplied against all 256
// columns of B with the widest wgmma (m64n256k16): per MAC, shared memory
// then serves A once per 256 columns instead of once per 128, and each CTA
// pulls 32 KB per k-tile from L2 for twice step 9's work. The pair of CTAs
// still shares B, now 256 rows, 128 loaded by each and multicast.
//
// Two more changes make it the fastest step. Each consumer keeps one wgmma
// group in flight: it issues k-tile t, then waits for k-tile t-1 and frees
// that stage, so the tensor cores never drain between k-tiles. And each
// consumer writes its own 64 rows of D in 64-column chunks through a small
// staging buffer, which leaves shared memory for four 48 KB stages.
#include "barrier.h"
#include "cluster.h"
#include "resident_grid.h"
#include "smem_epilogue.h"
#include "step_common.h"
#include "steps_sm90.h"
#include "tile_scheduler.h"
#include "tma.h"
#include "tma_problem.h"

namespace gemm::sm90 {
namespace {

constexpr int kStages = 4;
constexpr int kClusterSize = 2;
constexpr int kConsumers = 2;
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kTileCols = 256;                 // N of the CTA tile (M stays kTileRows)
constexpr int kConsumerRows = kTileRows / kConsumers;  // 64: one wgmma's M
constexpr int kATileBytes = kTileBytes;        // 128×64
constexpr int kBTileBytes = 2 * kTileBytes;    // 256×64
constexpr int kStageBytes = kATileBytes + kBTileBytes;
constexpr int kBShareRows = kTileCols / kClusterSize;  // 128 rows of B per CTA
constexpr int kBShareBytes = kBTileBytes / kClusterSize;
constexpr int kChunksPerPass = 2;  // D chunks (64×64) a consumer stages at once
constexpr int kStagingBytes = kConsumers * kChunksPerPass * kDChunkBytes;
constexpr int kSmemBytes = kStages * kStageBytes + kStagingBytes + kSmemAlignSlack;
constexpr uint16_t kWholeCluster = (1u << kClusterSize) - 1;

// As in step 9: this CTA's A unless it lies below the matrix, plus every
// CTA's share of B that lies inside it.
__device__ inline uint32_t StageBytes(int64_t m0, int64_t n0, int64_t m, int64_t n) {
  uint32_t bytes = m0 < m ? kATileBytes : 0;
  for (int r = 0; r < kClusterSize; ++r) bytes += n0 + r * kBShareRows < n ? kBShareBytes : 0;
  return bytes;
}

// One consumer's 64 rows of the tile at (row0, n0) -> D, two 64×64 chunks
// per pass through its staging buffer.
__device__ inline void StoreConsumerRows(const float (&acc)[128], char* staging, int barrier_id, bool leader,
                                         const CUtensorMap* d_map, int64_t row0, int64_t n0, int64_t n) {
#pragma unroll
  for (int pass = 0; pass < kTileCols / 64 / kChunksPerPass; ++pass) {
#pragma unroll
    for (int c = 0; c < kChunksPerPass; ++c) {
      AccumulatorColumnsToSmem(acc, (pass * kChunksPerPass + c) * 64, staging + c * kDChunkBytes);
    }
    FenceSharedForAsyncProxy();
    NamedBarrierSync(barrier_id, 128);
    if (leader) {
      for (int c = 0; c < kChunksPerPass; ++c) {
        const int64_t col = n0 + (pass * kChunksPerPass + c) * 64;
        if (col < n) TmaStore(d_map, static_cast<int32_t>(col), static_cast<int32_t>(row0), staging + c * kDChunkBytes);
      }
      TmaStoreCommitAndWait();
    }
    NamedBarrierSync(barrier_id, 128);  // staging is read out before the next pass writes it
  }
}

__global__ void __cluster_dims__(kClusterSize, 1, 1) __launch_bounds__(kThreads, 1)
    TwoConsumersKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                       const __grid_constant__ CUtensorMap d_map, int64_t m, int64_t n, int64_t k) {
  extern __shared__ char smem_raw[];
  char* stages = AlignTo1024(smem_raw);
  char* staging = stages + kStages * kStageBytes;
  __shared__ uint64_t full[kStages];
  __shared__ uint64_t empty[kStages];  // both consumers of both CTAs are done
  const TileScheduler scheduler(m, n, kClusterSize * kTileRows, kTileCols);
  const uint32_t rank = ClusterRank();
  const int cluster = static_cast<int>(blockIdx.x) / kClusterSize;
  const int clusters = static_cast<int>(gridDim.x) / kClusterSize;
  const int k_tiles = static_cast<int>((k + kTileK - 1) / kTileK);
  const int my_tiles = (scheduler.tiles() - cluster + clusters - 1) / clusters;
  const int iterations = my_tiles * k_tiles;
  const int warpgroup = threadIdx.x / 128;
  auto tile_origin = [&](int it, int64_t* m0, int64_t* n0) {
    int tile_m, tile_n;
    scheduler.Coordinates(cluster + (it / k_tiles) * clusters, &tile_m, &tile_n);
    *m0 = (int64_t{tile_m} * kClusterSize + rank) * kTileRows;
    *n0 = int64_t{tile_n} * kTileCols;
  };

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      BarrierInit(&full[s], 1);
      BarrierInit(&empty[s], kConsumers * kClusterSize);
    }
    FenceBarrierInit();
  }
  ClusterSync();

  if (warpgroup == 0) {  // ---------------------------------------- producer
    ReleaseRegisters<40>();
    if (threadIdx.x == 0) {
      for (int it = 0; it < iterations; ++it) {
        const int s = it % kStages;
        Wait(&empty[s], ((it / kStages) % 2) ^ 1);
        int64_t m0, n0;
        tile_origin(it, &m0, &n0);
        const int kt = it % k_tiles;
        char* a_tile = stages + s * kStageBytes;
        char* b_share = a_tile + kATileBytes + rank * kBShareBytes;
        ArriveExpectTx(&full[s], StageBytes(m0, n0, m, n));
        if (m0 < m) TmaLoad(a_tile, &a_map, kt * kTileK, static_cast<int32_t>(m0), &full[s]);
        if (n0 + rank * kBShareRows < n) {
          TmaLoadMulticast(b_share, &b_map, kt * kTileK, static_cast<int32_t>(n0 + rank * kBShareRows), &full[s],
                           kWholeCluster);
        }
      }
    }
  } else {  // ----------------------------------------------------- consumers
    ClaimRegisters<232>();
    const int consumer = warpgroup - 1;
    const bool leader = threadIdx.x % 128 == 0;
    auto release = [&](int stage) {
      if (leader) {
        for (int r = 0; r < kClusterSize; ++r) ArriveInCta(&empty[stage], r);
      }
    };
    float acc[128];
    int it = 0;  // this CTA's (tile, k-tile) iteration, as the producer counts them
    for (int tile = 0; tile < my_tiles; ++tile) {
      for (int kt = 0; kt < k_tiles; ++kt, ++it) {
        const int s = it % kStages;
        Wait(&full[s], (it / kStages) % 2);
        const char* a_rows = stages + s * kStageBytes + consumer * kConsumerRows * 128;
        const char* b_tile = stages + s * kStageBytes + kATileBytes;

        IssueWideTileMma(acc, a_rows, b_tile, /*accumulate=*/kt > 0);
        WaitForMma<1>(acc);  // k-tile kt-1 is done once at most this one is pending
        if (kt > 0) release((it - 1) % kStages);
      }
      WaitForMma<0>(acc);
      release((it - 1) % kStages);
      int64_t m0, n0;
      tile_origin(it - 1, &m0, &n0);
      const int64_t row0 = m0 + consumer * kConsumerRows;
      if (row0 < m) {
        StoreConsumerRows(acc, staging + consumer * kChunksPerPass * kDChunkBytes, 1 + consumer, leader, &d_map,
                          row0, n0, n);
      }
    }
  }
  ClusterSync();
}

ResidentGrid& Grid() {
  static ResidentGrid grid(reinterpret_cast<const void*>(TwoConsumersKernel), kThreads, kSmemBytes, kClusterSize);
  return grid;
}

}  // namespace

cudaError_t PrepareTwoConsumers() {
  return cudaFuncSetAttribute(TwoConsumersKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
}

std::string LaunchTwoConsumers(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  TmaProblem tma;
  if (auto err = tma.Prepare(p, stream, TmaBoxRows{kTileRows, kBShareRows, kConsumerRows}); !err.empty()) {
    return err;
  }
  const int cluster_tiles = TileScheduler(p.m, p.n, kClusterSize * kTileRows, kTileCols).tiles();
  const int ctas = std::min(cluster_tiles * kClusterSize, Grid().Ctas(ctx.device, ctx.sm_count));
  TwoConsumersKernel<<<ctas, kThreads, kSmemBytes, stream>>>(tma.a(), tma.b(), tma.d(), p.m, p.n, p.k);
  if (auto err = LaunchError(); !err.empty()) return err;
  return tma.Finish(stream);
}

}  // namespace gemm::sm90
