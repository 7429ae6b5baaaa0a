// VERIFICATION_FAST on the host: the passes of sketch_lines.h as loops, in
// the order the GPU runs them (sketch_check.cu).
#include <algorithm>
#include <cmath>
#include <vector>

#include "gemm/sketch_check.h"
#include "sketch_lines.h"

namespace gemm {
namespace {

template <class Op, ElementType T, int kVariant>
void RunVariant(const Op& op, int64_t batch) {
  double sums[Op::kSums];
  float partials[Op::kPartials + 1] = {};
  for (int64_t e = 0; e < batch; ++e) {
    for (int64_t o = 0; o < op.outputs; ++o) {
      std::fill(sums, sums + Op::kSums, 0.0);
      const typename Op::Line line = op.Begin(e, o);
      for (int64_t r = 0; r < op.length; ++r) {
        const uint32_t plus = sketch::SignsAt(op.signs, op.words, r);
        op.template Accumulate<T, kVariant>(line, r, op.template Load<T, kVariant>(line, r), plus, sums, partials);
        if ((r + 1) % sketch::kFlushEvery == 0) Op::Flush(partials, sums);
      }
      Op::Flush(partials, sums);
      for (int s = 0; s < Op::kSums; ++s) *op.Out(e, s, o) = sums[s];
    }
  }
}

template <class Op, ElementType T>
void RunTyped(const Op& op, int64_t batch) {
  sketch::WithVariant(op, [&](auto v) { RunVariant<Op, T, v.value>(op, batch); });
}

template <class Op>
void RunLines(const Op& op, int64_t batch) {
  WithElementType(op.type(), [&](auto t) { RunTyped<Op, t.value>(op, batch); });
}

}  // namespace

SketchResult SketchCheckOnHost(const SketchProblem& p) {
  std::vector<double> scratch(SketchScratchBytes(p) / sizeof(double));
  for (int64_t i = 0; i < SketchLayout{p.m, p.n, p.k}.sign_words(); ++i) sketch::MakeSignWord(p, scratch.data(), i);
  const sketch::Passes passes = sketch::PassesOf(p, scratch.data());
  for (const sketch::OperandLines* op : {&passes.b_rows, &passes.a_columns, &passes.a_rows, &passes.b_columns}) {
    RunLines(*op, p.batch);
  }
  for (int64_t e = 0; e < p.batch; ++e) {
    for (int64_t line = 0; line < p.m + p.n; ++line) sketch::TakeNorm(p, scratch.data(), e, line);
  }
  RunLines(passes.d_rows, p.batch);
  RunLines(passes.d_columns, p.batch);

  SketchResult result{};
  const SketchLayout layout{p.m, p.n, p.k};
  for (int64_t e = 0; e < p.batch; ++e) {
    for (int64_t line = 0; line < p.m + p.n; ++line) {
      const sketch::LineVerdict v = sketch::JudgeLine(p, scratch.data(), e, line);
      result.failed_lines += v.failed;
      if (line < p.m) {  // non-finite elements, counted once: by their rows
        const double* entry = sketch::Entries(p, scratch.data()) + e * layout.doubles();
        result.non_finite += static_cast<unsigned long long>(entry[layout.d_row_non_finite() + line]);
      }
      result.worst_line_ratio = std::max(result.worst_line_ratio, static_cast<float>(v.ratio));
      if (std::isfinite(v.bound)) {
        float& largest = line < p.m ? result.largest_row_bound : result.largest_column_bound;
        largest = std::max(largest, static_cast<float>(v.bound));
      }
    }
    for (int64_t s = 0; s < sketch::SampleClustersPerEntry(p); ++s) {
      const sketch::SampleCluster cluster = sketch::SampleClusterOf(p, e, s);
      for (int64_t i = cluster.i; i < cluster.i + cluster.rows; ++i) {
        for (int64_t j = cluster.j; j < cluster.j + cluster.cols; ++j) {
          double sum = 0;
          for (int64_t kk = 0; kk < p.k; ++kk) {
            sum += static_cast<double>(p.a.At(e, i, kk)) * static_cast<double>(p.b.At(e, kk, j));
          }
          const sketch::SampleVerdict v = sketch::JudgeSample(p, scratch.data(), e, {i, j}, sum);
          ++result.samples;
          result.failed_samples += v.failed;
          if (std::isfinite(v.error)) {
            result.max_sample_error = std::max(result.max_sample_error, static_cast<float>(v.error));
          }
          result.sample_atol = std::max(result.sample_atol, static_cast<float>(v.accumulation));
        }
      }
    }
  }
  return result;
}

}  // namespace gemm
