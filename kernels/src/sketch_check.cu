// VERIFICATION_FAST's passes on the GPU (gemm/sketch_check.h): six
// reductions over the operands and D, by tiles where a matrix allows (D's
// two in one read of it: sketch_d_tiles.cu; B's two likewise, and A's one
// at a time: sketch_operand_tiles.cu), by lines elsewhere; then a verdict
// per row and column, then the sampled elements (sketch_samples.cu). The
// sums (fp64, sketch_lines.h) are added up across blocks by atomics (their
// order varies; the bound leaves room for it).
#include <cuda_runtime.h>

#include <atomic>
#include <type_traits>

#include "common/atomic_max.h"
#include "common/widen_eight.h"
#include "gemm/sketch_check_gpu.h"
#include "gemm/test_hooks.h"
#include "sketch_d_tiles.h"
#include "sketch_operand_tiles.h"
#include "sketch_lines.h"
#include "sketch_samples.h"

namespace gemm {
namespace {

using sketch::V;

// Outputs' sums over a chunk of the reduction (blockIdx.y), batch entry
// blockIdx.z. Where the reduction runs along contiguous memory a warp takes
// LinesPerWarp outputs, its lanes side by side along them; else a thread
// takes an output and neighbouring threads read neighbouring elements. T:
// the matrix's type. Each lane issues kInFlight loads a line before it sums
// any (a thread per output, whose 2-byte loads carry less, 16): at three
// blocks an SM, four left the passes waiting on memory (ncu, H100, 4096^2).
// A warp's lines share each element's signs, k-vector entries and norms,
// read once for all of them. The fp32 partials are flushed after each group.
constexpr int kInFlight = 8, kInFlightPerThread = 16;
static_assert(kInFlight <= sketch::kFlushEvery && kInFlightPerThread <= sketch::kFlushEvery);
// The reduction's chunk a block takes, warp per output or thread per
// output. A thread's groups start kInFlightPerThread apart from a multiple
// of its chunk, so each lies within one 32-bit word of signs.
constexpr int64_t kChunkPerWarp = 2048, kChunkPerThread = 128;
static_assert(kChunkPerThread % kInFlightPerThread == 0 && 32 % kInFlightPerThread == 0);

// Lines a warp takes: two, but one where D's lines read C too, whose sums
// and loads for two lines would not fit the 80 registers a thread has at
// three blocks an SM (ptxas: 128-252 bytes spilled).
template <class Op, int kVariant>
constexpr int LinesPerWarp() {
  return std::is_same_v<Op, sketch::DLines> && kVariant != 0 ? 1 : 2;
}

// Where a warp's lines run along 16-bit elements from 16-byte boundaries (D
// and the operands as gemmd stores them), a lane reads eight adjacent
// elements a load, kVectorsInFlight loads a line before it sums any: an
// eighth of the loads and address arithmetic of a load an element, and one
// word of each sign vector for the eight (ncu, H200, D's rows at 8192^2:
// 0.87 of the instructions, 0.92 of the time). Lines whose sums read fp32
// C, or the k-vectors and weights (OperandLines' variant 1, whose eight
// doubles a lane would span sixteen cache lines a load), keep the load an
// element.
constexpr int kVectorsInFlight = 2;
static_assert(8 * kVectorsInFlight <= sketch::kFlushEvery);

template <ElementType T>
constexpr bool kSixteenBit = T == ElementType::kF16 || T == ElementType::kBF16;

template <class Op, ElementType T, int kVariant>
constexpr bool EightALoad() {
  if constexpr (!kSixteenBit<T>) return false;
  if constexpr (std::is_same_v<Op, sketch::DLines>) return kVariant != 2;
  return kVariant == 0;
}

// Eight elements of a line's matrix (and of C beside them, where D's lines
// read C) from element r, as loaded: widened later.
struct RawEight {
  uint4 x, c;
};
__device__ inline bool At16(const void* data, int64_t element) {
  return (reinterpret_cast<uintptr_t>(static_cast<const uint16_t*>(data) + element) & 15) == 0;
}
template <int kVariant>
__device__ bool EightAligned(const sketch::OperandLines& op, const sketch::OperandLines::Line& l) {
  return At16(op.matrix.data, l.base);
}
template <int kVariant>
__device__ bool EightAligned(const sketch::DLines& op, const sketch::DLines::Line& l) {
  return At16(op.problem.d.data, l.d_base) && (kVariant == 0 || At16(op.problem.c.data, l.c_base));
}
template <int kVariant>
__device__ RawEight LoadEight(const sketch::OperandLines& op, const sketch::OperandLines::Line& l, int64_t r) {
  return {*reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(op.matrix.data) + l.base + r), {}};
}
template <int kVariant>
__device__ RawEight LoadEight(const sketch::DLines& op, const sketch::DLines::Line& l, int64_t r) {
  RawEight raw{*reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(op.problem.d.data) + l.d_base + r), {}};
  if constexpr (kVariant != 0) {
    raw.c = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(op.problem.c.data) + l.c_base + r);
  }
  return raw;
}

