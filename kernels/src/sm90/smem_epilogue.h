// Steps 4+ write D through shared memory: registers -> a 128×128 tile in two
// swizzled 128×64 halves (the operand layout, so the stores spread over the
// banks) -> fence -> two TMA stores, which clip at the matrix edge. Steps
// 6-10 stage D in 64×64 chunks instead, to leave room for the pipeline.
#pragma once

#include "common/barrier.h"
#include "common/step_form.h"
#include "step_common.h"
#include "common/tile_layout.h"
#include "common/tma.h"

namespace gemm::sm90 {

// acc[mb] (wgmma layout, wgmma.h) of the warpgroup `threadIdx.x / 128 % groups`
// into its rows of `d_tile`, fused as Form says (common::Fuse; the tile
// is D's at (m0, n0)) and rounded to Form::kResult: the warpgroup's first
// row is `row_base`. Fused with `c_in_tile`, `d_tile` holds C's tile
// (LoadCTile), and each thread reads its pair where it writes D's.
template <typename Form, int kMBlocks>
__device__ inline void AccumulatorsToSmem(const float (&acc)[kMBlocks][64], char* d_tile, int row_base,
                                          const EpilogueArgs& e, int64_t m0, int64_t n0, bool c_in_tile = false) {
  using Pair = typename Rounding<Form::kResult>::Pair;
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int mb = 0; mb < kMBlocks; ++mb) {
#pragma unroll
    for (int i = 0; i < 64; i += 2) {
      const int row = row_base + mb * 64 + warp * 16 + PlantedQuadRow(lane / 4) + 8 * ((i / 2) % 2);
      const int col = 8 * (i / 4) + 2 * (lane % 4);  // 0..127
      char* half_tile = d_tile + (col / 64) * kTileBytes;
      const int c = col % 64;
      // The pair's address is written out in both paths, not computed once
      // above them: computed once, it changed the plain instantiation's PTX
      // (scripts/ptx_same_code.py), whose code is to stay as it was.
      if constexpr (Form::kFused) {
        if (c_in_tile) {
          Pair* at = reinterpret_cast<Pair*>(half_tile + SwizzledChunkOffset(row, c / 8) + (c % 8) * 2);
          *at = FuseWithC<Form>(acc[mb][i], acc[mb][i + 1], WidenCPair<Form>(*reinterpret_cast<uint32_t*>(at)), e);
          continue;
        }
      }
      *reinterpret_cast<Pair*>(half_tile + SwizzledChunkOffset(row, c / 8) + (c % 8) * 2) =
          FusePair<Form>(acc[mb][i], acc[mb][i + 1], e, m0 + row, n0 + col);
    }
  }
}

// kDChunkRows is also the rows of the D map's box (TmaBoxRows::d) for every
// step that stores in chunks.
inline constexpr int kDChunkRows = 64;
inline constexpr int kDChunkBytes = kDChunkRows * 64 * 2;

// Where this thread's accumulators i and i + 1 (the wgmma layout, wgmma.h:
// one row, two adjacent columns) go in `chunk`, the 64×64 swizzled chunk
// that holds columns [col0, col0 + 64) of its warpgroup's 64 rows.
template <typename Byte>  // char, or const char where C is read
__device__ inline Byte* PairInChunk(Byte* chunk, int i, int col0) {
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int row = warp * 16 + PlantedQuadRow(lane / 4) + 8 * ((i / 2) % 2);
  const int c = 8 * (i / 4) + 2 * (lane % 4) - col0;  // 0..63
  return chunk + SwizzledChunkOffset(row, c / 8) + (c % 8) * 2;
}

// The row (of its warpgroup's 64) and column (of the accumulators') of
// accumulators i and i + 1, as PairInChunk places them: where a fused
// epilogue reads C.
__device__ inline int PairRow(int i) {
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  return warp * 16 + PlantedQuadRow(lane / 4) + 8 * ((i / 2) % 2);
}
__device__ inline int PairColumn(int i) { return 8 * (i / 4) + 2 * (threadIdx.x % 32 % 4); }

