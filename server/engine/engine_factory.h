// Picks the engine named by --engine: "auto" takes the GPUs when this build
// has a CUDA engine and the node has GPUs, else the CPU.
#pragma once

#include <absl/status/statusor.h>

#include <memory>
#include <string>

#include "engine/engine.h"

namespace gemmd {

struct EngineChoice {
  std::unique_ptr<Engine> engine;
  std::string why;  // one line for the start-up log
};

struct EngineOptions {
  uint32_t workers_per_device = 1;  // the CUDA engine gives each its own lane
};

absl::StatusOr<EngineChoice> CreateEngine(const std::string& name, const EngineOptions& options);

}  // namespace gemmd
