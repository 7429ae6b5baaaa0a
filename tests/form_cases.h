// Every form of GEMM (gemm/form.h) as a test case any engine runs: each
// element type combination × layout × C/alpha/beta × batch, D checked
// against an fp64 product computed here, not by gemmd's verification.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "gemm/form.h"
#include "gemm/sketch_check.h"

namespace gemmd::testing {

using gemm::ElementType;
using gemm::GemmForm;
using gemm::Layout;

struct Types {
  ElementType a, b, d;
  bool tf32;
};

// `count` elements of `type`, values uniform in [-1, 1) rounded to it.
inline std::string RandomBytes(ElementType type, uint64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::string bytes(count * gemm::ElementBytes(type), '\0');
  for (uint64_t i = 0; i < count; ++i) gemm::StoreElement(type, bytes.data(), i, u(rng));
  return bytes;
}

// The unit roundoff of D's type: its rounding moves a value by at most
// this much relative.
inline double UnitRoundoff(ElementType t) {
  return t == ElementType::kF16 ? 0x1p-11 : t == ElementType::kBF16 ? 0x1p-8 : 0x1p-24;
}

struct Case {
  Types types;
  Layout a_layout, b_layout;
  int c_mode;      // 0: none, 1: C in D's type, 2: C in fp32
  int batch_mode;  // 0: one, 1: three dense, 2: three with B shared
};

struct CaseShape {
  int64_t m, n, k;
};

inline std::string Name(const Case& c) {
  return std::string(gemm::ElementName(c.types.a)) + "x" + gemm::ElementName(c.types.b) + "->" +
         gemm::ElementName(c.types.d) + (c.types.tf32 ? "(tf32)" : "") + " A " + gemm::LayoutName(c.a_layout) +
         " B " + gemm::LayoutName(c.b_layout) + " c" + std::to_string(c.c_mode) + " batch" +
         std::to_string(c.batch_mode);
}

// The case's form with its operands' strides for `s`.
inline gemm::GemmForm FormOf(const Case& c, CaseShape s) {
  const int64_t m = s.m, n = s.n, k = s.k;
  GemmForm f;
  f.a = c.types.a;
  f.b = c.types.b;
  f.d = c.types.d;
  f.allow_tf32 = c.types.tf32;
  f.a_layout = c.a_layout;
  f.b_layout = c.b_layout;
  f.has_c = c.c_mode != 0;
  f.c = c.c_mode == 2 ? ElementType::kF32 : f.d;
  f.alpha = 0.75;
  f.beta = f.has_c ? -1.5 : 0;
  if (gemm::IsFp8(f.a)) f.a_scale = 2.0, f.b_scale = 0.5;
  f.batch = c.batch_mode == 0 ? 1 : 3;
  f.StackDensely(m, n, k);
  if (c.batch_mode == 2) f.stride_b = 0;
  return f;
}

// One request of a form: its operands' bytes, random in [-1, 1), and a
// poisoned D (all bits set: NaN in every type).
struct CaseJob {
  gemm::GemmForm form;
  CaseShape shape;
  std::string a, b, c, d;
  GemmJob job;

  CaseJob(const gemm::GemmForm& f, CaseShape s, uint32_t seed) : form(f), shape(s) {
    const int64_t m = s.m, n = s.n, k = s.k;
    a = RandomBytes(f.a, gemm::StorageOfA(f, m, k).Footprint(f.batch), seed);
    b = RandomBytes(f.b, gemm::StorageOfB(f, n, k).Footprint(f.batch), seed + 1);
    c = f.has_c ? RandomBytes(f.c, gemm::StorageOfC(f, m, n).Footprint(f.batch), seed + 2) : "";
    d.assign(f.batch * m * n * gemm::ElementBytes(f.d), '\xff');
    job.m = m, job.n = n, job.k = k;
    job.form = f;
    job.a = {OperandView::Kind::kHost, HostBytes(a.data(), a.size()), 0};
    job.b = {OperandView::Kind::kHost, HostBytes(b.data(), b.size()), 0};
    job.c = {OperandView::Kind::kHost, HostBytes(c.data(), c.size()), 0};
    job.d = d.data();
  }
  CaseJob(const CaseJob&) = delete;  // job points into the strings

  // The product at D's element (e, i, j) in fp64, from the stored values:
  // Σ a·b over K, Σ|a·b|, and C's stored element (0 without C).
  struct Exact {
    double sum = 0, magnitude = 0, c = 0;
  };
  Exact ExactAt(int64_t e, int64_t i, int64_t j) const;