// Columns [col0, col0 + 64) of one warpgroup's 64×N accumulators into a
// 64×64 swizzled chunk: the box of D that a warpgroup stores at a time.
// The warpgroup's rows start at D's row `row0`, its columns at `n0`.
// `col0` must be a compile-time constant after unrolling, so that the
// accumulators stay in registers. Fused, C's pairs come from `c_chunk`
// where the TMA brought C's chunk of the same place (CTileLoad), and
// from global memory where it is null.
template <typename Form, int kRegs, int kCGroup = 16>
__device__ inline void AccumulatorColumnsToSmem(const float (&acc)[kRegs], int col0, char* chunk,
                                                const EpilogueArgs& e, int64_t row0, int64_t n0,
                                                const char* c_chunk = nullptr) {
  using Rounding = common::Rounding<Form::kResult>;
  if constexpr (Form::kFused) {
    if (c_chunk != nullptr) {
#pragma unroll
      for (int i = col0 / 2; i < col0 / 2 + 32; i += 2) {
        const uint32_t c = *reinterpret_cast<const uint32_t*>(PairInChunk(c_chunk, i, col0));
        *reinterpret_cast<typename Rounding::Pair*>(PairInChunk(chunk, i, col0)) =
            FuseWithC<Form>(acc[i], acc[i + 1], WidenCPair<Form>(c), e);
      }
      return;
    }
    // The chunk's 16 C pairs, kCGroup in flight before any is used
    // (PackAccumulators). Step 6's three CTAs an SM leave no registers for
    // a group: even two at once spilled a kilobyte a thread (ptxas -v).
    static_assert(16 % kCGroup == 0, "whole groups of pairs");
#pragma unroll
    for (int g = 0; g < 16; g += kCGroup) {
      uint32_t c[kCGroup];
#pragma unroll
      for (int j = 0; j < kCGroup; ++j) {
        const int i = col0 / 2 + 2 * (g + j);
        c[j] = CPairBits<Form>(e, row0 + PairRow(i), n0 + PairColumn(i));
      }
#pragma unroll
      for (int j = 0; j < kCGroup; ++j) {
        const int i = col0 / 2 + 2 * (g + j);
        *reinterpret_cast<typename Rounding::Pair*>(PairInChunk(chunk, i, col0)) =
            FuseWithC<Form>(acc[i], acc[i + 1], WidenCPair<Form>(c[j]), e);
      }
    }
  } else {
#pragma unroll
    for (int i = col0 / 2; i < col0 / 2 + 32; i += 2) {
      *reinterpret_cast<typename Rounding::Pair*>(PairInChunk(chunk, i, col0)) =
          Rounding::RoundPair(acc[i], acc[i + 1]);
    }
  }
}

// One 64×64 chunk of D through the staging `buffer` to D at (row0, col):
// the leader waits until all but the newest kPending of its committed
// stores have read their staging (the store that last used `buffer` among
// them), the warpgroup writes the chunk (`write(buffer)`), and the leader
// stores it (in batch entry `entry`). Every call commits a group, stored or not (col at or past n),
// so that count holds. The leader waits only before reusing staging, not
// after each store, so the last chunk of a tile leaves while the next tile
// multiplies (call DrainChunkStores before the CTA exits). `barrier_id`
// syncs this warpgroup only.
template <int kPending, typename Write>
__device__ inline void StoreStagedChunk(char* buffer, Write write, int barrier_id, bool leader,
                                        const CUtensorMap* d_map, int64_t row0, int64_t col, int entry, int64_t n) {
  if (leader) TmaStoreWaitRead<kPending>();
  NamedBarrierSync(barrier_id, 128);  // the staging is read out
  write(buffer);
  FenceSharedForAsyncProxy();
  NamedBarrierSync(barrier_id, 128);
  if (leader) {
    if (col < n) TmaStore(d_map, static_cast<int32_t>(col), static_cast<int32_t>(row0), entry, buffer);
    TmaStoreCommit();
  }
}

// Step 6's C by TMA, where the launch could map it (TmaProblem::c_mapped):
// a 64×64 chunk at a time into the staging chunk D is about to leave
// through, and each thread writes its D pair over its C pair. Step 6 has
// no producer to fetch C ahead and no registers to hold it (168 a thread
// at three CTAs an SM), so each chunk waits out one TMA round trip, while
// the SM's other two CTAs multiply; the threads' own loads, one pair at a
// time, waited out sixteen.
struct CChunkLoad {
  const CUtensorMap* map = nullptr;
  uint64_t* full = nullptr;  // one arrival a chunk, so a chunk's phase is its parity
  int32_t entry = 0;         // the map's batch entry

  // The leader, once the staging is read out: C's chunk at (row0, col)
  // into `buffer`, or no bytes where the chunk starts past column n (no D
  // is stored there either; rows past m are the caller's to skip).
  __device__ void Request(char* buffer, int64_t row0, int64_t col, int64_t n) const {
    TmaLoadBoxOrArrive(buffer, map, static_cast<int32_t>(col), static_cast<int32_t>(row0), entry, full, kDChunkBytes,
                       col < n);
  }
};

