// The element types a ladder step multiplies, on either family: A and B of
// one 16-bit type (fp16 or bf16), fp32 accumulators, D of either 16-bit
// type. Only two things change with them: the MMA's operand kind and the
// epilogue's rounding. Loads, swizzles, TMA boxes and stores move 16-bit
// elements whatever they hold, so the rest of every kernel is one code.
// Each step's kernels are templates on a StepTypes; its launch picks the
// instantiation for the problem (WithStepTypes) and its prepare sets every
// instantiation's attributes (ForEachStepTypes).
#pragma once

#include <cuda_runtime.h>

#include "gemm/element_type.h"
#include "gemm/gemm.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace gemm::common {

template <ElementType kOperandType, ElementType kResultType>
struct StepTypes {
  static constexpr ElementType kOperands = kOperandType;
  static constexpr ElementType kResult = kResultType;
};

// Calls f(StepTypes<...>{}) for the problem's types and returns what it
// returns. Launch() has refused every type the ladder does not take.
template <typename F>
auto WithStepTypes(const Problem& p, F&& f) {
  constexpr ElementType kF16 = ElementType::kF16, kBF16 = ElementType::kBF16;
  if (p.operands == kBF16) {
    return p.result == kBF16 ? f(StepTypes<kBF16, kBF16>{}) : f(StepTypes<kBF16, kF16>{});
  }
  return p.result == kBF16 ? f(StepTypes<kF16, kBF16>{}) : f(StepTypes<kF16, kF16>{});
}

// f(StepTypes<...>{}) for each pair the ladder takes; the first error.
template <typename F>
cudaError_t ForEachStepTypes(F&& f) {
  constexpr ElementType kF16 = ElementType::kF16, kBF16 = ElementType::kBF16;
  cudaError_t e = f(StepTypes<kF16, kF16>{});
  if (e == cudaSuccess) e = f(StepTypes<kF16, kBF16>{});
  if (e == cudaSuccess) e = f(StepTypes<kBF16, kF16>{});
  if (e == cudaSuccess) e = f(StepTypes<kBF16, kBF16>{});
  return e;
}

#if defined(__CUDACC__)
// D's rounding from fp32, to nearest even: one element, or a pair of
// adjacent columns (the lower column in the low 16 bits), as CUDA's own
// 16-bit types, so that the stores are the same instructions for both.
template <ElementType kType>
struct Rounding;
template <>
struct Rounding<ElementType::kF16> {
  using One = __half;
  using Pair = __half2;
  __device__ static One Round(float v) { return __float2half_rn(v); }
  __device__ static Pair RoundPair(float lo, float hi) { return __floats2half2_rn(lo, hi); }
};
template <>
struct Rounding<ElementType::kBF16> {
  using One = __nv_bfloat16;
  using Pair = __nv_bfloat162;
  __device__ static One Round(float v) { return __float2bfloat16_rn(v); }
  __device__ static Pair RoundPair(float lo, float hi) { return __floats2bfloat162_rn(lo, hi); }
};
#endif

}  // namespace gemm::common
