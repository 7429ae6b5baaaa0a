// Step 9 = step 8 + clusters of two CTAs. The pair's output tiles sit one
// above the other, so both need the same B tile: each CTA loads one 64-row
// half of it and the TMA multicasts that half into both CTAs' shared memory.
// Each CTA now pulls 24 KB per k-tile from L2 instead of 32 KB. Because the
// peer's TMA writes into this CTA's stages too, a stage may be refilled only
// when the consumers of both CTAs are done with it: each consumer arrives
// on the "empty" barrier of both CTAs, and that barrier waits for two.
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
constexpr int kThreads = 256;  // producer + consumer warpgroup
constexpr int kStageBytes = 2 * kTileBytes;
constexpr int kBShareRows = kTileRows / kClusterSize;  // rows of the B tile each CTA loads
constexpr int kBShareBytes = kTileBytes / kClusterSize;
constexpr int kSmemBytes = kStages * kStageBytes + kDTileBytes + kSmemAlignSlack;
constexpr uint16_t kWholeCluster = (1u << kClusterSize) - 1;

// Bytes landing in one CTA's stage: its A tile (unless it lies wholly below
// the matrix and is not loaded) and every CTA's share of B that lies inside
// the matrix. Both CTAs of the pair compute the same answer for B.
__device__ inline uint32_t StageBytes(int64_t m0, int64_t n0, int64_t m, int64_t n) {
  uint32_t bytes = m0 < m ? kTileBytes : 0;
  for (int r = 0; r < kClusterSize; ++r) bytes += n0 + r * kBShareRows < n ? kBShareBytes : 0;
  return bytes;
}

__global__ void __cluster_dims__(kClusterSize, 1, 1) __launch_bounds__(kThreads, 1)
    ClusterMulticastKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                           const __grid_constant__ CUtensorMap d_map, int64_t m, int64_t n, int64_t k) {
  extern __shared__ char smem_raw[];
  char* stages = AlignTo1024(smem_raw);
  char* d_tile = stages + kStages * kStageBytes;
  __shared__ uint64_t full[kStages];   // TMA -> MMA: A and both shares of B landed
  __shared__ uint64_t empty[kStages];  // MMA -> TMA: both CTAs' consumers are done
  // The scheduler hands out cluster tiles, two tile-rows by one tile-column;
  // CTA `rank` of the pair takes tile-row `rank` of it.
  const TileScheduler scheduler(m, n, kClusterSize * kTileRows, kTileRows);
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
    *n0 = int64_t{tile_n} * kTileRows;
  };

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      BarrierInit(&full[s], 1);
      BarrierInit(&empty[s], kClusterSize);  // one consumer per CTA
    }
    FenceBarrierInit();
  }
  ClusterSync();  // both CTAs' barriers exist before either TMA or consumer uses them

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
        char* b_share = a_tile + kTileBytes + rank * kBShareBytes;
        ArriveExpectTx(&full[s], StageBytes(m0, n0, m, n));
        if (m0 < m) TmaLoad(a_tile, &a_map, kt * kTileK, static_cast<int32_t>(m0), &full[s]);
        if (n0 + rank * kBShareRows < n) {
          TmaLoadMulticast(b_share, &b_map, kt * kTileK, static_cast<int32_t>(n0 + rank * kBShareRows), &full[s],
                           kWholeCluster);
        }
      }
    }
  } else {  // ------------------------------------------------------ consumer
    ClaimRegisters<232>();
    const bool leader = threadIdx.x % 128 == 0;
    auto release = [&](int stage) {
      if (leader) {
        for (int r = 0; r < kClusterSize; ++r) ArriveInCta(&empty[stage], r);
      }
    };
    float acc[2][64] = {};
    int it = 0;
    for (int tile = 0; tile < my_tiles; ++tile) {  // as step 8: one wgmma group in flight
      for (int kt = 0; kt < k_tiles; ++kt, ++it) {
        const int s = it % kStages;
        Wait(&full[s], (it / kStages) % 2);
        const char* a_tile = stages + s * kStageBytes;
        const char* b_tile = a_tile + kTileBytes;

        IssueTileMma(acc, a_tile, b_tile, /*accumulate=*/kt > 0);
        WaitForTileMma<1>(acc);
        if (kt > 0) release((it - 1) % kStages);
      }
      WaitForTileMma<0>(acc);
      release((it - 1) % kStages);
      int64_t m0, n0;
      tile_origin(it - 1, &m0, &n0);
      if (m0 < m) {  // the lower CTA of a pair on the last tile-row may have nothing to write
        AccumulatorsToSmem(acc, d_tile, 0);
        FenceSharedForAsyncProxy();
        NamedBarrierSync(1, 128);
        if (leader) StoreDTile(&d_map, d_tile, m0, n0, n);
        NamedBarrierSync(1, 128);
      }
    }
  }
  ClusterSync();  // no CTA exits while its peer may still arrive on its barriers
}

ResidentGrid& Grid() {
  static ResidentGrid grid(reinterpret_cast<const void*>(ClusterMulticastKernel), kThreads, kSmemBytes,
                           kClusterSize);
  return grid;
}

}  // namespace

cudaError_t PrepareClusterMulticast() {
  return cudaFuncSetAttribute(ClusterMulticastKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
}

std::string LaunchClusterMulticast(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  TmaProblem tma;
  if (auto err = tma.Prepare(p, stream, TmaBoxRows{kTileRows, kBShareRows, kTileRows}); !err.empty()) {
    return err;
  }
  const int cluster_tiles = TileScheduler(p.m, p.n, kClusterSize * kTileRows, kTileRows).tiles();
  const int ctas = std::min(cluster_tiles * kClusterSize, Grid().Ctas(ctx.device, ctx.sm_count));
  ClusterMulticastKernel<<<ctas, kThreads, kSmemBytes, stream>>>(tma.a(), tma.b(), tma.d(), p.m, p.n, p.k);
  if (auto err = LaunchError(); !err.empty()) return err;
  return tma.Finish(stream);
}

}  // namespace gemm::sm90
