// gemm/form_ops.h says what these are. Plain CUDA-core code on purpose:
// the reference must share no instruction, library or tiling with cuBLASLt.
#include "gemm/form_ops.h"

#include <algorithm>
#include <cmath>

#include "common/atomic_max.h"

namespace gemm {
namespace {

unsigned GridFor(uint64_t count, unsigned threads = 256) {
  const uint64_t blocks = (count + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 * 4 ? (blocks == 0 ? 1 : blocks) : 65535 * 4);
}

__global__ void FillRandomKernel(void* dst, ElementType type, uint64_t count, uint64_t stream) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += uint64_t{gridDim.x} * blockDim.x) {
    StoreElement(type, dst, i, RandomValueAs(type, stream, i));
  }
}

__global__ void ConvertKernel(const float* src, ElementType type, void* dst, uint64_t count) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += uint64_t{gridDim.x} * blockDim.x) {
    StoreElement(type, dst, i, src[i]);
  }
}

__global__ void WidenKernel(const void* src, ElementType type, __half* dst, uint64_t count) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += uint64_t{gridDim.x} * blockDim.x) {
    dst[i] = __float2half_rn(LoadElement(type, src, i));
  }
}

// A 64×64 block of outputs per 16×16 threads, each thread 4×4 of them
// (rows ty + 16u, columns tx + 16v), over 16-deep steps of K whose op(A)
// and op(B) tiles are widened to fp64 in shared memory: half a shared load
// per fp64 FMA, where one output per thread took two. Batch entry per
// blockIdx.z. Each sum runs over K in order, in fp64.
constexpr int kBlock = 64, kStep = 16, kThreadsPerSide = 16, kPerThread = kBlock / kThreadsPerSide;

