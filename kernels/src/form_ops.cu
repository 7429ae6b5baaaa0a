// gemm/form_ops.h says what these are. Plain CUDA-core code on purpose:
// the reference must share no instruction, library or tiling with cuBLASLt.
#include "gemm/form_ops.h"

#include <cmath>

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

constexpr int kTile = 16;

// One output element per thread, 16×16 tiles of op(A) and op(B) widened to
// fp64 in shared memory; batch entry per blockIdx.z.
__global__ void ReferenceKernel(FormProblem p, double* ref) {
  __shared__ double as[kTile][kTile + 1], bs[kTile][kTile + 1];
  const GemmForm& f = p.form;
  const int64_t e = blockIdx.z;
  const int64_t i = int64_t{blockIdx.y} * kTile + threadIdx.y;
  const int64_t j = int64_t{blockIdx.x} * kTile + threadIdx.x;
  const uint64_t a0 = static_cast<uint64_t>(e * f.stride_a), b0 = static_cast<uint64_t>(e * f.stride_b);
  double sum = 0;
  for (int64_t k0 = 0; k0 < p.k; k0 += kTile) {
    const int64_t ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    as[threadIdx.y][threadIdx.x] = i < p.m && ka < p.k ? LoadElement(f.a, p.a, a0 + IndexInA(f, p.m, p.k, i, ka)) : 0.0;
    bs[threadIdx.y][threadIdx.x] = kb < p.k && j < p.n ? LoadElement(f.b, p.b, b0 + IndexInB(f, p.n, p.k, kb, j)) : 0.0;
    __syncthreads();
#pragma unroll
    for (int t = 0; t < kTile; ++t) sum = fma(as[threadIdx.y][t], bs[t][threadIdx.x], sum);
    __syncthreads();
  }
  if (i >= p.m || j >= p.n) return;
  double value = f.ProductScale() * sum;
  if (f.ReadsC()) value += f.beta * LoadElement(f.c, p.c, static_cast<uint64_t>(e * f.stride_c + i * p.n + j));
  ref[(static_cast<uint64_t>(e) * p.m + i) * p.n + j] = value;
}

// Non-negative floats order as their bits do.
__device__ void AtomicMaxNonNegative(float* at, float value) {
  atomicMax(reinterpret_cast<unsigned*>(at), __float_as_uint(value));
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

__global__ void CompareKernel(const void* d, ElementType type, const double* ref, uint64_t count, double rtol,
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
    const double err = fabs(value - ref[i]);
    worst = fmaxf(worst, static_cast<float>(err));
    if (err > atol + term + rtol * fabs(ref[i])) ++mismatches;
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
  const dim3 grid(static_cast<unsigned>((p.n + kTile - 1) / kTile), static_cast<unsigned>((p.m + kTile - 1) / kTile),
                  static_cast<unsigned>(p.form.batch));
  ReferenceKernel<<<grid, dim3(kTile, kTile), 0, stream>>>(p, ref);
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
  CompareKernel<<<GridFor(count), 256, 0, stream>>>(d, type, ref, count, rtol, atol, terms, result);
  return cudaGetLastError();
}

}  // namespace gemm
