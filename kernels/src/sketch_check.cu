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

// One product of a sample's exact sum: fp16's is exact in fp32 (22
// significant bits, 2^-48 and up); the others' may not be, so they are
// formed in fp64.
template <ElementType T>
__device__ inline double ExactProduct(float x, float y) {
  if constexpr (T == ElementType::kF16) {
    return static_cast<double>(x * y);
  } else {
    return static_cast<double>(x) * y;
  }
}

// Where a sample's row of A and column of B both run along K in memory
// from 16-byte boundaries (K-contiguous operands, as gemmd stores its
// plain GEMM's): this thread's share of the product over the first 8·⌊k/8⌋
// elements, eight of each operand a load.
template <ElementType T>
__device__ double VectorProduct(const uint16_t* a, const uint16_t* b, int64_t k) {
  constexpr int64_t kStep = 8 * kSampleThreads;
  double sum = 0;
  auto add = [&](const uint4& va, const uint4& vb) {
    float x[8], y[8];
    Widen8<T>(va, x);
    Widen8<T>(vb, y);
#pragma unroll
    for (int u = 0; u < 8; ++u) sum += ExactProduct<T>(x[u], y[u]);
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

// A sample's verdict into the result.
__device__ void RecordSample(const SketchProblem& p, const double* scratch, int64_t e, sketch::SampleAt at,
                             double sum, SketchResult* result) {
  const sketch::SampleVerdict v = sketch::JudgeSample(p, scratch, e, at, sum);
  atomicAdd(&result->samples, 1ull);
  if (v.failed) atomicAdd(&result->failed_samples, 1ull);
  if (v.error - v.error == 0) AtomicMaxNonNegative(&result->max_sample_error, static_cast<float>(v.error));
  if (v.accumulation >= 0) AtomicMaxNonNegative(&result->sample_atol, static_cast<float>(v.accumulation));
}

// A block per sample (clusters of one element: both operands run along K).
template <ElementType T, bool kTyped>
__global__ void __launch_bounds__(kSampleThreads) SamplesKernel(SketchProblem p, const double* scratch,
                                                                 SketchResult* result) {
  const int64_t e = blockIdx.y;
  const sketch::SampleCluster cluster = sketch::SampleClusterOf(p, e, blockIdx.x);
  const sketch::SampleAt at{cluster.i, cluster.j};
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
  RecordSample(p, scratch, e, at, sum, result);
}

// N adjacent 16-bit elements of type T from `at`, widened: one or two
// vector loads (`at` 2N-byte aligned, or 16 where N is 16).
template <ElementType T, int N>
__device__ inline void LoadRun(const uint16_t* at, float (&out)[N]) {
  static_assert(N == 4 || N == 16);
  if constexpr (N == 16) {
    float half[8];
    Widen8<T>(reinterpret_cast<const uint4*>(at)[0], half);
    for (int u = 0; u < 8; ++u) out[u] = half[u];
    Widen8<T>(reinterpret_cast<const uint4*>(at)[1], half);
    for (int u = 0; u < 8; ++u) out[8 + u] = half[u];
  } else {
    const uint2 v = *reinterpret_cast<const uint2*>(at);
    float eight[8];
    Widen8<T>(make_uint4(v.x, v.y, 0, 0), eight);
    for (int u = 0; u < 4; ++u) out[u] = eight[u];
  }
}

// A cluster's N elements of one operand at one k, `k_offset` past each
// one's start `at`: a run loaded by LoadRun where `runs`, else one by one.
template <ElementType T, bool kTyped, int N>
__device__ inline void LoadCluster(const void* data, ElementType type, bool runs, const int64_t (&at)[N],
                                   int64_t k_offset, float (&out)[N]) {
  if constexpr (kTyped && N > 1) {
    if (runs) {
      LoadRun<T, N>(static_cast<const uint16_t*>(data) + at[0] + k_offset, out);
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = LoadElement(kTyped ? T : type, data, at[i] + k_offset);
}

// Whether a cluster's run of n elements of `m` (along its rows' stride 1)
// can be loaded by LoadRun at every k: whole, its start and the step
// between k's (`k_stride` elements) aligned to the run's bytes.
__device__ inline bool RunLoads(const StridedView& m, int64_t start, int n, int whole, int64_t k_stride) {
  const int64_t bytes = n == 16 ? 16 : 2 * n;
  return whole == n && reinterpret_cast<uintptr_t>(static_cast<const uint16_t*>(m.data) + start) % bytes == 0 &&
         (2 * k_stride) % bytes == 0;
}

// A block per cluster of R×C sampled elements whose operands' elements lie
// side by side (R rows of an op(A) stored K×M, C columns of an op(B) stored
// K×N: sketch_lines.h): the block's threads side by side along K, each
// reading at its k the cluster's R elements of op(A) and C of op(B), two
// k's of loads in flight before it sums the R·C products. (One sample a
// block walked K across rows: 93 us at 4096^3 on an H100, a 32-byte sector
// read for every 2-byte element.) 128 clusters make 128 blocks, a few
// warps an SM, so a block has 512 threads: each walks a quarter as far
// along K as 128 would. Rows and columns past D's edge repeat its last,
// and their sums are dropped.
constexpr int kClusterThreads = 512;
template <ElementType T, bool kTyped, int R, int C>
__global__ void __launch_bounds__(kClusterThreads) ClusterSamplesKernel(SketchProblem p, const double* scratch,
                                                                         SketchResult* result) {
  const int64_t e = blockIdx.y;
  const sketch::SampleCluster cluster = sketch::SampleClusterOf(p, e, blockIdx.x);
  const ElementType ta = kTyped ? T : p.a.type, tb = kTyped ? T : p.b.type;
  int64_t a_at[R], b_at[C];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    a_at[r] = e * p.a.batch_stride + (cluster.i + (r < cluster.rows ? r : cluster.rows - 1)) * p.a.row_stride;
  }
#pragma unroll
  for (int c = 0; c < C; ++c) {
    b_at[c] = e * p.b.batch_stride + (cluster.j + (c < cluster.cols ? c : cluster.cols - 1)) * p.b.col_stride;
  }
  // 16-bit runs whole and aligned (dense operands at widths of multiples
  // of 8, or pitched ones) load as vectors; the rest element by element.
  bool a_runs = false, b_runs = false;
  if constexpr (kTyped) {
    a_runs = R > 1 && RunLoads(p.a, a_at[0], R, cluster.rows, p.a.col_stride);
    b_runs = C > 1 && RunLoads(p.b, b_at[0], C, cluster.cols, p.b.row_stride);
  }
  double sums[R][C] = {};
  constexpr int kDepth = kTyped ? 2 : 1;  // the untyped loads branch on the type: two k's spilled 12-16 bytes
  for (int64_t k0 = threadIdx.x; k0 < p.k; k0 += kDepth * kClusterThreads) {
    float a[kDepth][R], b[kDepth][C];
#pragma unroll
    for (int u = 0; u < kDepth; ++u) {
      const int64_t kk = k0 + u * kClusterThreads < p.k ? k0 + u * kClusterThreads : k0;  // repeated, then zeroed
      LoadCluster<T, kTyped, R>(p.a.data, ta, a_runs, a_at, kk * p.a.col_stride, a[u]);
      LoadCluster<T, kTyped, C>(p.b.data, tb, b_runs, b_at, kk * p.b.row_stride, b[u]);
      if (k0 + u * kClusterThreads >= p.k) {
#pragma unroll
        for (int r = 0; r < R; ++r) a[u][r] = 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < kDepth; ++u) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int c = 0; c < C; ++c) sums[r][c] += ExactProduct<kTyped ? T : ElementType::kF32>(a[u][r], b[u][c]);
      }
    }
  }
  __shared__ double warp_sums[kClusterThreads / 32][R * C];
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      double sum = sums[r][c];
      for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
      if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5][r * C + c] = sum;
    }
  }
  __syncthreads();
  const int t = threadIdx.x, r = t / C, c = t % C;
  if (t >= R * C || r >= cluster.rows || c >= cluster.cols) return;
  double sum = 0;
  for (int w = 0; w < kClusterThreads / 32; ++w) sum += warp_sums[w][t];
  RecordSample(p, scratch, e, {cluster.i + r, cluster.j + c}, sum, result);
}

