// VERIFICATION_FAST's passes on the GPU (gemm/sketch_check.h): six
// reductions over the operands and D, then a verdict per row and column,
// then the sampled elements (sketch_samples.cu). The sums (fp64,
// sketch_lines.h) are added up across blocks by atomics (their order
// varies; the bound leaves room for it).
#include <cuda_runtime.h>

#include <type_traits>

#include "common/atomic_max.h"
#include "gemm/sketch_check_gpu.h"
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

// A thread's output o, elements [r0, r1).
template <class Op, ElementType T, int kVariant>
__device__ void ThreadLine(const Op& op, int64_t e, int64_t o, int64_t r0, int64_t r1) {
  constexpr int N = Op::kSums;
  double sums[N] = {};
  float partials[Op::kPartials + 1] = {};
  const typename Op::Line line = op.Begin(e, o);
  int64_t r = r0;
  for (; r + kInFlightPerThread - 1 < r1; r += kInFlightPerThread) {
    sketch::Loaded x[kInFlightPerThread];
#pragma unroll
    for (int u = 0; u < kInFlightPerThread; ++u) x[u] = op.template Load<T, kVariant>(line, r + u);
    uint32_t word[V];  // the group's signs lie in one word of each vector (kChunkPerThread)
    sketch::SignWordsAt(op.signs, op.words, r, word);
#pragma unroll
    for (int u = 0; u < kInFlightPerThread; ++u) {
      op.template Accumulate<T, kVariant>(line, r + u, x[u], sketch::SignsIn(word, r + u), sums, partials);
    }
    Op::Flush(partials, sums);
  }
  for (; r < r1; ++r) {  // fewer than kInFlightPerThread
    const uint32_t plus = sketch::SignsAt(op.signs, op.words, r);
    op.template Accumulate<T, kVariant>(line, r, op.template Load<T, kVariant>(line, r), plus, sums, partials);
  }
  Op::Flush(partials, sums);
  for (int s = 0; s < N; ++s) atomicAdd(op.Out(e, s, o), sums[s]);
}

template <class Op, ElementType T, int kVariant>
__global__ void __launch_bounds__(256, 3)
    LinesKernel(Op op, int64_t chunk, bool warp_per_output) {
  const int64_t e = blockIdx.z;
  const int64_t r0 = int64_t{blockIdx.y} * chunk, r1 = r0 + chunk < op.length ? r0 + chunk : op.length;
  const int64_t thread = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (warp_per_output) {
    const int64_t first = (thread >> 5) * LinesPerWarp<Op, kVariant>();
    if (first < op.outputs) WarpLines<Op, T, kVariant>(op, e, first, r0, r1);  // the same for the whole warp
  } else if (thread < op.outputs) {
    ThreadLine<Op, T, kVariant>(op, e, thread, r0, r1);
  }
}

template <class Op, ElementType T, int kVariant>
cudaError_t LaunchVariant(const Op& op, int64_t batch, cudaStream_t stream) {
  constexpr int kThreads = 256, L = LinesPerWarp<Op, kVariant>();
  const bool contiguous = op.contiguous();
  const int64_t chunk = contiguous ? kChunkPerWarp : kChunkPerThread;
  const int64_t threads = contiguous ? (op.outputs + L - 1) / L * 32 : op.outputs;
  const dim3 grid(static_cast<unsigned>((threads + kThreads - 1) / kThreads),
                  static_cast<unsigned>((op.length + chunk - 1) / chunk), static_cast<unsigned>(batch));
  LinesKernel<Op, T, kVariant><<<grid, kThreads, 0, stream>>>(op, chunk, contiguous);
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

cudaError_t SketchCheck(const SketchProblem& p, void* scratch_bytes, SketchResult* result, cudaStream_t stream) {
  auto* scratch = static_cast<double*>(scratch_bytes);
  if (auto e = cudaMemsetAsync(scratch, 0, SketchScratchBytes(p), stream); e != cudaSuccess) return e;
  if (auto e = cudaMemsetAsync(result, 0, sizeof(SketchResult), stream); e != cudaSuccess) return e;
  const int64_t signs = SketchLayout{p.m, p.n, p.k}.sign_words();
  SignsKernel<<<static_cast<unsigned>((signs + 255) / 256), 256, 0, stream>>>(p, scratch);
  const sketch::Passes passes = sketch::PassesOf(p, scratch);
  // The k-vectors first, then the operands' lines that read them.
  for (const sketch::OperandLines* op : {&passes.b_rows, &passes.a_columns, &passes.a_rows, &passes.b_columns}) {
    if (auto e = LaunchLines(*op, p.batch, stream); e != cudaSuccess) return e;
  }
  const dim3 lines(static_cast<unsigned>((p.m + p.n + 255) / 256), static_cast<unsigned>(p.batch));
  NormsKernel<<<lines, 256, 0, stream>>>(p, scratch);
  for (const sketch::DLines* op : {&passes.d_rows, &passes.d_columns}) {
    if (auto e = LaunchLines(*op, p.batch, stream); e != cudaSuccess) return e;
  }
  JudgeKernel<<<lines, 256, 0, stream>>>(p, scratch, result);
  LaunchSketchSamples(p, scratch, result, stream);
  return cudaGetLastError();
}

}  // namespace gemm
