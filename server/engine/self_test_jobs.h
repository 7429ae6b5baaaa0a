// The start-up self-test's GEMMs for one ladder step: which shapes and forms
// a step must compute right, D poisoned and verified, before gemmd offers
// it (CudaEngine::SelfTestStep runs them; engine/step_gate.h runs that in a
// helper process). Plain C++, so that what it covers is tested on the CPU.
#pragma once

#include <vector>

#include "engine/engine.h"
#include "gemm/steps.h"

namespace gemmd {

// Every job of `step`'s self-test, in the order it runs: small and ragged
// shapes, long K, a medium and a multi-wave one, each in the forms the step
// computes (gemm::FormsOf), each job's operands from seeds, verification on.
std::vector<GemmJob> SelfTestJobs(const gemm::StepInfo& step);

}  // namespace gemmd
