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
          Layout kBLayoutOf = Layout::kKContiguous, bool kFusedOf = false>
struct StepForm {
  static constexpr ElementType kOperands = kOperandType;
  static constexpr ElementType kResult = kResultType;
  static constexpr Layout kALayout = kALayoutOf;
  static constexpr Layout kBLayout = kBLayoutOf;
  // D = α·acc + β·C in fp32 before D's rounding (EpilogueArgs); otherwise
  // D = acc, and the epilogue is the plain GEMM's, instruction for
  // instruction.
  static constexpr bool kFused = kFusedOf;
};

// Steps 1-3 load both operands into K-major tiles whatever their storage
// (common/sync_load.h): their MMA reads this form.
template <typename Form>
using KMajorTiles = StepForm<Form::kOperands, Form::kResult, Layout::kKContiguous, Layout::kKContiguous,
                             Form::kFused>;

// What a fused epilogue needs: α, β and C (m×n of D's type, rows ldc
// apart; C may be D itself, each element being read by the thread that
// then writes it), and D's bounds. C is read only where β is not 0.
struct EpilogueArgs {
  float alpha = 1, beta = 0;
  const __half* c = nullptr;
  int64_t ldc = 0;
  int64_t m = 0, n = 0;
  int64_t c_stride = 0;  // elements from one batch entry's C to the next (0 without a C)

  // The same for batch entry `entry`.
  GEMM_HOST_DEVICE EpilogueArgs ForEntry(int entry) const {
    EpilogueArgs e = *this;
    e.c = c + entry * c_stride;
    return e;
  }
  // Batch entry `entry`'s C in the C tensor map: a C every entry shares is
  // a map of one entry (TmaProblem).
  GEMM_HOST_DEVICE int CMapEntry(int entry) const { return c_stride != 0 ? entry : 0; }
};

GEMM_HOST_DEVICE inline EpilogueArgs EpilogueOf(const Problem& p) {
  return EpilogueArgs{p.alpha, p.beta, p.c, p.ldc, p.m, p.n, p.c != nullptr ? p.stride_c : 0};
}

// Whether D is more than the product: the fused instantiation's case.
GEMM_HOST_DEVICE inline bool IsFused(const EpilogueArgs& e) { return e.alpha != 1.0f || e.beta != 0.0f; }
GEMM_HOST_DEVICE inline bool IsFused(const Problem& p) { return IsFused(EpilogueOf(p)); }

