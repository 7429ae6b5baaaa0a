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
// freeing that stage. For the same reason D does not leave between tiles:
// a consumer packs its 64 rows to 16 bits (freeing the accumulators for the
// next tile) and stores one 64-column chunk of them every other k-tile of
// the next tile, while its wgmma run; consumer 1 stores on the k-tiles in
// between, so the two never pause at once. With β·C, once the last tile's
// D has left the staging, C's chunks come into it by TMA, two at a time,
// and each consumer takes its pairs into the registers D left, many
// k-tiles before they are needed, so the epilogue never waits for C. Two 8 KB
// staging chunks per consumer leave shared memory for four 48 KB stages.
//
// Shapes the idea does not fit: when M·N makes fewer cluster tiles than
// half the resident clusters and K is long, the same kernel runs split-K
// (common/split_k.h): each cluster takes one range of a tile's k-tiles and
// writes fp32 partial sums (split_k_epilogue.h), and a second kernel adds
// them up in a fixed order. Otherwise the one CTA pair of a 16×16×16K GEMM
// walks all 256 k-tiles while 65 pairs idle. Where a narrower tile below
// already busies over half the SMs, it takes K whole up to 8192 instead
// of the pair tile split (common/tile_width.h: SplitKMayRun). Where most
// of the pair tile would be padding, a tile of one CTA below splits K the
// same way: the narrow one for N <= 64, the medium one for M <= 128 (the
// pair's lower CTA would have no rows). When K is short and the pair
// tiles would still leave over half the SMs idle, or when a narrower tile
// takes no more waves than they do, a tile of half or a quarter the columns
// takes over (common/tile_width.h): 128×128 (medium) or 128×64 (narrow),
// each consumer on m64n128 or m64n64, one CTA without a cluster. A
// 2048×1024 GEMM then keeps 128 SMs busy instead of 64; a 64×64×64 one
// multiplies a quarter as much padding (the wide tile's wgmma alone take
// about 2,000 cycles of a 12,000-cycle kernel) and pays no cluster launch
// or handshake; a 20330×14 one multiplies 64 columns a k-tile, not 256.
// Where N is wider than 64, the narrow tile's CTAs take 64×128 tiles
// instead, one consumer on m64n128 (half height): B's rows are read once a
// k-tile, not once per consumer, so the CTA's shared memory, which sets
// the pace of these small tiles' k-loops, moves 48 KB a k-tile, not 56.
// Its k-tiles are then short enough that one producer thread, issuing
// both operands' loads and waiting out each stage, paced them: two
// threads load one operand each. And where the pair tiles' count rounds
// badly onto the SMs (1536³: 72 CTAs of 132, one tile each; 3072³: 288,
// three rounds for some), a 128×192 tile (three quarters, m64n192, one
// CTA) makes its busiest SM do at most four fifths of the wide tile's
// work: 96 CTAs of 192 columns each at 1536³. Where the wide tiles come in
// waves and the last one would busy at most half the clusters (3840³: 225
// tiles for 66 pairs, a fourth wave of 27), the tiles of that wave split
// K (a split tail, common/split_k.h: SplitTail), two ranges or more each,
// in the same launch after the whole tiles; a second kernel adds their
// fp32 sums into D. From K = 3072 that beat the whole last wave on every
// shape measured (1.01-1.21× on an H200). Not with α or β·C: the tail
// kernel's consumers, holding C beside the accumulators, spilled.
#include <climits>

#include "common/barrier.h"
#include "common/cluster.h"
#include "cluster_pair_tiles.h"
#include "common/tile_width.h"
#include "common/persistent_launch.h"
#include "smem_epilogue.h"
#include "split_k_epilogue.h"
#include "step_common.h"
#include "steps_sm90.h"

