#include "engine/blas_api.h"

#include <dlfcn.h>

#include <mutex>

namespace gemmd {

const BlasApi* Blas(std::string* error) {
  static BlasApi api;
  static std::string load_error;
  static std::once_flag once;
  std::call_once(once, [] {
    // OpenBLAS first; Debian's libblas.so.3 alternative also exports CBLAS.
    for (const char* name : {"libopenblas.so.0", "libblas.so.3"}) {
      void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) continue;
      api.sgemm = reinterpret_cast<decltype(api.sgemm)>(dlsym(lib, "cblas_sgemm"));
      api.dgemm = reinterpret_cast<decltype(api.dgemm)>(dlsym(lib, "cblas_dgemm"));
      if (api.sgemm && api.dgemm) {
        api.library = name;
        return;
      }
      dlclose(lib);
    }
    load_error = "no CBLAS library could be loaded (install libopenblas0 or libblas3)";
  });
  if (!load_error.empty()) {
    if (error) *error = load_error;
    return nullptr;
  }
  return &api;
}

}  // namespace gemmd
