// gemm-bench's handling of a CUDA error: say where and what, and fail the
// run (return 1 from the function that checks); and the device a mode runs
// on.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>

#include "gemm/gemm.h"

#define BENCH_RETURN_ON_CUDA_ERROR(expr)                                                          \
  do {                                                                                            \
    cudaError_t e_ = (expr);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      return 1;                                                                                   \
    }                                                                                             \
  } while (0)

namespace gemm::bench {

// The mode's context on `device` and a non-blocking stream; false, with
// the reason printed, where either cannot be made.
inline bool OpenDevice(int device, DeviceContext* ctx, cudaStream_t* stream) {
  if (auto err = CreateContext(device, ctx); !err.empty()) {
    std::fprintf(stderr, "gemm-bench: %s\n", err.c_str());
    return false;
  }
  if (auto e = cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking); e != cudaSuccess) {
    std::fprintf(stderr, "gemm-bench: stream: %s\n", cudaGetErrorString(e));
    return false;
  }
  return true;
}

// A mode's device with two events to time its runs by.
struct TimedDevice {
  DeviceContext ctx;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
};

inline bool OpenTimedDevice(int device, TimedDevice* d) {
  if (!OpenDevice(device, &d->ctx, &d->stream)) return false;
  for (cudaEvent_t* e : {&d->start, &d->stop}) {
    if (auto err = cudaEventCreate(e); err != cudaSuccess) {
      std::fprintf(stderr, "gemm-bench: event: %s\n", cudaGetErrorString(err));
      return false;
    }
  }
  return true;
}

}  // namespace gemm::bench
