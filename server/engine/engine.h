// The engine interface: where GEMMs run. The gRPC layer never sees CUDA or
// BLAS; it hands an Engine a GemmJob for one of the engine's devices.
#pragma once

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <cstdint>
#include <climits>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/host_bytes.h"
#include "gemm/form.h"

namespace gemmd {

struct DeviceDescription {
  std::string id;    // "cpu:0", "cuda:1": responses, logs, metric labels
  std::string name;  // "cpu:0 (openblas)", "cuda:0 NVIDIA H100 80GB HBM3"
  std::string kind;  // "cpu" or "cuda"
  std::string arch;  // "x86_64", "sm_90"
  std::string pci_bus_id;  // GPUs: "0000:1B:00.0", for NVML
  uint64_t memory_bytes = 0;
};

struct StepAvailability {
  bool available = false;
  // Why not, for a person, as a predicate of "step N": "runs on NVIDIA
  // sm_90a GPUs; this server has none". Empty when available.
  std::string reason;
  // The device has a kernel for it, but the start-up self-test took it away.
  bool withdrawn = false;
};

// One input matrix as the engine receives it.
struct OperandView {
  enum class Kind { kHost, kRandom };
  Kind kind = Kind::kRandom;
  HostBytes host;     // kHost: the operand's bytes in its type and layout, in one block or in pieces
  uint64_t seed = 0;  // kRandom: see gemm/random_fill.h
  // kHost from stored matrices: their handles joined by ',' (CacheKey), so
  // that an engine may keep a device copy of them; empty for inline bytes.
  std::string cache_key;
};

struct GemmJob {
  int64_t m = 0, n = 0, k = 0;  // of one batch entry
  int step = 0;
  // Types, layouts, alpha/beta/C and batch (gemm/form.h), as validation
  // resolved them; IsPlain() for gemmd's original fp16 D = A·Bᵀ, which the
  // fast paths serve.
  gemm::GemmForm form;
  OperandView a, b;  // plain: A is m×k, B is n×k
  OperandView c;     // read when form.ReadsC()
  bool verify = true;
  // With verify: VERIFICATION_FAST's sketch (gemm/sketch_check.h) instead
  // of a full reference GEMM.
  bool verify_fast = false;
  uint32_t repeats = 1;
  // gemm-bench's hygiene: L2 flushed and D poisoned before every repeat.
  bool benchmark = false;
  // Where D goes (form.batch·m·n elements of form.d's type), or nullptr if
  // not wanted.
  void* d = nullptr;
  // The handle D will be stored under, where it goes to one: an engine
  // that keeps stored matrices on the device (CudaEngine's cache) may keep
  // D's copy under it, so that a request reading D by handle next finds it
  // there. The caller forgets the key (ForgetMatrix) if D is never stored.
  std::string d_cache_key;
  // Polled between phases: a cancelled or expired request is dropped early.
  std::function<bool()> should_stop = [] { return false; };
};

struct VerificationResult {
  bool performed = false;
  bool passed = false;
  double max_abs_error = 0;
  uint64_t mismatches = 0;
  uint64_t non_finite = 0;
  uint64_t elements = 0;
  double rtol = 1e-3;
  double atol = 1e-2;
  std::string tolerance_source;  // where rtol and atol come from (gemm/form.h)
  // The bound's K-aware term, added to atol (gemm/tolerance.h).
  double accumulation_atol = 0;
  std::string reference;
  // VERIFICATION_FAST's (gemm/sketch_check.h): mismatches then counts the
  // rows, columns and samples that failed, elements the samples.
  bool fast = false;
  uint32_t sketch_vectors = 0;
  double sure_error = 0, worst_line_ratio = 0;
};

// The phases at the two ends of Run (upload: from the call until the inputs
// are where the kernel reads them; download: D back to the host), by the
// wall clock or, where they share the kernels' stream, by its events; and
// device times between them (kernel: the median repeat; verify).
struct PhaseSeconds {
  double upload = 0, download = 0;
  double kernel = 0, verify = 0;
  uint32_t repeats = 1;
};

struct DeviceMemory {
  uint64_t total_bytes = 0;  // the device's memory
  uint64_t pool_bytes = 0;   // reserved by the engine's pool
  uint64_t used_bytes = 0;   // in use by requests now
  // Stored matrices' device copies (engine/device_matrix_cache.h).
  uint64_t cache_bytes = 0, cache_budget_bytes = 0;
  uint64_t cache_hits = 0, cache_misses = 0, cache_evictions = 0;
};

struct GemmReport {
  VerificationResult verification;
  PhaseSeconds seconds;
  // GEMMs launched together with this one, itself included (RunBatch); the
  // kernel time is then this job's share, the launch's time over the size.
  uint32_t batch_size = 1;
};

class Engine {
 public:
  virtual ~Engine() = default;