// The samples' kernel for the operands' type and the clusters' shape.
template <ElementType T, bool kTyped>
void LaunchSamples(const SketchProblem& p, const double* scratch, SketchResult* result, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(sketch::SampleClustersPerEntry(p)), static_cast<unsigned>(p.batch));
  const sketch::ClusterShape shape = sketch::SampleClusterShape(p);
  if (shape.rows == 16) {
    ClusterSamplesKernel<T, kTyped, 16, 1><<<grid, kClusterThreads, 0, stream>>>(p, scratch, result);
  } else if (shape.cols == 16) {
    ClusterSamplesKernel<T, kTyped, 1, 16><<<grid, kClusterThreads, 0, stream>>>(p, scratch, result);
  } else if (shape.rows == 4) {
    ClusterSamplesKernel<T, kTyped, 4, 4><<<grid, kClusterThreads, 0, stream>>>(p, scratch, result);
  } else {
    SamplesKernel<T, kTyped><<<grid, kSampleThreads, 0, stream>>>(p, scratch, result);
  }
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
  if (p.a.type == p.b.type && p.a.type == ElementType::kF16) {
    LaunchSamples<ElementType::kF16, true>(p, scratch, result, stream);
  } else if (p.a.type == p.b.type && p.a.type == ElementType::kBF16) {
    LaunchSamples<ElementType::kBF16, true>(p, scratch, result, stream);
  } else {
    LaunchSamples<ElementType::kF32, false>(p, scratch, result, stream);
  }
  return cudaGetLastError();
}

}  // namespace gemm
