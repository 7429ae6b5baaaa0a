// Kernels that go wrong on purpose, for the tests that prove the start-up
// self-test withdraws a step whose kernel hangs or faults.
#include "gemm/test_hooks.h"

namespace gemm::testing {
namespace {

__global__ void SpinForeverKernel(volatile int* never_set) {
  while (*never_set == 0) {
  }
}

__global__ void IllegalAddressKernel(int* out) {
  // An address no allocation covers: a sticky cudaErrorIllegalAddress that
  // ends CUDA for the whole process, as a wrong descriptor can.
  out[threadIdx.x + (1ull << 40)] = 1;
}

}  // namespace

cudaError_t LaunchHangingKernel(cudaStream_t stream) {
  int* flag = nullptr;
  if (cudaError_t e = cudaMallocAsync(&flag, sizeof(int), stream); e != cudaSuccess) return e;
  if (cudaError_t e = cudaMemsetAsync(flag, 0, sizeof(int), stream); e != cudaSuccess) return e;
  SpinForeverKernel<<<1, 1, 0, stream>>>(flag);
  return cudaGetLastError();  // the flag is never freed: nothing after the kernel runs
}

cudaError_t LaunchFaultingKernel(cudaStream_t stream) {
  IllegalAddressKernel<<<1, 32, 0, stream>>>(nullptr);
  return cudaGetLastError();
}

}  // namespace gemm::testing