// One warpgroup's 64 rows × kCols columns of accumulators (the wgmma
// layout) to D at (row0, n0) of batch entry `entry` (`e` that entry's), one 64×64 chunk at a time through `chunk`
// (kDChunkBytes). Small staging leaves shared memory to the pipeline. The
// D map's box is 64×64. Fused, `c_rows` (if not null) holds C's chunks of
// these rows, one kDChunkBytes after another; or, with kCChunkLoads,
// `c_load` brings each chunk of C into `chunk` as its turn comes.
template <typename Form, int kCols, int kCGroup = 16, bool kCChunkLoads = false>
__device__ inline void StoreRowsInChunks(const float (&acc)[kCols / 2], char* chunk, int barrier_id, bool leader,
                                         const CUtensorMap* d_map, int64_t row0, int64_t n0, int entry, int64_t n,
                                         const EpilogueArgs& e, const char* c_rows = nullptr,
                                         const CChunkLoad& c_load = {}) {
  static_assert(!kCChunkLoads || kCols / 64 % 2 == 0, "even chunks a call: a chunk's C phase is its parity");
#pragma unroll
  for (int c = 0; c < kCols / 64; ++c) {
    auto write = [&](char* buffer) {
      if constexpr (Form::kFused) {
        const char* c_chunk = c_rows == nullptr ? nullptr : c_rows + c * kDChunkBytes;
        if constexpr (kCChunkLoads) {
          if (leader) c_load.Request(buffer, row0, n0 + c * 64, n);
          Wait(c_load.full, c % 2);
          c_chunk = buffer;
        }
        AccumulatorColumnsToSmem<Form, kCols / 2, kCGroup>(acc, c * 64, buffer, e, row0, n0, c_chunk);
      } else {  // the plain epilogue reads no C, and its code is what it was before the fused one
        AccumulatorColumnsToSmem<Form>(acc, c * 64, buffer, {}, 0, 0);
      }
    };
    StoreStagedChunk<0>(chunk, write, barrier_id, leader, d_map, row0, n0 + c * 64, entry, n);
  }
}

// The leader, after its last StoreRowsInChunks or StoreChunk: shared memory
// must outlive the TMA's reads of it.
__device__ inline void DrainChunkStores(bool leader) {
  if (leader) TmaStoreWaitRead();
}