namespace gemm::sm90 {
namespace {

constexpr int kConsumerRows = 64;  // one wgmma's M: each consumer's rows of the tile
static_assert(kConsumerRows == kDChunkRows, "a consumer stores its rows as one row of D chunks");
// K-tiles between asking the TMA for two chunks of C and reading them: about
// 2 µs of wide-tile wgmma, a DRAM round trip under full load.
constexpr int kCGap = 4;

// A CTA tile of kTileRows × kCols on clusters of kCtas, kStageCount stages
// deep: the wide pair tile of the step's idea, or a narrower one for
// problems it would leave idle. The narrower tiles' stages are smaller, so
// more of them fit: their problems have few k-tiles a tile (1024³: 16), and
// a deeper ring has more of them in flight before the first wgmma.
// kSplitLoads: two producer threads, one per operand (ClusterPairTiles::
// Produce), where one thread's loads would pace the k-loop.
template <int kCols, int kCtas, int kStageCount, int kRows = kTileRows, bool kSplitLoadsOf = false>
struct TileShape {
  static constexpr int kStages = kStageCount;
  static constexpr bool kSplitLoads = kSplitLoadsOf;
  static constexpr int kTileCols = kCols;  // N of the CTA tile (M: kRows)
  static constexpr int kConsumers = kRows / kConsumerRows;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kATileBytes = kRows * kTileK * 2;
  static constexpr int kBTileBytes = kCols * kTileK * 2;
  static constexpr int kClusterRows = kCtas * kRows;  // the scheduler's tile: the cluster's
  template <Units kUnits>
  using Tiles = ClusterPairTiles<kTileCols, kATileBytes, kBTileBytes, kUnits, kCtas, kRows>;
  static constexpr int kStageBytes = Tiles<Units::kWhole>::kStageBytes;
  static constexpr int kDChunks = kTileCols / 64;                 // D chunks (64×64) in a consumer's rows
  static constexpr int kStoringKTiles = kDChunks * kConsumers;  // the k-tiles of a tile that carry the last tile's D
  static constexpr int kStagingBytes = kConsumers * 2 * kDChunkBytes;
  static constexpr int kSmemBytes = kStages * kStageBytes + kStagingBytes + kSmemAlignSlack;
};
constexpr int kPair = 2;  // CTAs in the wide tile's cluster
using Wide = TileShape<kWideTileCols, kPair, 4>;  // 48 KB stages
using Medium = TileShape<128, 1, 6>;   // 32 KB stages
using Narrow = TileShape<kNarrowTileCols, 1, 8>;  // 24 KB stages
// 64×128, one consumer, two producer threads: 24 KB stages
using HalfHeight = TileShape<128, 1, 8, kHalfHeightTileRows, true>;
using ThreeQuarter = TileShape<kThreeQuarterTileCols, 1, 4>;  // 40 KB stages

// Where a split launch puts each range's fp32 sums (split_k.h): split-K's
// at D's coordinates, m × ldw a range; a split tail's a tile's block at a
// time (SumTileSplits).
struct Partials {
  float* sums = nullptr;
  int64_t ldw = 0;
  int splits = 1;
  int whole_tiles = 0;  // a split tail's
};

// c_mapped: C comes in by TMA through c_map (D's box); elsewhere a fused
// epilogue loads its pairs itself (LoadCPairs).
template <typename Form, typename Shape, Units kUnits>
__device__ __forceinline__ void TwoConsumers(const CUtensorMap* a_map, const CUtensorMap* b_map,
                                             const CUtensorMap* d_map, const CUtensorMap* c_map, bool c_mapped,
                                             int64_t m, int64_t n, int64_t k, Partials partials,
                                             const EpilogueArgs& e, BatchArgs batch) {
  constexpr int kStages = Shape::kStages, kTileCols = Shape::kTileCols, kStageBytes = Shape::kStageBytes;
  constexpr int kDChunks = Shape::kDChunks, kStoringKTiles = Shape::kStoringKTiles;
  constexpr int kConsumers = Shape::kConsumers, kATileBytes = Shape::kATileBytes;
  constexpr bool kWholeTiles = kUnits != Units::kSplit;
  using PairTiles = typename Shape::template Tiles<kUnits>;
  extern __shared__ char smem_raw[];
  char* stages = AlignTo1024(smem_raw);
  char* staging = stages + kStages * kStageBytes;
  __shared__ uint64_t full[kStages];
  __shared__ uint64_t empty[kStages];  // both consumers of both CTAs are done
  __shared__ uint64_t c_full[kConsumers];  // a consumer's chunks of C are in its staging
  const PairTiles pair(m, n, k, partials.splits, batch, partials.whole_tiles);
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      BarrierInit(&full[s], PairTiles::FullArrivals(Shape::kSplitLoads));
      BarrierInit(&empty[s], PairTiles::EmptyArrivals(kConsumers));
    }
    if constexpr (Form::kFused && kWholeTiles) {
      for (int c = 0; c < kConsumers; ++c) BarrierInit(&c_full[c], 1);
    }
    FenceBarrierInit();
  }
  PairTiles::SyncBarrierInit();

