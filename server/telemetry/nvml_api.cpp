#include "telemetry/nvml_api.h"

#include <dlfcn.h>

#include <mutex>

namespace gemmd::nvml {
namespace {

template <typename Fn>
bool Bind(void* lib, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, name));
  return *fn != nullptr;
}

}  // namespace

const Api* Load(std::string* error) {
  static Api api;
  static std::string load_error;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      load_error = "libnvidia-ml.so.1 is not there (no NVIDIA driver)";
      return;
    }
    bool ok = Bind(lib, "nvmlInit_v2", &api.init) && Bind(lib, "nvmlShutdown", &api.shutdown) &&
              Bind(lib, "nvmlErrorString", &api.error_string) &&
              Bind(lib, "nvmlDeviceGetHandleByPciBusId_v2", &api.device_by_pci_bus_id) &&
              Bind(lib, "nvmlDeviceGetPowerUsage", &api.power_usage) &&
              Bind(lib, "nvmlDeviceGetEnforcedPowerLimit", &api.enforced_power_limit) &&
              Bind(lib, "nvmlDeviceGetClockInfo", &api.clock_info) &&
              Bind(lib, "nvmlDeviceGetTemperature", &api.temperature) &&
              Bind(lib, "nvmlDeviceGetUtilizationRates", &api.utilization) &&
              Bind(lib, "nvmlDeviceGetMemoryInfo", &api.memory_info);
    // The clock-event query's name since driver 535; older drivers call it
    // "throttle reasons", same signature and bits.
    ok = ok && (Bind(lib, "nvmlDeviceGetCurrentClocksEventReasons", &api.clock_event_reasons) ||
                Bind(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", &api.clock_event_reasons));
    if (!ok) {
      load_error = "libnvidia-ml.so.1 lacks an entry point gemmd uses";
      return;
    }
    if (Return r = api.init(); r != 0) load_error = std::string("nvmlInit failed: ") + api.error_string(r);
  });
  if (!load_error.empty()) {
    if (error) *error = load_error;
    return nullptr;
  }
  return &api;
}

}  // namespace gemmd::nvml
