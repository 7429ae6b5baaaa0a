#include "metrics/metrics.h"

#include <cmath>

#include "gemm/steps.h"

namespace gemmd {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

// 50 µs .. ~100 s, a factor of 2 apart: a 1×1×1 CPU GEMM and an 8192³ on a
// CPU both land inside.
prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  prometheus::Histogram::BucketBoundaries b;
  for (double s = 50e-6; s < 120; s *= 2) b.push_back(s);
  return b;
}

// A refusal should take well under the 5 ms the overload test allows: fine
// buckets up to it, with 5 ms itself a boundary.
prometheus::Histogram::BucketBoundaries RefusalBuckets() {
  return {100e-6, 250e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3, 50e-3, 250e-3, 1};
}

// The label of a requested step: its number, or "invalid" (bounded).
std::string StepLabel(int64_t step) { return gemm::FindStep(step) != nullptr ? std::to_string(step) : "invalid"; }

}  // namespace

Metrics::Metrics()
    : requests_(BuildCounter()
                    .Name("gemm_requests_total")
                    .Help("Finished RPCs by method, kernel step and gRPC status code")
                    .Register(*registry_)),
      request_seconds_(BuildHistogram()
                           .Name("gemm_request_duration_seconds")
                           .Help("RPC latency from arrival to reply, by method and step")
                           .Register(*registry_)),
      kernel_seconds_(BuildHistogram()
                          .Name("gemm_kernel_duration_seconds")
                          .Help("Time of the GEMM kernel alone (median of the request's repeats)")
                          .Register(*registry_)),
      phase_seconds_(BuildHistogram()
                         .Name("gemm_request_phase_seconds")
                         .Help("Where OK Multiply requests spent their time: prepare, queue, upload (host staging "
                               "and H2D, or generation), compute (the repeats and the verification), download, "
                               "reply")
                         .Register(*registry_)),
      refusal_seconds_(BuildHistogram()
                           .Name("gemm_refusal_duration_seconds")
                           .Help("How long the server took to refuse an RPC with RESOURCE_EXHAUSTED (queue or "
                                 "quota full), arrival to reply: refusals must be prompt under overload")
                           .Register(*registry_)),
      batch_size_(BuildHistogram()
                      .Name("gemm_batch_size")
                      .Help("Requests whose GEMMs ran in one launch (--batch-max), per launch; 1: alone")
                      .Register(*registry_)
                      .Add({}, prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64, 128})),
      flops_(BuildCounter()
                 .Name("gemm_floating_point_operations_total")
                 .Help("2*m*n*k per kernel run; rate() gives sustained FLOP/s")
                 .Register(*registry_)),
      gemms_(BuildCounter()
                 .Name("gemm_kernel_runs_total")
                 .Help("GEMMs run on a device, by step and device")
                 .Register(*registry_)),
      verification_failures_(BuildCounter()
                                 .Name("gemm_verification_failures_total")
                                 .Help("GEMMs whose result failed verification against the reference")
                                 .Register(*registry_)),
      step_available_(BuildGauge()
                          .Name("gemm_step_available")
                          .Help("1 if this server offers the kernel step, 0 if not")
                          .Register(*registry_)),
      step_withdrawn_(BuildGauge()
                          .Name("gemm_step_withdrawn")
                          .Help("1 for a step whose kernel failed, faulted or hung in the start-up self-test on "
                                "the device, 0 for a step the device offers. ListKernels and the log say why; "
                                "for a wrong result, with the pattern diagnostics' reading of it")
                          .Register(*registry_)),
      device_healthy_(BuildGauge()
                          .Name("gemm_device_healthy")
                          .Help("1 while the device serves requests, 0 once it is marked unhealthy")
                          .Register(*registry_)),
      queue_depth_(BuildGauge()
                       .Name("gemm_queue_depth")
                       .Help("Requests waiting for a device, per device")
                       .Register(*registry_)),
      device_memory_total_(BuildGauge()
                               .Name("gemm_device_memory_total_bytes")
                               .Help("Memory of the device")
                               .Register(*registry_)),
      device_memory_pool_(BuildGauge()
                              .Name("gemm_device_memory_pool_bytes")
                              .Help("Device memory reserved by the engine's pool (kept between requests)")
                              .Register(*registry_)),
      device_memory_used_(BuildGauge()
                              .Name("gemm_device_memory_used_bytes")
                              .Help("Device memory of the pool in use by requests")
                              .Register(*registry_)),
      device_cache_bytes_(BuildGauge()
                              .Name("gemm_device_cache_bytes")
                              .Help("Device memory holding stored matrices' copies (--device-cache-bytes)")
                              .Register(*registry_)),
      device_cache_budget_(BuildGauge()
                               .Name("gemm_device_cache_budget_bytes")
                               .Help("The most device memory stored matrices' copies may hold")
                               .Register(*registry_)),
      device_cache_lookups_(BuildCounter()
                                .Name("gemm_device_cache_lookups_total")
                                .Help("Stored operands of big requests looked up among the device's copies: "
                                      "result=hit (no upload) or miss")
                                .Register(*registry_)),
      device_cache_evictions_(BuildCounter()
                                  .Name("gemm_device_cache_evictions_total")
                                  .Help("Device copies of stored matrices dropped to make room")
                                  .Register(*registry_)),
      in_flight_(BuildGauge()
                     .Name("gemm_requests_in_flight")
                     .Help("Multiply requests received and not yet answered")
                     .Register(*registry_)
                     .Add({})),
      resident_bytes_(BuildGauge()
                          .Name("gemm_resident_matrix_bytes")
                          .Help("Bytes held by stored (uploaded or result) matrices")
                          .Register(*registry_)
                          .Add({})),
      resident_matrices_(BuildGauge()
                             .Name("gemm_resident_matrices")
                             .Help("Stored matrices behind handles")
                             .Register(*registry_)
                             .Add({})),
      quota_bytes_(BuildGauge()
                       .Name("gemm_matrix_quota_bytes")
                       .Help("Quota for stored matrices")
                       .Register(*registry_)
                       .Add({})),
      reusable_host_bytes_(BuildGauge()
                               .Name("gemm_reusable_host_bytes")
                               .Help("Host memory of deleted matrices kept for reuse (--reuse-host-bytes)")
                               .Register(*registry_)
                               .Add({})),
      queue_capacity_(BuildGauge()
                          .Name("gemm_queue_capacity")
                          .Help("Requests that may wait for a device, all devices together")
                          .Register(*registry_)
                          .Add({})),
      build_info_(BuildGauge()
                      .Name("gemm_build_info")
                      .Help("Always 1; labels carry the version and engine")
                      .Register(*registry_)) {}

