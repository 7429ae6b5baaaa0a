// gemmd-selftest's loop over the steps gemmd offers the start-up gate
// (step_gate.h), apart from CUDA: the helper supplies the actions, and a
// test runs the same loop for a device it pretends to have (a B200 here is
// only ever pretended).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace gemmd {

struct SelfTestActions {
  std::function<std::string(int step)> self_test;    // "" or why the step failed
  std::function<bool()> device_healthy;              // false once a sticky error ended the context
  std::function<std::string(int step)> diagnose;     // the pattern diagnostics' reading (gemm/diagnose.h)
  std::function<void(const std::string& line)> say;  // one line of the gate's protocol
};

// For each step: "start S", its self-test, then "pass S" or "fail S
// <reason>". A step that fails on a device still healthy is diagnosed and
// its reason carries the diagnosis, so that a B200's withdrawal names the
// fault. Returns false as soon as the device is lost: the helper then
// exits and gemmd starts a fresh one for the steps left.
bool SelfTestSteps(const std::vector<int>& steps, const SelfTestActions& actions);

}  // namespace gemmd
