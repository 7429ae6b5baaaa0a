// The server's Prometheus metrics (prometheus-cpp), served by its exposer on
// their own HTTP port. Names follow Prometheus conventions: base units,
// _seconds, _bytes, _total.
#pragma once

#include <atomic>

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace gemmd {

class Metrics {
 public:
  Metrics();

  // Serves /metrics on `address` ("host:port"; port 0 picks a free one).
  void Serve(const std::string& address);
  // The bound port, once serving; 0 otherwise.
  int port() const;

  // One finished RPC. `step` is what the client asked for, nullopt for
  // methods that take none. A step that is not in the catalogue is recorded
  // as step="invalid": a client must not be able to mint label values.
  void RecordRequest(const std::string& method, std::optional<int64_t> step, const std::string& code,
                     double seconds);
  // Where one OK Multiply's time went: `phase` is prepare, queue, upload,
  // compute, download or reply (they add up to the request's duration).
  void RecordPhase(const std::string& phase, double seconds);
  // One GEMM that ran on a device.
  void RecordGemm(int step, const std::string& device, double kernel_seconds, double flops,
                  bool verification_failed);
  // One engine launch that ran `size` requests' GEMMs together (batching).
  void RecordBatch(size_t size);
  // Creates the zero-valued series of a (step, device) pair that can run,
  // so dashboards and rate() see 0 instead of nothing before the first GEMM.
  void InitSeries(int step, const std::string& device);
  void SetStepAvailable(int step, bool available);
  // 1 for a step the start-up self-test took away from a device.
  void SetStepWithdrawn(int step, const std::string& device);
  void SetDeviceHealthy(const std::string& device, bool healthy);
  void SetQueueDepth(const std::string& device, size_t depth);
  void SetQueueCapacity(uint32_t requests);
  void SetDeviceMemory(const std::string& device, uint64_t total, uint64_t pool, uint64_t used);
  // Stored matrices' device copies: bytes held and the budget now, and the
  // engine's running totals of hits, misses and evictions.
  void SetDeviceCache(const std::string& device, uint64_t resident, uint64_t budget, uint64_t hits, uint64_t misses,
                      uint64_t evictions);
  void AddInFlight(double delta);
  // Requests recorded so far, and Multiply calls in flight: what the idle
  // memory trimmer watches (process/memory_trimmer.h).
  uint64_t requests_recorded() const { return requests_recorded_.load(std::memory_order_relaxed); }
  bool multiply_in_flight() const { return in_flight_.Value() > 0; }
  void SetResidentMatrices(uint64_t bytes, size_t count);
  void SetQuota(uint64_t bytes);
  void SetReusableHostBytes(uint64_t bytes);
  void SetBuildInfo(const std::string& version, const std::string& engine);

  prometheus::Registry& registry() { return *registry_; }

 private:
  // Series found once by a key and kept. Family::Add builds a label map and
  // hashes it under the family's lock on every call: the 16 updates of one
  // Multiply took 4-6 us, two of them under the dispatcher's lock.
  template <typename Series>
  class SeriesCache {
   public:
    template <typename Make>
    Series& Get(const std::string& key, const Make& make) {
      std::lock_guard lock(mu_);
      auto it = map_.find(key);
      if (it == map_.end()) it = map_.emplace(key, make()).first;
      return it->second;
    }

   private:
    std::mutex mu_;
    std::unordered_map<std::string, Series> map_;  // nodes: references stay valid
  };
  struct RequestSeries {
    prometheus::Counter* count;
    prometheus::Histogram* seconds;
    prometheus::Histogram* refusal_seconds;  // RESOURCE_EXHAUSTED only
  };
  struct GemmSeries {
    prometheus::Histogram* kernel_seconds;
    prometheus::Counter *flops, *runs, *verification_failures;
  };
  struct DeviceSeries {
    prometheus::Gauge *queue_depth, *healthy, *memory_total, *memory_pool, *memory_used;
    prometheus::Gauge *cache_bytes, *cache_budget;
    prometheus::Counter *cache_hits, *cache_misses, *cache_evictions;
  };
  DeviceSeries& Device(const std::string& device);

  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  std::unique_ptr<prometheus::Exposer> exposer_;

  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& request_seconds_;
  prometheus::Family<prometheus::Histogram>& kernel_seconds_;
  prometheus::Family<prometheus::Histogram>& phase_seconds_;
  prometheus::Family<prometheus::Histogram>& refusal_seconds_;
  prometheus::Histogram& batch_size_;
  prometheus::Family<prometheus::Counter>& flops_;
  prometheus::Family<prometheus::Counter>& gemms_;
  prometheus::Family<prometheus::Counter>& verification_failures_;
  prometheus::Family<prometheus::Gauge>& step_available_;
  prometheus::Family<prometheus::Gauge>& step_withdrawn_;
  prometheus::Family<prometheus::Gauge>& device_healthy_;
  prometheus::Family<prometheus::Gauge>& queue_depth_;
  prometheus::Family<prometheus::Gauge>& device_memory_total_;
  prometheus::Family<prometheus::Gauge>& device_memory_pool_;
  prometheus::Family<prometheus::Gauge>& device_memory_used_;
  prometheus::Family<prometheus::Gauge>& device_cache_bytes_;
  prometheus::Family<prometheus::Gauge>& device_cache_budget_;
  prometheus::Family<prometheus::Counter>& device_cache_lookups_;
  prometheus::Family<prometheus::Counter>& device_cache_evictions_;
  std::mutex device_cache_mu_;  // the counters follow the engine's totals
  prometheus::Gauge& in_flight_;
  std::atomic<uint64_t> requests_recorded_{0};
  prometheus::Gauge& resident_bytes_;
  prometheus::Gauge& resident_matrices_;
  prometheus::Gauge& quota_bytes_;
  prometheus::Gauge& reusable_host_bytes_;
  prometheus::Gauge& queue_capacity_;
  prometheus::Family<prometheus::Gauge>& build_info_;

  SeriesCache<RequestSeries> request_series_;
  SeriesCache<prometheus::Histogram*> phase_series_;
  SeriesCache<GemmSeries> gemm_series_;
  SeriesCache<DeviceSeries> device_series_;
};

}  // namespace gemmd