  if (warpgroup == 0) {  // ---------------------------------------- producer
    ReleaseRegisters<kProducerRegisters>();
    if constexpr (Shape::kSplitLoads) {
      if (threadIdx.x == 0) pair.template Produce<kStages, Form, false, Loads::kA>(a_map, b_map, stages, full, empty);
      if (threadIdx.x == 32) pair.template Produce<kStages, Form, false, Loads::kB>(a_map, b_map, stages, full, empty);
    } else if (threadIdx.x == 0) {
      pair.template Produce<kStages, Form>(a_map, b_map, stages, full, empty);
    }
  } else {  // ----------------------------------------------------- consumers
    ClaimRegisters<ConsumerRegisters(1, kConsumers)>();
    const int consumer = warpgroup - 1;
    const bool leader = threadIdx.x % 128 == 0;
    char* my_staging = staging + consumer * 2 * kDChunkBytes;
    float acc[kTileCols / 2];
    uint32_t pending[kTileCols / 4];  // the last tile's rows of D, packed, stored during this tile's first k-tiles
    int64_t pending_row = m, pending_n0 = 0;  // pending_row >= m: nothing to store
    int pending_entry = 0;
    int it = 0;  // this CTA's (tile, k-tile) iteration, as the producer counts them
    const bool c_by_tma = Form::kFused && c_mapped;
    uint32_t c_reads = 0;  // phases of c_full[consumer] waited for
    auto multiply = [&](int kt) {
      const int s = it % kStages;
      Wait(&full[s], (it / kStages) % 2);
      IssueWideTileMma<Form>(acc, stages + s * kStageBytes + consumer * kConsumerRows * 128,
                       stages + s * kStageBytes + kATileBytes, /*accumulate=*/kt > 0);
      WaitForMma<1>(acc);  // k-tile kt-1 is done once at most this one is pending
      if (leader && kt > 0) PairTiles::Release(&empty[(it - 1) % kStages]);
      ++it;
    };
    auto store_chunk = [&](int chunk) {
      if (pending_row >= m) return;
      StoreChunk(pending, chunk, my_staging, 1 + consumer, leader, d_map, pending_row, pending_n0, pending_entry, n);
    };
    // One range of K, then its sums straight out: no D pipeline. After
    // whole tiles (a split tail), the last one's D leaves first: kept in
    // registers through the range's first k-tiles, as a whole tile does,
    // it pushed the consumers past their registers.
    auto multiply_range = [&](int tile, int64_t m0, int64_t n0) {
      if constexpr (kUnits == Units::kSplitTail) {
#pragma unroll
        for (int c = 0; c < kDChunks; ++c) store_chunk(c);
        pending_row = m;  // stored
      }
      int kt_begin, kt_end;
      pair.KTiles(tile, &kt_begin, &kt_end);
      for (int kt = kt_begin; kt < kt_end; ++kt) multiply(kt - kt_begin);
      WaitForMma<0>(acc);
      if (leader) PairTiles::Release(&empty[(it - 1) % kStages]);
      if constexpr (kUnits == Units::kSplit) {
        StorePartialSums(acc, partials.sums + pair.Split(tile) * m * partials.ldw, partials.ldw,
                         m0 + consumer * kConsumerRows, n0, m, n);
      } else {
        constexpr int kClusterRows = Shape::kClusterRows;
        const int64_t top = m0 - m0 % kClusterRows;  // the cluster tile's first row
        const int64_t block = int64_t{pair.TileIndex(tile) - pair.whole_tiles()} * partials.splits + pair.Split(tile);
        StorePartialSums(acc, partials.sums + block * kClusterRows * kTileCols, kTileCols,
                         m0 - top + consumer * kConsumerRows, 0, m - top, n - n0);
      }
    };
    const int k_tiles = pair.k_tiles();
    for (int tile = 0; tile < pair.tiles(); ++tile) {
      int64_t m0, n0;  // now, not after the k-loop, where it would delay the next tile's first wgmma
      int entry;
      pair.Origin(tile, &m0, &n0, &entry);
      if constexpr (kUnits == Units::kSplit) {
        multiply_range(tile, m0, n0);
      } else if (kUnits == Units::kSplitTail && pair.IsSplit(tile)) {
        multiply_range(tile, m0, n0);
      } else {
#pragma unroll
        for (int kt = 0; kt < kStoringKTiles; ++kt) {  // all chunks are stored even if K has fewer k-tiles
          if (kt < k_tiles) multiply(kt);
          if (kt % kConsumers == consumer) store_chunk(kt / kConsumers);
        }
        if constexpr (Form::kFused) {
          // C by TMA in steps kCGap k-tiles apart, from the k-tile after the
          // last store (whose staging it reuses): ask for chunks 0-1; read
          // them (and ask for 2-3); read 2-3. A short K runs on past its
          // last k-tile for the steps it has not reached.
          constexpr int kCSteps = kDChunks > 2 ? 3 : 2;
          int c_step = 0;
          int c_due = c_by_tma ? kStoringKTiles + 1 : INT_MAX;  // the k-tile after which the next step runs
          auto request = [&](int first) {  // the leader's
            RequestCChunks<kDChunks>(first, my_staging, c_map, m0 + consumer * kConsumerRows, n0,
                                     e.CMapEntry(entry), &c_full[consumer]);
          };
          auto c_advance = [&] {
            if (c_step == 0) {
              if (leader) {
                TmaStoreWaitRead<0>();
                request(0);
              }
            } else if (c_step == 1) {
              ReadCChunks<0>(pending, my_staging, &c_full[consumer], c_reads++ % 2);
              if constexpr (kDChunks > 2) {
                NamedBarrierSync(1 + consumer, 128);  // every thread has its pairs of chunks 0-1
                if (leader) request(2);
              }
            } else if constexpr (kDChunks > 2) {
              ReadCChunks<2>(pending, my_staging, &c_full[consumer], c_reads++ % 2);
            }
            c_due = ++c_step < kCSteps ? c_due + kCGap : INT_MAX;
          };
          if (!c_by_tma) LoadCPairs<Form>(pending, e.ForEntry(entry), m0 + consumer * kConsumerRows, n0);
          const int loop_end = c_by_tma ? max(k_tiles, kStoringKTiles + 2 + (kCSteps - 1) * kCGap) : k_tiles;
          for (int kt = kStoringKTiles; kt < loop_end; ++kt) {
            if (kt < k_tiles) multiply(kt);
            if (kt == c_due) c_advance();
          }
        } else {
          for (int kt = kStoringKTiles; kt < k_tiles; ++kt) multiply(kt);
        }
        WaitForMma<0>(acc);
        if (leader) PairTiles::Release(&empty[(it - 1) % kStages]);
        pending_row = m0 + consumer * kConsumerRows;
        PackAccumulators<Form>(acc, pending, e.ForEntry(entry));
        pending_n0 = n0;
        pending_entry = entry;
      }
    }
    if constexpr (kWholeTiles) {
#pragma unroll
      for (int c = 0; c < kDChunks; ++c) store_chunk(c);  // the last whole tile's rows
      DrainChunkStores(leader);
    }
  }
  // No barrier at exit: the producer's tail does that job (as in step 9).
}

