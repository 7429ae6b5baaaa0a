// GPU tests skip, with the reason, where no usable GPU is.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

namespace gemmd::testing {

inline std::string NoGpuReason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(e);
  if (count == 0) return "no CUDA device is visible";
  return "";
}

#define SKIP_WITHOUT_GPU()                                         \
  do {                                                             \
    if (auto why = ::gemmd::testing::NoGpuReason(); !why.empty()) \
      GTEST_SKIP() << why;                                         \
  } while (0)

}  // namespace gemmd::testing