// WarpLines's elements [r0, end) eight a lane, end - r0 a multiple of
// 256·kVectorsInFlight (every lane makes the same trips).
template <class Op, ElementType T, int kVariant, int N, int L>
__device__ void EightsOfLines(const Op& op, const typename Op::Line (&lines)[L], int64_t r0, int64_t end,
                              double (&sums)[L][N], float (&partials)[L][Op::kPartials + 1]) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = r0 + 8 * lane; r < end; r += 256 * kVectorsInFlight) {
    RawEight raw[L][kVectorsInFlight];
#pragma unroll
    for (int u = 0; u < kVectorsInFlight; ++u) {
#pragma unroll
      for (int i = 0; i < L; ++i) raw[i][u] = LoadEight<kVariant>(op, lines[i], r + 256 * u);
    }
#pragma unroll
    for (int u = 0; u < kVectorsInFlight; ++u) {
      const int64_t at = r + 256 * u;
      uint32_t word[V];
      sketch::SignWordsAt(op.signs, op.words, at, word);
      const int shift = static_cast<int>(at & 31);
#pragma unroll
      for (int i = 0; i < L; ++i) {
        float x[8], c[8];
        Widen8<T>(raw[i][u].x, x);
        if constexpr (kVariant != 0) Widen8<T>(raw[i][u].c, c);
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const sketch::Loaded loaded{x[k], kVariant != 0 ? c[k] : 0.0f};
          op.template Accumulate<T, kVariant>(lines[i], at + k, loaded, sketch::SignsAtBit(word, shift + k), sums[i],
                                              partials[i]);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < L; ++i) Op::Flush(partials[i], sums[i]);
  }
}

