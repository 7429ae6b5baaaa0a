// gemm/form_ops.h says what these are. Plain CUDA-core code on purpose:
// the reference must share no instruction, library or tiling with cuBLASLt.
#include "gemm/form_ops.h"

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

// Thread v of entry blockIdx.y: ‖row v of op(A)‖ (v < m) or ‖column v - m
// of op(B)‖ (v >= m), over K. An operand the batch shares is entry 0's.
__global__ void NormsKernel(FormProblem p, float* bound) {
  const GemmForm& f = p.form;
  const int64_t v = int64_t{blockIdx.x} * blockDim.x + threadIdx.x, e = blockIdx.y;
  if (v >= p.m + p.n) return;
  if (e > 0 && (v < p.m ? f.stride_a : f.stride_b) == 0) return;
  double sum = 0;
  if (v < p.m) {
    const uint64_t a0 = static_cast<uint64_t>(e * f.stride_a);
    for (int64_t kk = 0; kk < p.k; ++kk) {
      const double x = LoadElement(f.a, p.a, a0 + IndexInA(f, p.m, p.k, v, kk));
      sum += x * x;
    }
  } else {
    const uint64_t b0 = static_cast<uint64_t>(e * f.stride_b);
    for (int64_t kk = 0; kk < p.k; ++kk) {
      const double y = LoadElement(f.b, p.b, b0 + IndexInB(f, p.n, p.k, kk, v - p.m));
      sum += y * y;
    }
  }
  AtomicMaxNonNegative(&bound[v < p.m ? 0 : 1], static_cast<float>(sqrt(sum)));
}

__global__ void MaxAbsKernel(const void* c, ElementType type, uint64_t count, float* out) {
  float largest = 0;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += uint64_t{gridDim.x} * blockDim.x) {
    largest = fmaxf(largest, fabsf(LoadElement(type, c, i)));
  }
  AtomicMaxNonNegative(out, largest);
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
    worst = fmaxf(worst, __shfl_down_sync(0xffffffff, worst, offset));
  }
  if ((threadIdx.x & 31) == 0) {
    if (mismatches) atomicAdd(&result->mismatches, mismatches);
    if (non_finite) atomicAdd(&result->non_finite, non_finite);
    AtomicMaxNonNegative(&result->max_abs_error, worst);
  }
}

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

cudaError_t ReferenceFormGemm(const FormProblem& p, double* ref, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.n + kBlock - 1) / kBlock), static_cast<unsigned>((p.m + kBlock - 1) / kBlock),
                  static_cast<unsigned>(p.form.batch));
  ReferenceKernel<<<grid, dim3(kThreadsPerSide, kThreadsPerSide), 0, stream>>>(p, ref);
  return cudaGetLastError();
}

cudaError_t FormBoundInputs(const FormProblem& p, float* bound, cudaStream_t stream) {
  if (auto e = cudaMemsetAsync(bound, 0, 3 * sizeof(float), stream); e != cudaSuccess) return e;
  const dim3 grid(static_cast<unsigned>((p.m + p.n + 127) / 128), static_cast<unsigned>(p.form.batch));
  NormsKernel<<<grid, 128, 0, stream>>>(p, bound);
  if (auto e = cudaGetLastError(); e != cudaSuccess) return e;
  if (!p.form.ReadsC()) return cudaSuccess;
  const uint64_t c_count = StorageOfC(p.form, p.m, p.n).Footprint(p.form.batch);
  MaxAbsKernel<<<GridFor(c_count), 256, 0, stream>>>(p.c, p.form.c, c_count, bound + 2);
  return cudaGetLastError();
}

cudaError_t CompareForm(const void* d, ElementType type, const double* ref, uint64_t count, double rtol, double atol,
                        FormBoundTerms terms, CompareResult* result, cudaStream_t stream) {
  if (auto e = cudaMemsetAsync(result, 0, sizeof(CompareResult), stream); e != cudaSuccess) return e;
  CompareKernel<<<GridFor(count), 256, 0, stream>>>(d, type, Fp64Reference{ref}, count, rtol, atol, terms, result);
  return cudaGetLastError();
}

cudaError_t CompareForm(const void* d, ElementType type, const void* ref, ElementType ref_type, uint64_t count,
                        double rtol, double atol, FormBoundTerms terms, CompareResult* result, cudaStream_t stream) {
  if (auto e = cudaMemsetAsync(result, 0, sizeof(CompareResult), stream); e != cudaSuccess) return e;
  CompareKernel<<<GridFor(count), 256, 0, stream>>>(d, type, TypedReference{ref, ref_type}, count, rtol, atol, terms,
                                                    result);
  return cudaGetLastError();
}

}  // namespace gemm
