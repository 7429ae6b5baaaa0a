// How gemm's row-major problems look to cuBLAS and cuBLASLt, for the three
// places that call them: step 0 (gemm.cpp), its plan and autotuner
// (vendor_plan.cpp) and every other form (vendor_forms.cpp).
//
// Row-major D = op(A)·op(B) is column-major Dᵀ = op(B)ᵀ·op(A)ᵀ: the
// library's "A" is our B and its "B" our A, each read as stored. B n×k is
// k×n column-major, read transposed; B stored k×n is n×k, read as it is;
// A m×k is k×m, read as it is; A stored k×m is m×k, read transposed.
#pragma once

#include <cstdint>

#include "cublas_api.h"
#include "gemm/element_type.h"
#include "gemm/form.h"

namespace gemm::detail {

inline cudaDataType_t CudaTypeOf(ElementType t) {
  switch (t) {
    case ElementType::kF16: return CUDA_R_16F;
    case ElementType::kBF16: return CUDA_R_16BF;
    case ElementType::kF32: return CUDA_R_32F;
    case ElementType::kF8E4M3: return CUDA_R_8F_E4M3;
    case ElementType::kF8E5M2: return CUDA_R_8F_E5M2;
  }
  return CUDA_R_16F;
}

// The library's op on its "A" (our B) and on its "B" (our A).
inline cublasOperation_t OpOfB(Layout b_layout) {
  return b_layout == Layout::kKContiguous ? CUBLAS_OP_T : CUBLAS_OP_N;
}
inline cublasOperation_t OpOfA(Layout a_layout) {
  return a_layout == Layout::kKContiguous ? CUBLAS_OP_N : CUBLAS_OP_T;
}

// A cuBLASLt matmul's transposes for operands stored as said.
inline void SetTransposes(const CublasLtApi& lt, cublasLtMatmulDesc_t desc, Layout a_layout, Layout b_layout) {
  const cublasOperation_t ta = OpOfB(b_layout), tb = OpOfA(a_layout);
  lt.MatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  lt.MatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
}

// Split-K partial sums summed in fp32, never in D's type: cuBLASLt's
// in-place and output-type schemes add them in a 16-bit D, which misses
// ladder.md's bound at long K (gemm.cpp's math mode says the same to
// cublasGemmEx). Kernels that do not split K take no reduction and stay.
inline void KeepSplitKSumsInFp32(const CublasLtApi& lt, cublasLtMatmulPreference_t pref) {
  const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes);
}

// A column-major rows×cols cuBLASLt layout, columns `ld` apart, and for a
// batch of more than one entry, entries `stride` elements apart. False
// (and *out null where it was not created) when cuBLASLt refuses it.
inline bool CreateLtLayout(const CublasLtApi& lt, cublasLtMatrixLayout_t* out, cudaDataType_t type, int64_t rows,
                           int64_t cols, int64_t ld, int64_t stride, int64_t batch) {
  if (lt.MatrixLayoutCreate(out, type, rows, cols, ld) != CUBLAS_STATUS_SUCCESS) {
    *out = nullptr;
    return false;
  }
  if (batch == 1) return true;
  const int32_t count = static_cast<int32_t>(batch);
  return lt.MatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count) ==
             CUBLAS_STATUS_SUCCESS &&
         lt.MatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride) ==
             CUBLAS_STATUS_SUCCESS;
}

}  // namespace gemm::detail
