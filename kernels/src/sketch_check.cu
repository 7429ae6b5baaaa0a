// VERIFICATION_FAST's passes on the GPU (gemm/sketch_check.h): six reductions
// over the operands and D, then a verdict per row and column and a block
// per sampled element. The sums (fp64, sketch_lines.h) are added up across
// blocks by atomics (their order varies; the bound leaves room for it).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "common/atomic_max.h"
#include "gemm/sketch_check_gpu.h"
#include "sketch_lines.h"

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
template <class Op, bool kVariant>
constexpr int LinesPerWarp() {
  return std::is_same_v<Op, sketch::DLines> && kVariant ? 1 : 2;
}

// A warp's LinesPerWarp outputs from `first`, elements [r0, r1) of each.
template <class Op, ElementType T, bool kVariant>
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
    float x[L][kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
#pragma unroll
      for (int i = 0; i < L; ++i) x[i][u] = op.template Load<T, true>(lines[i], r + 32 * u);
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
      op.template Accumulate<T, kVariant>(lines[i], r, op.template Load<T, true>(lines[i], r), plus, sums[i],
                                          partials[i]);
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
template <class Op, ElementType T, bool kVariant>
__device__ void ThreadLine(const Op& op, int64_t e, int64_t o, int64_t r0, int64_t r1) {
  constexpr int N = Op::kSums;
  double sums[N] = {};
  float partials[Op::kPartials + 1] = {};
  const typename Op::Line line = op.Begin(e, o);
  int64_t r = r0;
  for (; r + kInFlightPerThread - 1 < r1; r += kInFlightPerThread) {
    float x[kInFlightPerThread];
#pragma unroll
    for (int u = 0; u < kInFlightPerThread; ++u) x[u] = op.template Load<T>(line, r + u);
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
    op.template Accumulate<T, kVariant>(line, r, op.template Load<T>(line, r), plus, sums, partials);
  }
  Op::Flush(partials, sums);
  for (int s = 0; s < N; ++s) atomicAdd(op.Out(e, s, o), sums[s]);
}

template <class Op, ElementType T, bool kVariant>
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

template <class Op, ElementType T, bool kVariant>
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
  return op.variant() ? LaunchVariant<Op, T, true>(op, batch, stream) : LaunchVariant<Op, T, false>(op, batch, stream);
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

// A block per sample: the exact product over K, the block's threads side by
// side along K, four elements of each operand loaded before they are summed,
// then one sum per warp and one for the block. (A warp per sample left
// 2,048 warps each walking K alone: 65 us at 4096^3 on an H100, waiting on
// memory at a quarter of the SM's warps.) T: both operands' type, or kF32
// for "look it up per element" where they differ.
constexpr int kSampleThreads = 128;

// Eight 16-bit elements of type T, widened.
template <ElementType T>
__device__ inline void Widen8(const uint4& v, float (&out)[8]) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    if constexpr (T == ElementType::kF16) {
      const float2 pair = __half22float2(*reinterpret_cast<const __half2*>(&words[w]));
      out[2 * w] = pair.x, out[2 * w + 1] = pair.y;
    } else {
      out[2 * w] = __uint_as_float(words[w] << 16), out[2 * w + 1] = __uint_as_float(words[w] & 0xffff0000u);
    }
  }
}

// Where a sample's row of A and column of B both run along K in memory
// from 16-byte boundaries (K-contiguous operands, as gemmd stores its
// plain GEMM's): this thread's share of the product over the first 8·⌊k/8⌋
// elements, eight of each operand a load. An fp16 product is exact in fp32
// (22 significant bits, 2^-48 and up); a bf16 product may not be, so it is
// formed in fp64.
template <ElementType T>
__device__ double VectorProduct(const uint16_t* a, const uint16_t* b, int64_t k) {
  constexpr int64_t kStep = 8 * kSampleThreads;
  double sum = 0;
  auto add = [&](const uint4& va, const uint4& vb) {
    float x[8], y[8];
    Widen8<T>(va, x);
    Widen8<T>(vb, y);
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      if constexpr (T == ElementType::kF16) {
        sum += static_cast<double>(x[u] * y[u]);
      } else {
        sum += static_cast<double>(x[u]) * y[u];
      }
    }
  };
  int64_t kk = 8 * int64_t{threadIdx.x};
  for (; kk + kStep + 8 <= k; kk += 2 * kStep) {  // two of each in flight
    const uint4 a0 = *reinterpret_cast<const uint4*>(a + kk), b0 = *reinterpret_cast<const uint4*>(b + kk);
    const uint4 a1 = *reinterpret_cast<const uint4*>(a + kk + kStep);
    const uint4 b1 = *reinterpret_cast<const uint4*>(b + kk + kStep);
    add(a0, b0);
    add(a1, b1);
  }
  if (kk + 8 <= k) add(*reinterpret_cast<const uint4*>(a + kk), *reinterpret_cast<const uint4*>(b + kk));
  return sum;
}

