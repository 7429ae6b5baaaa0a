#include "engine/verify.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <vector>

namespace gemmd {

VerificationResult CompareWithReference(const uint16_t* d, const double* ref, size_t count,
                                        double accumulation_atol) {
  return CompareWithReference(d, gemm::ElementType::kF16, ref, count, gemm::FormTolerance{}, accumulation_atol);
}

VerificationResult CompareWithReference(const void* d, gemm::ElementType type, const double* ref, size_t count,
                                        const gemm::FormTolerance& tolerance, double accumulation_atol) {
  VerificationResult r;
  r.performed = true;
  r.elements = count;
  r.rtol = tolerance.rtol;
  r.atol = tolerance.atol;
  r.tolerance_source = tolerance.source;
  r.accumulation_atol = accumulation_atol;
  const double atol = tolerance.atol + accumulation_atol;
  for (size_t i = 0; i < count; ++i) {
    const double value = gemm::LoadElement(type, d, i);
    if (!std::isfinite(value)) {
      ++r.non_finite;
      ++r.mismatches;
      continue;
    }
    const double err = std::fabs(value - ref[i]);
    if (err > r.max_abs_error) r.max_abs_error = err;
    if (err > atol + tolerance.rtol * std::fabs(ref[i])) ++r.mismatches;
  }
  r.passed = r.mismatches == 0;
  return r;
}

double MaxOperandNorm(const float* x, int64_t vectors, int64_t k, bool k_contiguous) {
  if (k_contiguous) return MaxRowNorm(x, static_cast<size_t>(vectors), static_cast<size_t>(k));
  std::vector<double> sums(static_cast<size_t>(vectors), 0.0);
  for (int64_t kk = 0; kk < k; ++kk) {
    const float* row = x + kk * vectors;
    for (int64_t v = 0; v < vectors; ++v) sums[v] += double{row[v]} * row[v];
  }
  double largest = 0;
  for (double s : sums) largest = std::max(largest, std::sqrt(s));
  return largest;
}

double MaxRowNorm(const float* x, size_t rows, size_t cols) {
  double largest = 0;
  for (size_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (size_t c = 0; c < cols; ++c) sum += double{x[r * cols + c]} * x[r * cols + c];
    largest = std::max(largest, std::sqrt(sum));
  }
  return largest;
}

VerificationResult FastVerification(const gemm::SketchResult& sketch, const gemm::FormTolerance& tolerance,
                                    std::string reference) {
  VerificationResult v;
  v.performed = true;
  v.fast = true;
  v.passed = sketch.passed();
  v.mismatches = sketch.failed_lines + sketch.failed_samples;
  v.non_finite = sketch.non_finite;
  v.elements = sketch.samples;
  v.max_abs_error = sketch.max_sample_error;
  v.rtol = tolerance.rtol;
  v.atol = tolerance.atol;
  v.tolerance_source = tolerance.source;
  v.accumulation_atol = sketch.sample_atol;
  v.reference = std::move(reference);
  v.sketch_vectors = gemm::kSketchVectors;
  v.sure_error = sketch.sure_error();
  v.worst_line_ratio = sketch.worst_line_ratio;
  return v;
}

gemm::SketchProblem HostSketchProblem(const GemmJob& job, const float* a, const float* b, const float* c,
                                      const void* d) {
  gemm::SketchProblem p = gemm::SketchOfForm({job.m, job.n, job.k, job.form, a, b, c, const_cast<void*>(d)},
                                             FreshSketchSeed());
  p.a.type = p.b.type = p.c.type = gemm::ElementType::kF32;  // widened exactly
  return p;
}

uint64_t FreshSketchSeed() {
  static const uint64_t base = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  static std::atomic<uint64_t> count{0};
  return gemm::Mix64(base + count.fetch_add(1, std::memory_order_relaxed));
}

}  // namespace gemmd
