// The CPU engine on every form of GEMM (gemm/form.h): each element type
// combination × layout × C/alpha/beta × batch (tests/form_cases.h), D
// checked against an fp64 product computed by the test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/cpu_engine.h"
#include "engine/verify.h"
#include "form_cases.h"

namespace gemmd {
namespace {

using gemm::ElementType;
using gemm::GemmForm;
using gemm::Layout;

TEST(CpuForms, EveryTypeLayoutCAndBatchMatchesAnFp64Product) {
  CpuEngine engine;
  uint32_t seed = 1;
  for (const testing::Case& c : testing::AllCases()) testing::RunCase(engine, c, seed += 3);
}

// VERIFICATION_FAST passes every honest case (no false alarm in any type).
TEST(CpuForms, TheFastCheckPassesEveryCase) {
  CpuEngine engine;
  uint32_t seed = 5;
  for (const testing::Case& c : testing::AllCases()) testing::RunCase(engine, c, seed += 3, {13, 9, 20}, true);
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
