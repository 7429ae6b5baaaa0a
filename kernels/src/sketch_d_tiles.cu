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
// 8-byte load a row, the next group of kRowsInFlight rows loaded while a
// group is summed. The rows' sums meet across the warp four rows at a time
// through shared memory, and one atomic an output and sum adds the warp's
// share.
// The columns' sums stay in registers down the warp's rows, then meet the
// other warps' in shared memory, and one atomic an output and sum adds the
// block's share.
//
// Where C is read (of D's type: DTilesApply), a lane reads C's four
// elements beside D's and sums c·x, y·c and |β·c| the same way, with half
// the rows in flight and in each reduction (TileShape).
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

// What a tile's lanes carry, with C read (D's type, kReadsC) or not. A
// row's (and a column's) sums: d·x (y·d) per vector, c·x (y·c) too where C
// is read, Σ(|d| + |β·c|), Σe². Rows whose sums are added up across the
// lanes together: kOutputs sums, each taken by two lanes over half of the
// lanes' shares, which lie kLanePitch doubles apart, one more than they
// fill, so that the lanes reading one output each hit different banks.
// With C, fewer rows in flight and in a reduction keep a thread within the
// 128 registers of two blocks an SM.
template <bool kReadsC>
struct TileShape {
  static constexpr int kDots = kReadsC ? 2 * V : V;
  static constexpr int kSums = kDots + 2;
  static constexpr int kRowsInFlight = kReadsC ? 2 : 4;
  static constexpr int kRowsReduced = kReadsC ? 2 : 4;
  static constexpr int kOutputs = kRowsReduced * kSums;
  static constexpr int kLanePitch = kOutputs + 1;
  // Column sums that fit a warp's scratch at once, for the block's final
  // reduction, taken in rounds.
  static constexpr int kColumnSumsAtOnce = 32 * kLanePitch / kStripColumns;
  static_assert(kOutputs <= kHalfWarp && kRowsInFlight % kRowsReduced == 0 && kSums % kColumnSumsAtOnce == 0);
  static_assert(kLeastRowsPerWarp % kRowsInFlight == 0, "a warp's groups of rows start a multiple of their size apart");
  // Where tile sum s goes among DLines' sums (sketch_lines.h).
  __device__ static constexpr int OutOf(int s) { return s < kDots ? s : s == kDots ? 2 * V + 1 : 2 * V; }
};
constexpr int kNonFinite = 2 * V + 2;

