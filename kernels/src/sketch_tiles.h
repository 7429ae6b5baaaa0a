// What the fast check's tile kernels share (sketch_d_tiles.cu,
// sketch_operand_tiles.cu): a block's eight warps take one 128-column strip
// of a 16-bit matrix whose rows are contiguous, one above the other; a lane
// takes four adjacent columns, one 8-byte load a row. A lane's columns keep
// their weights all the way down, and a row's are the same for the whole
// warp, so an element is read once for both of its lines.
#pragma once

#include <cstdint>

#include "common/widen_eight.h"
#include "gemm/element_type.h"

namespace gemm::sketch_tiles {

inline constexpr int kWarps = 8, kLaneColumns = 4, kStripColumns = 32 * kLaneColumns;
inline constexpr int kHalfWarp = 16;
// Fewer rows a warp where that leaves fewer blocks than this, down to
// kLeastRowsPerWarp: 1024 blocks of two an SM fill an H200's 132 SMs about
// four times over.
inline constexpr int64_t kBlocksAtLeast = 1024;
// Rows a warp takes at most: a column's fp32 Σe² gathers that many terms.
inline constexpr int kMostRowsPerWarp = 32, kLeastRowsPerWarp = 8;

template <ElementType T>
__device__ inline void Widen4(uint2 v, float (&out)[kLaneColumns]) {
  float eight[8];
  Widen8<T>(make_uint4(v.x, v.y, 0u, 0u), eight);
#pragma unroll
  for (int k = 0; k < kLaneColumns; ++k) out[k] = eight[k];
}

__device__ inline double SignOf(uint32_t word, int bit) { return (word >> bit) & 1u ? 1.0 : -1.0; }

// A lane's columns j .. j + 3 of each sign vector (`words` apart in
// `signs`; j a multiple of 4, so one word holds them) as ±1.0, for one
// fused multiply-add a term. Left to itself the compiler works each sign
// out again at every element (five instructions a vector).
template <int kVectors>
__device__ inline void LaneSigns(const uint32_t* signs, int64_t words, int64_t j,
                                 double (&sign)[kVectors][kLaneColumns]) {
#pragma unroll
  for (int v = 0; v < kVectors; ++v) {
    const uint32_t word = signs[v * words + (j >> 5)];
#pragma unroll
    for (int k = 0; k < kLaneColumns; ++k) {
      sign[v][k] = SignOf(word, static_cast<int>((j & 31) + k));
      // Inline PTX (nothing in CCCL does this): an empty statement the
      // compiler must take the sign from, so that it keeps it in a
      // register rather than working it out again at every element.
      asm volatile("" : "+d"(sign[v][k]));
    }
  }
}

// A lane's eight bytes of rows i .. i + kRows - 1 below i1, `pitch`
// elements apart from `at`, row i's. A row's address is stepped from the
// one above it: one 64-bit add, where a multiply and a bounds test a row
// cost four instructions an element.
template <int kRows>
__device__ inline void LoadRows(const uint16_t* at, int64_t pitch, int64_t i, int64_t i1, uint2 (&raw)[kRows]) {
  if (i + kRows <= i1) {
#pragma unroll
    for (int u = 0; u < kRows; ++u, at += pitch) raw[u] = *reinterpret_cast<const uint2*>(at);
  } else {
#pragma unroll
    for (int u = 0; u < kRows; ++u, at += pitch) {
      if (i + u < i1) raw[u] = *reinterpret_cast<const uint2*>(at);
    }
  }
}

// The sign words that hold a warp's rows i0 .. i1 - 1 (none where i1 <= i0),
// one a vector: rows_per_warp divides 32 and i0 is a multiple of it.
template <int kVectors>
__device__ inline void RowSignWords(const uint32_t* signs, int64_t words, int64_t i0, int64_t i1,
                                    uint32_t (&word)[kVectors]) {
#pragma unroll
  for (int v = 0; v < kVectors; ++v) {
    if (i0 < i1) word[v] = signs[v * words + (i0 >> 5)];
  }
}

// kRows rows' kSums sums, each lane holding its share, added up across the
// warp through `mine` (the warp's scratch, a lane's shares kOutputs + 1
// doubles apart so that the lanes reading one output hit different banks):
// lanes o and o + kOutputs each add output o over half of the lanes, and a
// shuffle adds the two, about three instructions an element where a
// shuffle tree a row took fifteen. Lane o < kOutputs returns output o's
// total. The caller syncs the warp before `mine` is written again.
template <int kRows, int kSums>
__device__ inline double AddUpAcrossLanes(const double (&part)[kRows][kSums], double* mine, int lane) {
  constexpr int kOutputs = kRows * kSums, kPitch = kOutputs + 1;
  static_assert(kOutputs <= kHalfWarp);
#pragma unroll
  for (int q = 0; q < kRows; ++q) {
#pragma unroll
    for (int s = 0; s < kSums; ++s) mine[lane * kPitch + q * kSums + s] = part[q][s];
  }
  __syncwarp();
  const int o = lane % kOutputs, half = lane / kOutputs;
  double total = 0.0;
  if (half < 2) {
#pragma unroll
    for (int t = 0; t < kHalfWarp; ++t) total += mine[(half * kHalfWarp + t) * kPitch + o];
  }
  if constexpr (kOutputs == kHalfWarp) {
    total += __shfl_xor_sync(0xffffffffu, total, kHalfWarp);
  } else {
    total += __shfl_down_sync(0xffffffffu, total, kOutputs);
  }
  return total;
}

inline int64_t Bands(int64_t rows, int rows_per_warp) {
  return (rows + kWarps * rows_per_warp - 1) / (kWarps * rows_per_warp);
}
// Rows a warp takes: the most that still leaves kBlocksAtLeast blocks.
inline int RowsPerWarp(int64_t rows, int64_t strips, int64_t batch) {
  int per_warp = kMostRowsPerWarp;
  while (per_warp > kLeastRowsPerWarp && strips * Bands(rows, per_warp) * batch < kBlocksAtLeast) per_warp /= 2;
  return per_warp;
}

}  // namespace gemm::sketch_tiles
