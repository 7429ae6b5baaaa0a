#include "engine/cuda_engine.h"

#include <cuda_runtime.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <cstring>
#include <mutex>
#include <thread>

#include "engine/cuda_device.h"
#include "engine/host_copier.h"
#include "engine/median.h"
#include "engine/self_test_jobs.h"
#include "engine/verify.h"
#include "gemm/device_ops.h"
#include "gemm/gemm.h"
#include "gemm/steps.h"
#include "gemm/vendor_forms.h"
#include "thread_name.h"

namespace gemmd {
namespace {

// Maps `bytes` into the device's pool and touches them, then hands them
// back; the pool keeps what it has (its release threshold is unbounded), so
// a request's buffers up to that size come from memory already mapped. A
// fresh server's first 8192^3 request (512 MiB of buffers, past what
// start-up leaves in the pool) otherwise grew it on its own path: x1.12
// and x1.17 of steady, against x1.00 and x1.03 with 1 GiB reserved
// (H100). Short of memory, the server starts without the reserve: it
// is a latency measure, not a guarantee.
void ReservePoolMemory(CudaEngine::Device& dev, uint64_t bytes) {
  if (bytes == 0) return;
  const auto start = std::chrono::steady_clock::now();
  cudaStream_t stream = dev.lanes.front()->compute;
  void* p = nullptr;
  cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, dev.pool, stream);
  if (e == cudaSuccess) {
    e = cudaMemsetAsync(p, 0, bytes, stream);
    const cudaError_t freed = cudaFreeAsync(p, stream);
    if (e == cudaSuccess) e = freed;
  }
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) {
    cudaGetLastError();
    spdlog::warn("{}: cannot reserve {} MiB of device memory for requests' buffers ({}); the pool grows as "
                 "requests need it", dev.desc.id, bytes >> 20, cudaGetErrorString(e));
    return;
  }
  spdlog::info("{}: {} MiB of device memory mapped for requests' buffers in {:.1f} ms", dev.desc.id, bytes >> 20,
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaEngine>> CudaEngine::Create(CudaEngineOptions options) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    return absl::NotFoundError(e == cudaSuccess ? "no CUDA device is visible" : "no usable CUDA device (" + ErrorText(e) + ")");
  }
  std::unique_ptr<CudaEngine> engine(new CudaEngine(options));
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    auto dev = std::make_unique<Device>();
    dev->ordinal = ordinal;
    // A few copy threads per GPU, leaving most cores to gRPC.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    dev->copier = std::make_unique<HostCopier>(std::clamp(cores / (2u * static_cast<unsigned>(count)), 1u, 8u) - 1);
    cudaDeviceProp prop{};
    if (auto e = cudaSetDevice(ordinal); e != cudaSuccess) return absl::InternalError(ErrorText(e));
    if (auto e = cudaGetDeviceProperties(&prop, ordinal); e != cudaSuccess) return absl::InternalError(ErrorText(e));
    dev->desc.id = "cuda:" + std::to_string(ordinal);
    dev->desc.name = prop.name;
    dev->desc.kind = "cuda";
    dev->desc.arch = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
    dev->desc.memory_bytes = prop.totalGlobalMem;
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), ordinal) == cudaSuccess) dev->desc.pci_bus_id = bus_id;

    // The pool keeps what it grows to: no cudaMalloc/cudaFree per request.
    if (auto e = cudaDeviceGetDefaultMemPool(&dev->pool, ordinal); e != cudaSuccess) {
      return absl::InternalError(dev->desc.id + ": memory pool: " + ErrorText(e));
    }
    uint64_t keep = UINT64_MAX;
    cudaMemPoolSetAttribute(dev->pool, cudaMemPoolAttrReleaseThreshold, &keep);
    if (auto e = dev->l2_flush.Init(ordinal); e != cudaSuccess) {
      return absl::InternalError(dev->desc.id + ": L2 flush buffer: " + ErrorText(e));
    }

    for (uint32_t l = 0; l < std::max<uint32_t>(options.lanes_per_device, 1); ++l) {
      auto lane = std::make_unique<Lane>();
      if (auto err = gemm::CreateContext(ordinal, &lane->ctx); !err.empty()) {
        return absl::InternalError(dev->desc.id + ": " + err);
      }
      cudaError_t e = cudaStreamCreateWithFlags(&lane->copy, cudaStreamNonBlocking);
      if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&lane->compute, cudaStreamNonBlocking);
      for (auto& ev : lane->staged)
        if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
      if (e == cudaSuccess) e = cudaEventCreateWithFlags(&lane->inputs_ready, cudaEventDisableTiming);
      if (e == cudaSuccess) e = cudaEventCreateWithFlags(&lane->norms_ready, cudaEventDisableTiming);
      if (e == cudaSuccess) e = cudaEventCreate(&lane->inputs_start);
      if (e == cudaSuccess) e = cudaEventCreate(&lane->inputs_done);
      if (e == cudaSuccess) e = cudaEventCreateWithFlags(&lane->turn_done, cudaEventDisableTiming);
      if (e == cudaSuccess) e = cudaEventCreate(&lane->verified);
      if (e == cudaSuccess) e = cudaEventCreate(&lane->downloaded);
      lane->staging_bytes = std::max<uint64_t>(options.staging_bytes, 1 << 20);
      if (e == cudaSuccess) e = cudaMallocHost(&lane->staging, lane->staging_bytes);
      if (e == cudaSuccess) e = cudaMalloc(&lane->cmp, sizeof(gemm::CompareResult));
      if (e == cudaSuccess) e = cudaMalloc(&lane->row_norms, 2 * sizeof(float));
      if (e == cudaSuccess) e = cudaMalloc(&lane->scratch, kLaneScratchBytes);
      if (e == cudaSuccess) e = cudaMallocHost(&lane->cmp_host, sizeof(gemm::CompareResult));
      if (e == cudaSuccess) e = cudaMalloc(&lane->sketch, sizeof(gemm::SketchResult));
      if (e == cudaSuccess) e = cudaMallocHost(&lane->sketch_host, sizeof(gemm::SketchResult));
      if (e != cudaSuccess) return absl::InternalError(dev->desc.id + ": lane set-up: " + ErrorText(e));
      dev->lanes.push_back(std::move(lane));
    }
    dev->on_sticky_error = [engine = engine.get()](const std::string& msg) {
      for (auto& d : engine->devices_) d->MarkUnhealthy("CUDA state of the process lost after " + msg);
    };
    ReservePoolMemory(*dev, options.reserved_pool_bytes);
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    const uint64_t cache_bytes = options.device_cache_bytes.value_or(free_bytes / 2);
    dev->cache = std::make_unique<DeviceMatrixCache>(
        cache_bytes, DeviceMatrixCache::Memory{[ordinal](uint64_t bytes) -> void* {
                                                 void* p = nullptr;
                                                 cudaSetDevice(ordinal);
                                                 if (cudaMalloc(&p, bytes) == cudaSuccess) return p;
                                                 cudaGetLastError();  // out of memory: the request copies as if uncached
                                                 return nullptr;
                                               },
                                               [ordinal](void* p) {
                                                 cudaSetDevice(ordinal);
                                                 cudaFree(p);
                                               }});
    const gemm::DeviceContext& ctx = dev->lanes.front()->ctx;
    for (const gemm::StepInfo& info : gemm::AllSteps()) {
      gemm::StepSupport s = gemm::Supports(info.step, ctx);
      dev->steps.push_back({s.supported, s.reason});
    }
    engine->devices_.push_back(std::move(dev));
  }
  if (options.keep_warm_ms > 0) {
    for (auto& dev : engine->devices_) {
      cudaSetDevice(dev->ordinal);
      if (cudaStreamCreateWithFlags(&dev->keep_warm_stream, cudaStreamNonBlocking) != cudaSuccess ||
          cudaMalloc(&dev->keep_warm_word, sizeof(__half)) != cudaSuccess) {
        return absl::InternalError(dev->desc.id + ": keep-warm set-up failed");
      }
    }
    engine->keep_warm_ = std::thread([raw = engine.get()] {
      NameThisThread("keep-warm");
      raw->KeepWarm();
    });
  }
  return engine;
}

