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

absl::StatusOr<EngineChoice> CreateEngine(const std::string& name);

}  // namespace gemmd
