// op(B)·x and (yᵀ·op(A))·op(B) of VERIFICATION_FAST from one read of B,
// and A's passes, yᵀ·op(A) and op(A)·(op(B)·x), one at a time.
//
// sketch_check.cu's line passes read B twice: once for the k-vector
// op(B)·x (a sign per column of op(B)), once for the k-vector yᵀ·op(A)
// times op(B) (an fp64 weight per row of op(B)), together about 27 issue
// slots an element (H200, fp16 at 8192^3: 58 and 69 µs, 31.5M and 26.1M
// warp instructions, ncu). Neither needs more than an element's value,
// its magnitude and its square, so one read of B can feed both: a lane's
// four stored columns keep their weights (signs or k-vector entries) all
// the way down, and a stored row's are the same for the whole warp.
//
// B is stored with N contiguous (x @ W: op(B)'s rows are stored rows, and
// the signs go with the columns) or K contiguous (A·Bᵀ: op(B)'s columns
// are stored rows, and the k-vector entries go with the columns). The
// tiles are sketch_d_tiles.cu's (sketch_tiles.h), as is the rows' reduction
// through shared memory four rows at a time.
//
// A is the same with M in N's place, but its two passes cannot share a
// read: op(A)·(op(B)·x) needs the k-vector that B's tiles make, and they
// need the one yᵀ·op(A) makes. So A's passes run alone, each in the same
// tiles (kPasses), where a lane keeps its columns' weights in registers
// instead of reloading a k-vector entry an element as the line passes do:
// yᵀ·op(A) at 8192^3 took 47.8 µs against 59.1 (H200, ncu).
#include "sketch_operand_tiles.h"

#include "sketch_tiles.h"

namespace gemm {
namespace {

using sketch::V;
using namespace sketch_tiles;

// A line's sums (OperandLines): a dot per vector, then Σ|b| (by signs) or
// Σ|b|·weight (by k-vectors), then Σb² (by k-vectors; never read by signs).
constexpr int kSums = V + 2;
constexpr int kRowsInFlight = 4, kRowsReduced = 4, kOutputs = kRowsReduced * kSums, kLanePitch = kOutputs + 1;
static_assert(kOutputs == kHalfWarp && kRowsInFlight % kRowsReduced == 0 && kLeastRowsPerWarp % kRowsInFlight == 0);
static_assert(kSums * kStripColumns <= 32 * kLanePitch);

// The operand as the tiles walk it: rows of `columns` contiguous elements,
// `pitch` apart.
struct Stored {
  const uint16_t* data;
  int64_t rows, columns, pitch, batch_stride;
};

// kRowsBySigns: the operand stored with its sign axis contiguous (N for B,
// M for A), so the stored rows' sums (op(B)·x, yᵀ·op(A)) take the signs and
// the stored columns' ((yᵀ·op(A))·op(B), op(A)·(op(B)·x)) the k-vector
// entries, a stored row's the same for the whole warp; else the reverse.
// kPasses: which of the two passes the launch takes.
// Every warp writes its columns' sums, zeros where it had no rows, and the
// block adds them up: one atomic an output and sum.
template <bool kRowsBySigns>
__device__ void AddUpColumns(const double (&column)[kSums][kLaneColumns], const sketch::OperandLines& column_op,
                             int64_t columns, int64_t e, double (&scratch)[kWarps][32 * kLanePitch]) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int k = 0; k < kLaneColumns; ++k) {
#pragma unroll
    for (int s = 0; s < kSums; ++s) scratch[warp][s * kStripColumns + kLaneColumns * lane + k] = column[s][k];
  }
  __syncthreads();
  for (int q = threadIdx.x; q < kSums * kStripColumns; q += kWarps * 32) {
    const int64_t j = int64_t{blockIdx.x} * kStripColumns + q % kStripColumns;
    const int s = q / kStripColumns;
    if (j >= columns || (!kRowsBySigns && s == V + 1)) continue;
    double total = 0.0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += scratch[w][q];
    atomicAdd(column_op.Out(e, s, j), total);
  }
}

