#include "gemm/device_ops.h"

namespace gemm {
namespace {

constexpr int kThreads = 256;

unsigned Blocks(uint64_t count) {
  const uint64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);  // grid-stride beyond
}

__global__ void FillRandomKernel(__half* dst, uint64_t count, uint64_t seed, OperandId operand) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += uint64_t{gridDim.x} * blockDim.x) {
    dst[i] = __float2half_rn(RandomValue(seed, operand, i));
  }
}

__global__ void CompareKernel(const __half* d, const __half* ref, uint64_t count, float rtol, float atol,
                              CompareResult* result) {
  unsigned long long mismatches = 0, non_finite = 0;
  float max_err = 0.0f;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += uint64_t{gridDim.x} * blockDim.x) {
    const float v = __half2float(d[i]);
    const float r = __half2float(ref[i]);
    if (!isfinite(v)) {
      ++non_finite;
      ++mismatches;
      continue;
    }
    const float err = fabsf(v - r);
    max_err = fmaxf(max_err, err);
    if (!(err <= atol + rtol * fabsf(r))) ++mismatches;  // a NaN reference fails too
  }
  for (int off = 16; off > 0; off /= 2) {
    mismatches += __shfl_down_sync(0xffffffffu, mismatches, off);
    non_finite += __shfl_down_sync(0xffffffffu, non_finite, off);
    max_err = fmaxf(max_err, __shfl_down_sync(0xffffffffu, max_err, off));
  }
  if ((threadIdx.x & 31) == 0) {
    if (mismatches) atomicAdd(&result->mismatches, mismatches);
    if (non_finite) atomicAdd(&result->non_finite, non_finite);
    // Non-negative floats order like their bit patterns.
    atomicMax(reinterpret_cast<unsigned*>(&result->max_abs_error), __float_as_uint(max_err));
  }
}

}  // namespace

cudaError_t FillRandom(__half* dst, uint64_t count, uint64_t seed, OperandId operand, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  FillRandomKernel<<<Blocks(count), kThreads, 0, stream>>>(dst, count, seed, operand);
  return cudaGetLastError();
}

cudaError_t Poison(__half* dst, uint64_t count, cudaStream_t stream) {
  return cudaMemsetAsync(dst, 0xFF, count * sizeof(__half), stream);
}

cudaError_t Compare(const __half* d, const __half* ref, uint64_t count, float rtol, float atol,
                    CompareResult* result, cudaStream_t stream) {
  if (cudaError_t e = cudaMemsetAsync(result, 0, sizeof(CompareResult), stream); e != cudaSuccess) return e;
  if (count == 0) return cudaSuccess;
  CompareKernel<<<Blocks(count), kThreads, 0, stream>>>(d, ref, count, rtol, atol, result);
  return cudaGetLastError();
}

L2Flush::~L2Flush() {
  if (buffer_ != nullptr) cudaFree(buffer_);
}

cudaError_t L2Flush::Init(int device) {
  int l2 = 0;
  if (cudaError_t e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device); e != cudaSuccess) return e;
  bytes_ = 2 * static_cast<uint64_t>(l2 > 0 ? l2 : 64 << 20);
  return cudaMalloc(&buffer_, bytes_);
}

cudaError_t L2Flush::Run(cudaStream_t stream) {
  if (buffer_ == nullptr) return cudaErrorInvalidValue;  // Init was not called or failed
  return cudaMemsetAsync(buffer_, ++fill_, bytes_, stream);
}

}  // namespace gemm