// A warp's LinesPerWarp outputs from `first`, elements [r0, r1) of each.
template <class Op, ElementType T, int kVariant>
__device__ void WarpLines(const Op& op, int64_t e, int64_t first, int64_t r0, int64_t r1) {
  constexpr int N = Op::kSums, L = LinesPerWarp<Op, kVariant>();
  const int lane = threadIdx.x & 31;
  double sums[L][N] = {};
  float partials[L][Op::kPartials + 1] = {};
  typename Op::Line lines[L];
  // Past the last output a line repeats it, and its sums are dropped.
#pragma unroll
  for (int i = 0; i < L; ++i) lines[i] = op.Begin(e, first + i < op.outputs ? first + i : op.outputs - 1);
  int64_t r = r0 + lane;
  if constexpr (EightALoad<Op, T, kVariant>()) {
    bool aligned = true;  // the same for the whole warp: its lines are
#pragma unroll
    for (int i = 0; i < L; ++i) aligned = aligned && EightAligned<kVariant>(op, lines[i]);
    if (aligned) {
      const int64_t end = r0 + (r1 - r0) / (256 * kVectorsInFlight) * (256 * kVectorsInFlight);
      EightsOfLines<Op, T, kVariant>(op, lines, r0, end, sums, partials);
      r = end + lane;
    }
  }
  for (; r + 32 * (kInFlight - 1) < r1; r += 32 * kInFlight) {
    sketch::Loaded x[L][kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
#pragma unroll
      for (int i = 0; i < L; ++i) x[i][u] = op.template Load<T, kVariant, true>(lines[i], r + 32 * u);
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const uint32_t plus = sketch::SignsAt(op.signs, op.words, r + 32 * u);
#pragma unroll
      for (int i = 0; i < L; ++i) {
        op.template Accumulate<T, kVariant>(lines[i], r + 32 * u, x[i][u], plus, sums[i], partials[i]);
      }
    }
#pragma unroll
    for (int i = 0; i < L; ++i) Op::Flush(partials[i], sums[i]);
  }
  for (; r < r1; r += 32) {  // fewer than kInFlight a lane
    const uint32_t plus = sketch::SignsAt(op.signs, op.words, r);
#pragma unroll
    for (int i = 0; i < L; ++i) {
      op.template Accumulate<T, kVariant>(lines[i], r, op.template Load<T, kVariant, true>(lines[i], r), plus,
                                          sums[i], partials[i]);
    }
  }
#pragma unroll
  for (int i = 0; i < L; ++i) {
    Op::Flush(partials[i], sums[i]);
    for (int s = 0; s < N; ++s) {
      for (int offset = 16; offset > 0; offset >>= 1) sums[i][s] += __shfl_down_sync(0xffffffffu, sums[i][s], offset);
    }
    if (lane == 0 && first + i < op.outputs) {
      for (int s = 0; s < N; ++s) atomicAdd(op.Out(e, s, first + i), sums[i][s]);
    }
  }
}

// Where an operand pass's outputs lie side by side in 16-bit memory (the
// k-vector passes of operands stored K-contiguous, as gemmd stores them), a
// thread takes two with one 4-byte load an element pair: the pair shares
// the load's address arithmetic and the sign words (ncu, H200: 0.80 of the
// instructions and 0.93 of the time at 8192^2, though 1.09 of the time at
// 4096^2, where half the threads leave SMs idle). D's lines keep one a
// thread: two, with seven sums each, spilled and ran no faster. Pairs are
// taken only where they still leave kPairThreadsAtLeast threads: below,
// SMs sit idle (an H200 holds 101,376 at three 256-thread blocks an SM),
// and 1024^3 checks ran 1.10 times as long with pairs.
constexpr int64_t kPairThreadsAtLeast = int64_t{1} << 17;
std::atomic<int64_t> pair_threads_at_least{kPairThreadsAtLeast};  // testing::SetSketchPairs
template <class Op, ElementType T>
constexpr bool PairsALoad() {
  return std::is_same_v<Op, sketch::OperandLines> && kSixteenBit<T>;
}
inline bool PairsPay(const sketch::OperandLines& op, int64_t batch) {
  const int64_t chunks = (op.length + kChunkPerThread - 1) / kChunkPerThread;
  return op.outputs / 2 * chunks * batch >= pair_threads_at_least.load(std::memory_order_relaxed);
}
inline bool PairsAligned(const sketch::OperandLines& op) {
  const StridedView& m = op.matrix;
  const int64_t output_stride = op.per_row ? m.row_stride : m.col_stride;
  const int64_t reduction_stride = op.per_row ? m.col_stride : m.row_stride;
  return op.outputs % 2 == 0 && (reinterpret_cast<uintptr_t>(m.data) & 3) == 0 && m.batch_stride % 2 == 0 &&
         output_stride == 1 && reduction_stride % 2 == 0;
}
// Element r of a pair of lines from lines[0]: both outputs' values, one word.
__device__ inline uint32_t LoadPair(const sketch::OperandLines& op, const sketch::OperandLines::Line& l, int64_t r) {
  return *reinterpret_cast<const uint32_t*>(static_cast<const uint16_t*>(op.matrix.data) + l.base + r * l.step);
}
template <ElementType T>
__device__ void WidenPair(uint32_t pair, sketch::Loaded (&out)[2]) {
  float x[8];
  Widen8<T>(make_uint4(pair, 0, 0, 0), x);
  out[0] = {x[0], 0.0f};
  out[1] = {x[1], 0.0f};
}