template <ElementType T, bool kReadsC>
__global__ void __launch_bounds__(kWarps * 32, 2)
    DTilesKernel(sketch::DLines rows, sketch::DLines columns, int rows_per_warp) {
  using Shape = TileShape<kReadsC>;
  constexpr int kDots = Shape::kDots, kSums = Shape::kSums, kRowsInFlight = Shape::kRowsInFlight;
  constexpr int kRowsReduced = Shape::kRowsReduced, kOutputs = Shape::kOutputs, kLanePitch = Shape::kLanePitch;
  // Per warp: its lanes' row sums, kLanePitch doubles a lane, to be added
  // up across the lanes; at the end, its columns' sums, kColumnSumsAtOnce
  // rows of kStripColumns at a time, to be added up across the warps.
  __shared__ double scratch[kWarps][32 * kLanePitch];
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
  const uint16_t* c = kReadsC ? static_cast<const uint16_t*>(p.c.data) + e * p.c.batch_stride + j0 : nullptr;
  const float c_rounding = static_cast<float>(rows.c_rounding);

  // The lane's columns: x's signs as ±1.0 (sketch_tiles.h; a sign-bit
  // mask XORed into d cost a logic op and a register move besides the
  // add), and the columns' norms.
  double x_sign[V][kLaneColumns];
  float norm[kLaneColumns];
  {
    const int64_t j = active ? j0 : 0;
    const float* column_norms = reinterpret_cast<const float*>(entry + rows.float_norms_at) + p.m;
    LaneSigns(rows.signs, rows.words, j, x_sign);
#pragma unroll
    for (int k = 0; k < kLaneColumns; ++k) norm[k] = active ? column_norms[j + k] : 0.0f;
  }
  double column[kDots + 1][kLaneColumns] = {};  // y·d (and y·c) per vector, then Σ(|d| + |β·c|)
  // At most kMostRowsPerWarp (32) terms in fp32: off by under 2^-18 of
  // itself with the terms' own rounding, inside JudgeLine's 2^-10.
  float column_e2[kLaneColumns] = {};

  // What is the same along each of the warp's rows, read once before them:
  // row i0 + l's norm term by lane l, and y's sign words.
  const float own_of_lane = lane < rows_per_warp && i0 + lane < i1
                                ? static_cast<float>(rows.accumulation * entry[rows.a_norms_at + i0 + lane])
                                : 0.0f;
  uint32_t y_word[V] = {};
  RowSignWords(columns.signs, columns.words, i0, i1, y_word);

  // A group of rows is loaded while the group before it is summed, so that
  // a warp never waits a whole round trip to memory between groups.
  auto load = [&](int64_t i, uint2 (&raw)[kRowsInFlight], uint2 (&raw_c)[kRowsInFlight]) {
    if (!active) return;
    LoadRows(d + i * p.d.row_stride, p.d.row_stride, i, i1, raw);
    if constexpr (kReadsC) {
      const uint16_t* at_c = c + i * p.c.row_stride;
#pragma unroll
      for (int u = 0; u < kRowsInFlight; ++u, at_c += p.c.row_stride) {
        if (i + u < i1) raw_c[u] = *reinterpret_cast<const uint2*>(at_c);
      }
    }
  };
  uint2 next[kRowsInFlight] = {}, next_c[kRowsInFlight] = {};
  load(i0, next, next_c);
  for (int64_t i = i0; i < i1; i += kRowsInFlight) {  // i0 and i a multiple of kRowsInFlight
    uint2 raw[kRowsInFlight], raw_c[kRowsInFlight];
#pragma unroll
    for (int u = 0; u < kRowsInFlight; ++u) raw[u] = next[u], raw_c[u] = next_c[u];
    if (i + kRowsInFlight < i1) load(i + kRowsInFlight, next, next_c);
#pragma unroll
    for (int g = 0; g < kRowsInFlight / kRowsReduced; ++g) {
      // This lane's share of each row's sums, begun with its first column's
      // terms rather than added to zeros.
      double part[kRowsReduced][kSums];
#pragma unroll
      for (int q = 0; q < kRowsReduced; ++q) {
        const int u = g * kRowsReduced + q;
        const float own = __shfl_sync(0xffffffffu, own_of_lane, static_cast<int>(i - i0) + u);
        if (!active || i + u >= i1) {
#pragma unroll
          for (int s = 0; s < kSums; ++s) part[q][s] = 0.0;
          continue;
        }
        double y_sign[V];
#pragma unroll
        for (int v = 0; v < V; ++v) y_sign[v] = SignOf(y_word[v], static_cast<int>((i + u) & 31));
        float x[kLaneColumns], xc[kLaneColumns];
        Widen4<T>(raw[u], x);
        if constexpr (kReadsC) Widen4<T>(raw_c[u], xc);
        float e2 = 0.0f;
#pragma unroll
        for (int k = 0; k < kLaneColumns; ++k) {
          const double dd = x[k];
#pragma unroll
          for (int v = 0; v < V; ++v) {
            part[q][v] = k == 0 ? dd * x_sign[v][k] : fma(dd, x_sign[v][k], part[q][v]);
            column[v][k] = fma(dd, y_sign[v], column[v][k]);
          }
          if constexpr (!kReadsC) {
            part[q][kDots] = k == 0 ? fabs(dd) : part[q][kDots] + fabs(dd);
            column[kDots][k] += fabs(dd);
          }
          float b = sketch::DLines::HonestError16(T, x[k], own * norm[k]);
          if constexpr (kReadsC) {
            const double cc = xc[k];
#pragma unroll
            for (int v = 0; v < V; ++v) {
              part[q][V + v] = k == 0 ? cc * x_sign[v][k] : fma(cc, x_sign[v][k], part[q][V + v]);
              column[V + v][k] = fma(cc, y_sign[v], column[V + v][k]);
            }
            const double magnitude = fabs(dd) + fabs(p.beta * cc);
            part[q][kDots] = k == 0 ? magnitude : part[q][kDots] + magnitude;
            column[kDots][k] += magnitude;
            b += c_rounding * fabsf(xc[k]);
          }
          e2 += b * b;
          column_e2[k] += b * b;
        }
        part[q][kDots + 1] = e2;
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
      // The rows' sums across the lanes (sketch_tiles.h).
      const double total = AddUpAcrossLanes(part, mine, lane);
      const int o = lane % kOutputs;
      const int64_t row = i + g * kRowsReduced + o / kSums;
      if (lane < kOutputs && row < i1) atomicAdd(rows.Out(e, Shape::OutOf(o % kSums), row), total);
      __syncwarp();
    }
  }

  // Every warp writes its columns' sums, zeros where it had no rows,
  // kColumnSumsAtOnce at a time, and the block adds them up.
  constexpr int kAtOnce = Shape::kColumnSumsAtOnce;
#pragma unroll
  for (int s0 = 0; s0 < kSums; s0 += kAtOnce) {
    if (s0 > 0) __syncthreads();  // the round before has read the scratch
#pragma unroll
    for (int k = 0; k < kLaneColumns; ++k) {
#pragma unroll
      for (int s = s0; s < s0 + kAtOnce; ++s) {
        mine[(s - s0) * kStripColumns + kLaneColumns * lane + k] = s <= kDots ? column[s][k] : column_e2[k];
      }
    }
    __syncthreads();
    for (int q = threadIdx.x; q < kAtOnce * kStripColumns; q += kWarps * 32) {
      const int64_t j = int64_t{blockIdx.x} * kStripColumns + q % kStripColumns;
      if (j >= p.n) continue;
      double total = 0.0;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) total += scratch[w][q];
      atomicAdd(columns.Out(e, Shape::OutOf(s0 + q / kStripColumns), j), total);
    }
  }
}

}  // namespace

