#include "diagnose_run.h"

#include <cstdio>
#include <string>

#include "cuda_check.h"
#include "gemm/diagnose_step.h"
#include "gemm/gemm.h"
#include "gemm/steps.h"

namespace gemm::bench {

int RunDiagnostics(const std::vector<int>& steps, int device) {
  DeviceContext ctx;
  cudaStream_t stream;
  if (!OpenDevice(device, &ctx, &stream)) return 1;
  std::printf("| step | probe | diagnosis |\n| ---: | --- | --- |\n");
  bool all_exact = true;
  for (int step : steps) {
    const StepSupport support = Supports(step, ctx);
    if (FindStep(step) == nullptr || !support.supported) {
      std::printf("| %d | - | not run: %s |\n", step, FindStep(step) ? support.reason.c_str() : "no such step");
      continue;
    }
    for (const ProbeVerdict& v : DiagnoseStep(step, ctx, stream)) {
      all_exact &= v.verdict == "exact";
      std::printf("| %d | %s | %s |\n", step, v.probe.c_str(), v.verdict.c_str());
    }
    std::fflush(stdout);
  }
  cudaStreamDestroy(stream);
  DestroyContext(&ctx);
  return all_exact ? 0 : 1;
}

}  // namespace gemm::bench