// A thread's P outputs from o (P = 2: PairsALoad and PairsAligned),
// elements [r0, r1).
template <class Op, ElementType T, int kVariant, int P>
__device__ void ThreadLines(const Op& op, int64_t e, int64_t o, int64_t r0, int64_t r1) {
  constexpr int N = Op::kSums;
  double sums[P][N] = {};
  float partials[P][Op::kPartials + 1] = {};
  typename Op::Line lines[P];
#pragma unroll
  for (int p = 0; p < P; ++p) lines[p] = op.Begin(e, o + p);
  auto load = [&](int64_t r, sketch::Loaded (&x)[P]) {
    if constexpr (P == 2) {
      WidenPair<T>(LoadPair(op, lines[0], r), x);
    } else {
      x[0] = op.template Load<T, kVariant>(lines[0], r);
    }
  };
  // A pair's loads carry twice the bytes: half as many in flight fill as much.
  constexpr int G = kInFlightPerThread / P;
  int64_t r = r0;
  for (; r + G - 1 < r1; r += G) {
    sketch::Loaded x[G][P];
    if constexpr (P == 2) {  // every load issued before any is widened
      uint32_t raw[G];
#pragma unroll
      for (int u = 0; u < G; ++u) raw[u] = LoadPair(op, lines[0], r + u);
#pragma unroll
      for (int u = 0; u < G; ++u) WidenPair<T>(raw[u], x[u]);
    } else {
#pragma unroll
      for (int u = 0; u < G; ++u) load(r + u, x[u]);
    }
    uint32_t word[V];  // the group's signs lie in one word of each vector (kChunkPerThread)
    sketch::SignWordsAt(op.signs, op.words, r, word);
#pragma unroll
    for (int u = 0; u < G; ++u) {
      const uint32_t plus = sketch::SignsIn(word, r + u);
#pragma unroll
      for (int p = 0; p < P; ++p) {
        op.template Accumulate<T, kVariant>(lines[p], r + u, x[u][p], plus, sums[p], partials[p]);
      }
    }
#pragma unroll
    for (int p = 0; p < P; ++p) Op::Flush(partials[p], sums[p]);
  }
  for (; r < r1; ++r) {  // fewer than G
    const uint32_t plus = sketch::SignsAt(op.signs, op.words, r);
    sketch::Loaded x[P];
    load(r, x);
#pragma unroll
    for (int p = 0; p < P; ++p) op.template Accumulate<T, kVariant>(lines[p], r, x[p], plus, sums[p], partials[p]);
  }
#pragma unroll
  for (int p = 0; p < P; ++p) {
    Op::Flush(partials[p], sums[p]);
    for (int s = 0; s < N; ++s) atomicAdd(op.Out(e, s, o + p), sums[p][s]);
  }
}

// How a pass's threads take its outputs.
enum class LinesBy { kThread, kThreadPair, kWarp };

template <class Op, ElementType T, int kVariant>
__global__ void __launch_bounds__(256, 3)
    LinesKernel(Op op, int64_t chunk, LinesBy by) {
  const int64_t e = blockIdx.z;
  const int64_t r0 = int64_t{blockIdx.y} * chunk, r1 = r0 + chunk < op.length ? r0 + chunk : op.length;
  const int64_t thread = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (by == LinesBy::kWarp) {
    const int64_t first = (thread >> 5) * LinesPerWarp<Op, kVariant>();
    if (first < op.outputs) WarpLines<Op, T, kVariant>(op, e, first, r0, r1);  // the same for the whole warp
  } else if (by == LinesBy::kThreadPair) {
    if constexpr (PairsALoad<Op, T>()) {
      if (2 * thread < op.outputs) ThreadLines<Op, T, kVariant, 2>(op, e, 2 * thread, r0, r1);
    }
  } else if (thread < op.outputs) {
    ThreadLines<Op, T, kVariant, 1>(op, e, thread, r0, r1);
  }
}