__global__ void __launch_bounds__(256) ReferenceKernel(FormProblem p, double* ref) {
  __shared__ double as[kStep][kBlock + 1], bs[kStep][kBlock + 1];
  const GemmForm& f = p.form;
  const int64_t e = blockIdx.z;
  const int64_t row0 = int64_t{blockIdx.y} * kBlock, col0 = int64_t{blockIdx.x} * kBlock;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kThreadsPerSide + tx;
  const uint64_t a0 = static_cast<uint64_t>(e * f.stride_a), b0 = static_cast<uint64_t>(e * f.stride_b);
  double acc[kPerThread][kPerThread] = {};
  for (int64_t k0 = 0; k0 < p.k; k0 += kStep) {
    // 1,024 elements of each tile, four per thread; neighbouring threads
    // take neighbouring k (K-contiguous operands read in runs).
#pragma unroll
    for (int l = 0; l < kPerThread; ++l) {
      const int idx = tid + l * kThreadsPerSide * kThreadsPerSide, r = idx / kStep, kk = idx % kStep;
      const int64_t i = row0 + r, j = col0 + r, kg = k0 + kk;
      as[kk][r] = i < p.m && kg < p.k ? LoadElement(f.a, p.a, a0 + IndexInA(f, p.m, p.k, i, kg)) : 0.0;
      bs[kk][r] = j < p.n && kg < p.k ? LoadElement(f.b, p.b, b0 + IndexInB(f, p.n, p.k, kg, j)) : 0.0;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kStep; ++kk) {
      double a[kPerThread], b[kPerThread];
#pragma unroll
      for (int u = 0; u < kPerThread; ++u) {
        a[u] = as[kk][ty + kThreadsPerSide * u];
        b[u] = bs[kk][tx + kThreadsPerSide * u];
      }
#pragma unroll
      for (int u = 0; u < kPerThread; ++u) {
#pragma unroll
        for (int v = 0; v < kPerThread; ++v) acc[u][v] = fma(a[u], b[v], acc[u][v]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int u = 0; u < kPerThread; ++u) {
#pragma unroll
    for (int v = 0; v < kPerThread; ++v) {
      const int64_t i = row0 + ty + kThreadsPerSide * u, j = col0 + tx + kThreadsPerSide * v;
      if (i >= p.m || j >= p.n) continue;
      double value = f.ProductScale() * acc[u][v];
      if (f.ReadsC()) value += f.beta * LoadElement(f.c, p.c, static_cast<uint64_t>(e * f.stride_c + i * p.n + j));
      ref[(static_cast<uint64_t>(e) * p.m + i) * p.n + j] = value;
    }
  }
}

// The largest ‖row‖₂ over K of one operand, `mn` rows (M of A, N of B) in
// each of `gridDim.y` batch entries `stride` apart, into *out. A block takes
// 32 rows, and its reads run along memory whichever way they are stored:
// stored mn × k, a warp takes a row, its lanes along K; stored k × mn, lane
// i takes the i-th row (a column of storage, so a warp reads 32 adjacent
// elements) and each warp a 32nd of K. Loads unrolled eight deep, the type
// a template parameter so that each is one load and a widening; sums of
// squares in fp64, as the reference's.
constexpr int kNormWarps = 32, kNormThreads = 32 * kNormWarps;

template <ElementType kType, bool kKContiguous>
__global__ void __launch_bounds__(kNormThreads) NormsKernel(const void* x, int64_t mn, int64_t k, int64_t stride,
                                                            float* out) {
  const uint64_t base = static_cast<uint64_t>(blockIdx.y) * static_cast<uint64_t>(stride);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  double sum = 0;
  if constexpr (kKContiguous) {
    const int64_t row = int64_t{blockIdx.x} * 32 + warp;
    if (row < mn) {
      const uint64_t first = base + static_cast<uint64_t>(row) * k;
#pragma unroll 8
      for (int64_t kk = lane; kk < k; kk += 32) {
        const double v = LoadElement(kType, x, first + kk);
        sum += v * v;
      }
    }
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffff, sum, offset);
    if (lane == 0) AtomicMaxNonNegative(out, static_cast<float>(sqrt(sum)));
  } else {
    __shared__ double partial[kNormWarps][32];
    const int64_t row = int64_t{blockIdx.x} * 32 + lane;
    if (row < mn) {
#pragma unroll 8
      for (int64_t kk = warp; kk < k; kk += kNormWarps) {
        const double v = LoadElement(kType, x, base + static_cast<uint64_t>(kk) * mn + row);
        sum += v * v;
      }
    }
    partial[warp][lane] = sum;
    __syncthreads();
    if (warp != 0) return;
    sum = 0;
    for (int w = 0; w < kNormWarps; ++w) sum += partial[w][lane];
    for (int offset = 16; offset > 0; offset /= 2) sum = fmax(sum, __shfl_down_sync(0xffffffff, sum, offset));
    if (lane == 0) AtomicMaxNonNegative(out, static_cast<float>(sqrt(sum)));
  }
}

// NormsKernel over one operand: its type, layout and batch entries (one
// where the batch shares it).
cudaError_t LaunchNorms(const void* x, ElementType type, Layout layout, int64_t mn, int64_t k, int64_t stride,
                        int64_t batch, float* out, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((mn + 31) / 32), static_cast<unsigned>(stride == 0 ? 1 : batch));
  WithElementType(type, [&](auto t) {
    if (layout == Layout::kKContiguous) {
      NormsKernel<t.value, true><<<grid, kNormThreads, 0, stream>>>(x, mn, k, stride, out);
    } else {
      NormsKernel<t.value, false><<<grid, kNormThreads, 0, stream>>>(x, mn, k, stride, out);
    }
  });
  return cudaGetLastError();
}

__global__ void MaxAbsKernel(const void* c, ElementType type, uint64_t count, float* out) {
  float largest = 0;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += uint64_t{gridDim.x} * blockDim.x) {
    largest = fmaxf(largest, fabsf(LoadElement(type, c, i)));
  }
  WarpAtomicMaxNonNegative(out, largest);
}

// A reference's element i: the SIMT GEMM's fp64, or another tensor-core
// GEMM's D in its element type.
struct Fp64Reference {
  const double* data;
  __device__ double operator()(uint64_t i) const { return data[i]; }
};
struct TypedReference {
  const void* data;
  ElementType type;
  __device__ double operator()(uint64_t i) const { return LoadElement(type, data, i); }
};

// An element fails where d is not finite or not within the bound of the
// reference, a reference that is not finite included.
template <typename Reference>
__global__ void CompareKernel(const void* d, ElementType type, Reference ref, uint64_t count, double rtol,
                              double atol, FormBoundTerms terms, CompareResult* result) {
  const double term = terms.bound == nullptr
                          ? 0.0
                          : terms.product * terms.bound[0] * terms.bound[1] + terms.c * terms.bound[2];
  if (blockIdx.x == 0 && threadIdx.x == 0) result->accumulation_atol = static_cast<float>(term);
  unsigned long long mismatches = 0, non_finite = 0;
  float worst = 0;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += uint64_t{gridDim.x} * blockDim.x) {
    const double value = LoadElement(type, d, i);
    if (!isfinite(value)) {
      ++non_finite;
      ++mismatches;
      continue;
    }
    const double expected = ref(i);
    const double err = fabs(value - expected);
    worst = fmaxf(worst, static_cast<float>(err));
    if (!(err <= atol + term + rtol * fabs(expected))) ++mismatches;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    mismatches += __shfl_down_sync(0xffffffff, mismatches, offset);
    non_finite += __shfl_down_sync(0xffffffff, non_finite, offset);
  }
  if ((threadIdx.x & 31) == 0) {
    if (mismatches) atomicAdd(&result->mismatches, mismatches);
    if (non_finite) atomicAdd(&result->non_finite, non_finite);
  }
  WarpAtomicMaxNonNegative(&result->max_abs_error, worst);
}

