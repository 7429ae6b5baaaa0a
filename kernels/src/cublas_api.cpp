#include "cublas_api.h"

#include <dlfcn.h>

#include <mutex>

namespace gemm::detail {

const CublasApi* Cublas(std::string* error) {
  static CublasApi api;
  static std::string load_error;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = nullptr;
    for (const char* name : {"libcublas.so.13", "libcublas.so"}) {
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    }
    if (lib == nullptr) {
      load_error = std::string("cannot load cuBLAS: ") + dlerror();
      return;
    }
    auto bind = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
      if (fn == nullptr && load_error.empty()) load_error = std::string("cuBLAS lacks ") + symbol;
    };
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
  if (!load_error.empty()) {
    if (error) *error = load_error;
    return nullptr;
  }
  return &api;
}

}  // namespace gemm::detail