template <class Op, ElementType T, int kVariant>
cudaError_t LaunchVariant(const Op& op, int64_t batch, cudaStream_t stream) {
  constexpr int kThreads = 256, L = LinesPerWarp<Op, kVariant>();
  LinesBy by = op.contiguous() ? LinesBy::kWarp : LinesBy::kThread;
  if constexpr (PairsALoad<Op, T>()) {
    if (by == LinesBy::kThread && PairsAligned(op) && PairsPay(op, batch)) by = LinesBy::kThreadPair;
  }
  const int64_t chunk = by == LinesBy::kWarp ? kChunkPerWarp : kChunkPerThread;
  const int64_t threads = by == LinesBy::kWarp         ? (op.outputs + L - 1) / L * 32
                          : by == LinesBy::kThreadPair ? op.outputs / 2
                                                       : op.outputs;
  const dim3 grid(static_cast<unsigned>((threads + kThreads - 1) / kThreads),
                  static_cast<unsigned>((op.length + chunk - 1) / chunk), static_cast<unsigned>(batch));
  LinesKernel<Op, T, kVariant><<<grid, kThreads, 0, stream>>>(op, chunk, by);
  return cudaGetLastError();
}

template <class Op, ElementType T>
cudaError_t LaunchTyped(const Op& op, int64_t batch, cudaStream_t stream) {
  if constexpr (std::is_same_v<Op, sketch::DLines> && IsFp8(T)) {
    return cudaErrorInvalidValue;  // no form writes D in fp8 (gemm/form.h)
  } else {
    return sketch::WithVariant(op, [&](auto v) { return LaunchVariant<Op, T, v.value>(op, batch, stream); });
  }
}

template <class Op>
cudaError_t LaunchLines(const Op& op, int64_t batch, cudaStream_t stream) {
  return WithElementType(op.type(), [&](auto t) { return LaunchTyped<Op, t.value>(op, batch, stream); });
}

__global__ void SignsKernel(SketchProblem p, double* scratch) {
  const int64_t index = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (index < SketchLayout{p.m, p.n, p.k}.sign_words()) sketch::MakeSignWord(p, scratch, index);
}

__global__ void NormsKernel(SketchProblem p, double* scratch) {
  const int64_t line = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (line < p.m + p.n) sketch::TakeNorm(p, scratch, blockIdx.y, line);
}

// A thread a line; a warp's verdicts reach the result by one atomic each
// (a ballot for the failed lines, WarpAtomicMaxNonNegative for the maxima),
// since 8,192 lines at 4096^2 taking three atomics each on three addresses
// serialize in L2. Every lane of a warp takes part in its reductions.
__global__ void JudgeKernel(SketchProblem p, const double* scratch, SketchResult* result) {
  const int64_t line = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const int64_t e = blockIdx.y;
  const bool judged = line < p.m + p.n;
  const sketch::LineVerdict v = judged ? sketch::JudgeLine(p, scratch, e, line) : sketch::LineVerdict{false, 0.0, 0.0};
  const unsigned failed = __ballot_sync(0xffffffffu, v.failed);
  if ((threadIdx.x & 31) == 0 && failed != 0) {
    atomicAdd(&result->failed_lines, static_cast<unsigned long long>(__popc(failed)));
  }
  if (judged && line < p.m) {  // non-finite elements, counted once: by their rows
    const SketchLayout l{p.m, p.n, p.k};
    const double nf = sketch::Entries(p, scratch)[e * l.doubles() + l.d_row_non_finite() + line];
    if (nf > 0) atomicAdd(&result->non_finite, static_cast<unsigned long long>(nf));
  }
  WarpAtomicMaxNonNegative(&result->worst_line_ratio, static_cast<float>(v.ratio));
  const float bound = judged && v.bound - v.bound == 0 ? static_cast<float>(v.bound) : 0.0f;
  WarpAtomicMaxNonNegative(&result->largest_row_bound, line < p.m ? bound : 0.0f);
  WarpAtomicMaxNonNegative(&result->largest_column_bound, line < p.m ? 0.0f : bound);
}

}  // namespace

