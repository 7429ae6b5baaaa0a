// A ladder step built again with one fault planted in its kernel, for
// planted_faults_gpu_test.cpp. Each file beside this one is a step file of
// kernels/src/sm90 compiled as it is, with GEMM_SM90_PLANTED_FAULT choosing
// the fault (kernels/src/sm90/planted_fault.h) and the token `sm90`
// defined to a namespace of the file's own, so that the faulty step links
// beside the real one; it then hands out that namespace's entry points.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "gemm/gemm.h"

namespace gemm::testing {

struct PlantedStep {
  const char* fault;  // as tests/fault_phrases.h names it
  int step;
  cudaError_t (*prepare)();
  std::string (*launch)(const Problem&, const DeviceContext&, cudaStream_t);
};

}  // namespace gemm::testing
