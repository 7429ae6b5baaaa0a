#include "engine/cpu_engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "engine/blas_api.h"
#include "engine/cpu_forms.h"
#include "engine/median.h"
#include "engine/verify.h"
#include "gemm/half.h"
#include "gemm/random_fill.h"
#include "gemm/steps.h"

namespace gemmd {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Widens an fp16 operand (rows·cols) to T, or generates it from its seed.
template <typename T>
std::vector<T> Materialize(const OperandView& op, gemm::OperandId id, size_t count) {
  std::vector<T> out(count);
  if (op.kind == OperandView::Kind::kHost) {
    std::vector<uint16_t> gathered;
    const auto* h = reinterpret_cast<const uint16_t*>(op.host.block());
    if (h == nullptr) {  // in pieces: this engine is not the fast path, gather them
      gathered.resize(count);
      op.host.CopyTo(reinterpret_cast<char*>(gathered.data()), 0, count * 2);
      h = gathered.data();
    }
    for (size_t i = 0; i < count; ++i) out[i] = gemm::HalfToFloat(h[i]);
  } else {
    for (size_t i = 0; i < count; ++i) out[i] = gemm::RandomValue(op.seed, id, i);
  }
  return out;
}

}  // namespace

std::vector<DeviceDescription> CpuEngine::devices() const {
  DeviceDescription d;
  d.id = "cpu:0";
  std::string error;
  const BlasApi* blas = Blas(&error);
  d.name = blas ? blas->library + " sgemm" : "no BLAS: " + error;
  d.kind = "cpu";
#if defined(__x86_64__)
  d.arch = "x86_64";
#elif defined(__aarch64__)
  d.arch = "aarch64";
#else
  d.arch = "unknown";
#endif
  return {d};
}

StepAvailability CpuEngine::availability(int step, int) const {
  std::string error;
  if (step == gemm::kVendorStep) {
    if (Blas(&error) == nullptr) return {false, "cannot run: " + error};
    return {true, ""};
  }
  if (gemm::FindStep(step) == nullptr) return {false, "is not a step of the ladder"};
  return {false, "runs on NVIDIA " + std::string(gemm::GpuFamilies(step)) + " GPUs; this server has none (CPU engine)"};
}

absl::Status CpuEngine::Warmup(int device) {
  // OpenBLAS spins up its thread pool on the first call; pay that here.
  GemmJob job;
  job.m = job.n = job.k = 64;
  job.a.seed = 1;
  job.b.seed = 2;
  auto report = Run(device, job);
  if (!report.ok()) return report.status();
  if (!report->verification.passed) return absl::InternalError("CPU warm-up GEMM failed verification");
  return absl::OkStatus();
}

absl::StatusOr<GemmReport> CpuEngine::Run(int, const GemmJob& job) {
  const auto engine_start = Clock::now();
  if (job.step != gemm::kVendorStep) {
    return absl::FailedPreconditionError("step " + std::to_string(job.step) + " " + availability(job.step, 0).reason);
  }
  if (auto st = CheckDimensionsFitInt32(job, name()); !st.ok()) return st;
  std::string error;
  const BlasApi* blas = Blas(&error);
  if (blas == nullptr) return absl::FailedPreconditionError(error);
  if (!job.form.IsPlain()) return RunFormOnCpu(*blas, job);
  const size_t m = job.m, n = job.n, k = job.k;
  GemmReport report;

  const std::vector<float> a = Materialize<float>(job.a, gemm::OperandId::kA, m * k);
  const std::vector<float> b = Materialize<float>(job.b, gemm::OperandId::kB, n * k);
  report.seconds.upload = SecondsSince(engine_start);
  auto t = Clock::now();
  if (job.should_stop()) return absl::CancelledError("request cancelled before the GEMM ran");

  // Poisoned so an element the GEMM failed to write cannot pass verification.
  std::vector<float> c(m * n, std::numeric_limits<float>::quiet_NaN());
  const uint32_t repeats = std::max<uint32_t>(job.repeats, 1);
  std::vector<double> kernel_seconds;
  kernel_seconds.reserve(repeats);
  for (uint32_t r = 0; r < repeats; ++r) {
    if (r > 0 && job.should_stop()) return absl::CancelledError("request cancelled between repeats");
    t = Clock::now();
    blas->sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, a.data(), static_cast<int>(k), b.data(), static_cast<int>(k),
                0.0f, c.data(), static_cast<int>(n));
    kernel_seconds.push_back(SecondsSince(t));
  }
  report.seconds.kernel = Median(kernel_seconds);
  report.seconds.repeats = repeats;

  t = Clock::now();
  std::unique_ptr<uint16_t[]> scratch;
  uint16_t* d = static_cast<uint16_t*>(job.d);
  if (d == nullptr && job.verify) {
    scratch.reset(new uint16_t[m * n]);
    d = scratch.get();
  }
  if (d != nullptr) {
    for (size_t i = 0; i < m * n; ++i) d[i] = gemm::FloatToHalf(c[i]);
  }
  report.seconds.download = SecondsSince(t);

  if (job.verify && job.verify_fast) {
    t = Clock::now();
    const gemm::SketchResult sketch = gemm::SketchCheckOnHost(HostSketchProblem(job, a.data(), b.data(), nullptr, d));
    report.verification = FastVerification(sketch, gemm::FormTolerance{}, "cpu-sketch-fp64");
    report.seconds.verify = SecondsSince(t);
  } else if (job.verify) {
    if (job.should_stop()) return absl::CancelledError("request cancelled before verification");
    t = Clock::now();
    const std::vector<double> a64(a.begin(), a.end());
    const std::vector<double> b64(b.begin(), b.end());
    std::vector<double> ref(m * n);
    blas->dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0, a64.data(), static_cast<int>(k), b64.data(),
                static_cast<int>(k), 0.0, ref.data(), static_cast<int>(n));
    const double accumulation =
        gemm::AccumulationAtol(job.k, MaxRowNorm(a.data(), m, k), MaxRowNorm(b.data(), n, k));
    report.verification = CompareWithReference(d, ref.data(), m * n, accumulation);
    report.verification.reference = "openblas-dgemm-fp64";
    report.seconds.verify = SecondsSince(t);
  }
  return report;
}

}  // namespace gemmd