  // Elements of D further from an fp64 product than the form's rounding allows.
  int WrongElements() const;
};

// `count` requests of one form, each with operands of its own (seeds
// `first_seed`, +7, ...), and the batch an engine's RunBatch takes.
struct CaseBatch {
  std::vector<std::unique_ptr<CaseJob>> jobs;
  std::vector<const GemmJob*> batch;
  CaseBatch(const gemm::GemmForm& f, CaseShape s, int count, uint32_t first_seed) {
    for (int i = 0; i < count; ++i) {
      jobs.push_back(std::make_unique<CaseJob>(f, s, first_seed + 7 * i));
      batch.push_back(&jobs.back()->job);
    }
  }
};

// Runs the case on `engine` (device 0, step 0), D poisoned, and checks D;
// verified by VERIFICATION_FAST's sketch where `fast`.
inline void RunCase(Engine& engine, const Case& c, uint32_t seed, CaseShape s = {13, 9, 20}, bool fast = false) {
  SCOPED_TRACE(Name(c) + " " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
               (fast ? " fast" : ""));
  const gemm::GemmForm f = FormOf(c, s);
  ASSERT_EQ(gemm::CombinationError(f), "");
  CaseJob run(f, s, seed);
  run.job.verify_fast = fast;
  auto report = engine.Run(0, run.job);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->verification.passed) << report->verification.max_abs_error << " "
                                           << report->verification.worst_line_ratio;
  EXPECT_EQ(report->verification.fast, fast);
  const uint64_t checked = fast ? std::min<uint64_t>(s.m * s.n, gemm::kSketchSamples) : s.m * s.n;
  const uint64_t entries = static_cast<uint64_t>(f.batch);
  // Where an operand is stored MN-contiguous, VERIFICATION_FAST samples
  // clusters of 16 elements (sketch_lines.h), and those at D's edges are
  // clipped: fewer elements, but at least one a cluster.
  const bool clustered = fast && static_cast<uint64_t>(s.m * s.n) > static_cast<uint64_t>(gemm::kSketchSamples) &&
                         (c.a_layout == Layout::kMnContiguous || c.b_layout == Layout::kMnContiguous);
  if (clustered) {
    EXPECT_LE(report->verification.elements, entries * checked);
    EXPECT_GE(report->verification.elements, entries * checked / 16);
  } else {
    EXPECT_EQ(report->verification.elements, entries * checked);
  }
  EXPECT_EQ(run.WrongElements(), 0);
}

inline CaseJob::Exact CaseJob::ExactAt(int64_t e, int64_t i, int64_t j) const {
  const gemm::GemmForm& f = form;
  const int64_t m = shape.m, n = shape.n, k = shape.k;
  Exact x;
  for (int64_t kk = 0; kk < k; ++kk) {
    const double av = gemm::LoadElement(f.a, a.data(), e * f.stride_a + gemm::IndexInA(f, m, k, i, kk));
    const double bv = gemm::LoadElement(f.b, b.data(), e * f.stride_b + gemm::IndexInB(f, n, k, kk, j));
    x.sum += av * bv;
    x.magnitude += std::fabs(av * bv);
  }
  if (f.has_c) x.c = gemm::LoadElement(f.c, c.data(), e * f.stride_c + i * n + j);
  return x;
}

inline int CaseJob::WrongElements() const {
  const gemm::GemmForm& f = form;
  const int64_t m = shape.m, n = shape.n, k = shape.k;
  const double scale = f.alpha * (gemm::IsFp8(f.a) ? f.a_scale * f.b_scale : 1.0);
  int wrong = 0;
  for (int64_t e = 0; e < f.batch; ++e) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const Exact x = ExactAt(e, i, j);
        double want = scale * x.sum, magnitude = x.magnitude;
        if (f.has_c) {
          want += f.beta * x.c;
          magnitude += std::fabs(x.c);
        }
        const double got = gemm::LoadElement(f.d, d.data(), (e * m + i) * n + j);
        // D's rounding plus fp32 sums of k terms (worst case: no
        // cancellation of errors), fp8's reduced-precision tensor-core
        // sums, and tf32's inputs.
        const double sum_unit = gemm::IsFp8(f.a) ? 0x1p-13 : 0x1p-23;
        const double bound = UnitRoundoff(f.d) * std::fabs(want) + (k + 2) * sum_unit * std::fabs(scale) * magnitude +
                             (f.allow_tf32 ? 0x1p-10 * std::fabs(scale) * magnitude : 0) + 1e-30;
        if (!(std::fabs(got - want) <= bound)) {
          if (++wrong < 4) ADD_FAILURE() << "entry " << e << " (" << i << "," << j << "): " << got << " vs " << want;
        }
      }
    }
  }
  return wrong;
}

// The element type combinations gemm.v1 takes (gemm/form.h).
inline std::vector<Types> AllTypes() {
  std::vector<Types> all;
  for (const gemm::TypeCombination& t : gemm::kTypeCombinations) all.push_back({t.a, t.b, t.d, t.tf32});
  return all;
}

// Every case: types × layouts × C modes × batch modes.
inline std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const Types& t : AllTypes()) {
    for (Layout al : {Layout::kKContiguous, Layout::kMnContiguous}) {
      for (Layout bl : {Layout::kKContiguous, Layout::kMnContiguous}) {
        for (int c_mode = 0; c_mode < 3; ++c_mode) {
          for (int batch_mode = 0; batch_mode < 3; ++batch_mode) cases.push_back({t, al, bl, c_mode, batch_mode});
        }
      }
    }
  }
  return cases;
}

}  // namespace gemmd::testing