template <typename Form>
__global__ void __cluster_dims__(kPair, 1, 1) __launch_bounds__(Wide::kThreads, 1)
    TwoConsumersKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                       const __grid_constant__ CUtensorMap d_map, const __grid_constant__ CUtensorMap c_map,
                       bool c_mapped, int64_t m, int64_t n, int64_t k, EpilogueArgs e, BatchArgs batch) {
  TwoConsumers<Form, Wide, Units::kWhole>(&a_map, &b_map, &d_map, &c_map, c_mapped, m, n, k, {}, e, batch);
}

// The wide tile's whole tiles, then a split tail (LaunchSplitTailOnResidentGrid).
template <typename Form>
__global__ void __cluster_dims__(kPair, 1, 1) __launch_bounds__(Wide::kThreads, 1)
    TwoConsumersSplitTailKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                                const __grid_constant__ CUtensorMap d_map, const __grid_constant__ CUtensorMap c_map,
                                bool c_mapped, int64_t m, int64_t n, int64_t k, EpilogueArgs e, BatchArgs batch,
                                float* sums, int whole_tiles, int splits) {
  TwoConsumers<Form, Wide, Units::kSplitTail>(&a_map, &b_map, &d_map, &c_map, c_mapped, m, n, k,
                                              {sums, 0, splits, whole_tiles}, e, batch);
}

template <typename Form>
__global__ void __cluster_dims__(kPair, 1, 1) __launch_bounds__(Wide::kThreads, 1)
    TwoConsumersSplitKKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                             int64_t m, int64_t n, int64_t k, float* sums, int64_t ldw, int splits) {
  TwoConsumers<Form, Wide, Units::kSplit>(&a_map, &b_map, nullptr, nullptr, false, m, n, k, {sums, ldw, splits}, {},
                                          {});
}

