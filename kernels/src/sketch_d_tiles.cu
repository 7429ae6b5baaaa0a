// D's row sums (D·x) and column sums (yᵀ·D) of VERIFICATION_FAST from one
// read of D.
//
// The two line passes of sketch_check.cu read D once each and spend about
// 29 issue slots an element each (H200, fp16 at 8192^2: 94 and 87 µs, 61M
// and 63M warp instructions, ncu): the honest error's terms, the
// conversion to fp64, and for each sign vector a bit test, a select and an
// add. A tile works out an element's conversion and honest error once for
// both directions. A row's y signs are the same for the whole warp, and a
// lane's x signs the same all the way down its columns, so no element
// tests a sign bit of its own.
//
// A block's eight warps take one 128-column strip of D, one above the
// other, rows_per_warp rows each; a lane takes four adjacent columns, one
// 8-byte load a row, with kRowsInFlight rows' loads issued before any is
// summed. The rows' sums meet across the warp four rows at a time through
// shared memory, and one atomic an output and sum adds the warp's share.
// The columns' sums stay in registers down the warp's rows, then meet the
// other warps' in shared memory, and one atomic an output and sum adds the
// block's share.
//
// Non-finite elements are counted off the common path: a NaN or an Inf d
// has an infinite half ulp, so the lane's fp32 Σe² over its four elements
// is not finite, and only then does the lane look at them one by one.
#include "sketch_d_tiles.h"

#include <cfloat>

#include "sketch_tiles.h"

namespace gemm {
namespace {

using sketch::V;

using namespace sketch_tiles;

constexpr int kRowsInFlight = 8;
// A column's (and a row's) sums a lane carries: y·d (x·d) per vector, Σ|d|, Σe².
constexpr int kTileSums = V + 2;
// Rows whose sums are added up across the lanes together: 16 outputs, each
// taken by two lanes. A lane's shares lie kLanePitch doubles apart, one
// more than they fill, so that the lanes reading one output each hit
// different banks.
constexpr int kRowsReduced = 4, kRowOutputs = kRowsReduced * kTileSums, kLanePitch = kRowOutputs + 1;
static_assert(kRowOutputs == kHalfWarp && kRowsInFlight % kRowsReduced == 0 && kLeastRowsPerWarp % kRowsInFlight == 0);
// Where tile sum s goes among DLines' sums (sketch_lines.h).
__device__ constexpr int OutOf(int s) { return s < V ? s : s == V ? 2 * V + 1 : 2 * V; }
constexpr int kNonFinite = 2 * V + 2;

template <ElementType T>
__global__ void __launch_bounds__(kWarps * 32, 2)
    DTilesKernel(sketch::DLines rows, sketch::DLines columns, int rows_per_warp) {
  // Per warp: its lanes' row sums, kLanePitch doubles a lane, to be added
  // up across the lanes; at the end, its columns' sums, kTileSums rows of
  // kStripColumns, to be added up across the warps.
  __shared__ double scratch[kWarps][32 * kLanePitch];
  static_assert(kTileSums * kStripColumns <= 32 * kLanePitch);
  const SketchProblem& p = rows.problem;
  const int64_t e = blockIdx.z;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  double* mine = scratch[warp];
  const int64_t j0 = int64_t{blockIdx.x} * kStripColumns + kLaneColumns * lane;
  const bool active = j0 < p.n;  // all four columns or none (DTilesApply)
  const int64_t i0 = (int64_t{blockIdx.y} * kWarps + warp) * rows_per_warp;
  const int64_t i1 = i0 + rows_per_warp < p.m ? i0 + rows_per_warp : p.m;
  const double* entry = rows.scratch + e * rows.entry_doubles;
  const uint16_t* d = static_cast<const uint16_t*>(p.d.data) + e * p.d.batch_stride + j0;

  // The lane's columns: x's signs (four bits of one word, j0 being a
  // multiple of 4) as the sign bit that negates d, and the columns' norms.
  // (As ±1.0 to multiply by, in 16 registers, they were worked out again at
  // every element: five instructions a vector where this takes one.)
  uint32_t x_flip[V][kLaneColumns];
  float norm[kLaneColumns];
  {
    const int64_t j = active ? j0 : 0;
    const float* column_norms = reinterpret_cast<const float*>(entry + rows.float_norms_at) + p.m;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const uint32_t word = rows.signs[v * rows.words + (j >> 5)];
#pragma unroll
      for (int k = 0; k < kLaneColumns; ++k) {
        x_flip[v][k] = (word >> ((j & 31) + k)) & 1u ? 0u : 0x80000000u;
        // Inline PTX (nothing in CCCL does this): an empty statement the
        // compiler must take the mask from, so that it keeps the mask in a
        // register rather than working it out again at every element.
        asm volatile("" : "+r"(x_flip[v][k]));
      }
    }
#pragma unroll
    for (int k = 0; k < kLaneColumns; ++k) norm[k] = active ? column_norms[j + k] : 0.0f;
  }
  double column[V + 1][kLaneColumns] = {};  // y·d per vector, then Σ|d|
  // At most kMostRowsPerWarp (32) terms in fp32: off by under 2^-18 of
  // itself with the terms' own rounding, inside JudgeLine's 2^-10.
  float column_e2[kLaneColumns] = {};