CudaEngine::CudaEngine(CudaEngineOptions options) : options_(options) {}

void CudaEngine::KeepWarm() {
  const auto period = std::chrono::milliseconds(options_.keep_warm_ms);
  std::unique_lock lock(keep_warm_mu_);
  while (!keep_warm_cv_.wait_for(lock, period, [this] { return stopping_; })) {
    const int64_t now = Clock::now().time_since_epoch().count();
    for (auto& dev : devices_) {
      const int64_t idle = now - dev->last_request_ns.load(std::memory_order_relaxed);
      if (!dev->healthy || idle < std::chrono::nanoseconds(period).count()) continue;
      cudaSetDevice(dev->ordinal);
      if (gemm::Poison(dev->keep_warm_word, 1, dev->keep_warm_stream) == cudaSuccess) {  // the launch is the point
        dev->keep_warm_launches.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
}

CudaEngine::~CudaEngine() {
  {
    std::lock_guard lock(keep_warm_mu_);
    stopping_ = true;
  }
  keep_warm_cv_.notify_all();
  if (keep_warm_.joinable()) keep_warm_.join();
  for (auto& dev : devices_) {
    cudaSetDevice(dev->ordinal);
    for (auto& lane : dev->lanes) {
      if (lane->copy) cudaStreamSynchronize(lane->copy);
      if (lane->compute) cudaStreamSynchronize(lane->compute);
      for (cudaEvent_t ev : lane->starts) cudaEventDestroy(ev);
      for (cudaEvent_t ev : lane->stops) cudaEventDestroy(ev);
      for (cudaEvent_t ev : lane->staged) if (ev) cudaEventDestroy(ev);
      for (cudaEvent_t ev : {lane->inputs_ready, lane->norms_ready, lane->inputs_start, lane->inputs_done,
                             lane->verified, lane->downloaded, lane->turn_done}) {
        if (ev) cudaEventDestroy(ev);
      }
      if (lane->copy) cudaStreamDestroy(lane->copy);
      if (lane->compute) cudaStreamDestroy(lane->compute);
      if (lane->staging) cudaFreeHost(lane->staging);
      if (lane->cmp) cudaFree(lane->cmp);
      if (lane->row_norms) cudaFree(lane->row_norms);
      if (lane->scratch) cudaFree(lane->scratch);
      if (lane->cmp_host) cudaFreeHost(lane->cmp_host);
      if (lane->sketch) cudaFree(lane->sketch);
      if (lane->sketch_host) cudaFreeHost(lane->sketch_host);
      gemm::DestroyContext(&lane->ctx);
    }
    if (dev->keep_warm_stream) {
      cudaStreamSynchronize(dev->keep_warm_stream);
      cudaStreamDestroy(dev->keep_warm_stream);
    }
    if (dev->keep_warm_word) cudaFree(dev->keep_warm_word);
  }
}

std::vector<DeviceDescription> CudaEngine::devices() const {
  std::vector<DeviceDescription> out;
  for (const auto& d : devices_) out.push_back(d->desc);
  return out;
}

int CudaEngine::VendorReferenceStep(int device) const {
  // The SIMT kernel took 6.3 ms to check a 4096^3 step 0 that ran in 0.18
  // (H200): step 10 checks it in about the kernel's own time. It is never
  // cuBLAS's path, and the start-up self-test has checked it against cuBLAS.
  for (int step : {10, 8}) {
    if (availability(step, device).available) return step;
  }
  return gemm::kVendorStep;  // none: the SIMT kernel
}

StepAvailability CudaEngine::availability(int step, int device) const {
  const Device& dev = *devices_[device];
  std::lock_guard lock(dev.state_mu);
  if (step < 0 || step >= static_cast<int>(dev.steps.size())) return {false, "is not a step of the ladder"};
  return dev.steps[step];
}

bool CudaEngine::healthy(int device) const { return devices_[device]->healthy.load(); }

uint64_t CudaEngine::keep_warm_launches(int device) const {
  return devices_[device]->keep_warm_launches.load(std::memory_order_relaxed);
}

DeviceMemory CudaEngine::memory(int device) const {
  const Device& dev = *devices_[device];
  DeviceMemory m;
  m.total_bytes = dev.desc.memory_bytes;
  cudaMemPoolGetAttribute(dev.pool, cudaMemPoolAttrReservedMemCurrent, &m.pool_bytes);
  cudaMemPoolGetAttribute(dev.pool, cudaMemPoolAttrUsedMemCurrent, &m.used_bytes);
  const DeviceCacheStats cache = dev.cache->stats();
  m.cache_bytes = cache.resident_bytes;
  m.cache_budget_bytes = dev.cache->budget_bytes();
  m.cache_hits = cache.hits;
  m.cache_misses = cache.misses;
  m.cache_evictions = cache.evictions;
  return m;
}

void CudaEngine::ForgetMatrix(const std::string& handle) {
  for (auto& dev : devices_) dev->cache->Forget(handle);
}

uint64_t CudaEngine::HeldBytes(int device, const std::vector<std::string>& keys) const {
  // Either layout's copy: fp16's pitched one, or the other forms' dense one
  // (cuda_forms.cpp keeps it under the key with ",dense" after it).
  std::vector<std::string> both = keys;
  for (const std::string& key : keys) both.push_back(key + kDenseCopy);
  return devices_[device]->cache->ReadyBytes(both);
}

std::string CudaEngine::SelfTestStep(int device, int step) {
  const gemm::StepInfo* info = gemm::FindStep(step);
  if (info == nullptr) return "is not a step of the ladder";
  for (const GemmJob& job : SelfTestJobs(*info)) {
    auto r = Run(device, job);
    std::string failure;
    if (!r.ok()) {
      failure = std::string(r.status().message());
    } else if (!r->verification.passed) {
      failure = std::to_string(r->verification.mismatches) + " of " + std::to_string(r->verification.elements) +
                " elements wrong";
    }
    if (!failure.empty()) {
      const std::string form = job.form.IsPlain() ? "" : " " + gemm::FormSummary(job.form);
      return "failed its start-up self-test on " + std::to_string(job.m) + "x" + std::to_string(job.n) + "x" +
             std::to_string(job.k) + form + " (" + failure + ")";
    }
  }
  return "";
}

void CudaEngine::Withdraw(int device, int step, const std::string& reason) {
  Device& dev = *devices_[device];
  spdlog::error("{}: step {} withdrawn: {}", dev.desc.id, step, reason);
  std::lock_guard lock(dev.state_mu);
  dev.steps[step] = {false, reason, /*withdrawn=*/true};
}

namespace {

// Step 0 on a ragged and two square shapes, three repeats each: what every
// lane, and then every worker thread, runs once before the first request.
constexpr std::array<std::array<int64_t, 3>, 3> kWarmupShapes{{{1001, 333, 999}, {1024, 1024, 1024}, {4096, 4096, 4096}}};

GemmJob WarmupJob(const std::array<int64_t, 3>& shape) {
  GemmJob job;
  job.m = shape[0];
  job.n = shape[1];
  job.k = shape[2];
  job.a.seed = 1;
  job.b.seed = 2;
  job.repeats = 3;
  return job;
}

}  // namespace

absl::Status CudaEngine::Warmup(int device) {
  Device& dev = *devices_[device];
  std::vector<int> offered;
  for (const gemm::StepInfo& info : gemm::AllSteps()) {
    if (info.step != gemm::kVendorStep && availability(info.step, device).available) offered.push_back(info.step);
  }
  if (!options_.selftest.helper_path.empty()) {
    // Out of process: a kernel that faults there ends only the helper's
    // CUDA context, and one that hangs is killed at the time limit.
    const auto start = Clock::now();
    size_t passed = 0;
    for (const StepVerdict& v : RunStepGate(options_.selftest, dev.ordinal, offered)) {
      if (v.passed) {
        ++passed;
      } else {
        Withdraw(device, v.step, v.reason);
      }
    }
    spdlog::info("{}: {} of {} ladder steps passed the start-up self-test in {} ({:.0f} ms)", dev.desc.id, passed,
                 offered.size(), options_.selftest.helper_path, SecondsSince(start) * 1e3);
  } else {
    // In this process (tests, and builds without the helper): a hang is
    // bounded by the wait timeout, a sticky fault takes the device with it.
    for (int step : offered) {
      if (auto failure = SelfTestStep(device, step); !failure.empty()) Withdraw(device, step, failure);
      if (!dev.healthy) return absl::InternalError(dev.desc.id + " was lost during its self-test");
    }
  }
  if (options_.plan_vendor_kernels && dev.vendor_plan == nullptr) {
    // Not fatal when it fails: step 0 then asks cublasGemmEx, and the
    // first request of a shape pays the heuristic and the kernel's load.
    LaneLease lane(dev);
    gemm::VendorPlanStats stats;
    if (auto e = cudaSetDevice(dev.ordinal); e != cudaSuccess) return dev.Fail("cudaSetDevice", e);
    if (auto err = gemm::BuildVendorPlan(lane->ctx, lane->compute, &dev.vendor_plan, &stats); !err.empty()) {
      spdlog::warn("{}: cuBLAS kernels not loaded ahead: {}", dev.desc.id, err);
    } else {
      for (auto& l : dev.lanes) l->ctx.vendor_plan = dev.vendor_plan.get();
      spdlog::info("{}: cuBLAS planned: {} kernels picked over {} shapes, {} loaded ({:.0f} ms asking, {:.0f} ms "
                   "loading)", dev.desc.id, stats.picks, stats.shapes, stats.loaded, stats.heuristic_seconds * 1e3,
                   stats.load_seconds * 1e3);
    }
    // The other forms' plan and kernels (bf16, fp32, fp8, the other
    // layouts, C, batches: gemm/vendor_forms.h), on every lane: each lane's
    // context keeps its own picks.
    const auto start = Clock::now();
    int forms = 0;
    for (auto& l : dev.lanes) {
      int lane_forms = 0;
      if (auto err = gemm::WarmVendorForms(l->ctx, l->compute, &lane_forms); !err.empty()) {
        spdlog::warn("{}: step 0's other forms not loaded ahead: {}", dev.desc.id, err);
        break;
      }
      forms += lane_forms;
    }
    spdlog::info("{}: step 0's other forms planned and loaded ahead: {} matmuls over {} lanes in {:.0f} ms",
                 dev.desc.id, forms, dev.lanes.size(), SecondsSince(start) * 1e3);
  }
  // Every lane runs step 0 once on a ragged and two square shapes: the pool
  // grows to a working size, and no lane's first request pays a first use
  // of its own (on an H100 the first request on each of two lanes ran ×1.8
  // of steady, and the first ragged one's zero padding ×1.4). Run takes the
  // first free lane, so holding each lane after its turn moves to the next.
  std::vector<std::unique_ptr<LaneLease>> done;
  for (size_t l = 0; l < dev.lanes.size(); ++l) {
    for (const auto& shape : kWarmupShapes) {
      if (auto r = Run(device, WarmupJob(shape)); !r.ok()) return r.status();
    }
    done.push_back(std::make_unique<LaneLease>(dev));
  }
  return dev.healthy ? absl::OkStatus() : absl::InternalError(dev.unhealthy_reason);
}

// The warm-up above runs on a thread of its own. A worker thread's first
// step-0 request still timed slow: a fresh server's first 4096^3 kernel
// ran x1.20-1.55 of steady on an H100 at 1980 MHz, with eager module
// loading, after a 2 s pause, and under benchmark timing alike. A step-10
// request first did not help it; an 8192^3 step-0 request through the
// worker did. With each worker running these shapes once before SERVING,
// six fresh servers' first kernels ran x1.00-1.12 (docs/service-path.md).
void CudaEngine::WarmWorker(int device) {
  for (const auto& shape : kWarmupShapes) {
    if (auto r = Run(device, WarmupJob(shape)); !r.ok()) {
      spdlog::warn("{}: a worker's warm-up failed: {}", devices_[device]->desc.id, std::string(r.status().message()));
      return;
    }
  }
}

absl::StatusOr<GemmReport> CudaEngine::Run(int device, const GemmJob& job) {
  const auto engine_start = Clock::now();
  Device& dev = *devices_[device];
  dev.last_request_ns.store(engine_start.time_since_epoch().count(), std::memory_order_relaxed);
  if (!dev.healthy) {
    std::lock_guard lock(dev.state_mu);
    return absl::UnavailableError(dev.desc.id + " is out of service: " + dev.unhealthy_reason);
  }
  if (auto a = availability(job.step, device); !a.available) {
    return absl::FailedPreconditionError("step " + std::to_string(job.step) + " " + a.reason);
  }
  if (auto st = CheckDimensionsFitInt32(job, name()); !st.ok()) return st;
  if (!job.form.IsPlain()) return std::move(RunForms(device, dev, {&job}).front());
  LaneLease lane(dev);
  if (auto e = cudaSetDevice(dev.ordinal); e != cudaSuccess) return dev.Fail("cudaSetDevice", e);
  const double timeout = options_.sync_timeout_seconds;
  const uint64_t slot = lane->slot_bytes();
  DeviceMatrix a = Pitched(job.m, job.k, slot), b = Pitched(job.n, job.k, slot);
  DeviceMatrix d = Pitched(job.m, job.n, slot), ref = d;
  // cuBLAS runs here as step 0 or as a ladder step's reference; only then
  // are the zero-padded operands its plan needs worth writing.
  const bool runs_vendor = job.step == gemm::kVendorStep || job.verify;
  const bool vendor_padded = dev.vendor_plan != nullptr && runs_vendor && PaddedForVendor(a, b, d);
  const int reference_step = job.step == gemm::kVendorStep ? VendorReferenceStep(device) : gemm::kVendorStep;
  GemmReport report;

  // Inputs: generated from a seed on the compute stream, or staged up from
  // the host: on the compute stream too when the request is small (one
  // wait for its whole path; see kOneStreamBytes), else on the copy stream.
  const bool host_inputs = job.a.kind == OperandView::Kind::kHost || job.b.kind == OperandView::Kind::kHost;
  const uint64_t d_bytes = job.d != nullptr ? d.row_bytes() * d.rows : 0;
  const bool one_stream = HostInputBytes(job) + d_bytes <= kOneStreamBytes && d_bytes <= slot;
  cudaStream_t input_stream = host_inputs && !one_stream ? lane->copy : lane->compute;
  // A stored operand big enough to go through the copy stream is read from
  // the device's copy of it when there is one (a hit: no upload), and a
  // miss fills one, zeroed first so that any padding the vendor's plan
  // reads is already there (engine/device_matrix_cache.h).
  DeviceMatrixCache::Lease cached[2];
  if (input_stream == lane->copy) {
    for (auto [i, op, dst] : {std::tuple{0, &job.a, &a}, std::tuple{1, &job.b, &b}}) {
      if (op->kind != OperandView::Kind::kHost || op->cache_key.empty()) continue;
      cached[i] = dev.cache->Acquire(op->cache_key, CachedMatrixBytes(*dst));
      if (cached[i]) dst->data = static_cast<__half*>(cached[i].data());
    }
    // Every host operand found on the device: nothing goes up, and the
    // request runs on the compute stream alone, as a small one does.
    const auto found = [](const OperandView& op, const DeviceMatrixCache::Lease& copy) {
      return op.kind != OperandView::Kind::kHost || copy.hit();
    };
    if (found(job.a, cached[0]) && found(job.b, cached[1])) input_stream = lane->compute;
  }
  PoolBuffers buffers(dev.pool, input_stream, lane->compute, lane->scratch, kLaneScratchBytes);
  cudaError_t e = cached[0] ? cudaSuccess : buffers.Allocate(&a.data, a.elements());
  if (e == cudaSuccess && !cached[1]) e = buffers.Allocate(&b.data, (vendor_padded ? VendorB(b) : b).elements());
  if (e == cudaSuccess) e = buffers.Allocate(&d.data, d.elements());
  const bool fast_check = job.verify && job.verify_fast, full_check = job.verify && !job.verify_fast;
  // VERIFICATION_FAST's view of the pitched operands, where they now are.
  const gemm::SketchProblem sketch = gemm::SketchOfPlain(job.m, job.n, job.k, a.data, a.ld, b.data, b.ld, d.data,
                                                         d.ld, fast_check ? FreshSketchSeed() : 0);
  void* sketch_scratch = nullptr;
  if (e == cudaSuccess && full_check) e = buffers.Allocate(&ref.data, ref.elements());
  if (e == cudaSuccess && fast_check) e = buffers.AllocateBytes(&sketch_scratch, gemm::SketchScratchBytes(sketch));
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    size_t free_bytes = 0, total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    return absl::ResourceExhaustedError(
        dev.desc.id + " cannot hold this request: it needs " +
        std::to_string((a.elements() + b.elements() + d.elements() * (full_check ? 2 : 1)) * 2) +
        " bytes for A, B, D" + (full_check ? " and the reference" : "") + "; " + std::to_string(free_bytes) + " of " +
        std::to_string(total) + " bytes are free");
  }
  if (e != cudaSuccess) return dev.Fail("allocation", e);
  if (input_stream == lane->compute) cudaEventRecord(lane->inputs_start, lane->compute);
  if (vendor_padded && (e = ZeroVendorPadding(a, b, input_stream, !cached[0], !cached[1])) != cudaSuccess) {
    return dev.Fail("padding", e);
  }
  // Generated operands in one launch, as RunBatch does; the others staged up.
  gemm::RandomMatrix generated[2];
  size_t fills = 0;
  for (auto [i, op, dst, id] : {std::tuple{0, &job.a, &a, gemm::OperandId::kA},
                                std::tuple{1, &job.b, &b, gemm::OperandId::kB}}) {
    if (cached[i].hit()) continue;
    if (cached[i] && (e = cudaMemsetAsync(dst->data, 0, CachedMatrixBytes(*dst), input_stream)) != cudaSuccess) {
      return dev.Fail("upload", e);
    }
    if (op->kind == OperandView::Kind::kRandom) {
      generated[fills++] = {dst->data, dst->rows, dst->cols, dst->ld, op->seed, id};
    } else if ((e = StagedUpload(*lane, *dev.copier, *dst, op->host, input_stream)) != cudaSuccess) {
      return dev.Fail("upload", e);
    }
  }
  if ((e = gemm::FillRandom(generated, fills, input_stream)) != cudaSuccess) return dev.Fail("upload", e);
  if (input_stream == lane->compute) cudaEventRecord(lane->inputs_done, lane->compute);
  if (input_stream == lane->copy) {  // the compute stream waits for the copy stream's uploads
    if (e = cudaEventRecord(lane->inputs_ready, lane->copy); e != cudaSuccess) return dev.Fail("event", e);
    if (auto st = dev.Wait(lane->copy, timeout); !st.ok()) return st;
    report.seconds.upload = SecondsSince(engine_start);
    for (auto& copy : cached) copy.MarkReady();  // filled: other requests may read it now
    cudaStreamWaitEvent(lane->compute, lane->inputs_ready, 0);
  }
  if (job.should_stop()) return absl::CancelledError("request cancelled before the GEMM ran");

  cudaEvent_t before_download = nullptr;  // a small D's copy down starts here
  const char* d_staged = nullptr;         // and lands here
  const uint32_t repeats = std::max<uint32_t>(job.repeats, 1);
  DeviceMatrixCache::Lease kept_d;  // D's copy under job.d_cache_key
  {
    ComputeTurn turn(dev, *lane);
    if ((e = EnsureRepeatEvents(*lane, repeats)) != cudaSuccess) return dev.Fail("event", e);
    // D's row tails are this engine's padding: nothing reads them back.
    const gemm::Problem problem = vendor_padded && job.step == gemm::kVendorStep
                                      ? VendorProblem(a, b, d.data, d.ld)
                                      : gemm::Problem{job.m, job.n, job.k, a.data, b.data, d.data, a.ld, b.ld, d.ld, true};
    // D is poisoned (outside the timed region) so that an element the
    // kernel does not write stays NaN and fails verification: once, when
    // the result is checked. Benchmark timing poisons and flushes L2 before
    // every repeat, so that no run finds what the previous one left in L2.
    if (job.verify && !job.benchmark) {
      if ((e = gemm::Poison(d.data, d.elements(), lane->compute)) != cudaSuccess) return dev.Fail("poison", e);
    }
    for (uint32_t r = 0; r < repeats; ++r) {
      if (job.benchmark) {
        if ((e = gemm::Poison(d.data, d.elements(), lane->compute)) != cudaSuccess) return dev.Fail("poison", e);
        if ((e = dev.l2_flush.Run(lane->compute)) != cudaSuccess) return dev.Fail("L2 flush", e);
      }
      cudaEventRecord(lane->starts[r], lane->compute);
      if (auto err = gemm::Launch(job.step, problem, lane->ctx, lane->compute); !err.empty()) {
        if ((e = cudaGetLastError()) != cudaSuccess) return dev.Fail(("step " + std::to_string(job.step)).c_str(), e);
        return absl::InternalError(dev.desc.id + ": step " + std::to_string(job.step) + ": " + err);
      }
      cudaEventRecord(lane->stops[r], lane->compute);
    }
    if (fast_check) {  // a few passes over A, B and D (gemm/sketch_check.h)
      e = gemm::SketchCheck(sketch, sketch_scratch, lane->sketch, lane->compute);
      if (e == cudaSuccess) {
        e = cudaMemcpyAsync(lane->sketch_host, lane->sketch, sizeof(gemm::SketchResult), cudaMemcpyDeviceToHost,
                            lane->compute);
      }
      if (e == cudaSuccess) e = cudaEventRecord(lane->verified, lane->compute);
      if (e != cudaSuccess) return dev.Fail("verification", e);
    } else if (job.verify) {  // queued behind the kernels: one wait for both
      // The reference is not poisoned: D is, so an element the step leaves
      // unwritten is NaN and fails whatever the reference holds; and the
      // reference (cuBLAS, or a ladder step the start-up gate checked
      // against cuBLAS) writes every element.
      // The bound grows with K as the two sides' fp32 sums may drift apart
      // (gemm/tolerance.h): from A's and B's largest row norms, read on the
      // copy stream (idle now: the inputs are in) while the reference GEMM
      // computes, after the timed repeats so that they never share the GPU.
      e = cudaStreamWaitEvent(lane->copy, lane->stops[repeats - 1], 0);
      if (e == cudaSuccess) {
        e = gemm::MaxRowNorms(a.data, a.rows, a.ld, b.data, b.rows, b.ld, job.k, lane->row_norms, lane->copy);
      }
      if (e == cudaSuccess) e = cudaEventRecord(lane->norms_ready, lane->copy);
      if (e != cudaSuccess) return dev.Fail("verification", e);
      // The reference never shares a path with the step it checks: cuBLAS
      // for the ladder, and for cuBLAS itself the ladder's top step, or a
      // plain SIMT kernel of ours where no ladder step is available.
      if (job.step == gemm::kVendorStep) {
        const gemm::Problem check{job.m, job.n, job.k, a.data, b.data, ref.data, a.ld, b.ld, ref.ld, true};
        if (auto st = LaunchVendorReference(dev, *lane, reference_step, check); !st.ok()) return st;
      } else if (auto err = gemm::Launch(gemm::kVendorStep,
                                         vendor_padded ? VendorProblem(a, b, ref.data, ref.ld)
                                                       : gemm::Problem{job.m, job.n, job.k, a.data, b.data, ref.data,
                                                                       a.ld, b.ld, ref.ld},
                                         lane->ctx, lane->compute);
                 !err.empty()) {
        return absl::InternalError(dev.desc.id + ": cuBLAS reference: " + err);
      }
      e = cudaStreamWaitEvent(lane->compute, lane->norms_ready, 0);
      const gemm::AccumulationBound bound{lane->row_norms,
                                          static_cast<float>(gemm::AccumulationAtol(job.k, 1.0, 1.0))};
      if (e == cudaSuccess) {
        e = gemm::Compare(d.data, ref.data, d.rows, d.cols, d.ld, static_cast<float>(kRtol),
                          static_cast<float>(kAtol), bound, lane->cmp, lane->compute);
      }
      if (e == cudaSuccess) {
        e = cudaMemcpyAsync(lane->cmp_host, lane->cmp, sizeof(gemm::CompareResult), cudaMemcpyDeviceToHost,
                            lane->compute);
      }
      if (e == cudaSuccess) e = cudaEventRecord(lane->verified, lane->compute);
      if (e != cudaSuccess) return dev.Fail("verification", e);
    }
    // D kept on the device under the handle it will be stored as, where
    // it is big enough for a request reading it to go through the copy
    // stream (engine/device_matrix_cache.h). Only its n columns are copied
    // into a zeroed copy: a vendor plan reads the gaps as padding, and D's
    // own gaps are the engine's (poisoned, or whatever the kernel left).
    if (!job.d_cache_key.empty() && job.d != nullptr && d_bytes > kOneStreamBytes) {
      kept_d = dev.cache->Acquire(job.d_cache_key, CachedMatrixBytes(d));
      if (kept_d && !kept_d.hit()) {
        e = cudaMemsetAsync(kept_d.data(), 0, CachedMatrixBytes(d), lane->compute);
        if (e == cudaSuccess) {
          e = cudaMemcpy2DAsync(kept_d.data(), d.ld * 2, d.data, d.ld * 2, d.row_bytes(), d.rows,
                                cudaMemcpyDeviceToDevice, lane->compute);
        }
        if (e != cudaSuccess) return dev.Fail("keeping D", e);
      }
    }
    // A small D goes down behind the check, still before the one wait.
    before_download = job.verify ? lane->verified : lane->stops[repeats - 1];
    if (job.d != nullptr && one_stream) {
      e = QueueSmallDownload(*lane, d, lane->compute, &d_staged);
      if (e == cudaSuccess) e = cudaEventRecord(lane->downloaded, lane->compute);
      if (e != cudaSuccess) return dev.Fail("download", e);
    }
  }
  // Outside the turn: the next lane's GEMM is queued behind this one meanwhile.
  if (auto st = dev.Wait(lane->compute, timeout); !st.ok()) return st;
  if (kept_d && !kept_d.hit()) kept_d.MarkReady();
  if ((e = MedianRepeatSeconds(*lane, repeats, &report.seconds.kernel)) != cudaSuccess) return dev.Fail("timing", e);
  report.seconds.repeats = repeats;
  if (input_stream == lane->compute) {  // made or staged on the compute stream (not the wait for the device's turn)
    report.seconds.upload = SecondsBetween(lane->inputs_start, lane->inputs_done);
  }
  if (job.verify) {
    report.seconds.verify = SecondsBetween(lane->stops[repeats - 1], lane->verified);
    report.verification =
        fast_check ? FastVerification(*lane->sketch_host, gemm::FormTolerance{}, gemm::kSketchReference)
                   : LaneVerification(*lane, static_cast<uint64_t>(job.m) * job.n, gemm::FormTolerance{},
                                      job.step != gemm::kVendorStep ? "cublas" : VendorReferenceName(reference_step));
  }

  if (d_staged != nullptr) {  // out of the staging, with the device free for another lane's GEMM
    float ms = 0;
    cudaEventElapsedTime(&ms, before_download, lane->downloaded);
    const auto t = Clock::now();
    dev.copier->Copy(job.d, d_staged, d_bytes);
    report.seconds.download = ms * 1e-3 + SecondsSince(t);
  } else if (job.d != nullptr) {
    const auto t = Clock::now();
    if ((e = StagedDownload(*lane, *dev.copier, job.d, d)) != cudaSuccess) return dev.Fail("download", e);
    if (auto st = dev.Wait(lane->copy, timeout); !st.ok()) return st;
    report.seconds.download = SecondsSince(t);
  }
  return report;
}

}  // namespace gemmd

