// The CPU engine: step 0 only, through the BLAS (sgemm: fp32 accumulation),
// verified against an fp64 dgemm on the same inputs. Lets the whole service
// run, and be tested, on machines without a GPU.
#pragma once

#include "engine/engine.h"

namespace gemmd {

class CpuEngine final : public Engine {
 public:
  std::string name() const override { return "cpu"; }
  std::vector<DeviceDescription> devices() const override;
  StepAvailability availability(int step, int device) const override;
  bool healthy(int) const override { return true; }
  absl::Status Warmup(int device) override;
  absl::StatusOr<GemmReport> Run(int device, const GemmJob& job) override;
};

}  // namespace gemmd