  for (int64_t i = i0; i < i1; i += kRowsInFlight) {  // i0 and i a multiple of kRowsInFlight
    uint2 raw[kRowsInFlight] = {};
    if (active) {
      // A row's address from the one above it: one 64-bit add, where a
      // multiply and a bounds test a row cost four instructions an element.
      const uint16_t* at = d + i * p.d.row_stride;
      if (i + kRowsInFlight <= i1) {
#pragma unroll
        for (int u = 0; u < kRowsInFlight; ++u, at += p.d.row_stride) raw[u] = *reinterpret_cast<const uint2*>(at);
      } else {
#pragma unroll
        for (int u = 0; u < kRowsInFlight; ++u, at += p.d.row_stride) {
          if (i + u < i1) raw[u] = *reinterpret_cast<const uint2*>(at);
        }
      }
    }
    // What is the same along each of these rows, worked out once by lane u
    // for row i + u: its norm term; and y's signs, whose eight bits lie in
    // one word of each vector.
    const float own_of_lane =
        lane < kRowsInFlight && i + lane < i1 ? static_cast<float>(rows.accumulation * entry[rows.a_norms_at + i + lane])
                                              : 0.0f;
    uint32_t y_word[V];
#pragma unroll
    for (int v = 0; v < V; ++v) y_word[v] = columns.signs[v * columns.words + (i >> 5)];
#pragma unroll
    for (int g = 0; g < kRowsInFlight / kRowsReduced; ++g) {
      double part[kRowsReduced][kTileSums] = {};  // this lane's share of each row's sums
#pragma unroll
      for (int q = 0; q < kRowsReduced; ++q) {
        const int u = g * kRowsReduced + q;
        const float own = __shfl_sync(0xffffffffu, own_of_lane, u);
        if (!active || i + u >= i1) continue;
        double y_sign[V];
#pragma unroll
        for (int v = 0; v < V; ++v) y_sign[v] = SignOf(y_word[v], static_cast<int>((i + u) & 31));
        float x[kLaneColumns];
        Widen4<T>(raw[u], x);
        float e2 = 0.0f;
#pragma unroll
        for (int k = 0; k < kLaneColumns; ++k) {
          const double dd = x[k];
#pragma unroll
          for (int v = 0; v < V; ++v) {
            part[q][v] += Flipped(dd, x_flip[v][k]);
            column[v][k] = fma(dd, y_sign[v], column[v][k]);
          }
          part[q][V] += fabs(dd);
          column[V][k] += fabs(dd);
          const float b = sketch::DLines::HonestError16(T, x[k], own * norm[k]);
          e2 += b * b;
          column_e2[k] += b * b;
        }
        part[q][V + 1] = e2;
        if (!(e2 <= FLT_MAX)) {  // a NaN or an Inf among the four, or a bound past fp32
#pragma unroll
          for (int k = 0; k < kLaneColumns; ++k) {
            if (x[k] - x[k] != 0.0f) {
              atomicAdd(rows.Out(e, kNonFinite, i + u), 1.0);
              atomicAdd(columns.Out(e, kNonFinite, j0 + k), 1.0);
            }
          }
        }
      }
      // The rows' sums across the lanes: each lane's kRowsReduced·kTileSums
      // shares through shared memory, then lane l adds up output l % 16
      // over half of the lanes and a shuffle adds the two halves: about
      // three instructions an element, where a shuffle tree a row took 15.
#pragma unroll
      for (int q = 0; q < kRowsReduced; ++q) {
#pragma unroll
        for (int s = 0; s < kTileSums; ++s) mine[lane * kLanePitch + q * kTileSums + s] = part[q][s];
      }
      __syncwarp();
      const int o = lane % kHalfWarp, half = lane / kHalfWarp;
      double total = 0.0;
#pragma unroll
      for (int t = 0; t < kHalfWarp; ++t) total += mine[(half * kHalfWarp + t) * kLanePitch + o];
      total += __shfl_xor_sync(0xffffffffu, total, kHalfWarp);
      const int64_t row = i + g * kRowsReduced + o / kTileSums;
      if (half == 0 && row < i1) atomicAdd(rows.Out(e, OutOf(o % kTileSums), row), total);
      __syncwarp();
    }
  }

