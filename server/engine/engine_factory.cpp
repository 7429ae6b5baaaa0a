#include "engine/engine_factory.h"

#include "engine/cpu_engine.h"

namespace gemmd {

absl::StatusOr<EngineChoice> CreateEngine(const std::string& name) {
  // The CUDA engine joins this build with the CUDA engine work; until then
  // every request runs on the CPU and the GPU steps say why they cannot.
  constexpr const char* kNoCuda = "this build has no CUDA engine";
  if (name == "cuda") return absl::FailedPreconditionError(std::string("--engine=cuda: ") + kNoCuda);
  if (name == "cpu") return EngineChoice{std::make_unique<CpuEngine>(), "CPU engine (asked for)"};
  if (name == "auto") {
    return EngineChoice{std::make_unique<CpuEngine>(), std::string("CPU engine: ") + kNoCuda};
  }
  return absl::InvalidArgumentError("unknown engine '" + name + "' (auto, cpu or cuda)");
}

}  // namespace gemmd