void testing::SetSketchPairs(SketchPairs pairs) {
  pair_threads_at_least = pairs == SketchPairs::kWhereAligned ? 0 : kPairThreadsAtLeast;
}

cudaError_t SketchCheck(const SketchProblem& p, void* scratch_bytes, SketchResult* result, cudaStream_t stream) {
  auto* scratch = static_cast<double*>(scratch_bytes);
  if (auto e = cudaMemsetAsync(scratch, 0, SketchScratchBytes(p), stream); e != cudaSuccess) return e;
  if (auto e = cudaMemsetAsync(result, 0, sizeof(SketchResult), stream); e != cudaSuccess) return e;
  const int64_t signs = SketchLayout{p.m, p.n, p.k}.sign_words();
  SignsKernel<<<static_cast<unsigned>((signs + 255) / 256), 256, 0, stream>>>(p, scratch);
  const sketch::Passes passes = sketch::PassesOf(p, scratch);
  // The k-vectors first, then the passes that read them. Where B allows,
  // B's two passes in one read of it, after yᵀ·op(A) and before
  // op(A)·(op(B)·x), which read what it writes; A's passes by tiles where A
  // allows, by lines elsewhere.
  const bool a_tiles = OperandTilesApply(passes.a_columns, p.batch);
  auto a_pass = [&](const sketch::OperandLines& op, OperandPasses which) {
    return a_tiles ? LaunchOperandTiles(passes.a_columns, passes.a_rows, which, p.batch, stream)
                   : LaunchLines(op, p.batch, stream);
  };
  if (OperandTilesApply(passes.b_rows, p.batch)) {
    if (auto e = a_pass(passes.a_columns, OperandPasses::kBySigns); e != cudaSuccess) return e;
    if (auto e = LaunchOperandTiles(passes.b_rows, passes.b_columns, OperandPasses::kBoth, p.batch, stream);
        e != cudaSuccess) {
      return e;
    }
    if (auto e = a_pass(passes.a_rows, OperandPasses::kByVectors); e != cudaSuccess) return e;
  } else {
    if (auto e = LaunchLines(passes.b_rows, p.batch, stream); e != cudaSuccess) return e;
    if (auto e = a_pass(passes.a_columns, OperandPasses::kBySigns); e != cudaSuccess) return e;
    if (auto e = a_pass(passes.a_rows, OperandPasses::kByVectors); e != cudaSuccess) return e;
    if (auto e = LaunchLines(passes.b_columns, p.batch, stream); e != cudaSuccess) return e;
  }
  const dim3 lines(static_cast<unsigned>((p.m + p.n + 255) / 256), static_cast<unsigned>(p.batch));
  NormsKernel<<<lines, 256, 0, stream>>>(p, scratch);
  if (DTilesApply(passes.d_rows)) {
    if (auto e = LaunchDTiles(passes.d_rows, passes.d_columns, p.batch, stream); e != cudaSuccess) return e;
  } else {
    for (const sketch::DLines* op : {&passes.d_rows, &passes.d_columns}) {
      if (auto e = LaunchLines(*op, p.batch, stream); e != cudaSuccess) return e;
    }
  }
  JudgeKernel<<<lines, 256, 0, stream>>>(p, scratch, result);
  LaunchSketchSamples(p, scratch, result, stream);
  return cudaGetLastError();
}

}  // namespace gemm