// The pass by signs alone fits three blocks an SM, which hide more of its
// loads' latency; the one by k-vectors would spill there.
template <ElementType T, bool kRowsBySigns, OperandPasses kPasses>
__global__ void __launch_bounds__(kWarps * 32, kPasses == OperandPasses::kBySigns ? 3 : 2)
    OperandTilesKernel(sketch::OperandLines by_signs, sketch::OperandLines by_vectors, Stored b, int rows_per_warp) {
  constexpr bool kSigns = kPasses != OperandPasses::kByVectors, kVectors = kPasses != OperandPasses::kBySigns;
  constexpr bool kRowSums = kRowsBySigns ? kSigns : kVectors, kColumnSums = kRowsBySigns ? kVectors : kSigns;
  __shared__ double scratch[kWarps][32 * kLanePitch];
  __shared__ double row_weights[kWarps][kMostRowsPerWarp][V + 1];
  const sketch::OperandLines& row_op = kRowsBySigns ? by_signs : by_vectors;
  const sketch::OperandLines& column_op = kRowsBySigns ? by_vectors : by_signs;
  const int64_t e = blockIdx.z;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  double* mine = scratch[warp];
  const int64_t j0 = int64_t{blockIdx.x} * kStripColumns + kLaneColumns * lane;
  const bool active = j0 < b.columns;  // all four columns or none (OperandTilesApply)
  const int64_t i0 = (int64_t{blockIdx.y} * kWarps + warp) * rows_per_warp;
  const int64_t i1 = i0 + rows_per_warp < b.rows ? i0 + rows_per_warp : b.rows;
  const double* entry = by_vectors.scratch + e * by_vectors.entry_doubles;
  const double* vec = entry + by_vectors.vec_at;        // V k-vectors of by_vectors.length
  const double* weight = entry + by_vectors.weight_at;  // their absolute weights
  const int64_t k_length = by_vectors.length;
  const uint16_t* base = b.data + e * b.batch_stride + j0;

  // The lane's columns' weights: x's signs as ±1.0 held in registers
  // (sketch_d_tiles.cu says why), or the k-vectors' entries.
  double x_sign[V][kLaneColumns] = {};
  double lane_vec[V][kLaneColumns] = {}, lane_weight[kLaneColumns] = {};
  if (active && kRowSums) {
    if constexpr (kRowsBySigns) {
      LaneSigns(by_signs.signs, by_signs.words, j0, x_sign);
    } else {
#pragma unroll
      for (int k = 0; k < kLaneColumns; ++k) {
#pragma unroll
        for (int v = 0; v < V; ++v) lane_vec[v][k] = vec[v * k_length + j0 + k];
        lane_weight[k] = weight[j0 + k];
      }
    }
  }
  double column[kSums][kLaneColumns] = {};

  // What is the same along each of the warp's rows, read once before them:
  // x's sign words where the signs go with the rows; else the rows'
  // k-vector entries and weights, through shared memory, one row's a lane.
  uint32_t x_word[V] = {};
  if constexpr (kRowsBySigns && kColumnSums) {
    if (lane < rows_per_warp && i0 + lane < i1) {
#pragma unroll
      for (int v = 0; v < V; ++v) row_weights[warp][lane][v] = vec[v * k_length + i0 + lane];
      row_weights[warp][lane][V] = weight[i0 + lane];
    }
    __syncwarp();
  } else if constexpr (!kRowsBySigns && kColumnSums) {
    RowSignWords(by_signs.signs, by_signs.words, i0, i1, x_word);
  }

  // A group of rows is loaded while the group before it is summed
  // (sketch_d_tiles.cu says why).
  auto load = [&](int64_t i, uint2 (&raw)[kRowsInFlight]) {
    if (active) LoadRows(base + i * b.pitch, b.pitch, i, i1, raw);
  };
  uint2 next[kRowsInFlight] = {};
  load(i0, next);
  for (int64_t i = i0; i < i1; i += kRowsInFlight) {  // i0 and i a multiple of kRowsInFlight
    uint2 raw[kRowsInFlight];
#pragma unroll
    for (int u = 0; u < kRowsInFlight; ++u) raw[u] = next[u];
    if (i + kRowsInFlight < i1) load(i + kRowsInFlight, next);
#pragma unroll
    for (int g = 0; g < kRowsInFlight / kRowsReduced; ++g) {
      // This lane's share of each row's sums, begun with its first column's
      // terms rather than added to zeros.
      double part[kRowsReduced][kSums];
#pragma unroll
      for (int q = 0; q < kRowsReduced; ++q) {
        const int64_t row = i + g * kRowsReduced + q;
        if (!active || row >= i1) {
#pragma unroll
          for (int s = 0; s < kSums; ++s) part[q][s] = 0.0;
          continue;
        }
        // The row's weights, the same for the whole warp.
        double row_vec[V], row_weight = 0.0, row_sign[V];
#pragma unroll
        for (int v = 0; v < V; ++v) {
          if constexpr (kRowsBySigns && kColumnSums) {
            row_vec[v] = row_weights[warp][row - i0][v];
          } else if constexpr (kColumnSums) {
            row_sign[v] = SignOf(x_word[v], static_cast<int>(row & 31));
          }
        }
        if constexpr (kRowsBySigns && kColumnSums) row_weight = row_weights[warp][row - i0][V];
        const int u = g * kRowsReduced + q;
        float x[kLaneColumns];
        Widen4<T>(raw[u], x);
#pragma unroll
        for (int k = 0; k < kLaneColumns; ++k) {
          const double bb = x[k];
          if constexpr (kRowsBySigns) {
            if constexpr (kRowSums) {
#pragma unroll
              for (int v = 0; v < V; ++v) part[q][v] = k == 0 ? bb * x_sign[v][k] : fma(bb, x_sign[v][k], part[q][v]);
              part[q][V] = k == 0 ? fabs(bb) : part[q][V] + fabs(bb);
              part[q][V + 1] = 0.0;  // never read
            }
            if constexpr (kColumnSums) {
#pragma unroll
              for (int v = 0; v < V; ++v) column[v][k] = fma(bb, row_vec[v], column[v][k]);
              column[V][k] = fma(fabs(bb), row_weight, column[V][k]);
              column[V + 1][k] = fma(bb, bb, column[V + 1][k]);
            }
          } else {
            if constexpr (kRowSums) {
#pragma unroll
              for (int v = 0; v < V; ++v) part[q][v] = k == 0 ? bb * lane_vec[v][k] : fma(bb, lane_vec[v][k], part[q][v]);
              part[q][V] = k == 0 ? fabs(bb) * lane_weight[k] : fma(fabs(bb), lane_weight[k], part[q][V]);
              part[q][V + 1] = k == 0 ? bb * bb : fma(bb, bb, part[q][V + 1]);
            }
            if constexpr (kColumnSums) {
#pragma unroll
              for (int v = 0; v < V; ++v) column[v][k] = fma(bb, row_sign[v], column[v][k]);
              column[V][k] += fabs(bb);
            }
          }
        }
      }
      // The rows' sums across the lanes, as sketch_d_tiles.cu adds them.
      if constexpr (kRowSums) {
        const double total = AddUpAcrossLanes(part, mine, lane);
        const int o = lane % kOutputs;
        const int64_t row = i + g * kRowsReduced + o / kSums;
        const int s = o % kSums;
        const bool read = !(kRowsBySigns && s == V + 1);  // the sign lines' Σb² is never read
        if (lane < kOutputs && row < i1 && read) atomicAdd(row_op.Out(e, s, row), total);
        __syncwarp();
      }
    }
  }
  if constexpr (kColumnSums) AddUpColumns<kRowsBySigns>(column, column_op, b.columns, e, scratch);
}

