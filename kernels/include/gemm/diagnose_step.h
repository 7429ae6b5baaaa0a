// Runs a step on every diagnostic probe that fits it (gemm/diagnose.h) and
// reads each D: what gemm-bench --diagnose prints and what the start-up
// gate appends to a failing step's withdrawal reason.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

#include "gemm/gemm.h"
#include "gemm/steps.h"

namespace gemm {

struct ProbeVerdict {
  std::string probe;    // the probe's name
  std::string verdict;  // "exact", the diagnosis, or "did not run: ..."
};

// Stops after a probe whose launch or copy failed (a sticky error ends the
// context: nothing after it would run).
std::vector<ProbeVerdict> DiagnoseStep(int step, const DeviceContext& ctx, cudaStream_t stream);

// The same through any launcher that takes `limits`' shapes: for kernels
// outside the ladder's table (tests/gpu/planted_faults builds steps again
// with a fault planted).
using ProbeLauncher = std::function<std::string(const Problem&)>;
std::vector<ProbeVerdict> DiagnoseLauncher(const StepInfo& limits, const ProbeLauncher& launch, cudaStream_t stream);

// The distinct findings of `verdicts` that are not "exact", joined, at most
// `max_bytes` long: for a withdrawal reason.
std::string DiagnosisSummary(const std::vector<ProbeVerdict>& verdicts, size_t max_bytes = 800);

}  // namespace gemm