void Metrics::RecordBatch(size_t size) { batch_size_.Observe(static_cast<double>(size)); }

void Metrics::Serve(const std::string& address) {
  exposer_ = std::make_unique<prometheus::Exposer>(address);
  exposer_->RegisterCollectable(registry_);
}

int Metrics::port() const {
  if (!exposer_) return 0;
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

void Metrics::RecordRequest(const std::string& method, std::optional<int64_t> step, const std::string& code,
                            double seconds) {
  requests_recorded_.fetch_add(1, std::memory_order_relaxed);
  const std::string label = step ? StepLabel(*step) : "";
  RequestSeries& series = request_series_.Get(method + '/' + label + '/' + code, [&] {
    return RequestSeries{
        &requests_.Add({{"method", method}, {"step", label}, {"code", code}}),
        &request_seconds_.Add({{"method", method}, {"step", label}}, LatencyBuckets()),
        code == "RESOURCE_EXHAUSTED" ? &refusal_seconds_.Add({{"method", method}}, RefusalBuckets()) : nullptr};
  });
  series.count->Increment();
  series.seconds->Observe(seconds);
  if (series.refusal_seconds != nullptr) series.refusal_seconds->Observe(seconds);
}

void Metrics::RecordPhase(const std::string& phase, double seconds) {
  phase_series_.Get(phase, [&] { return &phase_seconds_.Add({{"phase", phase}}, LatencyBuckets()); })
      ->Observe(seconds);
}

void Metrics::RecordGemm(int step, const std::string& device, double kernel_seconds, double flops,
                         bool verification_failed) {
  const std::string s = std::to_string(step);
  GemmSeries& series = gemm_series_.Get(s + '/' + device, [&] {
    const prometheus::Labels labels{{"step", s}, {"device", device}};
    return GemmSeries{&kernel_seconds_.Add(labels, LatencyBuckets()), &flops_.Add(labels), &gemms_.Add(labels),
                      &verification_failures_.Add(labels)};
  });
  series.kernel_seconds->Observe(kernel_seconds);
  series.flops->Increment(flops);
  series.runs->Increment();
  if (verification_failed) series.verification_failures->Increment();
}

Metrics::DeviceSeries& Metrics::Device(const std::string& device) {
  return device_series_.Get(device, [&] {
    const prometheus::Labels labels{{"device", device}};
    return DeviceSeries{&queue_depth_.Add(labels),
                        &device_healthy_.Add(labels),
                        &device_memory_total_.Add(labels),
                        &device_memory_pool_.Add(labels),
                        &device_memory_used_.Add(labels),
                        &device_cache_bytes_.Add(labels),
                        &device_cache_budget_.Add(labels),
                        &device_cache_lookups_.Add({{"device", device}, {"result", "hit"}}),
                        &device_cache_lookups_.Add({{"device", device}, {"result", "miss"}}),
                        &device_cache_evictions_.Add(labels)};
  });
}

void Metrics::InitSeries(int step, const std::string& device) {
  const std::string s = std::to_string(step);
  requests_.Add({{"method", "Multiply"}, {"step", s}, {"code", "OK"}});
  request_seconds_.Add({{"method", "Multiply"}, {"step", s}}, LatencyBuckets());
  kernel_seconds_.Add({{"step", s}, {"device", device}}, LatencyBuckets());
  flops_.Add({{"step", s}, {"device", device}});
  gemms_.Add({{"step", s}, {"device", device}});
  verification_failures_.Add({{"step", s}, {"device", device}});
  step_withdrawn_.Add({{"step", s}, {"device", device}});  // 0: the self-test kept it
}

void Metrics::SetStepAvailable(int step, bool available) {
  step_available_.Add({{"step", std::to_string(step)}}).Set(available ? 1 : 0);
}

void Metrics::SetStepWithdrawn(int step, const std::string& device) {
  step_withdrawn_.Add({{"step", std::to_string(step)}, {"device", device}}).Set(1);
}

void Metrics::SetDeviceHealthy(const std::string& device, bool healthy) { Device(device).healthy->Set(healthy ? 1 : 0); }

void Metrics::SetQueueDepth(const std::string& device, size_t depth) {
  Device(device).queue_depth->Set(static_cast<double>(depth));
}

void Metrics::SetDeviceMemory(const std::string& device, uint64_t total, uint64_t pool, uint64_t used) {
  DeviceSeries& series = Device(device);
  series.memory_total->Set(static_cast<double>(total));
  series.memory_pool->Set(static_cast<double>(pool));
  series.memory_used->Set(static_cast<double>(used));
}

void Metrics::SetDeviceCache(const std::string& device, uint64_t resident, uint64_t budget, uint64_t hits,
                             uint64_t misses, uint64_t evictions) {
  DeviceSeries& series = Device(device);
  series.cache_bytes->Set(static_cast<double>(resident));
  series.cache_budget->Set(static_cast<double>(budget));
  std::lock_guard lock(device_cache_mu_);
  for (auto [counter, total] : {std::pair{series.cache_hits, hits}, std::pair{series.cache_misses, misses},
                                std::pair{series.cache_evictions, evictions}}) {
    const double behind = static_cast<double>(total) - counter->Value();
    if (behind > 0) counter->Increment(behind);
  }
}

void Metrics::AddInFlight(double delta) { in_flight_.Increment(delta); }

void Metrics::SetResidentMatrices(uint64_t bytes, size_t count) {
  resident_bytes_.Set(static_cast<double>(bytes));
  resident_matrices_.Set(static_cast<double>(count));
}

void Metrics::SetQuota(uint64_t bytes) { quota_bytes_.Set(static_cast<double>(bytes)); }

void Metrics::SetReusableHostBytes(uint64_t bytes) { reusable_host_bytes_.Set(static_cast<double>(bytes)); }

void Metrics::SetQueueCapacity(uint32_t requests) { queue_capacity_.Set(static_cast<double>(requests)); }

void Metrics::SetBuildInfo(const std::string& version, const std::string& engine) {
  build_info_.Add({{"version", version}, {"engine", engine}}).Set(1);
}

}  // namespace gemmd