  virtual std::string name() const = 0;
  virtual std::vector<DeviceDescription> devices() const = 0;
  virtual StepAvailability availability(int step, int device) const = 0;
  virtual bool healthy(int device) const = 0;

  // Runs each available step once so the first real request pays no start-up.
  // The server warms every device at once, one thread each: a device's
  // warm-up must touch no other device's state.
  virtual absl::Status Warmup(int device) = 0;
  // Called once on each dispatcher worker of `device` after Warmup, before
  // any request: what a worker thread pays the first time it calls into
  // the engine's libraries, paid here instead.
  virtual void WarmWorker(int device) { (void)device; }

  // Runs on a dispatcher worker of `device`; at most one call per worker.
  virtual absl::StatusOr<GemmReport> Run(int device, const GemmJob& job) = 0;

  // Jobs the dispatcher took together (Dispatcher's batching), one report
  // each, in order. An engine that can launch them as one does; this
  // default runs each in turn.
  virtual std::vector<absl::StatusOr<GemmReport>> RunBatch(int device, const std::vector<const GemmJob*>& jobs) {
    std::vector<absl::StatusOr<GemmReport>> reports;
    for (const GemmJob* job : jobs) reports.push_back(Run(device, *job));
    return reports;
  }

  // Device memory, for the metrics; zeros where the engine keeps none.
  virtual DeviceMemory memory(int) const { return {}; }

  // The stored matrix `handle` was deleted: copies the engine keeps of it
  // (OperandView::cache_key) go.
  virtual void ForgetMatrix(const std::string& handle) { (void)handle; }
  // The bytes of these operands (cache keys) `device` holds ready to read:
  // the dispatcher sends a request where its operands already are.
  virtual uint64_t HeldBytes(int device, const std::vector<std::string>& keys) const {
    (void)device;
    (void)keys;
    return 0;
  }
};

// The engines hand dimensions to BLAS and CUDA APIs that take 32-bit ints:
// INVALID_ARGUMENT, naming `engine`, for a dimension they cannot represent.
inline absl::Status CheckDimensionsFitInt32(const GemmJob& job, const std::string& engine) {
  constexpr int64_t kMax = INT32_MAX;
  if (job.m > kMax || job.n > kMax || job.k > kMax) {
    return absl::InvalidArgumentError("the " + engine + " engine takes m, n and k up to 2^31-1 (" +
                                      std::to_string(kMax) + "), got " + std::to_string(job.m) + "x" +
                                      std::to_string(job.n) + "x" + std::to_string(job.k));
  }
  return absl::OkStatus();
}

// Whether any device of `engine` can run `step` (the first device's reason
// when none can).
inline StepAvailability AvailabilityOnAnyDevice(const Engine& engine, int step) {
  StepAvailability first{false, "has no device to run on"};
  const size_t count = engine.devices().size();
  for (size_t d = 0; d < count; ++d) {
    StepAvailability a = engine.availability(step, static_cast<int>(d));
    if (a.available) return a;
    if (d == 0) first = a;
  }
  return first;
}

}  // namespace gemmd
