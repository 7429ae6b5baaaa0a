// Step 0 for every form beyond gemmd's original fp16 A·Bᵀ (gemm/form.h):
// bf16, fp32 and fp8 operands, either storage of each, alpha·AB + beta·C
// and batches, as one cuBLASLt matmul (gemm/vendor_forms.h). Verified
// against an fp64 SIMT GEMM (gemm/form_ops.h), which shares nothing with
// cuBLASLt. The operands are dense on the device, come up through the
// lane's staging on the compute stream (stored ones stay in the device's
// cache for the next request), and the whole request waits once; the
// plain form keeps its own faster path (cuda_engine.cpp).
#include <algorithm>
#include <vector>

#include "engine/cuda_device.h"
#include "engine/permanent_refusal.h"
#include "gemm/form_ops.h"
#include "gemm/vendor_forms.h"

namespace gemmd {
namespace {

// A dense operand as the staged copies see it: one row of `count` elements.
DeviceMatrix Dense(void* data, uint64_t count, gemm::ElementType type) {
  DeviceMatrix m;
  m.data = static_cast<__half*>(data);
  m.rows = 1;
  m.cols = m.ld = static_cast<int64_t>(count);
  m.element_bytes = static_cast<uint32_t>(gemm::ElementBytes(type));
  return m;
}

}  // namespace

absl::StatusOr<GemmReport> CudaEngine::RunForm(Device& dev, const GemmJob& job) {
  const gemm::GemmForm& f = job.form;
  gemm::FormProblem p{job.m, job.n, job.k, f};
  LaneLease lane(dev);
  if (auto e = cudaSetDevice(dev.ordinal); e != cudaSuccess) return dev.Fail("cudaSetDevice", e);
  if (auto why = gemm::PrepareVendorForm(p, lane->ctx); !why.empty()) {
    return Permanent(absl::FailedPreconditionError("step 0 on " + dev.desc.id + ": " + why +
                                                   "; the CPU engine (gemmd --engine cpu) computes every form"));
  }
  const double timeout = options_.sync_timeout_seconds;
  cudaStream_t stream = lane->compute;
  struct Input {
    const OperandView* view;
    gemm::OperandStorage storage;
    gemm::OperandId id;
    const void** dst;
    DeviceMatrixCache::Lease cached;  // a stored operand's copy on the device
  };
  std::vector<Input> inputs;
  inputs.push_back({&job.a, gemm::StorageOfA(f, job.m, job.k), gemm::OperandId::kA, &p.a, {}});
  inputs.push_back({&job.b, gemm::StorageOfB(f, job.n, job.k), gemm::OperandId::kB, &p.b, {}});
  if (f.ReadsC()) inputs.push_back({&job.c, gemm::StorageOfC(f, job.m, job.n), gemm::OperandId::kC, &p.c, {}});
  const uint64_t d_count = static_cast<uint64_t>(f.batch) * job.m * job.n;
  const uint64_t d_bytes = d_count * gemm::ElementBytes(f.d);

  PoolBuffers buffers(dev.pool, stream, stream, lane->scratch, kLaneScratchBytes);
  uint64_t needed = d_bytes + gemm::VendorFormScratchBytes(p) + (job.verify ? d_count * sizeof(double) : 0);
  cudaError_t e = cudaSuccess;
  for (Input& in : inputs) {
    const uint64_t bytes = in.storage.Footprint(f.batch) * gemm::ElementBytes(in.storage.type);
    needed += bytes;
    // A stored operand is read from, or kept in, the device's copy of it
    // (engine/device_matrix_cache.h). Dense here, where the fp16 path keeps
    // its copies pitched: a key of its own, which still names the handles.
    if (dev.cache && in.view->kind == OperandView::Kind::kHost && !in.view->cache_key.empty()) {
      in.cached = dev.cache->Acquire(in.view->cache_key + kDenseCopy, bytes);
    }
    void* ptr = in.cached ? in.cached.data() : nullptr;
    if (e == cudaSuccess && !in.cached) e = buffers.AllocateBytes(&ptr, bytes);
    *in.dst = ptr;
  }
  void *scratch = nullptr, *ref = nullptr, *bound = nullptr;
  if (e == cudaSuccess) e = buffers.AllocateBytes(&p.d, d_bytes);
  if (e == cudaSuccess && gemm::VendorFormScratchBytes(p) > 0) {
    e = buffers.AllocateBytes(&scratch, gemm::VendorFormScratchBytes(p));
  }
  if (e == cudaSuccess && job.verify) e = buffers.AllocateBytes(&ref, d_count * sizeof(double));
  if (e == cudaSuccess && job.verify) e = buffers.AllocateBytes(&bound, 3 * sizeof(float));
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return absl::ResourceExhaustedError(dev.desc.id + " cannot hold this request: it needs " + std::to_string(needed) +
                                        " bytes for its operands, D" + (job.verify ? " and the reference" : ""));
  }
  if (e != cudaSuccess) return dev.Fail("allocation", e);

