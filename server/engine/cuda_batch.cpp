// Small step-0 GEMMs of one shape in one launch (the dispatcher's batching,
// engine/batching.h). Each GEMM alone costs a launch, events and a wait of
// the host on the GPU, several times a 64^3 kernel's own few microseconds:
// here the batch's operands sit side by side in one buffer each, one
// strided batched cuBLAS GEMM runs them all, the jobs' references are
// queued behind it and one launch compares them all, every D and comparison
// comes back through the lane's staging in the same stream, and the host
// waits once. Requests of another form than fp16 A·Bᵀ batch in
// cuda_forms.cpp. A batch that is not of one shape and kind, or whose Ds do
// not fit the staging, runs job by job.
#include <algorithm>
#include <optional>

#include "engine/cuda_device.h"
#include "engine/verify.h"

namespace gemmd {
namespace {

uint64_t RoundUp(uint64_t x, uint64_t to) { return (x + to - 1) / to * to; }

bool OneLaunchCanRun(const std::vector<const GemmJob*>& jobs, uint64_t staging_bytes) {
  if (jobs.size() < 2 || jobs.size() > gemm::kMaxCompareBatch) return false;
  const GemmJob& first = *jobs.front();
  for (const GemmJob* job : jobs) {
    if (job->step != 0 || !job->form.IsPlain() || job->repeats != 1 || job->benchmark || job->verify_fast ||
        job->m != first.m || job->n != first.n || job->k != first.k) {
      return false;
    }
  }
  const uint64_t d_bytes = static_cast<uint64_t>(first.m) * first.n * 2;
  return jobs.size() * (RoundUp(d_bytes, 256) + sizeof(gemm::CompareResult)) <= staging_bytes;
}

}  // namespace

std::vector<absl::StatusOr<GemmReport>> CudaEngine::RunBatch(int device, const std::vector<const GemmJob*>& jobs) {
  const uint64_t staging_bytes = std::max<uint64_t>(options_.staging_bytes, 1 << 20);
  const bool forms = FormsShareOneLaunch(jobs, staging_bytes);
  if (!forms && !OneLaunchCanRun(jobs, staging_bytes)) return Engine::RunBatch(device, jobs);
  const auto engine_start = Clock::now();
  const size_t count = jobs.size();
  auto all = [count](const absl::Status& st) { return std::vector<absl::StatusOr<GemmReport>>(count, st); };
  Device& dev = *devices_[device];
  dev.last_request_ns.store(engine_start.time_since_epoch().count(), std::memory_order_relaxed);
  if (!dev.healthy) {
    std::lock_guard lock(dev.state_mu);
    return all(absl::UnavailableError(dev.desc.id + " is out of service: " + dev.unhealthy_reason));
  }
  if (auto a = availability(0, device); !a.available) return all(absl::FailedPreconditionError("step 0 " + a.reason));
  const GemmJob& shape = *jobs.front();
  if (auto st = CheckDimensionsFitInt32(shape, name()); !st.ok()) return all(st);
  if (forms) {
    if (auto reports = RunForms(device, dev, jobs); !reports.empty()) return reports;
    return Engine::RunBatch(device, jobs);
  }

  LaneLease lane(dev);
  if (auto e = cudaSetDevice(dev.ordinal); e != cudaSuccess) return all(dev.Fail("cudaSetDevice", e));
  const double timeout = options_.sync_timeout_seconds;
  const uint64_t slot = lane->slot_bytes();
  DeviceMatrix a = Pitched(shape.m, shape.k, slot), b = Pitched(shape.n, shape.k, slot);
  DeviceMatrix d = Pitched(shape.m, shape.n, slot);
  // One slot per job, 256-byte aligned, as cuBLAS's batched kernels like them.
  const uint64_t slot_a = RoundUp(a.elements(), 128), slot_b = RoundUp(b.elements(), 128);
  const uint64_t slot_d = RoundUp(d.elements(), 128);
  const int reference_step = VendorReferenceStep(device);
  bool any_verify = false;
  uint64_t host_bytes = 0;  // D comes down on the compute stream anyway
  for (const GemmJob* job : jobs) {
    host_bytes += HostInputBytes(*job);
    any_verify |= job->verify;
  }
  // Small host operands go up on the compute stream too: one wait (see
  // kOneStreamBytes).
  cudaStream_t input_stream = host_bytes > kOneStreamBytes ? lane->copy : lane->compute;
  PoolBuffers buffers(dev.pool, input_stream, lane->compute, lane->scratch, kLaneScratchBytes);
  __half *a_all = nullptr, *b_all = nullptr, *d_all = nullptr, *ref_all = nullptr, *cmp_raw = nullptr;
  const uint64_t cmp_elements = (count * sizeof(gemm::CompareResult) + 1) / 2;
  cudaError_t e = buffers.Allocate(&a_all, count * slot_a);
  if (e == cudaSuccess) e = buffers.Allocate(&b_all, count * slot_b);
  if (e == cudaSuccess) e = buffers.Allocate(&d_all, count * slot_d);
  if (e == cudaSuccess && any_verify) e = buffers.Allocate(&ref_all, count * slot_d);
  if (e == cudaSuccess && any_verify) e = buffers.Allocate(&cmp_raw, cmp_elements);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return all(absl::ResourceExhaustedError(dev.desc.id + " cannot hold a batch of " + std::to_string(count) + " " +
                                            std::to_string(shape.m) + "x" + std::to_string(shape.n) + "x" +
                                            std::to_string(shape.k) + " GEMMs"));
  }
  if (e != cudaSuccess) return all(dev.Fail("allocation", e));
  auto* cmp_all = reinterpret_cast<gemm::CompareResult*>(cmp_raw);