namespace step_form_detail {

constexpr ElementType kF16 = ElementType::kF16, kBF16 = ElementType::kBF16;
constexpr Layout kK = Layout::kKContiguous, kMn = Layout::kMnContiguous;

template <ElementType kIn, ElementType kOut, Layout kA, Layout kB, typename F>
auto WithFused(const Problem& p, F& f) {
  return IsFused(p) ? f(StepForm<kIn, kOut, kA, kB, true>{}) : f(StepForm<kIn, kOut, kA, kB, false>{});
}
template <ElementType kIn, ElementType kOut, Layout kA, typename F>
auto WithB(const Problem& p, F& f) {
  return p.b_layout == kMn ? WithFused<kIn, kOut, kA, kMn>(p, f) : WithFused<kIn, kOut, kA, kK>(p, f);
}
template <ElementType kIn, ElementType kOut, typename F>
auto WithA(const Problem& p, F& f) {
  return p.a_layout == kMn ? WithB<kIn, kOut, kMn>(p, f) : WithB<kIn, kOut, kK>(p, f);
}
template <ElementType kIn, typename F>
auto WithResult(const Problem& p, F& f) {
  return p.result == kBF16 ? WithA<kIn, kBF16>(p, f) : WithA<kIn, kF16>(p, f);
}

template <ElementType kIn, ElementType kOut, Layout kA, Layout kB, typename F>
cudaError_t EachFused(F& f) {
  const cudaError_t e = f(StepForm<kIn, kOut, kA, kB, false>{});
  return e != cudaSuccess ? e : f(StepForm<kIn, kOut, kA, kB, true>{});
}
template <ElementType kIn, ElementType kOut, Layout kA, typename F>
cudaError_t EachB(F& f) {
  const cudaError_t e = EachFused<kIn, kOut, kA, kK>(f);
  return e != cudaSuccess ? e : EachFused<kIn, kOut, kA, kMn>(f);
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
  __device__ static float Widen(One v) { return __half2float(v); }
};
template <>
struct Rounding<ElementType::kBF16> {
  using One = __nv_bfloat16;
  using Pair = __nv_bfloat162;
  __device__ static One Round(float v) { return __float2bfloat16_rn(v); }
  __device__ static Pair RoundPair(float lo, float hi) { return __floats2bfloat162_rn(lo, hi); }
  __device__ static float Widen(One v) { return __bfloat162float(v); }
};

// What D gets for accumulator `v` at (row, col) of D: v itself, or, fused,
// α·v + β·C[row, col] in fp32 (C read inside m×n only, and only where β
// is not 0).
template <typename Form>
__device__ inline float Fuse(float v, const EpilogueArgs& e, int64_t row, int64_t col) {
  if constexpr (!Form::kFused) {
    return v;
  } else {
    float out = e.alpha * v;
    if (e.beta != 0.0f && row < e.m && col < e.n) {
      using One = typename Rounding<Form::kResult>::One;
      out += e.beta * Rounding<Form::kResult>::Widen(reinterpret_cast<const One*>(e.c)[row * e.ldc + col]);
    }
    return out;
  }
}

// C at (row, col) and (row, col + 1) as one pair of D's type, where a fused
// epilogue reads it (inside m×n, β not 0), and 0 elsewhere: its bits, so
// that a caller may issue several before it uses any (a load whose value is
// widened inside its own branch waits there for its round trip). One
// 4-byte load where both lie inside n and the pair is aligned (an even
// ldc): the wgmma and TMEM layouts give each thread adjacent column pairs.
template <typename Form>
__device__ inline uint32_t CPairBits(const EpilogueArgs& e, int64_t row, int64_t col) {
  using One = typename Rounding<Form::kResult>::One;
  if (e.beta == 0.0f || row >= e.m || col >= e.n) return 0;
  const One* c = reinterpret_cast<const One*>(e.c) + row * e.ldc + col;
  if (col + 1 < e.n && (reinterpret_cast<uintptr_t>(c) & 3) == 0) return *reinterpret_cast<const uint32_t*>(c);
  const uint32_t lo = *reinterpret_cast<const uint16_t*>(c);
  const uint32_t hi = col + 1 < e.n ? *reinterpret_cast<const uint16_t*>(c + 1) : 0u;
  return lo | hi << 16;
}

// The pair's two elements, widened to fp32.
template <typename Form>
__device__ inline float2 WidenCPair(uint32_t bits) {
  using R = Rounding<Form::kResult>;
  const typename R::Pair pair = *reinterpret_cast<const typename R::Pair*>(&bits);
  return {R::Widen(pair.x), R::Widen(pair.y)};
}

// Accumulators lo and hi, fused with their C pair `c` (WidenCPair) and rounded
// as one pair of D's type: α·acc + β·c in fp32.
template <typename Form>
__device__ inline typename Rounding<Form::kResult>::Pair FuseWithC(float lo, float hi, float2 c,
                                                                   const EpilogueArgs& e) {
  lo *= e.alpha;
  hi *= e.alpha;
  if (e.beta != 0.0f) {
    lo += e.beta * c.x;
    hi += e.beta * c.y;
  }
  return Rounding<Form::kResult>::RoundPair(lo, hi);
}

// Accumulators lo and hi at (row, col) and (row, col + 1), fused as Fuse
// does and rounded as one pair of D's type.
template <typename Form>
__device__ inline typename Rounding<Form::kResult>::Pair FusePair(float lo, float hi, const EpilogueArgs& e,
                                                                  int64_t row, int64_t col) {
  if constexpr (!Form::kFused) {
    return Rounding<Form::kResult>::RoundPair(lo, hi);
  } else {
    return FuseWithC<Form>(lo, hi, WidenCPair<Form>(CPairBits<Form>(e, row, col)), e);
  }
}
#endif

}  // namespace gemm::common
