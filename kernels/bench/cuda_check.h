// gemm-bench's handling of a CUDA error: say where and what, and fail the
// run (return 1 from the function that checks).
#pragma once

#include <cuda_runtime.h>

#include <cstdio>

#define BENCH_RETURN_ON_CUDA_ERROR(expr)                                                          \
  do {                                                                                            \
    cudaError_t e_ = (expr);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      return 1;                                                                                   \
    }                                                                                             \
  } while (0)
