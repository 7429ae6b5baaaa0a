// Every form beyond gemmd's original fp16 A·Bᵀ (gemm/form.h): on step 0,
// bf16, fp32 and fp8 operands, either storage of each, alpha·AB + beta·C
// and batches, as one cuBLASLt matmul (gemm/vendor_forms.h); on a ladder
// step, the forms its kernels take (gemm::IsLadderForm: bf16,
// MN-contiguous operands, α and β·C, batches). VERIFICATION_FULL compares
// D with the other family's tensor-core GEMM where that computes the form,
// as the plain GEMM's check does: step 0 against the ladder's top step, a
// ladder step against cuBLASLt (0.3 ms at bf16 4096^3 on an H100). An fp8
// form, step 0's alone, is compared with the ladder's top step over its
// operands widened to fp16, which hold every fp8 value exactly. Every
// other form (fp32, tf32, the mixed 16-bit pairs) is compared with an fp64
// GEMM on the fp64 tensor cores (gemm/form_ops.h), which shares nothing
// with either and takes 6.9 ms there.
// The operands are dense on the device, come up through the
// lane's staging on the compute stream (stored ones stay in the device's
// cache for the next request), and the whole request waits once; the
// plain form keeps its own faster path (cuda_engine.cpp).
//
// Small requests of one form and shape that queued together (the
// dispatcher's batching, engine/batching.h) run here too, as one batched
// matmul: each job's operands are one entry of a dense batch, and each is
// bounded, compared and reported on its own, as if it had run alone. A
// batch cuBLASLt will not take as one matmul (fp8 wants every batch entry
// 16-byte aligned) runs its jobs one by one.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "engine/cuda_device.h"
#include "engine/permanent_refusal.h"
#include "engine/verify.h"
#include "gemm/form_ops.h"
#include "gemm/steps.h"
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

// A ladder step's view of a form it computes: dense operands, each stored
// as the form says.
gemm::Problem LadderProblem(const gemm::FormProblem& p) {
  gemm::Problem q;
  q.m = p.m, q.n = p.n, q.k = p.k;
  q.a = static_cast<const __half*>(p.a);
  q.b = static_cast<const __half*>(p.b);
  q.d = static_cast<__half*>(p.d);
  q.operands = p.form.a;
  q.result = p.form.d;
  q.a_layout = p.form.a_layout;
  q.b_layout = p.form.b_layout;
  q.alpha = static_cast<float>(p.form.alpha);
  if (p.form.ReadsC()) {  // C dense, of D's type (gemm::IsLadderForm)
    q.beta = static_cast<float>(p.form.beta);
    q.c = static_cast<const __half*>(p.c);
    q.stride_c = p.form.stride_c;
  }
  q.batch = p.form.batch;  // D dense: entries m·n apart
  q.stride_a = p.form.stride_a;
  q.stride_b = p.form.stride_b;
  q.stride_d = p.m * p.n;
  return q;
}

const char* At(const void* base, uint64_t elements, gemm::ElementType type) {
  return static_cast<const char*>(base) + elements * gemm::ElementBytes(type);
}

// fp16 copies of an fp8 form's operands, A's then B's from the next
// 128-byte boundary, and `p` over them (gemm::WidenedToF16).
struct WidenedOperands {
  uint64_t a_count, b_count, b_offset;  // elements, and where B's copy starts
  explicit WidenedOperands(const gemm::FormProblem& p)
      : a_count(gemm::StorageOfA(p.form, p.m, p.k).Footprint(p.form.batch)),
        b_count(gemm::StorageOfB(p.form, p.n, p.k).Footprint(p.form.batch)),
        b_offset((a_count + 63) / 64 * 64) {}
  uint64_t bytes() const { return (b_offset + b_count) * sizeof(__half); }
  // Widens p's operands into `at` on `stream`; *over is p reading them.
  cudaError_t Widen(const gemm::FormProblem& p, void* at, cudaStream_t stream, gemm::FormProblem* over) const {
    auto* a = static_cast<__half*>(at);
    *over = p;
    over->form = gemm::WidenedToF16(p.form);
    over->a = a;
    over->b = a + b_offset;
    const cudaError_t e = gemm::WidenToF16(p.a, p.form.a, a, a_count, stream);
    return e != cudaSuccess ? e : gemm::WidenToF16(p.b, p.form.b, a + b_offset, b_count, stream);
  }
};

