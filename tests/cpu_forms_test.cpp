// The CPU engine on every form of GEMM (gemm/form.h): each element type
// combination × layout × C/alpha/beta × batch, D checked here against an
// fp64 product computed by this test, not by gemmd's verification.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "engine/cpu_engine.h"
#include "engine/verify.h"
#include "gemm/form.h"

namespace gemmd {
namespace {

using gemm::ElementType;
using gemm::GemmForm;
using gemm::Layout;

struct Types {
  ElementType a, b, d;
  bool tf32;
};

// `count` elements of `type`, values uniform in [-1, 1) rounded to it.
std::string RandomBytes(ElementType type, uint64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::string bytes(count * gemm::ElementBytes(type), '\0');
  for (uint64_t i = 0; i < count; ++i) gemm::StoreElement(type, bytes.data(), i, u(rng));
  return bytes;
}

// The unit roundoff of D's type: its rounding moves a value by at most
// this much relative.
double UnitRoundoff(ElementType t) {
  return t == ElementType::kF16 ? 0x1p-11 : t == ElementType::kBF16 ? 0x1p-8 : 0x1p-24;
}

struct Case {
  Types types;
  Layout a_layout, b_layout;
  int c_mode;  // 0: none, 1: C in D's type, 2: C in fp32
  int batch_mode;  // 0: one, 1: three dense, 2: three with B shared
};

std::string Name(const Case& c) {
  return std::string(gemm::ElementName(c.types.a)) + "x" + gemm::ElementName(c.types.b) + "->" +
         gemm::ElementName(c.types.d) + (c.types.tf32 ? "(tf32)" : "") + " A " + gemm::LayoutName(c.a_layout) +
         " B " + gemm::LayoutName(c.b_layout) + " c" + std::to_string(c.c_mode) + " batch" +
         std::to_string(c.batch_mode);
}

void RunCase(const Case& c, uint32_t seed) {
  SCOPED_TRACE(Name(c));
  const int64_t m = 13, n = 9, k = 20;
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
  f.stride_a = m * k;
  f.stride_b = c.batch_mode == 2 ? 0 : n * k;
  f.stride_c = m * n;
  ASSERT_EQ(gemm::CombinationError(f), "");

  const auto sa = gemm::StorageOfA(f, m, k), sb = gemm::StorageOfB(f, n, k), sc = gemm::StorageOfC(f, m, n);
  const std::string a = RandomBytes(f.a, sa.Footprint(f.batch), seed);
  const std::string b = RandomBytes(f.b, sb.Footprint(f.batch), seed + 1);
  const std::string cm = f.has_c ? RandomBytes(f.c, sc.Footprint(f.batch), seed + 2) : "";
  std::string d(f.batch * m * n * gemm::ElementBytes(f.d), '\xff');  // poisoned: NaN in every type

  GemmJob job;
  job.m = m, job.n = n, job.k = k;
  job.form = f;
  job.a = {OperandView::Kind::kHost, HostBytes(a.data(), a.size()), 0};
  job.b = {OperandView::Kind::kHost, HostBytes(b.data(), b.size()), 0};
  job.c = {OperandView::Kind::kHost, HostBytes(cm.data(), cm.size()), 0};
  job.d = d.data();
  CpuEngine engine;
  auto report = engine.Run(0, job);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->verification.passed) << report->verification.max_abs_error;
  EXPECT_EQ(report->verification.elements, static_cast<uint64_t>(f.batch * m * n));

  const double scale = f.alpha * (gemm::IsFp8(f.a) ? f.a_scale * f.b_scale : 1.0);
  int wrong = 0;
  for (int64_t e = 0; e < f.batch; ++e) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double x = gemm::LoadElement(f.a, a.data(), e * f.stride_a + gemm::IndexInA(f, m, k, i, kk));
          const double y = gemm::LoadElement(f.b, b.data(), e * f.stride_b + gemm::IndexInB(f, n, k, kk, j));
          sum += x * y;
          magnitude += std::fabs(x * y);
        }
        double want = scale * sum;
        if (f.has_c) {
          const double cv = gemm::LoadElement(f.c, cm.data(), e * f.stride_c + i * n + j);
          want += f.beta * cv;
          magnitude += std::fabs(cv);
        }
        const double got = gemm::LoadElement(f.d, d.data(), (e * m + i) * n + j);
        // D's rounding plus fp32 sums of k = 20 terms (and tf32's inputs).
        const double bound = UnitRoundoff(f.d) * std::fabs(want) + (k + 2) * 0x1p-23 * std::fabs(scale) * magnitude +
                             (f.allow_tf32 ? 0x1p-10 * std::fabs(scale) * magnitude : 0) + 1e-30;
        if (!(std::fabs(got - want) <= bound)) {
          if (++wrong < 4) ADD_FAILURE() << "entry " << e << " (" << i << "," << j << "): " << got << " vs " << want;
        }
      }
    }
  }
  EXPECT_EQ(wrong, 0);
}

