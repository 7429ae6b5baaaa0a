// The CUDA engine: every visible GPU (CUDA_VISIBLE_DEVICES respected), each
// kept warm for the server's life: a stream-ordered memory pool that keeps
// what it grows to, cuBLAS handles and workspaces, pinned staging buffers,
// streams and events per worker lane. Step 0 is cuBLAS; ladder steps come
// from the kernels library, each checked at start-up against cuBLAS.
#pragma once

#include <condition_variable>
#include <memory>
#include <optional>
#include <mutex>
#include <thread>

#include "engine/engine.h"
#include "engine/step_gate.h"

namespace gemmd {

struct CudaEngineOptions {
  uint32_t lanes_per_device = 1;        // one per dispatcher worker
  uint64_t staging_bytes = 64ull << 20; // pinned host buffer per lane
  double sync_timeout_seconds = 120;    // a kernel that runs longer is declared hung
  // The start-up self-test of the ladder's steps: out of process when a
  // helper is named (gemmd does), else in this process.
  StepGateOptions selftest;
  // Keeps the GPU's clocks up between requests: after this long with no
  // request, a one-element kernel runs, and again every period while idle.
  // 0 (the default) lets the GPU idle down. Costs watts; docs/service-path.md.
  uint32_t keep_warm_ms = 0;
  // Start-up loads the kernel cuBLAS's heuristic picks for every shape of a
  // grid, and step 0 runs the grid's pick (gemm/vendor_plan.h): no request
  // pays a kernel load or a heuristic. About 1.2 s of start-up per GPU,
  // and about 3 s more for the other forms' plan (gemm/vendor_forms.h).
  bool plan_vendor_kernels = false;
  // Device memory the pool maps and touches at start-up and keeps: a
  // request up to this size of buffers takes them from memory already
  // mapped instead of growing the pool on its own path. 0: none.
  uint64_t reserved_pool_bytes = 0;
  // Stored matrices' copies kept on each device after a request reads them
  // (engine/device_matrix_cache.h); nullopt: half of the memory free once
  // start-up is done; 0: none.
  std::optional<uint64_t> device_cache_bytes;
};

class CudaEngine final : public Engine {
 public:
  // NOT_FOUND when there is no usable GPU (the caller falls back to the CPU).
  static absl::StatusOr<std::unique_ptr<CudaEngine>> Create(CudaEngineOptions options);
  ~CudaEngine() override;

  std::string name() const override { return "cuda"; }
  std::vector<DeviceDescription> devices() const override;
  StepAvailability availability(int step, int device) const override;
  bool healthy(int device) const override;
  absl::Status Warmup(int device) override;
  void WarmWorker(int device) override;
  absl::StatusOr<GemmReport> Run(int device, const GemmJob& job) override;
  // Small step-0 GEMMs of one shape: one strided batched launch (cuda_batch.cpp).
  std::vector<absl::StatusOr<GemmReport>> RunBatch(int device, const std::vector<const GemmJob*>& jobs) override;
  DeviceMemory memory(int device) const override;
  void ForgetMatrix(const std::string& handle) override;
  uint64_t HeldBytes(int device, const std::vector<std::string>& keys) const override;
  // Keep-warm kernels launched on `device` so far (CudaEngineOptions::keep_warm_ms).
  uint64_t keep_warm_launches(int device) const;

  // Runs `step` on `device` over the self-test's small and ragged shapes
  // against cuBLAS; "" if every one passed, else a reason for ListKernels.
  std::string SelfTestStep(int device, int step);

  struct Device;  // defined in cuda_device.h

 private:
  explicit CudaEngine(CudaEngineOptions options);
  // Takes `step` away from `device` for the process's life, with `reason`.
  void Withdraw(int device, int step, const std::string& reason);
  void KeepWarm();  // the keep-warm thread's loop
  // The forms beyond fp16 A·Bᵀ on `device` (cuda_forms.cpp): step 0 by
  // cuBLASLt, a ladder step by its kernels, each checked against the other
  // where it computes the form (fp8 over fp16 copies of its operands),
  // else against an fp64 tensor-core reference. One
  // job, or single-entry step-0 jobs of one form and shape as one batch
  // (FormsShareOneLaunch), a report each; none where cuBLASLt takes no such
  // batch (the caller runs them alone).
  std::vector<absl::StatusOr<GemmReport>> RunForms(int device, Device& dev, const std::vector<const GemmJob*>& jobs);
  // What checks step 0 on `device`: the top ladder step it offers, or
  // kVendorStep for the SIMT reference kernel.
  int VendorReferenceStep(int device) const;

  CudaEngineOptions options_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::thread keep_warm_;
  std::mutex keep_warm_mu_;
  std::condition_variable keep_warm_cv_;
  bool stopping_ = false;
};

}  // namespace gemmd