  GemmReport report;
  if ((e = cudaEventRecord(lane->inputs_start, stream)) != cudaSuccess) return dev.Fail("event", e);
  for (const Input& in : inputs) {
    if (in.cached.hit()) continue;
    const uint64_t count = in.storage.Footprint(f.batch);
    void* dst = const_cast<void*>(*in.dst);
    e = in.view->kind == OperandView::Kind::kRandom
            ? gemm::FillRandom(dst, in.storage.type, count, in.view->seed, in.id, stream)
            : StagedUpload(*lane, *dev.copier, Dense(dst, count, in.storage.type), in.view->host, stream);
    if (e != cudaSuccess) return dev.Fail("upload", e);
  }
  if (job.should_stop()) return absl::CancelledError("request cancelled before the GEMM ran");

  {  // the GEMMs and their check, one request at a time per device
    std::lock_guard compute(dev.compute_mu);
    const uint32_t repeats = std::max<uint32_t>(job.repeats, 1);
    if ((e = EnsureRepeatEvents(*lane, repeats)) != cudaSuccess) return dev.Fail("event", e);
    // D poisoned (all bits set: NaN in every type) so that an element the
    // GEMM does not write fails verification; before every repeat, with L2
    // flushed, when timed as a benchmark.
    if (job.verify && !job.benchmark && (e = cudaMemsetAsync(p.d, 0xff, d_bytes, stream)) != cudaSuccess) {
      return dev.Fail("poison", e);
    }
    for (uint32_t r = 0; r < repeats; ++r) {
      if (job.benchmark) {
        if ((e = cudaMemsetAsync(p.d, 0xff, d_bytes, stream)) != cudaSuccess) return dev.Fail("poison", e);
        if ((e = dev.l2_flush.Run(stream)) != cudaSuccess) return dev.Fail("L2 flush", e);
      }
      cudaEventRecord(lane->starts[r], stream);
      if (auto err = gemm::LaunchVendorForm(p, lane->ctx, scratch, stream); !err.empty()) {
        if ((e = cudaGetLastError()) != cudaSuccess) return dev.Fail("step 0", e);
        return absl::InternalError(dev.desc.id + ": step 0: " + err);
      }
      cudaEventRecord(lane->stops[r], stream);
    }
    const gemm::FormTolerance tolerance = gemm::ToleranceOf(f);
    if (job.verify) {
      const double sqrt_k = std::sqrt(static_cast<double>(job.k));
      const double scale = std::fabs(f.ProductScale());
      const gemm::FormBoundTerms terms{static_cast<const float*>(bound),
                                       (tolerance.unit * sqrt_k + tolerance.input) * scale,
                                       f.ReadsC() ? 0x1p-23 * std::fabs(f.beta) : 0.0};
      e = gemm::FormBoundInputs(p, static_cast<float*>(bound), stream);
      if (e == cudaSuccess) e = gemm::ReferenceFormGemm(p, static_cast<double*>(ref), stream);
      if (e == cudaSuccess) {
        e = gemm::CompareForm(p.d, f.d, static_cast<const double*>(ref), d_count, tolerance.rtol, tolerance.atol, terms,
                              lane->cmp, stream);
      }
      if (e == cudaSuccess) {
        e = cudaMemcpyAsync(lane->cmp_host, lane->cmp, sizeof(gemm::CompareResult), cudaMemcpyDeviceToHost, stream);
      }
      if (e == cudaSuccess) e = cudaEventRecord(lane->verified, stream);
      if (e != cudaSuccess) return dev.Fail("verification", e);
    }
    if (auto st = dev.Wait(stream, timeout); !st.ok()) return st;
    for (Input& in : inputs) {
      if (in.cached && !in.cached.hit()) in.cached.MarkReady();  // filled: other requests may read it now
    }
    if ((e = MedianRepeatSeconds(*lane, repeats, &report.seconds.kernel)) != cudaSuccess) return dev.Fail("timing", e);
    report.seconds.repeats = repeats;
    report.seconds.upload = SecondsBetween(lane->inputs_start, lane->starts[0]);
    if (job.verify) {
      report.seconds.verify = SecondsBetween(lane->stops[repeats - 1], lane->verified);
      report.verification = LaneVerification(*lane, d_count, tolerance, "gpu-simt-fp64");
    }
  }
  if (job.d != nullptr) {
    const auto t = Clock::now();
    if ((e = StagedDownload(*lane, *dev.copier, job.d, Dense(p.d, d_count, f.d))) != cudaSuccess) {
      return dev.Fail("download", e);
    }
    if (auto st = dev.Wait(lane->copy, timeout); !st.ok()) return st;
    report.seconds.download = SecondsSince(t);
  }
  return report;
}

}  // namespace gemmd