  if (input_stream == lane->compute) cudaEventRecord(lane->inputs_start, lane->compute);
  // Generated operands, every job's, in one launch; the others staged up.
  std::vector<gemm::RandomMatrix> generated;
  for (size_t i = 0; i < count; ++i) {
    for (auto [op, matrix, slot, base, id] :
         {std::tuple{&jobs[i]->a, a, slot_a, a_all, gemm::OperandId::kA},
          std::tuple{&jobs[i]->b, b, slot_b, b_all, gemm::OperandId::kB}}) {
      matrix.data = base + i * slot;
      if (op->kind == OperandView::Kind::kRandom) {
        generated.push_back({matrix.data, matrix.rows, matrix.cols, matrix.ld, op->seed, id});
      } else if ((e = StagedUpload(*lane, *dev.copier, matrix, op->host, input_stream)) != cudaSuccess) {
        return all(dev.Fail("upload", e));
      }
    }
  }
  if ((e = gemm::FillRandom(generated.data(), generated.size(), input_stream)) != cudaSuccess) {
    return all(dev.Fail("upload", e));
  }
  double upload_seconds = 0;
  if (input_stream == lane->copy) {  // the compute stream waits for the copy stream's uploads
    if (e = cudaEventRecord(lane->inputs_ready, lane->copy); e != cudaSuccess) return all(dev.Fail("event", e));
    if (auto st = dev.Wait(lane->copy, timeout); !st.ok()) return all(st);
    upload_seconds = SecondsSince(engine_start);
    cudaStreamWaitEvent(lane->compute, lane->inputs_ready, 0);
  }

