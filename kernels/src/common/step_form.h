// What a ladder step's kernels are instantiated for, on either family:
// A and B of one 16-bit type (fp16 or bf16), fp32 accumulators, D of
// either 16-bit type, and each operand K-contiguous or MN-contiguous
// (A stored k×m, B stored k×n). The types change the MMA's operand kind and
// the epilogue's rounding; a layout changes how the operand's tiles are
// loaded (TMA boxes, or a transposing synchronous load) and, where the MMA
// reads them as they lie, its shared-memory descriptor and transpose bit.
// The rest of every kernel is one code. Each step's kernels are templates
// on a StepForm; its launch picks the instantiation for the problem
// (WithStepForm) and its prepare sets every instantiation's attributes
// (ForEachStepForm).
#pragma once

#include <cuda_runtime.h>

#include "gemm/element_type.h"
#include "gemm/form.h"
#include "gemm/gemm.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace gemm::common {

template <ElementType kOperandType, ElementType kResultType, Layout kALayoutOf = Layout::kKContiguous,
          Layout kBLayoutOf = Layout::kKContiguous>
struct StepForm {
  static constexpr ElementType kOperands = kOperandType;
  static constexpr ElementType kResult = kResultType;
  static constexpr Layout kALayout = kALayoutOf;
  static constexpr Layout kBLayout = kBLayoutOf;
};

// Steps 1-3 load both operands into K-major tiles whatever their storage
// (common/sync_load.h): their MMA reads this form.
template <typename Form>
using KMajorTiles = StepForm<Form::kOperands, Form::kResult>;

namespace step_form_detail {

constexpr ElementType kF16 = ElementType::kF16, kBF16 = ElementType::kBF16;
constexpr Layout kK = Layout::kKContiguous, kMn = Layout::kMnContiguous;

template <ElementType kIn, ElementType kOut, Layout kA, typename F>
auto WithB(const Problem& p, F& f) {
  return p.b_layout == kMn ? f(StepForm<kIn, kOut, kA, kMn>{}) : f(StepForm<kIn, kOut, kA, kK>{});
}
template <ElementType kIn, ElementType kOut, typename F>
auto WithA(const Problem& p, F& f) {
  return p.a_layout == kMn ? WithB<kIn, kOut, kMn>(p, f) : WithB<kIn, kOut, kK>(p, f);
}
template <ElementType kIn, typename F>
auto WithResult(const Problem& p, F& f) {
  return p.result == kBF16 ? WithA<kIn, kBF16>(p, f) : WithA<kIn, kF16>(p, f);
}

template <ElementType kIn, ElementType kOut, Layout kA, typename F>
cudaError_t EachB(F& f) {
  const cudaError_t e = f(StepForm<kIn, kOut, kA, kK>{});
  return e != cudaSuccess ? e : f(StepForm<kIn, kOut, kA, kMn>{});
}
template <ElementType kIn, ElementType kOut, typename F>
cudaError_t EachA(F& f) {
  const cudaError_t e = EachB<kIn, kOut, kK>(f);
  return e != cudaSuccess ? e : EachB<kIn, kOut, kMn>(f);
}
template <ElementType kIn, typename F>
cudaError_t EachResult(F& f) {
  const cudaError_t e = EachA<kIn, kF16>(f);
  return e != cudaSuccess ? e : EachA<kIn, kBF16>(f);
}

}  // namespace step_form_detail

// Calls f(StepForm<...>{}) for the problem's types and layouts and returns
// what it returns. Launch() has refused every form the ladder does not take.
template <typename F>
auto WithStepForm(const Problem& p, F&& f) {
  using namespace step_form_detail;
  return p.operands == kBF16 ? WithResult<kBF16>(p, f) : WithResult<kF16>(p, f);
}

// f(StepForm<...>{}) for each form the ladder takes; the first error.
template <typename F>
cudaError_t ForEachStepForm(F&& f) {
  using namespace step_form_detail;
  const cudaError_t e = EachResult<kF16>(f);
  return e != cudaSuccess ? e : EachResult<kBF16>(f);
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