// Step 10 stores D while the next tile multiplies: the accumulators are
// packed to pairs of kResult (PackAccumulators), which frees them for the next
// tile's first wgmma, and the packed rows leave one 64×64 chunk at a time
// between that tile's k-tiles (StoreChunk), through two staging chunks
// used in turn.
// The accumulators' rows start at D's row `row0`, their columns at `n0`.
//
// Fused, `packed` holds C's pairs on entry (ReadCChunks or LoadCPairs), and each is
// replaced by its fused result; plain, the pairs are only rounded.
//
// The packing runs between a tile's last wgmma and the next tile's first,
// with the tensor pipe idle: with α = 1 and C read (D += β·C, the common
// fused form) each element takes one FFMA, as FuseWithC's α·acc + β·c
// rounds it when α is 1, and the choice is made once a tile, not a pair.
template <typename Form, int kRegs>
__device__ inline void PackAccumulators(const float (&acc)[kRegs], uint32_t (&packed)[kRegs / 2],
                                        const EpilogueArgs& e) {
  using Rounding = common::Rounding<Form::kResult>;
  if constexpr (Form::kFused) {
    if (e.alpha == 1.0f && e.beta != 0.0f) {
#pragma unroll
      for (int i = 0; i < kRegs; i += 2) {
        const float2 c = WidenCPair<Form>(packed[i / 2]);
        const typename Rounding::Pair h =
            Rounding::RoundPair(fmaf(e.beta, c.x, acc[i]), fmaf(e.beta, c.y, acc[i + 1]));
        packed[i / 2] = *reinterpret_cast<const uint32_t*>(&h);
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < kRegs; i += 2) {
    typename Rounding::Pair h;
    if constexpr (Form::kFused) {
      h = FuseWithC<Form>(acc[i], acc[i + 1], WidenCPair<Form>(packed[i / 2]), e);
    } else {
      h = Rounding::RoundPair(acc[i], acc[i + 1]);
    }
    packed[i / 2] = *reinterpret_cast<const uint32_t*>(&h);
  }
}

// Fused, C's pairs for the accumulators PackAccumulators will pack (one
// warpgroup's kDChunkRows rows from row0, 4 · kPackedRegs columns from
// n0), read into `packed` as bits, not yet widened: step 10's way where
// TMA cannot map C (ReadCChunks elsewhere). It calls it once the last
// tile's D has left those registers, many k-tiles before the tile ends, so
// that no load's round trip falls between one tile's last wgmma and the
// next tile's first. A tile wholly inside C whose rows are 4-byte aligned
// takes one load per pair from two row pointers;
// checking each pair's bounds and alignment cost about 25 instructions a
// pair, issued by the warps that must also issue the wgmma.
template <typename Form, int kPackedRegs>
__device__ inline void LoadCPairs(uint32_t (&packed)[kPackedRegs], const EpilogueArgs& e, int64_t row0, int64_t n0) {
  if constexpr (Form::kFused) {
    using One = typename Rounding<Form::kResult>::One;
    constexpr int kCols = 4 * kPackedRegs;
    const One* c = reinterpret_cast<const One*>(e.c);
    const bool whole = e.beta != 0.0f && row0 + kDChunkRows <= e.m && n0 + kCols <= e.n && e.ldc % 2 == 0 &&
                       (reinterpret_cast<uintptr_t>(c) & 3) == 0;
    if (whole) {
      const One* upper = c + (row0 + PairRow(0)) * e.ldc + n0 + PairColumn(0);  // pairs 0, 2, 4...
      const One* lower = upper + 8 * e.ldc;                                       // pairs 1, 3, 5...: 8 rows down
#pragma unroll
      for (int i = 0; i < kPackedRegs; ++i) {
        packed[i] = *reinterpret_cast<const uint32_t*>((i % 2 == 0 ? upper : lower) + 8 * (i / 2));
      }
    } else {
#pragma unroll
      for (int i = 0; i < kPackedRegs; ++i) {
        packed[i] = CPairBits<Form>(e, row0 + PairRow(2 * i), n0 + PairColumn(2 * i));
      }
    }
  }
}

// C by TMA, where the launch could map it (TmaProblem::c_mapped): one
// warpgroup's C rows come into its two staging chunks, two 64×64 chunks at
// a time, while its tile multiplies, and each thread takes its pairs from
// where StoreChunk puts D's. LoadCPairs' 64 loads a thread, each touching
// eight rows in halves of sectors, queued ahead of the consumers' next
// barrier wait in the load pipe; one TMA instruction a chunk does not.
//
// The leader: chunks `first` and `first` + 1 (those below kChunks) of C's
// rows [row0, row0 + 64) from column n0, batch entry `entry`, into staging
// chunk (chunk % 2), arriving on `bar`. The staging must have been read
// out (TmaStoreWaitRead, and every thread past its reads).
template <int kChunks>
__device__ inline void RequestCChunks(int first, char* staging, const CUtensorMap* c_map, int64_t row0, int64_t n0,
                                      int entry, uint64_t* bar) {
  const int count = first + 1 < kChunks ? 2 : 1;
  ArriveExpectTx(bar, count * kDChunkBytes);
  for (int j = first; j < first + count; ++j) {
    TmaLoad(staging + (j % 2) * kDChunkBytes, c_map, static_cast<int32_t>(n0 + 64 * j), static_cast<int32_t>(row0),
            entry, bar);
  }
}

// Every thread of the warpgroup, once `bar` completes the phase of
// `parity`: its C pairs of chunks kFirst and kFirst + 1 (those the tile
// has) into `packed`, as LoadCPairs would have put them.
template <int kFirst, int kPackedRegs>
__device__ inline void ReadCChunks(uint32_t (&packed)[kPackedRegs], char* staging, uint64_t* bar, uint32_t parity) {
  constexpr int kChunks = kPackedRegs / 16;
  Wait(bar, parity);
#pragma unroll
  for (int j = kFirst; j < kFirst + 2 && j < kChunks; ++j) {
#pragma unroll
    for (int i = j * 32; i < j * 32 + 32; i += 2) {
      packed[i / 2] = *reinterpret_cast<const uint32_t*>(PairInChunk(staging + (j % 2) * kDChunkBytes, i, j * 64));
    }
  }
}

// Chunk `chunk` (columns 64·chunk..+63) of one warpgroup's packed 64 rows
// to D at (row0, n0) of batch entry `entry`, through staging chunk chunk % 2 (2 × kDChunkBytes
// at `staging`): waiting for all but the newest store frees exactly the
// chunk about to be refilled. `chunk` must be a compile-time constant after
// unrolling, so that `packed` stays in registers.
template <int kPackedRegs>
__device__ inline void StoreChunk(const uint32_t (&packed)[kPackedRegs], int chunk, char* staging, int barrier_id,
                                  bool leader, const CUtensorMap* d_map, int64_t row0, int64_t n0, int entry,
                                  int64_t n) {
  auto write = [&](char* buffer) {
#pragma unroll
    for (int i = chunk * 32; i < chunk * 32 + 32; i += 2) {  // packed[i / 2] holds accumulators i, i + 1
      *reinterpret_cast<uint32_t*>(PairInChunk(buffer, i, chunk * 64)) = packed[i / 2];
    }
  };
  StoreStagedChunk<1>(staging + (chunk % 2) * kDChunkBytes, write, barrier_id, leader, d_map, row0, n0 + chunk * 64,
                      entry, n);
}

// A warpgroup's 128×128 tile (acc[2][64]) to D at (m0, n0) of batch entry
// `entry` (`e` that entry's), one 64×64 chunk
// at a time through `chunk`; 64-row halves at or below row m are skipped
// (the lower CTA of a cluster pair on the last tile-row has none), and so
// is their C. Fused, `c_tile` (if not null) holds C's tile as CTileLoad
// put it, or with kCChunkLoads `c_load` brings it a chunk at a time (step 6).
template <typename Form, int kCGroup = 16, bool kCChunkLoads = false>
__device__ inline void StoreTileInChunks(const float (&acc)[2][64], char* chunk, int barrier_id, bool leader,
                                         const CUtensorMap* d_map, int64_t m0, int64_t n0, int entry, int64_t m,
                                         int64_t n, const EpilogueArgs& e, const char* c_tile = nullptr,
                                         const CChunkLoad& c_load = {}) {
#pragma unroll
  for (int mb = 0; mb < 2; ++mb) {
    if (m0 + 64 * mb >= m) continue;
    StoreRowsInChunks<Form, kTileRows, kCGroup, kCChunkLoads>(
        acc[mb], chunk, barrier_id, leader, d_map, m0 + 64 * mb, n0, entry, n, e,
        c_tile == nullptr ? nullptr : c_tile + mb * 2 * kDChunkBytes, c_load);
  }
}

// Steps 7-9 take C by TMA where the launch could map it (TmaProblem::
// c_mapped): the producer loads a tile's C into the stage after the
// tile's last k-tile, as if it were one more k-tile, and the consumer
// fuses it from there (StoreTileInChunks) and frees the stage. The load
// runs while the tile's last k-tiles multiply, as the operands' loads do,
// where the consumer's own loads of C waited out their round trips at the
// tile's end with the tensor cores of its warpgroup idle.
struct CTileLoad {
  static_assert(kTileRows == 2 * kDChunkRows, "a 128×128 tile is two rows of two chunks");
  const CUtensorMap* map = nullptr;
  int64_t m = 0, n = 0;
  bool shared = false;  // one C for every batch entry: a map of one entry

  // The producer thread: C's 128×128 tile at (m0, n0) of batch entry
  // `entry` into `stage` as four 64×64 chunks, chunk 2·mb + c holding rows
  // half mb and columns half c (the layout StoreStagedChunk gives D), all
  // arriving on `full`. A chunk wholly outside m×n is not loaded (nor
  // stored); TMA zero-fills the ragged ones.
  __device__ void operator()(char* stage, int64_t m0, int64_t n0, int entry, uint64_t* full) const {
    uint32_t bytes = 0;
    for (int chunk = 0; chunk < 4; ++chunk) bytes += Inside(m0, n0, chunk) ? kDChunkBytes : 0;
    ArriveExpectTx(full, bytes);
    for (int chunk = 0; chunk < 4; ++chunk) {
      if (!Inside(m0, n0, chunk)) continue;
      TmaLoad(stage + chunk * kDChunkBytes, map, static_cast<int32_t>(n0 + 64 * (chunk % 2)),
              static_cast<int32_t>(m0 + 64 * (chunk / 2)), shared ? 0 : entry, full);
    }
  }

 private:
  __device__ bool Inside(int64_t m0, int64_t n0, int chunk) const {
    return m0 + 64 * (chunk / 2) < m && n0 + 64 * (chunk % 2) < n;
  }
};

}  // namespace gemm::sm90