  // The Ds, densely, then the comparisons: the staging is free once the
  // uploads are done (waited for, or ahead of these copies on the compute
  // stream), and pinned, so one stream carries it all.
  const uint64_t d_bytes = static_cast<uint64_t>(shape.m) * shape.n * 2, d_stride = RoundUp(d_bytes, 256);
  char* d_host = lane->staging;
  auto* cmp_host = reinterpret_cast<gemm::CompareResult*>(lane->staging + count * d_stride);
  float launch_ms = 0, verify_ms = 0;
  {
    if (input_stream == lane->compute) cudaEventRecord(lane->inputs_done, lane->compute);
    std::optional<ComputeTurn> turn(std::in_place, dev, *lane);
    if (lane->starts.empty()) {
      cudaEvent_t s0, s1;
      if ((e = cudaEventCreate(&s0)) != cudaSuccess || (e = cudaEventCreate(&s1)) != cudaSuccess) {
        return all(dev.Fail("event", e));
      }
      lane->starts.push_back(s0);
      lane->stops.push_back(s1);
    }
    if (any_verify) {  // an element the kernel does not write stays NaN
      if ((e = gemm::Poison(d_all, count * slot_d, lane->compute)) != cudaSuccess) return all(dev.Fail("poison", e));
    }
    cudaEventRecord(lane->starts[0], lane->compute);
    const gemm::Problem first{shape.m, shape.n, shape.k, a_all, b_all, d_all, a.ld, b.ld, d.ld};
    if (auto err = gemm::LaunchVendorBatch(first, static_cast<int>(count), static_cast<int64_t>(slot_a),
                                           static_cast<int64_t>(slot_b), static_cast<int64_t>(slot_d), lane->ctx,
                                           lane->compute);
        !err.empty()) {
      if ((e = cudaGetLastError()) != cudaSuccess) return all(dev.Fail("step 0 batch", e));
      return all(absl::InternalError(dev.desc.id + ": step 0 batch: " + err));
    }
    cudaEventRecord(lane->stops[0], lane->compute);
    if (any_verify) {
      // Every reference poisoned and every pair compared in one launch each
      // (a job not verified compares against NaNs, and its result is not
      // read); the references one launch per job. cuBLAS is checked as in
      // Run: by the ladder's top step, or by the SIMT kernel where no
      // ladder step is available (it took longer than the batch it checked
      // at 256^3, so that batching lost).
      if ((e = gemm::Poison(ref_all, count * slot_d, lane->compute)) != cudaSuccess) {
        return all(dev.Fail("verification", e));
      }
      for (size_t i = 0; i < count; ++i) {
        if (!jobs[i]->verify) continue;
        const gemm::Problem check{shape.m, shape.n, shape.k, a_all + i * slot_a, b_all + i * slot_b,
                                  ref_all + i * slot_d, a.ld, b.ld, d.ld, true};
        if (auto st = LaunchVendorReference(dev, *lane, reference_step, check); !st.ok()) return all(st);
      }
      e = gemm::CompareBatch(d_all, ref_all, d.rows, d.cols, d.ld, slot_d, static_cast<uint32_t>(count),
                             static_cast<float>(kRtol), static_cast<float>(kAtol), cmp_all, lane->compute);
      if (e != cudaSuccess) return all(dev.Fail("verification", e));
    }
    cudaEventRecord(lane->verified, lane->compute);
    for (size_t i = 0; i < count; ++i) {
      if (jobs[i]->d == nullptr) continue;
      e = cudaMemcpy2DAsync(d_host + i * d_stride, shape.n * 2, d_all + i * slot_d, d.ld * 2, shape.n * 2, shape.m,
                            cudaMemcpyDeviceToHost, lane->compute);
      if (e != cudaSuccess) return all(dev.Fail("download", e));
    }
    if (any_verify) {
      e = cudaMemcpyAsync(cmp_host, cmp_all, count * sizeof(gemm::CompareResult), cudaMemcpyDeviceToHost,
                          lane->compute);
      if (e != cudaSuccess) return all(dev.Fail("verification", e));
    }
    turn.reset();  // the next lane's GEMM queues behind this one while the host waits
    if (auto st = dev.Wait(lane->compute, timeout); !st.ok()) return all(st);
    cudaEventElapsedTime(&launch_ms, lane->starts[0], lane->stops[0]);
    cudaEventElapsedTime(&verify_ms, lane->stops[0], lane->verified);
    if (input_stream == lane->compute) {
      float ms = 0;
      cudaEventElapsedTime(&ms, lane->inputs_start, lane->inputs_done);
      upload_seconds = ms * 1e-3;
    }
  }

  std::vector<absl::StatusOr<GemmReport>> reports;
  size_t verified = 0;
  for (const GemmJob* job : jobs) verified += job->verify;
  for (size_t i = 0; i < count; ++i) {
    const GemmJob& job = *jobs[i];
    if (job.should_stop()) {
      reports.push_back(absl::CancelledError("request cancelled while its batch ran"));
      continue;
    }
    GemmReport report;
    report.batch_size = static_cast<uint32_t>(count);
    report.seconds.upload = upload_seconds;
    report.seconds.kernel = launch_ms * 1e-3 / count;
    report.seconds.repeats = 1;
    if (job.d != nullptr) {
      const auto t = Clock::now();
      dev.copier->Copy(reinterpret_cast<char*>(job.d), d_host + i * d_stride, d_bytes);
      report.seconds.download = SecondsSince(t);
    }
    if (job.verify) {
      report.seconds.verify = verify_ms * 1e-3 / verified;
      VerificationResult& v = report.verification;
      v.performed = true;
      v.mismatches = cmp_host[i].mismatches;
      v.non_finite = cmp_host[i].non_finite;
      v.max_abs_error = cmp_host[i].max_abs_error;
      v.elements = static_cast<uint64_t>(job.m) * job.n;
      v.rtol = kRtol;
      v.atol = kAtol;
      v.reference = VendorReferenceName(reference_step);
      v.passed = v.mismatches == 0;
    }
    reports.push_back(std::move(report));
  }
  return reports;
}

}  // namespace gemmd