template <ElementType T, bool kTyped>
__global__ void __launch_bounds__(kSampleThreads) SamplesKernel(SketchProblem p, const double* scratch,
                                                                 SketchResult* result) {
  const int64_t s = blockIdx.x, e = blockIdx.y;
  const sketch::SampleAt at = sketch::SampleOf(p, e, s);
  const int64_t a_base = e * p.a.batch_stride + at.i * p.a.row_stride;
  const int64_t b_base = e * p.b.batch_stride + at.j * p.b.col_stride;
  const ElementType ta = kTyped ? T : p.a.type, tb = kTyped ? T : p.b.type;
  double sum = 0;
  int64_t kk = threadIdx.x;
  if constexpr (kTyped) {
    const uint16_t* a = static_cast<const uint16_t*>(p.a.data) + a_base;
    const uint16_t* b = static_cast<const uint16_t*>(p.b.data) + b_base;
    if (p.a.col_stride == 1 && p.b.row_stride == 1 && reinterpret_cast<uintptr_t>(a) % 16 == 0 &&
        reinterpret_cast<uintptr_t>(b) % 16 == 0) {
      sum = VectorProduct<T>(a, b, p.k);
      kk = p.k / 8 * 8 + threadIdx.x;  // the rest, fewer than eight, below
    }
  }
  for (; kk + 3 * kSampleThreads < p.k; kk += 4 * kSampleThreads) {
    float a[4], b[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      a[u] = LoadElement(ta, p.a.data, a_base + (kk + kSampleThreads * u) * p.a.col_stride);
      b[u] = LoadElement(tb, p.b.data, b_base + (kk + kSampleThreads * u) * p.b.row_stride);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) sum += static_cast<double>(a[u]) * b[u];
  }
  for (; kk < p.k; kk += kSampleThreads) {
    sum += static_cast<double>(LoadElement(ta, p.a.data, a_base + kk * p.a.col_stride)) *
           LoadElement(tb, p.b.data, b_base + kk * p.b.row_stride);
  }
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  __shared__ double warp_sums[kSampleThreads / 32];
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = sum;
  __syncthreads();
  if (threadIdx.x != 0) return;
  sum = 0;
  for (int w = 0; w < kSampleThreads / 32; ++w) sum += warp_sums[w];
  const sketch::SampleVerdict v = sketch::JudgeSample(p, scratch, e, at, sum);
  atomicAdd(&result->samples, 1ull);
  if (v.failed) atomicAdd(&result->failed_samples, 1ull);
  if (v.error - v.error == 0) AtomicMaxNonNegative(&result->max_sample_error, static_cast<float>(v.error));
  if (v.accumulation >= 0) AtomicMaxNonNegative(&result->sample_atol, static_cast<float>(v.accumulation));
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
  const dim3 samples(static_cast<unsigned>(sketch::SamplesPerEntry(p)), static_cast<unsigned>(p.batch));
  if (p.a.type == p.b.type && p.a.type == ElementType::kF16) {
    SamplesKernel<ElementType::kF16, true><<<samples, kSampleThreads, 0, stream>>>(p, scratch, result);
  } else if (p.a.type == p.b.type && p.a.type == ElementType::kBF16) {
    SamplesKernel<ElementType::kBF16, true><<<samples, kSampleThreads, 0, stream>>>(p, scratch, result);
  } else {
    SamplesKernel<ElementType::kF32, false><<<samples, kSampleThreads, 0, stream>>>(p, scratch, result);
  }
  return cudaGetLastError();
}

}  // namespace gemm
