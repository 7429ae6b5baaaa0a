// Device-side helpers for the forms beyond fp16 A·Bᵀ (gemm/form.h): inputs
// generated in any element type, an fp32 D rounded to its type, and the
// verification of step 0's forms against a reference that shares nothing
// with cuBLASLt: fp64 sums on the fp64 tensor cores (DMMA), compared
// element by element.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gemm/device_ops.h"
#include "gemm/form.h"

namespace gemm {

// dst[i] = RandomValueAs(type, stream of (seed, operand), i) for i < count:
// what every engine generates for a seeded operand of that type.
cudaError_t FillRandom(void* dst, ElementType type, uint64_t count, uint64_t seed, OperandId operand,
                       cudaStream_t stream);

// dst[i] = src[i] rounded to `type`.
cudaError_t ConvertFromFloat(const float* src, ElementType type, void* dst, uint64_t count, cudaStream_t stream);

// dst[i] = src[i] of `type` as fp16, for a type whose every value fp16
// holds exactly (fp8: gemm::WidenedToF16).
cudaError_t WidenToF16(const void* src, ElementType type, __half* dst, uint64_t count, cudaStream_t stream);

// ref = α'·op(A)·op(B) + β·C per batch entry, dense batch·m·n, in fp64:
// every product of the stored types is exact in fp64, and the sum's
// rounding (K·2^-53 relative) is far below any fp32-accumulated GEMM's.
cudaError_t ReferenceFormGemm(const FormProblem& p, double* ref, cudaStream_t stream);

// The verification bound's inputs (gemm/form.h, FormAccumulationAtol) into
// bound[0..3) (zeroed by this call): the largest ‖row‖₂ of op(A), of
// ‖column‖₂ of op(B), over the batch, and the largest |c|.
cudaError_t FormBoundInputs(const FormProblem& p, float* bound, cudaStream_t stream);

// d (count elements of `type`) against ref under |d - ref| <= atol +
// rtol·|ref| + term, term = product·bound[0]·bound[1] + c·bound[2]
// computed on the device from FormBoundInputs' output, into *result
// (zeroed by this call).
struct FormBoundTerms {
  const float* bound = nullptr;
  double product = 0, c = 0;
};
cudaError_t CompareForm(const void* d, ElementType type, const double* ref, uint64_t count, double rtol, double atol,
                        FormBoundTerms terms, CompareResult* result, cudaStream_t stream);
// The same against another tensor-core GEMM's D (`ref`, of `ref_type`). The
// bound already counts two fp32-accumulated GEMMs, each rounding once
// (gemm/form.h). Either way an element also fails where the reference is
// not finite.
cudaError_t CompareForm(const void* d, ElementType type, const void* ref, ElementType ref_type, uint64_t count,
                        double rtol, double atol, FormBoundTerms terms, CompareResult* result, cudaStream_t stream);

}  // namespace gemm