  // Every warp writes its columns' sums, zeros where it had no rows.
#pragma unroll
  for (int k = 0; k < kLaneColumns; ++k) {
#pragma unroll
    for (int s = 0; s <= V; ++s) mine[s * kStripColumns + kLaneColumns * lane + k] = column[s][k];
    mine[(V + 1) * kStripColumns + kLaneColumns * lane + k] = column_e2[k];
  }
  __syncthreads();
  for (int q = threadIdx.x; q < kTileSums * kStripColumns; q += kWarps * 32) {
    const int64_t j = int64_t{blockIdx.x} * kStripColumns + q % kStripColumns;
    if (j >= p.n) continue;
    double total = 0.0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += scratch[w][q];
    atomicAdd(columns.Out(e, OutOf(q / kStripColumns), j), total);
  }
}

}  // namespace

bool DTilesApply(const sketch::DLines& rows) {
  const SketchProblem& p = rows.problem;
  const StridedView& d = p.d;
  const bool sixteen_bit = d.type == ElementType::kF16 || d.type == ElementType::kBF16;
  return rows.per_row && !p.reads_c && sixteen_bit && d.col_stride == 1 && p.n % kLaneColumns == 0 &&
         d.row_stride % kLaneColumns == 0 && (p.batch == 1 || d.batch_stride % kLaneColumns == 0) &&
         (reinterpret_cast<uintptr_t>(d.data) & 7) == 0;
}

cudaError_t LaunchDTiles(const sketch::DLines& rows, const sketch::DLines& columns, int64_t batch,
                         cudaStream_t stream) {
  const SketchProblem& p = rows.problem;
  const int64_t strips = (p.n + kStripColumns - 1) / kStripColumns;
  const int rows_per_warp = RowsPerWarp(p.m, strips, batch);
  const dim3 grid(static_cast<unsigned>(strips), static_cast<unsigned>(Bands(p.m, rows_per_warp)),
                  static_cast<unsigned>(batch));
  if (p.d.type == ElementType::kF16) {
    DTilesKernel<ElementType::kF16><<<grid, kWarps * 32, 0, stream>>>(rows, columns, rows_per_warp);
  } else {
    DTilesKernel<ElementType::kBF16><<<grid, kWarps * 32, 0, stream>>>(rows, columns, rows_per_warp);
  }
  return cudaGetLastError();
}

}  // namespace gemm
