// Device-side helpers around a GEMM: server-generated inputs, poisoning, and
// the comparison with a reference that reads back a few numbers, not D.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "gemm/random_fill.h"

namespace gemm {

// dst[i] = RandomValue(seed, operand, i), the generator every engine shares.
cudaError_t FillRandom(__half* dst, uint64_t count, uint64_t seed, OperandId operand, cudaStream_t stream);

// Every element becomes 0xFFFF, an fp16 NaN: an element a kernel does not
// write then fails verification.
cudaError_t Poison(__half* dst, uint64_t count, cudaStream_t stream);

struct CompareResult {
  unsigned long long mismatches;  // |d - ref| > atol + rtol·|ref|, or non-finite
  unsigned long long non_finite;  // NaN or Inf in d
  float max_abs_error;            // over finite elements
};

// Compares d with ref into *result (device memory, zeroed by this call).
cudaError_t Compare(const __half* d, const __half* ref, uint64_t count, float rtol, float atol,
                    CompareResult* result, cudaStream_t stream);

}  // namespace gemm
