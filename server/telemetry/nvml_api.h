// NVML, the driver's management library (libnvidia-ml.so.1), loaded at run
// time as cuBLAS is: gemmd starts and serves where it is missing (CI, the
// CPU engine), and no NVML header or stub is needed to build. Only the few
// long-stable C entry points below are declared, with the ABI of nvml.h
// (CUDA 12-13 drivers): an nvmlDevice_t is an opaque pointer, every call
// returns 0 on success.
#pragma once

#include <cstdint>
#include <string>

namespace gemmd::nvml {

using Device = struct nvmlDevice_st*;
using Return = int;  // nvmlReturn_t: 0 = NVML_SUCCESS

struct Utilization {  // nvmlUtilization_t
  unsigned int gpu, memory;
};
struct Memory {  // nvmlMemory_t (v1)
  unsigned long long total, free, used;
};

inline constexpr int kClockSm = 1;             // NVML_CLOCK_SM
inline constexpr int kTemperatureGpu = 0;      // NVML_TEMPERATURE_GPU

// nvmlClocksEventReasons (nvml.h, "Clock event reasons"): why the clocks
// are below their maximum.
struct ClockEventReason {
  uint64_t bit;
  const char* name;  // the metric's `reason` label
};
inline constexpr ClockEventReason kClockEventReasons[] = {
    {0x1, "gpu_idle"},
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
};

struct Api {
  Return (*init)();
  Return (*shutdown)();
  const char* (*error_string)(Return);
  Return (*device_by_pci_bus_id)(const char*, Device*);
  Return (*power_usage)(Device, unsigned int* milliwatts);
  Return (*enforced_power_limit)(Device, unsigned int* milliwatts);
  Return (*clock_info)(Device, int clock_type, unsigned int* mhz);
  Return (*temperature)(Device, int sensor, unsigned int* celsius);
  Return (*utilization)(Device, Utilization*);
  Return (*memory_info)(Device, Memory*);
  Return (*clock_event_reasons)(Device, unsigned long long*);
};

// Loads and initialises NVML once; nullptr (and *error set) when it cannot.
const Api* Load(std::string* error);

}  // namespace gemmd::nvml