TEST(CpuForms, EveryTypeLayoutCAndBatchMatchesAnFp64Product) {
  const Types types[] = {
      {ElementType::kF16, ElementType::kF16, ElementType::kF16, false},
      {ElementType::kF16, ElementType::kF16, ElementType::kF32, false},
      {ElementType::kBF16, ElementType::kBF16, ElementType::kBF16, false},
      {ElementType::kBF16, ElementType::kBF16, ElementType::kF32, false},
      {ElementType::kF32, ElementType::kF32, ElementType::kF32, false},
      {ElementType::kF32, ElementType::kF32, ElementType::kF32, true},
      {ElementType::kF8E4M3, ElementType::kF8E4M3, ElementType::kBF16, false},
      {ElementType::kF8E4M3, ElementType::kF8E5M2, ElementType::kF16, false},
      {ElementType::kF8E5M2, ElementType::kF8E4M3, ElementType::kBF16, false},
  };
  uint32_t seed = 1;
  for (const Types& t : types) {
    for (Layout al : {Layout::kKContiguous, Layout::kMnContiguous}) {
      for (Layout bl : {Layout::kKContiguous, Layout::kMnContiguous}) {
        for (int c_mode = 0; c_mode < 3; ++c_mode) {
          for (int batch_mode = 0; batch_mode < 3; ++batch_mode) {
            RunCase({t, al, bl, c_mode, batch_mode}, seed += 3);
          }
        }
      }
    }
  }
}

TEST(CpuForms, RandomOperandsOfEveryTypeComeFromTheSeed) {
  // x @ W in bf16: A random, B random, both generated as the GPU generates them.
  GemmForm f;
  f.a = f.b = f.d = ElementType::kBF16;
  f.b_layout = Layout::kMnContiguous;
  f.stride_a = 5 * 7;
  f.stride_b = 7 * 3;
  GemmJob job;
  job.m = 5, job.n = 3, job.k = 7;
  job.form = f;
  job.a = {OperandView::Kind::kRandom, {}, 9};
  job.b = {OperandView::Kind::kRandom, {}, 9};
  std::string d(5 * 3 * 2, '\xff');
  job.d = d.data();
  CpuEngine engine;
  auto report = engine.Run(0, job);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->verification.passed);
  EXPECT_THAT(report->verification.tolerance_source, ::testing::HasSubstr("bfloat16"));
  const uint64_t sa = gemm::RandomStream(9, gemm::OperandId::kA), sb = gemm::RandomStream(9, gemm::OperandId::kB);
  double want = 0;  // D[0][0]: row 0 of A (7 contiguous), column 0 of B (stored 7x3)
  for (int kk = 0; kk < 7; ++kk) {
    want += double{gemm::RandomValueAs(ElementType::kBF16, sa, kk)} * gemm::RandomValueAs(ElementType::kBF16, sb, kk * 3);
  }
  EXPECT_NEAR(gemm::LoadElement(ElementType::kBF16, d.data(), 0), want, std::fabs(want) * 0x1p-8 + 1e-6);
}

// A planted fault, one element off by a little more than its type allows,
// is caught in every D type; the same element within the bound passes.
TEST(CpuForms, VerificationCatchesAPlantedFaultInEveryType) {
  for (ElementType t : {ElementType::kF16, ElementType::kBF16, ElementType::kF32}) {
    GemmForm f;
    f.a = f.b = f.d = t;
    const gemm::FormTolerance tol = gemm::ToleranceOf(f);
    std::vector<double> ref = {0.5, -3.0, 100.0, 2.0};
    std::string d(ref.size() * gemm::ElementBytes(t), '\0');
    for (size_t i = 0; i < ref.size(); ++i) gemm::StoreElement(t, d.data(), i, static_cast<float>(ref[i]));
    EXPECT_TRUE(CompareWithReference(d.data(), t, ref.data(), ref.size(), tol, 0).passed) << gemm::ElementName(t);
    const double off = 4 * (tol.atol + tol.rtol * 100.0);
    gemm::StoreElement(t, d.data(), 2, static_cast<float>(100.0 + off));
    const VerificationResult r = CompareWithReference(d.data(), t, ref.data(), ref.size(), tol, 0);
    EXPECT_FALSE(r.passed) << gemm::ElementName(t);
    EXPECT_EQ(r.mismatches, 1u) << gemm::ElementName(t);
  }
}

}  // namespace
}  // namespace gemmd
