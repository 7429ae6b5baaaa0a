#include "engine/engine_factory.h"

#include "engine/cpu_engine.h"
#ifdef GEMMD_WITH_CUDA
#include "engine/cuda_engine.h"
#endif

namespace gemmd {

absl::StatusOr<EngineChoice> CreateEngine(const std::string& name, const EngineOptions& options) {
  if (name != "auto" && name != "cpu" && name != "cuda") {
    return absl::InvalidArgumentError("unknown engine '" + name + "' (auto, cpu or cuda)");
  }
  if (name == "cpu") return EngineChoice{std::make_unique<CpuEngine>(), "CPU engine (asked for)"};
#ifdef GEMMD_WITH_CUDA
  CudaEngineOptions copts;
  copts.lanes_per_device = options.workers_per_device;
  copts.selftest = options.selftest;
  copts.keep_warm_ms = options.keep_warm_ms;
  copts.plan_vendor_kernels = options.plan_vendor_kernels;
  copts.reserved_pool_bytes = options.reserved_pool_bytes;
  copts.device_cache_bytes = options.device_cache_bytes;
  auto cuda = CudaEngine::Create(copts);
  if (cuda.ok()) {
    const size_t n = (*cuda)->devices().size();
    return EngineChoice{std::move(*cuda), "CUDA engine on " + std::to_string(n) + " GPU(s)"};
  }
  if (name == "cuda") return absl::FailedPreconditionError("--engine=cuda: " + std::string(cuda.status().message()));
  return EngineChoice{std::make_unique<CpuEngine>(), "CPU engine: " + std::string(cuda.status().message())};
#else
  (void)options;
  constexpr const char* kNoCuda = "this build has no CUDA engine (nvcc was not found when it was configured)";
  if (name == "cuda") return absl::FailedPreconditionError(std::string("--engine=cuda: ") + kNoCuda);
  return EngineChoice{std::make_unique<CpuEngine>(), std::string("CPU engine: ") + kNoCuda};
#endif
}

}  // namespace gemmd
