#include "cublas_api.h"

#include <dlfcn.h>

#include <initializer_list>
#include <mutex>
#include <string>
#include <type_traits>

namespace gemm::detail {
namespace {

// Once per Api: dlopen's the first of `names` and fills an Api with
// `bind_all`, which calls bind(field, symbol) for each of its functions.
// nullptr (and *error set) when the library or a symbol is missing.
template <typename Api, typename BindAll>
const Api* LoadOnce(std::initializer_list<const char*> names, const char* what, std::string* error,
                    BindAll bind_all) {
  static Api api;
  static std::string load_error;
  static std::once_flag once;
  std::call_once(once, [&] {
    void* lib = nullptr;
    for (const char* name : names) {
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    }
    if (lib == nullptr) {
      load_error = std::string("cannot load ") + what + ": " + dlerror();
      return;
    }
    auto bind = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
      if (fn == nullptr && load_error.empty()) load_error = std::string(what) + " lacks " + symbol;
    };
    bind_all(api, bind);
  });
  if (!load_error.empty()) {
    if (error) *error = load_error;
    return nullptr;
  }
  return &api;
}

}  // namespace

const CublasApi* Cublas(std::string* error) {
  return LoadOnce<CublasApi>({"libcublas.so.13", "libcublas.so"}, "cuBLAS", error, [](CublasApi& api, auto bind) {
    bind(api.Create, "cublasCreate_v2");
    bind(api.Destroy, "cublasDestroy_v2");
    bind(api.SetStream, "cublasSetStream_v2");
    bind(api.SetWorkspace, "cublasSetWorkspace_v2");
    bind(api.SetMathMode, "cublasSetMathMode");
    bind(api.GemmEx, "cublasGemmEx");
    bind(api.GemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
    bind(api.GetStatusName, "cublasGetStatusName");
    bind(api.GetStatusString, "cublasGetStatusString");
  });
}

const CublasLtApi* CublasLt(std::string* error) {
  return LoadOnce<CublasLtApi>(
      {"libcublasLt.so.13", "libcublasLt.so"}, "cuBLASLt", error, [](CublasLtApi& api, auto bind) {
        bind(api.Create, "cublasLtCreate");
        bind(api.Destroy, "cublasLtDestroy");
        bind(api.MatmulDescCreate, "cublasLtMatmulDescCreate");
        bind(api.MatmulDescDestroy, "cublasLtMatmulDescDestroy");
        bind(api.MatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
        bind(api.MatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
        bind(api.MatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
        bind(api.MatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute");
        bind(api.MatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate");
        bind(api.MatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy");
        bind(api.MatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
        bind(api.MatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
        bind(api.Matmul, "cublasLtMatmul");
      });
}

}  // namespace gemm::detail
