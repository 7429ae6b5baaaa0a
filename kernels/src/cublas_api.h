// cuBLAS, loaded with dlopen rather than linked.
//
// Why: libcublasLt carries ~94 KB of static TLS. glibc counts every linked
// library's static TLS into the minimum stack of each new thread, and
// libraries that start threads with a fixed stack (civetweb inside
// prometheus-cpp's exposer asks for 100 KB) then fail pthread_create. A
// library loaded with dlopen gets dynamic TLS instead, so loading cuBLAS on
// first use keeps the rest of the process unaffected.
#pragma once

#include <cublas_v2.h>  // first: cublasLt.h uses its status type
#include <cublasLt.h>

#include <string>

namespace gemm::detail {

struct CublasApi {
  decltype(&cublasCreate_v2) Create;
  decltype(&cublasDestroy_v2) Destroy;
  decltype(&cublasSetStream_v2) SetStream;
  decltype(&cublasSetWorkspace_v2) SetWorkspace;
  decltype(&cublasSetMathMode) SetMathMode;
  // cublasGemmEx is overloaded in C++ (an inline computeType shim): name the C one.
  cublasStatus_t (*GemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                           const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                           cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  cublasStatus_t (*GemmStridedBatchedEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                         const void*, const void*, cudaDataType, int, long long, const void*,
                                         cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                         long long, int, cublasComputeType_t, cublasGemmAlgo_t);
  decltype(&cublasGetStatusName) GetStatusName;
  decltype(&cublasGetStatusString) GetStatusString;
};

// Loads libcublas.so.13 once; nullptr (and *error set) when it cannot.
const CublasApi* Cublas(std::string* error);

// The cuBLASLt calls step 0 makes: its heuristic (the one cublasGemmEx
// consults) and its matmul, for the plan (vendor_plan.cpp) and for every
// form beyond fp16 A·Bᵀ (vendor_forms.cpp).
struct CublasLtApi {
  decltype(&cublasLtCreate) Create;
  decltype(&cublasLtDestroy) Destroy;
  decltype(&cublasLtMatmulDescCreate) MatmulDescCreate;
  decltype(&cublasLtMatmulDescDestroy) MatmulDescDestroy;
  decltype(&cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute;
  decltype(&cublasLtMatrixLayoutCreate) MatrixLayoutCreate;
  decltype(&cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy;
  decltype(&cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute;
  decltype(&cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate;
  decltype(&cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute;
  decltype(&cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic;
  decltype(&cublasLtMatmul) Matmul;
};

// Loads libcublasLt.so.13 (already in the process once cuBLAS is) once.
const CublasLtApi* CublasLt(std::string* error);

}  // namespace gemm::detail
