// VERIFICATION_FAST's passes on the GPU (gemm/sketch_check.h): six reductions
// over the operands and D, each bandwidth-bound, then a verdict per row and
// column and a warp per sampled element. Every sum is fp64, added up across
// blocks by atomics (their order varies; the bound leaves room for it).
#include <cuda_runtime.h>

#include <algorithm>

#include "common/atomic_max.h"
#include "gemm/sketch_check_gpu.h"
#include "sketch_lines.h"

namespace gemm {
namespace {

using sketch::V;

// Output o's sums over a chunk of the reduction (blockIdx.y), batch entry
// blockIdx.z. Where the reduction runs along contiguous memory a warp
// shares an output (lanes side by side); else a thread takes an output and
// neighbouring threads read neighbouring elements. T: the matrix's type.
// Each thread issues kInFlight loads before it sums any (a lane of a warp
// per output; a thread per output, whose 2-byte loads carry less): at three
// blocks an SM, four left the passes waiting on memory (ncu, H100, 4096^2).
constexpr int kInFlight = 8, kInFlightPerThread = 16;

template <class Op, ElementType T, bool kVariant>
__global__ void __launch_bounds__(256, 3)
    LinesKernel(Op op, int64_t chunk, bool warp_per_output) {
  constexpr int N = Op::kSums;
  const int64_t outputs = op.outputs, length = op.length;
  const int64_t e = blockIdx.z;
  const int64_t r0 = int64_t{blockIdx.y} * chunk, r1 = r0 + chunk < length ? r0 + chunk : length;
  double sums[N] = {};
  int64_t o;
  if (warp_per_output) {
    const int lane = threadIdx.x & 31;
    o = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) >> 5;
    if (o < outputs) {
      const typename Op::Line line = op.Begin(e, o);
      int64_t r = r0 + lane;
      for (; r + 32 * (kInFlight - 1) < r1; r += 32 * kInFlight) {
        float x[kInFlight];
#pragma unroll
        for (int u = 0; u < kInFlight; ++u) x[u] = op.template Load<T, true>(line, r + 32 * u);
#pragma unroll
        for (int u = 0; u < kInFlight; ++u) op.template Accumulate<T, kVariant>(line, r + 32 * u, x[u], sums);
      }
      for (; r < r1; r += 32) op.template Accumulate<T, kVariant>(line, r, op.template Load<T, true>(line, r), sums);
    }
    for (int s = 0; s < N; ++s) {
      for (int offset = 16; offset > 0; offset >>= 1) sums[s] += __shfl_down_sync(0xffffffffu, sums[s], offset);
    }
    if (lane != 0) return;
  } else {
    o = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (o < outputs) {
      const typename Op::Line line = op.Begin(e, o);
      int64_t r = r0;
      for (; r + kInFlightPerThread - 1 < r1; r += kInFlightPerThread) {
        float x[kInFlightPerThread];
#pragma unroll
        for (int u = 0; u < kInFlightPerThread; ++u) x[u] = op.template Load<T>(line, r + u);
#pragma unroll
        for (int u = 0; u < kInFlightPerThread; ++u) op.template Accumulate<T, kVariant>(line, r + u, x[u], sums);
      }
      for (; r < r1; ++r) op.template Accumulate<T, kVariant>(line, r, op.template Load<T>(line, r), sums);
    }
  }
  if (o >= outputs) return;
  for (int s = 0; s < N; ++s) atomicAdd(op.Out(e, s, o), sums[s]);
}

template <class Op, ElementType T>
cudaError_t LaunchTyped(const Op& op, int64_t batch, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const bool contiguous = op.contiguous();
  const int64_t chunk = contiguous ? 2048 : 128;
  const int64_t threads = contiguous ? op.outputs * 32 : op.outputs;
  const dim3 grid(static_cast<unsigned>((threads + kThreads - 1) / kThreads),
                  static_cast<unsigned>((op.length + chunk - 1) / chunk), static_cast<unsigned>(batch));
  if (op.variant()) {
    LinesKernel<Op, T, true><<<grid, kThreads, 0, stream>>>(op, chunk, contiguous);
  } else {
    LinesKernel<Op, T, false><<<grid, kThreads, 0, stream>>>(op, chunk, contiguous);
  }
  return cudaGetLastError();
}

template <class Op>
cudaError_t LaunchLines(const Op& op, int64_t batch, cudaStream_t stream) {
  switch (op.type()) {
    case ElementType::kF16: return LaunchTyped<Op, ElementType::kF16>(op, batch, stream);
    case ElementType::kBF16: return LaunchTyped<Op, ElementType::kBF16>(op, batch, stream);
    case ElementType::kF32: return LaunchTyped<Op, ElementType::kF32>(op, batch, stream);
    case ElementType::kF8E4M3: return LaunchTyped<Op, ElementType::kF8E4M3>(op, batch, stream);
    case ElementType::kF8E5M2: return LaunchTyped<Op, ElementType::kF8E5M2>(op, batch, stream);
  }
  return cudaErrorInvalidValue;
}

__global__ void SignsKernel(SketchProblem p, double* scratch) {
  const int64_t index = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (index < SketchLayout{p.m, p.n, p.k}.sign_words()) sketch::MakeSignWord(p, scratch, index);
}

__global__ void NormsKernel(SketchProblem p, double* scratch) {
  const int64_t line = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (line < p.m + p.n) sketch::TakeNorm(p, scratch, blockIdx.y, line);
}

__global__ void JudgeKernel(SketchProblem p, const double* scratch, SketchResult* result) {
  const int64_t line = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const int64_t e = blockIdx.y;
  if (line >= p.m + p.n) return;
  const sketch::LineVerdict v = sketch::JudgeLine(p, scratch, e, line);
  if (v.failed) atomicAdd(&result->failed_lines, 1ull);
  if (line < p.m) {  // non-finite elements, counted once: by their rows
    const SketchLayout l{p.m, p.n, p.k};
    const double nf = sketch::Entries(p, scratch)[e * l.doubles() + l.d_row_non_finite() + line];
    if (nf > 0) atomicAdd(&result->non_finite, static_cast<unsigned long long>(nf));
  }
  AtomicMaxNonNegative(&result->worst_line_ratio, static_cast<float>(v.ratio));
  if (v.bound - v.bound == 0) {
    AtomicMaxNonNegative(line < p.m ? &result->largest_row_bound : &result->largest_column_bound,
                         static_cast<float>(v.bound));
  }
}

// A block per sample: the exact product over K, the block's threads side by
// side along K, four elements of each operand loaded before they are summed,
// then one sum per warp and one for the block. (A warp per sample left
// 2,048 warps each walking K alone: 65 us at 4096^3 on an H100, waiting on
// memory at a quarter of the SM's warps.) T: both operands' type, or kF32
// for "look it up per element" where they differ.
constexpr int kSampleThreads = 128;

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