// The grid of a pass that ends in atomics on one address: a few waves of
// blocks, each thread looping over elements. A thread an element made
// those atomics the comparison's cost: 0.41 ms at 4096² on an H100,
// against 0.03 for the plain GEMM's comparison.
constexpr unsigned kReducingBlocks = 1024;
unsigned ReducingGrid(uint64_t count) { return std::min(GridFor(count), kReducingBlocks); }

}  // namespace

cudaError_t FillRandom(void* dst, ElementType type, uint64_t count, uint64_t seed, OperandId operand,
                       cudaStream_t stream) {
  FillRandomKernel<<<GridFor(count), 256, 0, stream>>>(dst, type, count, RandomStream(seed, operand));
  return cudaGetLastError();
}

cudaError_t ConvertFromFloat(const float* src, ElementType type, void* dst, uint64_t count, cudaStream_t stream) {
  ConvertKernel<<<GridFor(count), 256, 0, stream>>>(src, type, dst, count);
  return cudaGetLastError();
}

cudaError_t WidenToF16(const void* src, ElementType type, __half* dst, uint64_t count, cudaStream_t stream) {
  WidenKernel<<<GridFor(count), 256, 0, stream>>>(src, type, dst, count);
  return cudaGetLastError();
}

cudaError_t ReferenceFormGemm(const FormProblem& p, double* ref, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.n + kBlock - 1) / kBlock), static_cast<unsigned>((p.m + kBlock - 1) / kBlock),
                  static_cast<unsigned>(p.form.batch));
  ReferenceKernel<<<grid, dim3(kThreadsPerSide, kThreadsPerSide), 0, stream>>>(p, ref);
  return cudaGetLastError();
}

cudaError_t FormBoundInputs(const FormProblem& p, float* bound, cudaStream_t stream) {
  if (auto e = cudaMemsetAsync(bound, 0, 3 * sizeof(float), stream); e != cudaSuccess) return e;
  const GemmForm& f = p.form;
  if (auto e = LaunchNorms(p.a, f.a, f.a_layout, p.m, p.k, f.stride_a, f.batch, bound, stream); e != cudaSuccess) {
    return e;
  }
  if (auto e = LaunchNorms(p.b, f.b, f.b_layout, p.n, p.k, f.stride_b, f.batch, bound + 1, stream); e != cudaSuccess) {
    return e;
  }
  if (!p.form.ReadsC()) return cudaSuccess;
  const uint64_t c_count = StorageOfC(p.form, p.m, p.n).Footprint(p.form.batch);
  MaxAbsKernel<<<ReducingGrid(c_count), 256, 0, stream>>>(p.c, p.form.c, c_count, bound + 2);
  return cudaGetLastError();
}

cudaError_t CompareForm(const void* d, ElementType type, const double* ref, uint64_t count, double rtol, double atol,
                        FormBoundTerms terms, CompareResult* result, cudaStream_t stream) {
  if (auto e = cudaMemsetAsync(result, 0, sizeof(CompareResult), stream); e != cudaSuccess) return e;
  CompareKernel<<<ReducingGrid(count), 256, 0, stream>>>(d, type, Fp64Reference{ref}, count, rtol, atol, terms,
                                                        result);
  return cudaGetLastError();
}

cudaError_t CompareForm(const void* d, ElementType type, const void* ref, ElementType ref_type, uint64_t count,
                        double rtol, double atol, FormBoundTerms terms, CompareResult* result, cudaStream_t stream) {
  if (auto e = cudaMemsetAsync(result, 0, sizeof(CompareResult), stream); e != cudaSuccess) return e;
  CompareKernel<<<ReducingGrid(count), 256, 0, stream>>>(d, type, TypedReference{ref, ref_type}, count, rtol, atol,
                                                        terms, result);
  return cudaGetLastError();
}

}  // namespace gemm
