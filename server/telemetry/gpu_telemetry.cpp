#include "telemetry/gpu_telemetry.h"

#include <spdlog/spdlog.h>

#include "thread_name.h"

namespace gemmd {

using prometheus::BuildGauge;

struct GpuTelemetry::Gpu {
  std::string id;
  nvml::Device handle = nullptr;
  std::atomic<uint32_t> sm_clock_mhz{0};
};

GpuTelemetry::GpuTelemetry(const nvml::Api* api, prometheus::Registry& registry)
    : api_(api),
      power_(BuildGauge().Name("gemm_gpu_power_watts").Help("GPU board power draw (NVML)").Register(registry)),
      power_limit_(BuildGauge()
                       .Name("gemm_gpu_power_limit_watts")
                       .Help("GPU power limit the driver enforces (NVML)")
                       .Register(registry)),
      sm_clock_(BuildGauge().Name("gemm_gpu_sm_clock_hertz").Help("GPU SM clock (NVML)").Register(registry)),
      temperature_(
          BuildGauge().Name("gemm_gpu_temperature_celsius").Help("GPU core temperature (NVML)").Register(registry)),
      utilization_(BuildGauge()
                       .Name("gemm_gpu_utilization_ratio")
                       .Help("Share of the last sample period in which a kernel ran on the GPU (NVML)")
                       .Register(registry)),
      memory_used_(BuildGauge()
                       .Name("gemm_gpu_memory_used_bytes")
                       .Help("GPU memory in use by every process (NVML)")
                       .Register(registry)),
      clock_event_(BuildGauge()
                       .Name("gemm_gpu_clock_event_active")
                       .Help("1 while this reason holds the GPU's clocks below their maximum (NVML clock event "
                             "reasons; sw_power_cap: the power limit)")
                       .Register(registry)) {}

std::unique_ptr<GpuTelemetry> GpuTelemetry::Start(const std::vector<TelemetryDevice>& devices,
                                                  prometheus::Registry& registry, std::chrono::milliseconds period,
                                                  std::string* why) {
  const nvml::Api* api = nvml::Load(why);
  if (api == nullptr) return nullptr;
  std::unique_ptr<GpuTelemetry> t(new GpuTelemetry(api, registry));
  for (const TelemetryDevice& d : devices) {
    auto gpu = std::make_unique<Gpu>();
    gpu->id = d.id;
    // CUDA names a bus id in upper case, NVML takes either.
    if (nvml::Return r = api->device_by_pci_bus_id(d.pci_bus_id.c_str(), &gpu->handle); r != 0) {
      spdlog::warn("GPU telemetry: NVML has no device at {} ({}): {}", d.pci_bus_id, d.id, api->error_string(r));
      continue;
    }
    t->gpus_.push_back(std::move(gpu));
  }
  if (t->gpus_.empty()) {
    if (why) *why = "NVML found none of the engine's GPUs";
    return nullptr;
  }
  t->SampleAll();
  t->thread_ = std::thread([raw = t.get(), period] {
    NameThisThread("gpu-telemetry");
    raw->Loop(period);
  });
  return t;
}

GpuTelemetry::~GpuTelemetry() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint32_t GpuTelemetry::SmClockMhz(const std::string& device) const {
  for (const auto& g : gpus_) {
    if (g->id == device) return g->sm_clock_mhz.load(std::memory_order_relaxed);
  }
  return 0;
}

void GpuTelemetry::Loop(std::chrono::milliseconds period) {
  std::unique_lock lock(mu_);
  while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
    lock.unlock();
    SampleAll();
    lock.lock();
  }
}

// A query the device does not support (a field NVML lacks on some boards)
// leaves its gauge unset rather than at a made-up value.
void GpuTelemetry::SampleAll() {
  for (auto& g : gpus_) {
    const prometheus::Labels labels{{"device", g->id}};
    unsigned int v = 0;
    if (api_->power_usage(g->handle, &v) == 0) power_.Add(labels).Set(v / 1e3);
    if (api_->enforced_power_limit(g->handle, &v) == 0) power_limit_.Add(labels).Set(v / 1e3);
    if (api_->clock_info(g->handle, nvml::kClockSm, &v) == 0) {
      sm_clock_.Add(labels).Set(v * 1e6);
      g->sm_clock_mhz.store(v, std::memory_order_relaxed);
    }
    if (api_->temperature(g->handle, nvml::kTemperatureGpu, &v) == 0) temperature_.Add(labels).Set(v);
    nvml::Utilization u{};
    if (api_->utilization(g->handle, &u) == 0) utilization_.Add(labels).Set(u.gpu / 100.0);
    nvml::Memory m{};
    if (api_->memory_info(g->handle, &m) == 0) memory_used_.Add(labels).Set(static_cast<double>(m.used));
    unsigned long long reasons = 0;
    if (api_->clock_event_reasons(g->handle, &reasons) == 0) {
      for (const auto& r : nvml::kClockEventReasons) {
        clock_event_.Add({{"device", g->id}, {"reason", r.name}}).Set((reasons & r.bit) != 0 ? 1 : 0);
      }
    }
  }
}

}  // namespace gemmd
