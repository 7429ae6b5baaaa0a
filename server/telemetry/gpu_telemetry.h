// Per-GPU power, power limit, SM clock, temperature, utilization, memory and
// clock-event (throttle) reasons, read through NVML on a background thread
// and exported as gauges. The H100's TFLOPS move with its 700 W cap; these
// let a dashboard show why. Where NVML cannot be loaded (no driver: CI, the
// CPU engine) nothing is exported, never a made-up value.
#pragma once

#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "telemetry/nvml_api.h"

namespace gemmd {

struct TelemetryDevice {
  std::string id;          // the metrics' `device` label, "cuda:0"
  std::string pci_bus_id;  // as CUDA reports it, "0000:1B:00.0"
};

class GpuTelemetry {
 public:
  // nullptr, with *why set, when NVML or none of the devices is reachable.
  static std::unique_ptr<GpuTelemetry> Start(const std::vector<TelemetryDevice>& devices,
                                             prometheus::Registry& registry, std::chrono::milliseconds period,
                                             std::string* why);
  ~GpuTelemetry();

  // The SM clock last read for `device` (MHz); 0 if it has none.
  uint32_t SmClockMhz(const std::string& device) const;
  // Reads every device once now (also what the thread does each period).
  void SampleAll();

 private:
  struct Gpu;
  GpuTelemetry(const nvml::Api* api, prometheus::Registry& registry);
  void Loop(std::chrono::milliseconds period);

  const nvml::Api* api_;
  prometheus::Family<prometheus::Gauge>& power_;
  prometheus::Family<prometheus::Gauge>& power_limit_;
  prometheus::Family<prometheus::Gauge>& sm_clock_;
  prometheus::Family<prometheus::Gauge>& temperature_;
  prometheus::Family<prometheus::Gauge>& utilization_;
  prometheus::Family<prometheus::Gauge>& memory_used_;
  prometheus::Family<prometheus::Gauge>& clock_event_;
  std::vector<std::unique_ptr<Gpu>> gpus_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gemmd
