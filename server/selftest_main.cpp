// gemmd-selftest: the start-up self-test of the ladder's steps on one GPU,
// run by gemmd in a process of its own (engine/step_gate.h says why). For
// each step named: "start S", then "pass S" or "fail S <reason>" on stdout.
// After a failure that ended this process's CUDA context it exits 3, and
// gemmd starts a fresh one for the steps left.
//   gemmd-selftest --device 0 --steps 1,2,3
// GEMMD_SELFTEST_PLANT=hang:3,fault:5 (tests only) replaces those steps'
// kernels with one that never ends and one that writes to an illegal
// address, so a test can prove that the gate withdraws them; narrow:S and
// shortk:S make step S compute a wrong D (gemm/test_hooks.h), so a test can
// prove that the withdrawal reason carries the diagnosis.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/cuda_engine.h"
#include "engine/self_test_steps.h"
#include "gemm/diagnose_step.h"
#include "gemm/test_hooks.h"

namespace {

void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

std::vector<int> ParseSteps(const std::string& list) {
  std::vector<int> steps;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) steps.push_back(std::stoi(item));
  return steps;
}

// "hang:3,fault:5" -> {3: "hang", 5: "fault"}.
std::map<int, std::string> ParsePlants(const char* text) {
  std::map<int, std::string> plants;
  if (text == nullptr) return plants;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const auto colon = item.find(':');
    if (colon != std::string::npos) plants[std::stoi(item.substr(colon + 1))] = item.substr(0, colon);
  }
  return plants;
}

// The step on the structured probes, on a context of its own.
std::string Diagnosis(int device, int step) {
  gemm::DeviceContext ctx;
  if (auto err = gemm::CreateContext(device, &ctx); !err.empty()) return "not run (" + err + ")";
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  const std::string summary = gemm::DiagnosisSummary(gemm::DiagnoseStep(step, ctx, stream));
  cudaStreamDestroy(stream);
  gemm::DestroyContext(&ctx);
  return summary;
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  std::vector<int> steps;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--device") device = std::atoi(argv[i + 1]);
    if (flag == "--steps") steps = ParseSteps(argv[i + 1]);
  }
  if (steps.empty()) {
    std::fprintf(stderr, "usage: gemmd-selftest --device N --steps S,S,...\n");
    return 2;
  }
  bool lost = false;  // a planted fault ended the context
  gemmd::CudaEngineOptions options;
  options.staging_bytes = 1 << 20;
  options.sync_timeout_seconds = 3600;  // gemmd keeps the time: a hang is its to judge
  auto engine = gemmd::CudaEngine::Create(options);
  if (!engine.ok() || device < 0 || device >= static_cast<int>((*engine)->devices().size())) {
    std::fprintf(stderr, "gemmd-selftest: no CUDA device %d: %s\n", device,
                 engine.ok() ? "out of range" : std::string(engine.status().message()).c_str());
    return 2;
  }
  const auto plants = ParsePlants(std::getenv("GEMMD_SELFTEST_PLANT"));
  gemmd::SelfTestActions actions;
  actions.self_test = [&](int step) -> std::string {
    auto plant = plants.find(step);
    if (plant != plants.end() && (plant->second == "narrow" || plant->second == "shortk")) {
      gemm::testing::PlantStepFault(step, plant->second == "narrow" ? gemm::testing::StepFault::kNarrowN
                                                                    : gemm::testing::StepFault::kShortK);
      plant = plants.end();  // the step runs, wrongly
    }
    if (plant != plants.end()) {
      cudaSetDevice(device);
      const cudaError_t launched = plant->second == "hang" ? gemm::testing::LaunchHangingKernel(nullptr)
                                                           : gemm::testing::LaunchFaultingKernel(nullptr);
      const cudaError_t e = launched != cudaSuccess ? launched : cudaDeviceSynchronize();  // a hang never returns
      lost = true;  // this process's CUDA context is gone
      return std::string("faulted in its start-up self-test (") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e) +
             ")";
    }
    return (*engine)->SelfTestStep(device, step);
  };
  actions.device_healthy = [&] { return !lost && (*engine)->healthy(device); };
  actions.diagnose = [&](int step) { return Diagnosis(device, step); };
  actions.say = Say;
  return gemmd::SelfTestSteps(steps, actions) ? 0 : 3;
}
