#include "engine/cpu_forms.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

#include "engine/median.h"
#include "engine/verify.h"

namespace gemmd {
namespace {

using Clock = std::chrono::steady_clock;
using gemm::GemmForm;
using gemm::Layout;

double SecondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// One GEMM of the batch in BLAS terms: row-major op(A) (m×k) times op(B)
// (k×n), the stored layouts as transpose flags.
struct BlasShape {
  CBLAS_TRANSPOSE ta, tb;
  int lda, ldb;
};

BlasShape ShapeOf(const GemmForm& f, int64_t m, int64_t n, int64_t k) {
  BlasShape s;
  s.ta = f.a_layout == Layout::kKContiguous ? CblasNoTrans : CblasTrans;  // stored m×k, or k×m
  s.lda = static_cast<int>(f.a_layout == Layout::kKContiguous ? k : m);
  s.tb = f.b_layout == Layout::kKContiguous ? CblasTrans : CblasNoTrans;  // stored n×k, or k×n
  s.ldb = static_cast<int>(f.b_layout == Layout::kKContiguous ? k : n);
  return s;
}

}  // namespace

std::vector<float> WidenOperand(const OperandView& op, gemm::ElementType type, gemm::OperandId id, uint64_t count) {
  std::vector<float> out(count);
  if (op.kind == OperandView::Kind::kHost) {
    const size_t bytes = count * gemm::ElementBytes(type);
    std::unique_ptr<char[]> gathered;
    const char* h = op.host.block();
    if (h == nullptr) {  // in pieces: this engine is not the fast path, gather them
      gathered.reset(new char[bytes]);
      op.host.CopyTo(gathered.get(), 0, bytes);
      h = gathered.get();
    }
    for (uint64_t i = 0; i < count; ++i) out[i] = gemm::LoadElement(type, h, i);
  } else {
    const uint64_t stream = gemm::RandomStream(op.seed, id);
    for (uint64_t i = 0; i < count; ++i) out[i] = gemm::RandomValueAs(type, stream, i);
  }
  return out;
}

absl::StatusOr<GemmReport> RunFormOnCpu(const BlasApi& blas, const GemmJob& job) {
  const auto engine_start = Clock::now();
  const GemmForm& f = job.form;
  const int64_t m = job.m, n = job.n, k = job.k, batch = f.batch;
  const gemm::OperandStorage sa = gemm::StorageOfA(f, m, k), sb = gemm::StorageOfB(f, n, k),
                             sc = gemm::StorageOfC(f, m, n);
  GemmReport report;
  const std::vector<float> a = WidenOperand(job.a, f.a, gemm::OperandId::kA, sa.Footprint(batch));
  const std::vector<float> b = WidenOperand(job.b, f.b, gemm::OperandId::kB, sb.Footprint(batch));
  const std::vector<float> c =
      f.ReadsC() ? WidenOperand(job.c, f.c, gemm::OperandId::kC, sc.Footprint(batch)) : std::vector<float>();
  report.seconds.upload = SecondsSince(engine_start);
  if (job.should_stop()) return absl::CancelledError("request cancelled before the GEMM ran");

  const BlasShape shape = ShapeOf(f, m, n, k);
  const float alpha = static_cast<float>(f.ProductScale());
  const float beta = f.ReadsC() ? static_cast<float>(f.beta) : 0.0f;
  const uint64_t d_entry = static_cast<uint64_t>(m) * n;
  // Poisoned so an element the GEMM failed to write cannot pass verification.
  std::vector<float> d32(d_entry * batch, std::numeric_limits<float>::quiet_NaN());
  const uint32_t repeats = std::max<uint32_t>(job.repeats, 1);
  std::vector<double> kernel_seconds;
  for (uint32_t r = 0; r < repeats; ++r) {
    if (r > 0 && job.should_stop()) return absl::CancelledError("request cancelled between repeats");
    // C enters D before the timed GEMM, as cuBLAS reads C within its call.
    for (int64_t e = 0; e < batch && beta != 0; ++e) {
      std::copy_n(c.data() + e * sc.stride, d_entry, d32.data() + e * d_entry);
    }
    const auto t = Clock::now();
    for (int64_t e = 0; e < batch; ++e) {
      blas.sgemm(CblasRowMajor, shape.ta, shape.tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                 alpha, a.data() + e * sa.stride, shape.lda, b.data() + e * sb.stride, shape.ldb, beta,
                 d32.data() + e * d_entry, static_cast<int>(n));
    }
    kernel_seconds.push_back(SecondsSince(t));
  }
  report.seconds.kernel = Median(kernel_seconds);
  report.seconds.repeats = repeats;

  auto t = Clock::now();
  std::unique_ptr<char[]> scratch;
  void* d = job.d;
  if (d == nullptr && job.verify) {
    scratch.reset(new char[d32.size() * gemm::ElementBytes(f.d)]);
    d = scratch.get();
  }
  if (d != nullptr) {
    for (size_t i = 0; i < d32.size(); ++i) gemm::StoreElement(f.d, d, i, d32[i]);
  }
  report.seconds.download = SecondsSince(t);

  if (job.verify && job.verify_fast) {
    t = Clock::now();
    const gemm::SketchProblem problem = HostSketchProblem(job, a.data(), b.data(), f.ReadsC() ? c.data() : nullptr, d);
    report.verification = FastVerification(gemm::SketchCheckOnHost(problem), problem.tolerance, "cpu-sketch-fp64");
    report.seconds.verify = SecondsSince(t);
  } else if (job.verify) {
    if (job.should_stop()) return absl::CancelledError("request cancelled before verification");
    t = Clock::now();
    const std::vector<double> a64(a.begin(), a.end()), b64(b.begin(), b.end());
    std::vector<double> ref(d32.size(), 0.0);
    double max_abs_c = 0;
    for (int64_t e = 0; e < batch; ++e) {
      double* out = ref.data() + e * d_entry;
      if (beta != 0) {
        for (uint64_t i = 0; i < d_entry; ++i) {
          out[i] = c[e * sc.stride + i];
          max_abs_c = std::max(max_abs_c, std::fabs(out[i]));
        }
      }
      blas.dgemm(CblasRowMajor, shape.ta, shape.tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                 f.ProductScale(), a64.data() + e * sa.stride, shape.lda, b64.data() + e * sb.stride, shape.ldb,
                 beta != 0 ? f.beta : 0.0, out, static_cast<int>(n));
    }
    double a_norm = 0, b_norm = 0;
    for (int64_t e = 0; e < batch; ++e) {
      // A shared operand (stride 0) is one matrix: its norm once.
      if (e == 0 || sa.stride != 0) {
        a_norm = std::max(a_norm, MaxOperandNorm(a.data() + e * sa.stride, m, k, f.a_layout == Layout::kKContiguous));
      }
      if (e == 0 || sb.stride != 0) {
        b_norm = std::max(b_norm, MaxOperandNorm(b.data() + e * sb.stride, n, k, f.b_layout == Layout::kKContiguous));
      }
    }
    const double accumulation = gemm::FormAccumulationAtol(f, k, a_norm, b_norm, max_abs_c);
    report.verification = CompareWithReference(d, f.d, ref.data(), ref.size(), gemm::ToleranceOf(f), accumulation);
    report.verification.reference = "openblas-dgemm-fp64";
    report.seconds.verify = SecondsSince(t);
  }
  return report;
}

}  // namespace gemmd