// The full check's reference D of `p` into `ref` (ref_bytes, poisoned
// first, so that an element the reference leaves unwritten fails rather
// than passes): by the ladder's `ladder_step`, or by cuBLASLt where that is
// gemm::kVendorStep (its workspace `scratch`).
absl::Status RunFormReference(CudaEngine::Device& dev, Lane& lane, int ladder_step, const gemm::FormProblem& p,
                              void* ref, uint64_t ref_bytes, void* scratch) {
  if (const cudaError_t e = cudaMemsetAsync(ref, 0xff, ref_bytes, lane.compute); e != cudaSuccess) {
    return dev.Fail("poison", e);
  }
  gemm::FormProblem check = p;
  check.d = ref;
  const std::string err = ladder_step == gemm::kVendorStep
                              ? gemm::LaunchVendorForm(check, lane.ctx, scratch, lane.compute)
                              : gemm::Launch(ladder_step, LadderProblem(check), lane.ctx, lane.compute);
  if (err.empty()) return absl::OkStatus();
  const std::string what = (ladder_step == gemm::kVendorStep ? std::string("cuBLASLt")
                                                             : "step " + std::to_string(ladder_step)) + " reference";
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return dev.Fail(what.c_str(), e);
  return absl::InternalError(dev.desc.id + ": " + what + ": " + err);
}

// The form every job in `jobs` shares, as one launch runs it: a lone job's
// own, or single-entry jobs stacked densely into a batch of them.
gemm::GemmForm LaunchForm(const std::vector<const GemmJob*>& jobs) {
  const GemmJob& first = *jobs.front();
  gemm::GemmForm f = first.form;
  if (jobs.size() > 1) {
    f.batch = static_cast<int64_t>(jobs.size());
    f.StackDensely(first.m, first.n, first.k);
  }
  return f;
}

}  // namespace

bool FormsShareOneLaunch(const std::vector<const GemmJob*>& jobs, uint64_t staging_bytes) {
  if (jobs.size() < 2 || jobs.size() * sizeof(gemm::CompareResult) > staging_bytes) return false;
  const GemmJob& first = *jobs.front();
  for (const GemmJob* job : jobs) {
    if (job->step != 0 || job->form.IsPlain() || job->form.batch != 1 || job->repeats != 1 || job->benchmark ||
        job->verify_fast ||
        job->m != first.m || job->n != first.n || job->k != first.k || !gemm::SameComputation(job->form, first.form)) {
      return false;
    }
  }
  return true;
}