bool DTilesApply(const sketch::DLines& rows) {
  const SketchProblem& p = rows.problem;
  // A matrix the tiles read: rows contiguous, whole 4-element words from
  // 8-byte boundaries.
  auto in_words = [&](const StridedView& x) {
    return x.col_stride == 1 && x.row_stride % kLaneColumns == 0 &&
           (p.batch == 1 || x.batch_stride % kLaneColumns == 0) && (reinterpret_cast<uintptr_t>(x.data) & 7) == 0;
  };
  const StridedView &d = p.d, &c = p.c;
  const bool sixteen_bit = d.type == ElementType::kF16 || d.type == ElementType::kBF16;
  return rows.per_row && sixteen_bit && p.n % kLaneColumns == 0 && in_words(d) &&
         (!p.reads_c || (c.type == d.type && in_words(c)));
}

cudaError_t LaunchDTiles(const sketch::DLines& rows, const sketch::DLines& columns, int64_t batch,
                         cudaStream_t stream) {
  const SketchProblem& p = rows.problem;
  const int64_t strips = (p.n + kStripColumns - 1) / kStripColumns;
  const int rows_per_warp = RowsPerWarp(p.m, strips, batch);
  const dim3 grid(static_cast<unsigned>(strips), static_cast<unsigned>(Bands(p.m, rows_per_warp)),
                  static_cast<unsigned>(batch));
  auto launch = [&](auto kernel) {
    kernel<<<grid, kWarps * 32, 0, stream>>>(rows, columns, rows_per_warp);
    return cudaGetLastError();
  };
  const bool f16 = p.d.type == ElementType::kF16;
  if (p.reads_c) {
    return launch(f16 ? DTilesKernel<ElementType::kF16, true> : DTilesKernel<ElementType::kBF16, true>);
  }
  return launch(f16 ? DTilesKernel<ElementType::kF16, false> : DTilesKernel<ElementType::kBF16, false>);
}

}  // namespace gemm
