// The words of the pattern diagnostics (gemm/diagnose.h) that name each
// fault the tests plant, in the CPU simulation (diagnose_test.cpp) and in
// the real sm_90a kernels (gpu/planted_faults_gpu_test.cpp). A fault is
// diagnosed as itself when its phrase is in the diagnosis and no other
// fault's is.
#pragma once

#include <string>

namespace gemm {

struct FaultPhrase {
  const char* fault;
  const char* phrase;
};

inline constexpr FaultPhrase kFaultPhrases[] = {
    {"K16 advance", "start-address advance"},
    {"stride byte offset", "stride byte offset"},
    {"epilogue rows", "within each 32-row quarter are permuted"},
    {"accumulate flag", "accumulate flag"},
    {"pair loads", "tile halves swapped between the CTAs of a pair"},
    {"stage phase", "phase"},
    {"swizzle", "swizzle"},
};

inline std::string PhraseOf(const std::string& fault) {
  for (const auto& f : kFaultPhrases) {
    if (fault == f.fault) return f.phrase;
  }
  return "(no phrase for " + fault + ")";
}

// The other faults whose phrases `diagnosis` holds, comma-separated.
inline std::string OtherFaultsNamed(const std::string& diagnosis, const std::string& fault) {
  std::string others;
  for (const auto& f : kFaultPhrases) {
    if (fault != f.fault && diagnosis.find(f.phrase) != std::string::npos) others += (others.empty() ? "" : ", ") + std::string(f.fault);
  }
  return others;
}

}  // namespace gemm
