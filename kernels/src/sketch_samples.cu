// VERIFICATION_FAST's sampled elements (sketch_samples.h): a block per
// sample, or per cluster of samples whose operands' elements lie side by
// side, each summed exactly over K and judged by sketch::JudgeSample.
#include "sketch_samples.h"

#include <cuda_runtime.h>

#include "common/atomic_max.h"
#include "common/widen_eight.h"
#include "sketch_lines.h"

namespace gemm {
namespace {

// A block per sample: the exact product over K, the block's threads side by
// side along K, four elements of each operand loaded before they are summed,
// then one sum per warp and one for the block. (A warp per sample left
// 2,048 warps each walking K alone: 65 us at 4096^3 on an H100, waiting on
// memory at a quarter of the SM's warps.) T: both operands' type, or kF32
// for "look it up per element" where they differ.
constexpr int kSampleThreads = 128;

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

void LaunchSketchSamples(const SketchProblem& p, const double* scratch, SketchResult* result, cudaStream_t stream) {
  if (p.a.type == p.b.type && p.a.type == ElementType::kF16) {
    LaunchSamples<ElementType::kF16, true>(p, scratch, result, stream);
  } else if (p.a.type == p.b.type && p.a.type == ElementType::kBF16) {
    LaunchSamples<ElementType::kBF16, true>(p, scratch, result, stream);
  } else {
    LaunchSamples<ElementType::kF32, false>(p, scratch, result, stream);
  }
}

}  // namespace gemm
