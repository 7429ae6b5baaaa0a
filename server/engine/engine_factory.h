// Picks the engine named by --engine: "auto" takes the GPUs when this build
// has a CUDA engine and the node has GPUs, else the CPU.
#pragma once

#include <absl/status/statusor.h>

#include <memory>
#include <optional>
#include <string>

#include "engine/engine.h"
#include "engine/step_gate.h"

namespace gemmd {

struct EngineChoice {
  std::unique_ptr<Engine> engine;
  std::string why;  // one line for the start-up log
};

struct EngineOptions {
  uint32_t workers_per_device = 1;  // the CUDA engine gives each its own lane
  StepGateOptions selftest;         // the CUDA engine's start-up self-test
  uint32_t keep_warm_ms = 0;        // CUDA: a tiny kernel after this long idle; 0 = never
  bool plan_vendor_kernels = false;  // CUDA: cuBLAS's kernels loaded at start-up (gemm/vendor_plan.h)
  uint64_t reserved_pool_bytes = 0;  // CUDA: device memory mapped into each GPU's pool at start-up
  std::optional<uint64_t> device_cache_bytes;  // CUDA: stored matrices kept per GPU; nullopt: half the free memory
};

absl::StatusOr<EngineChoice> CreateEngine(const std::string& name, const EngineOptions& options);

}  // namespace gemmd
