// The BLAS, loaded with dlopen rather than linked.
//
// Why: OpenBLAS carries 60 KB of static TLS, and glibc carves every linked
// library's static TLS out of each thread's stack. prometheus-cpp's HTTP
// server (civetweb) runs its workers on fixed ~100 KB stacks, so with
// OpenBLAS linked a /metrics scrape overflowed one (seen: SIGSEGV in
// mg_printf). A library loaded with dlopen gets dynamic TLS instead.
#pragma once

#include <cblas.h>

#include <string>

namespace gemmd {

struct BlasApi {
  decltype(&cblas_sgemm) sgemm;
  decltype(&cblas_dgemm) dgemm;
  std::string library;  // which one was loaded
};

// Loads the system's CBLAS once; nullptr (and *error set) when none loads.
const BlasApi* Blas(std::string* error);

}  // namespace gemmd