std::vector<absl::StatusOr<GemmReport>> CudaEngine::RunForms(int device, Device& dev,
                                                             const std::vector<const GemmJob*>& jobs) {
  const size_t count = jobs.size();
  auto all = [count](const absl::Status& st) { return std::vector<absl::StatusOr<GemmReport>>(count, st); };
  const GemmJob& first = *jobs.front();
  const int64_t m = first.m, n = first.n, k = first.k;
  const gemm::GemmForm f = LaunchForm(jobs);
  gemm::FormProblem p{m, n, k, f};
  const int step = static_cast<int>(first.step);
  const bool vendor = step == 0;
  LaneLease lane(dev);
  if (auto e = cudaSetDevice(dev.ordinal); e != cudaSuccess) return all(dev.Fail("cudaSetDevice", e));
  if (auto why = vendor ? gemm::PrepareVendorForm(p, lane->ctx) : ""; !why.empty()) {
    if (count > 1) return {};  // cuBLASLt may still take each alone (fp8's alignments of a batch)
    return all(Permanent(absl::FailedPreconditionError("step 0 on " + dev.desc.id + ": " + why +
                                                       "; the CPU engine (gemmd --engine cpu) computes every form")));
  }
  const double timeout = options_.sync_timeout_seconds;
  cudaStream_t stream = lane->compute;
  struct Input {
    OperandView GemmJob::*view;
    const void* gemm::FormProblem::*data;
    gemm::OperandStorage storage;
    gemm::OperandId id;
    DeviceMatrixCache::Lease cached;  // a lone request's stored operand, on the device
    // Job i's elements are the i-th `each` of the operand: its whole batch
    // when it runs alone, one entry of the stack in a batch of requests.
    uint64_t each = 0;
  };
  std::vector<Input> inputs;
  inputs.push_back({&GemmJob::a, &gemm::FormProblem::a, gemm::StorageOfA(f, m, k), gemm::OperandId::kA, {}});
  inputs.push_back({&GemmJob::b, &gemm::FormProblem::b, gemm::StorageOfB(f, n, k), gemm::OperandId::kB, {}});
  if (f.ReadsC()) {
    inputs.push_back({&GemmJob::c, &gemm::FormProblem::c, gemm::StorageOfC(f, m, n), gemm::OperandId::kC, {}});
  }
  const uint64_t d_count = static_cast<uint64_t>(first.form.batch) * m * n;
  const uint64_t d_bytes = count * d_count * gemm::ElementBytes(f.d);
  const size_t verified = std::count_if(jobs.begin(), jobs.end(), [](const GemmJob* j) { return j->verify; });
  const bool any_verify = verified > 0;
  // VERIFICATION_FAST (gemm/sketch_check.h); such a request runs alone.
  const bool fast = any_verify && first.verify_fast;
  const bool full_check = any_verify && !fast;
  // The full check's reference (the file's comment), and the bytes of its D.
  // An fp8 form's reference is the ladder's GEMM of its operands widened
  // to fp16, which hold them exactly (gemm::WidenedToF16).
  enum class Reference { kFp64, kLadder, kWidenedLadder, kVendor } reference = Reference::kFp64;
  const int ladder_step = vendor ? VendorReferenceStep(device) : gemm::kVendorStep;
  const bool ladder_checks = full_check && vendor && ladder_step != gemm::kVendorStep;
  if (ladder_checks && gemm::FormError(ladder_step, f).empty()) {
    reference = Reference::kLadder;
  } else if (ladder_checks && gemm::IsFp8(f.a) && gemm::FormError(ladder_step, gemm::WidenedToF16(f)).empty()) {
    reference = Reference::kWidenedLadder;
  } else if (full_check && !vendor && gemm::PrepareVendorForm(p, lane->ctx).empty()) {
    reference = Reference::kVendor;
  }
  const uint64_t ref_bytes =
      count * d_count * (reference == Reference::kFp64 ? sizeof(double) : gemm::ElementBytes(f.d));

  PoolBuffers buffers(dev.pool, stream, stream, lane->scratch, kLaneScratchBytes);
  const uint64_t scratch_bytes = vendor || reference == Reference::kVendor ? gemm::VendorFormScratchBytes(p) : 0;
  const WidenedOperands widened(p);
  const uint64_t widened_bytes = reference == Reference::kWidenedLadder ? widened.bytes() : 0;
  uint64_t needed = d_bytes + scratch_bytes + (full_check ? ref_bytes : 0) + widened_bytes;
  cudaError_t e = cudaSuccess;
  for (Input& in : inputs) {
    in.each = in.storage.Footprint(f.batch) / count;
    const uint64_t bytes = in.storage.Footprint(f.batch) * gemm::ElementBytes(in.storage.type);
    needed += bytes;
    // A stored operand is read from, or kept in, the device's copy of it
    // (engine/device_matrix_cache.h). Dense here, where the fp16 path keeps
    // its copies pitched: a key of its own, which still names the handles.
    // A batch of requests stacks its operands in one buffer instead.
    const OperandView& view = first.*in.view;
    if (count == 1 && dev.cache && view.kind == OperandView::Kind::kHost && !view.cache_key.empty()) {
      in.cached = dev.cache->Acquire(view.cache_key + kDenseCopy, bytes);
    }
    void* ptr = in.cached ? in.cached.data() : nullptr;
    if (e == cudaSuccess && !in.cached) e = buffers.AllocateBytes(&ptr, bytes);
    p.*in.data = ptr;
  }
  void *scratch = nullptr, *ref = nullptr, *bounds = nullptr, *compared = nullptr, *sketch_scratch = nullptr;
  void* widened_operands = nullptr;
  if (e == cudaSuccess) e = buffers.AllocateBytes(&p.d, d_bytes);
  if (e == cudaSuccess && widened_bytes > 0) e = buffers.AllocateBytes(&widened_operands, widened_bytes);
  if (e == cudaSuccess && scratch_bytes > 0) e = buffers.AllocateBytes(&scratch, scratch_bytes);
  if (e == cudaSuccess && full_check) e = buffers.AllocateBytes(&ref, ref_bytes);
  if (e == cudaSuccess && full_check) e = buffers.AllocateBytes(&bounds, count * 3 * sizeof(float));
  if (e == cudaSuccess && full_check) e = buffers.AllocateBytes(&compared, count * sizeof(gemm::CompareResult));
  if (e == cudaSuccess && fast) {
    e = buffers.AllocateBytes(&sketch_scratch, gemm::SketchScratchBytes(gemm::SketchOfForm(p, 0)));
  }
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return all(absl::ResourceExhaustedError(dev.desc.id + " cannot hold this request: it needs " +
                                            std::to_string(needed) + " bytes for its operands, D" +
                                            (full_check ? " and the reference" : "")));
  }
  if (e != cudaSuccess) return all(dev.Fail("allocation", e));

  if ((e = cudaEventRecord(lane->inputs_start, stream)) != cudaSuccess) return all(dev.Fail("event", e));
  for (const Input& in : inputs) {
    if (in.cached.hit()) continue;
    for (size_t i = 0; i < count; ++i) {
      const OperandView& view = (*jobs[i]).*in.view;
      void* dst = const_cast<char*>(At(p.*in.data, i * in.each, in.storage.type));
      e = view.kind == OperandView::Kind::kRandom
              ? gemm::FillRandom(dst, in.storage.type, in.each, view.seed, in.id, stream)
              : StagedUpload(*lane, *dev.copier, Dense(dst, in.each, in.storage.type), view.host, stream);
      if (e != cudaSuccess) return all(dev.Fail("upload", e));
    }
  }
  if (std::all_of(jobs.begin(), jobs.end(), [](const GemmJob* j) { return j->should_stop(); })) {
    return all(absl::CancelledError("request cancelled before the GEMM ran"));
  }

  std::vector<GemmReport> reports(count);
  std::vector<gemm::CompareResult> results(count);
  {  // the GEMMs and their check, one launch at a time per device
    if ((e = cudaEventRecord(lane->inputs_done, stream)) != cudaSuccess) return all(dev.Fail("event", e));
    std::optional<ComputeTurn> turn(std::in_place, dev, *lane);
    const uint32_t repeats = std::max<uint32_t>(first.repeats, 1);
    if ((e = EnsureRepeatEvents(*lane, repeats)) != cudaSuccess) return all(dev.Fail("event", e));
    // D poisoned (all bits set: NaN in every type) so that an element the
    // GEMM does not write fails verification; before every repeat, with L2
    // flushed, when timed as a benchmark.
    if (any_verify && !first.benchmark && (e = cudaMemsetAsync(p.d, 0xff, d_bytes, stream)) != cudaSuccess) {
      return all(dev.Fail("poison", e));
    }
    for (uint32_t r = 0; r < repeats; ++r) {
      if (first.benchmark) {
        if ((e = cudaMemsetAsync(p.d, 0xff, d_bytes, stream)) != cudaSuccess) return all(dev.Fail("poison", e));
        if ((e = dev.l2_flush.Run(stream)) != cudaSuccess) return all(dev.Fail("L2 flush", e));
      }
      cudaEventRecord(lane->starts[r], stream);
      const std::string err = vendor ? gemm::LaunchVendorForm(p, lane->ctx, scratch, stream)
                                     : gemm::Launch(step, LadderProblem(p), lane->ctx, stream);
      if (!err.empty()) {
        const std::string what = "step " + std::to_string(step);
        if ((e = cudaGetLastError()) != cudaSuccess) return all(dev.Fail(what.c_str(), e));
        return all(absl::InternalError(dev.desc.id + ": " + what + ": " + err));
      }
      cudaEventRecord(lane->stops[r], stream);
    }
    const gemm::FormTolerance tolerance = gemm::ToleranceOf(first.form);
    const std::string reference_name = reference == Reference::kLadder          ? VendorReferenceName(ladder_step)
                                       : reference == Reference::kWidenedLadder ? VendorReferenceName(ladder_step) + "-fp16"
                                       : reference == Reference::kVendor        ? "cublaslt"
                                                                                : "gpu-dmma-fp64";
    if (fast) {  // a few passes over the operands and D
      e = gemm::SketchCheck(gemm::SketchOfForm(p, FreshSketchSeed()), sketch_scratch, lane->sketch, stream);
      if (e == cudaSuccess) {
        e = cudaMemcpyAsync(lane->sketch_host, lane->sketch, sizeof(gemm::SketchResult), cudaMemcpyDeviceToHost,
                            stream);
      }
      if (e == cudaSuccess) e = cudaEventRecord(lane->verified, stream);
      if (e != cudaSuccess) return all(dev.Fail("verification", e));
    } else if (any_verify) {
      // One reference for the launch; each job's bound from its own
      // operands and its own comparison, as if it had run alone.
      if (reference == Reference::kFp64) {
        e = gemm::ReferenceFormGemm(p, static_cast<double*>(ref), stream);
      } else {
        gemm::FormProblem check = p;
        if (reference == Reference::kWidenedLadder &&
            (e = widened.Widen(p, widened_operands, stream, &check)) != cudaSuccess) {
          return all(dev.Fail("verification", e));
        }
        if (auto st = RunFormReference(dev, *lane, reference == Reference::kVendor ? gemm::kVendorStep : ladder_step,
                                       check, ref, ref_bytes, scratch);
            !st.ok()) {
          return all(st);
        }
      }
      auto* bound = static_cast<float*>(bounds);
      auto* result = static_cast<gemm::CompareResult*>(compared);
      for (size_t i = 0; i < count && e == cudaSuccess; ++i) {
        if (!jobs[i]->verify) continue;
        gemm::FormProblem own = p;
        own.form = jobs[i]->form;
        for (const Input& in : inputs) own.*in.data = At(p.*in.data, i * in.each, in.storage.type);
        own.d = const_cast<char*>(At(p.d, i * d_count, f.d));
        const gemm::FormBoundTerms terms{bound + 3 * i,
                                         gemm::ProductTermPerNorms(tolerance, k, own.form.ProductScale()),
                                         gemm::CTermPerValue(f.ReadsC(), f.beta)};
        e = gemm::FormBoundInputs(own, bound + 3 * i, stream);
        if (e == cudaSuccess) {
          e = reference == Reference::kFp64
                  ? gemm::CompareForm(own.d, f.d, static_cast<const double*>(ref) + i * d_count, d_count,
                                      tolerance.rtol, tolerance.atol, terms, result + i, stream)
                  : gemm::CompareForm(own.d, f.d, At(ref, i * d_count, f.d), f.d, d_count, tolerance.rtol,
                                      tolerance.atol, terms, result + i, stream);
        }
      }
      // The comparisons come back through the staging: its uploads are
      // done (ahead on this stream), and D's downloads start after the wait.
      if (e == cudaSuccess) {
        e = cudaMemcpyAsync(lane->staging, result, count * sizeof(gemm::CompareResult), cudaMemcpyDeviceToHost,
                            stream);
      }
      if (e == cudaSuccess) e = cudaEventRecord(lane->verified, stream);
      if (e != cudaSuccess) return all(dev.Fail("verification", e));
    }
    turn.reset();  // the next lane's GEMM queues behind this one while the host waits
    if (auto st = dev.Wait(stream, timeout); !st.ok()) return all(st);
    for (Input& in : inputs) {
      if (in.cached && !in.cached.hit()) in.cached.MarkReady();  // filled: other requests may read it now
    }
    double kernel = 0;
    if ((e = MedianRepeatSeconds(*lane, repeats, &kernel)) != cudaSuccess) return all(dev.Fail("timing", e));
    const double upload = SecondsBetween(lane->inputs_start, lane->inputs_done);
    const double verify = any_verify ? SecondsBetween(lane->stops[repeats - 1], lane->verified) : 0;
    if (full_check) std::copy_n(reinterpret_cast<const gemm::CompareResult*>(lane->staging), count, results.begin());
    for (size_t i = 0; i < count; ++i) {
      GemmReport& report = reports[i];
      report.batch_size = static_cast<uint32_t>(count);
      report.seconds.kernel = kernel / count;  // the launch's time, shared as the fp16 batches share theirs
      report.seconds.repeats = repeats;
      report.seconds.upload = upload;
      if (jobs[i]->verify) {
        report.seconds.verify = verify / verified;
        report.verification = fast ? FastVerification(*lane->sketch_host, tolerance, gemm::kSketchReference)
                                   : VerificationOf(results[i], d_count, tolerance, reference_name);
      }
    }
  }
  std::vector<absl::StatusOr<GemmReport>> out;
  for (size_t i = 0; i < count; ++i) {
    const GemmJob& job = *jobs[i];
    if (count > 1 && job.should_stop()) {
      out.push_back(absl::CancelledError("request cancelled while its batch ran"));
      continue;
    }
    if (job.d != nullptr) {
      const auto t = Clock::now();
      void* d = const_cast<char*>(At(p.d, i * d_count, f.d));
      if ((e = StagedDownload(*lane, *dev.copier, job.d, Dense(d, d_count, f.d))) != cudaSuccess) {
        return all(dev.Fail("download", e));
      }
      if (auto st = dev.Wait(lane->copy, timeout); !st.ok()) return all(st);
      reports[i].seconds.download = SecondsSince(t);
    }
    out.push_back(std::move(reports[i]));
  }
  return out;
}

}  // namespace gemmd