// The operand as the tiles walk it, or rows = 0 where they cannot. Its
// sign axis is the one by_signs sums along (N for op(B)·x, M for
// yᵀ·op(A)); the other is K, along which by_signs has its outputs.
Stored StoredOf(const sketch::OperandLines& by_signs, int64_t batch) {
  const StridedView& m = by_signs.matrix;
  const int64_t signs = by_signs.length, k = by_signs.outputs;
  const int64_t sign_stride = by_signs.per_row ? m.col_stride : m.row_stride;
  const int64_t k_stride = by_signs.per_row ? m.row_stride : m.col_stride;
  const bool sixteen_bit = m.type == ElementType::kF16 || m.type == ElementType::kBF16;
  const bool signs_contiguous = sign_stride == 1, k_contiguous = k_stride == 1 && !signs_contiguous;
  if (!sixteen_bit || !(signs_contiguous || k_contiguous)) return {};
  Stored b{static_cast<const uint16_t*>(m.data), signs_contiguous ? k : signs, signs_contiguous ? signs : k,
           signs_contiguous ? k_stride : sign_stride, m.batch_stride};
  const bool in_words = b.columns % kLaneColumns == 0 && b.pitch % kLaneColumns == 0 &&
                        (batch == 1 || b.batch_stride % kLaneColumns == 0) &&
                        (reinterpret_cast<uintptr_t>(b.data) & 7) == 0;
  return in_words ? b : Stored{};
}

// One instantiation for each type, orientation and choice of passes.
template <ElementType T, bool kRowsBySigns>
auto KernelFor(OperandPasses passes) {
  switch (passes) {
    case OperandPasses::kBySigns:
      return OperandTilesKernel<T, kRowsBySigns, OperandPasses::kBySigns>;
    case OperandPasses::kByVectors:
      return OperandTilesKernel<T, kRowsBySigns, OperandPasses::kByVectors>;
    case OperandPasses::kBoth:
      break;
  }
  return OperandTilesKernel<T, kRowsBySigns, OperandPasses::kBoth>;
}

}  // namespace

bool OperandTilesApply(const sketch::OperandLines& by_signs, int64_t batch) {
  return by_signs.vec_at < 0 && StoredOf(by_signs, batch).rows > 0;
}

cudaError_t LaunchOperandTiles(const sketch::OperandLines& by_signs, const sketch::OperandLines& by_vectors,
                               OperandPasses passes, int64_t batch, cudaStream_t stream) {
  const Stored b = StoredOf(by_signs, batch);
  const StridedView& m = by_signs.matrix;
  const bool rows_by_signs = (by_signs.per_row ? m.col_stride : m.row_stride) == 1;
  const int64_t strips = (b.columns + kStripColumns - 1) / kStripColumns;
  const int rows_per_warp = RowsPerWarp(b.rows, strips, batch);
  const dim3 grid(static_cast<unsigned>(strips), static_cast<unsigned>(Bands(b.rows, rows_per_warp)),
                  static_cast<unsigned>(batch));
  auto launch = [&](auto kernel) {
    kernel<<<grid, kWarps * 32, 0, stream>>>(by_signs, by_vectors, b, rows_per_warp);
    return cudaGetLastError();
  };
  const bool f16 = m.type == ElementType::kF16;
  if (rows_by_signs) {
    return launch(f16 ? KernelFor<ElementType::kF16, true>(passes) : KernelFor<ElementType::kBF16, true>(passes));
  }
  return launch(f16 ? KernelFor<ElementType::kF16, false>(passes) : KernelFor<ElementType::kBF16, false>(passes));
}

}  // namespace gemm
