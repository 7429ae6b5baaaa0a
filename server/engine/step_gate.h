// The start-up gate: each ladder step's self-test runs in a helper process
// (gemmd-selftest), so that a kernel that faults ends only the helper's
// CUDA context (a sticky error would end the server's) and a kernel that
// hangs is killed at a time limit. The steps that fail, fault or hang are
// withdrawn; the server comes up serving the rest.
#pragma once

#include <string>
#include <vector>

namespace gemmd {

struct StepGateOptions {
  std::string helper_path;            // gemmd-selftest; empty: self-test in process
  double step_timeout_seconds = 30;   // no verdict on a step within this: hung
};

struct StepVerdict {
  int step = 0;
  bool passed = false;
  std::string reason;  // why it was withdrawn, for ListKernels and the log
};

// Verdicts for `steps` on CUDA device `device`, in order. A helper that dies
// or hangs mid-step condemns that step and is restarted for the rest; one
// that cannot start at all condemns every step left (nothing unproven runs).
std::vector<StepVerdict> RunStepGate(const StepGateOptions& options, int device, const std::vector<int>& steps);

// The line protocol between the two: the helper prints "start S" before
// step S, then "pass S" or "fail S <reason>", one line each, flushed.
namespace step_gate_protocol {
std::string Start(int step);
std::string Pass(int step);
std::string Fail(int step, const std::string& reason);
}  // namespace step_gate_protocol

}  // namespace gemmd