// Split-K on a tile of one CTA (common/tile_width.h: SplitKTileWidth).
template <typename Form, typename Shape>
__global__ void __launch_bounds__(Shape::kThreads, 1)
    TwoConsumersSoloSplitKKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                                 int64_t m, int64_t n, int64_t k, float* sums, int64_t ldw, int splits) {
  TwoConsumers<Form, Shape, Units::kSplit>(&a_map, &b_map, nullptr, nullptr, false, m, n, k, {sums, ldw, splits}, {},
                                           {});
}

// The three-quarter, medium, narrow and half-height tiles: one CTA, no cluster.
template <typename Form, typename Shape>
__global__ void __launch_bounds__(Shape::kThreads, 1)
    TwoConsumersSoloKernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                           const __grid_constant__ CUtensorMap d_map, const __grid_constant__ CUtensorMap c_map,
                           bool c_mapped, int64_t m, int64_t n, int64_t k, EpilogueArgs e, BatchArgs batch) {
  TwoConsumers<Form, Shape, Units::kWhole>(&a_map, &b_map, &d_map, &c_map, c_mapped, m, n, k, {}, e, batch);
}

}  // namespace

cudaError_t PrepareTwoConsumers() {
  return ForEachStepForm([](auto form) {
    using Form = decltype(form);
    constexpr auto kSmem = cudaFuncAttributeMaxDynamicSharedMemorySize;
    cudaError_t e = cudaFuncSetAttribute(TwoConsumersKernel<Form>, kSmem, Wide::kSmemBytes);
    if (e == cudaSuccess) e = cudaFuncSetAttribute(TwoConsumersSplitKKernel<Form>, kSmem, Wide::kSmemBytes);
    if constexpr (!Form::kFused) {
      if (e == cudaSuccess) e = cudaFuncSetAttribute(TwoConsumersSplitTailKernel<Form>, kSmem, Wide::kSmemBytes);
    }
    if (e == cudaSuccess) {
      e = cudaFuncSetAttribute(TwoConsumersSoloSplitKKernel<Form, Narrow>, kSmem, Narrow::kSmemBytes);
    }
    if (e == cudaSuccess) {
      e = cudaFuncSetAttribute(TwoConsumersSoloSplitKKernel<Form, Medium>, kSmem, Medium::kSmemBytes);
    }
    if (e == cudaSuccess) e = cudaFuncSetAttribute(TwoConsumersSoloKernel<Form, Narrow>, kSmem, Narrow::kSmemBytes);
    if (e == cudaSuccess) e = cudaFuncSetAttribute(TwoConsumersSoloKernel<Form, Medium>, kSmem, Medium::kSmemBytes);
    if (e == cudaSuccess) {
      e = cudaFuncSetAttribute(TwoConsumersSoloKernel<Form, HalfHeight>, kSmem, HalfHeight::kSmemBytes);
    }
    if (e == cudaSuccess) {
      e = cudaFuncSetAttribute(TwoConsumersSoloKernel<Form, ThreeQuarter>, kSmem, ThreeQuarter::kSmemBytes);
    }
    return e;
  });
}

std::string LaunchTwoConsumers(const Problem& p, const DeviceContext& ctx, cudaStream_t stream) {
  using WideTiles = Wide::Tiles<Units::kWhole>;
  using MediumTiles = Medium::Tiles<Units::kWhole>;
  using NarrowTiles = Narrow::Tiles<Units::kWhole>;
  using HalfHeightTiles = HalfHeight::Tiles<Units::kWhole>;
  using ThreeQuarterTiles = ThreeQuarter::Tiles<Units::kWhole>;
  return WithStepForm(p, [&](auto form) {
    using Form = decltype(form);
    const int entries = BatchOf(p).entries;
    const int wide_ctas = WideTiles::WorkCtas(p.m, p.n, 1, entries);
    const int medium_ctas = MediumTiles::WorkCtas(p.m, p.n, 1, entries);
    const int narrow_ctas = NarrowTiles::WorkCtas(p.m, p.n, 1, entries);
    const int three_quarter_ctas = ThreeQuarterTiles::WorkCtas(p.m, p.n, 1, entries);
    const TileWidth width =
        ChooseTileWidth({wide_ctas, three_quarter_ctas, medium_ctas, narrow_ctas}, ctx.sm_count, p.m <= kTileRows);
    const int width_ctas = width == TileWidth::kWide            ? wide_ctas
                           : width == TileWidth::kThreeQuarter ? three_quarter_ctas
                           : width == TileWidth::kMedium       ? medium_ctas
                                                               : narrow_ctas;
    const int k_tiles = static_cast<int>(CeilDiv(p.k, kTileK));
    bool split = false;
    std::string err;
    if (SplitKMayRun(p.m, p.n, width_ctas, k_tiles, ctx.sm_count)) {
      switch (SplitKTileWidth(p.m, p.n)) {
        case TileWidth::kNarrow:
          err = LaunchSplitKOnResidentGrid<TwoConsumersSoloSplitKKernel<Form, Narrow>, Narrow::kThreads,
                                           Narrow::kSmemBytes, 1>(
              p, ctx, stream, NarrowTiles::Tiles(p.m, p.n), {kTileRows, NarrowTiles::kBShareRows, kDChunkRows}, &split);
          break;
        case TileWidth::kMedium:
          err = LaunchSplitKOnResidentGrid<TwoConsumersSoloSplitKKernel<Form, Medium>, Medium::kThreads,
                                           Medium::kSmemBytes, 1>(
              p, ctx, stream, MediumTiles::Tiles(p.m, p.n), {kTileRows, MediumTiles::kBShareRows, kDChunkRows}, &split);
          break;
        case TileWidth::kWide:
          err = LaunchSplitKOnResidentGrid<TwoConsumersSplitKKernel<Form>, Wide::kThreads, Wide::kSmemBytes, kPair>(
              p, ctx, stream, WideTiles::Tiles(p.m, p.n), {kTileRows, WideTiles::kBShareRows, kDChunkRows}, &split);
          break;
        case TileWidth::kThreeQuarter:  // SplitKTileWidth never picks it
          break;
      }
    }
    if (split || !err.empty()) return err;
    switch (width) {
      case TileWidth::kNarrow: {
        const int half_height_ctas = HalfHeightTiles::WorkCtas(p.m, p.n, 1, entries);
        if (HalfHeightReplacesNarrow(p.n, narrow_ctas, half_height_ctas)) {
          return LaunchOnResidentGrid<TwoConsumersSoloKernel<Form, HalfHeight>, HalfHeight::kThreads,
                                      HalfHeight::kSmemBytes, 1, true>(
              p, ctx, stream, half_height_ctas, {kHalfHeightTileRows, HalfHeightTiles::kBShareRows, kDChunkRows});
        }
        return LaunchOnResidentGrid<TwoConsumersSoloKernel<Form, Narrow>, Narrow::kThreads, Narrow::kSmemBytes, 1,
                                    true>(
            p, ctx, stream, narrow_ctas, {kTileRows, NarrowTiles::kBShareRows, kDChunkRows});
      }
      case TileWidth::kThreeQuarter:
        return LaunchOnResidentGrid<TwoConsumersSoloKernel<Form, ThreeQuarter>, ThreeQuarter::kThreads,
                                    ThreeQuarter::kSmemBytes, 1, true>(
            p, ctx, stream, three_quarter_ctas, {kTileRows, ThreeQuarterTiles::kBShareRows, kDChunkRows});
      case TileWidth::kMedium:
        return LaunchOnResidentGrid<TwoConsumersSoloKernel<Form, Medium>, Medium::kThreads, Medium::kSmemBytes, 1,
                                    true>(
            p, ctx, stream, medium_ctas, {kTileRows, MediumTiles::kBShareRows, kDChunkRows});
      case TileWidth::kWide:
        break;
    }
    if constexpr (!Form::kFused) {  // fused, the tail kernel's consumers spilled (ptxas: 810 bytes)
      bool tail = false;
      err = LaunchSplitTailOnResidentGrid<TwoConsumersSplitTailKernel<Form>, Wide::kThreads, Wide::kSmemBytes, kPair>(
          p, ctx, stream, Wide::kClusterRows, kWideTileCols, {kTileRows, WideTiles::kBShareRows, kDChunkRows}, &tail);
      if (tail || !err.empty()) return err;
    }
    return LaunchOnResidentGrid<TwoConsumersKernel<Form>, Wide::kThreads, Wide::kSmemBytes, kPair, true>(
        p, ctx, stream, wide_ctas, {kTileRows, WideTiles::kBShareRows, kDChunkRows});
  });
}

}  // namespace gemm::sm90
