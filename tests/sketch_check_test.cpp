// VERIFICATION_FAST's check on the host (gemm/sketch_check.h): the half-ulp
// it allows per element against IEEE's formats, its line bounds against the
// honest errors summed exactly, no false alarm on honest
// GEMMs of every shape kind, and every planted fault it promises to catch
// caught in every trial. The GPU runs the same code (forms_gpu_test's
// planted-fault table).
#include "gemm/sketch_check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "sketch_faults.h"
#include "sketch_lines.h"

namespace gemmd::testing {
namespace {

// Half an ulp, from IEEE 754's binary16 and binary32 and bfloat16's 8
// significant bits: 1 has an ulp of 2^-10 in fp16, 2^-7 in bf16, 2^-23 in
// fp32; fp16's smallest subnormal is 2^-24.
TEST(SketchCheck, HalfAnUlpIsThatOfEachFormat) {
  EXPECT_EQ(gemm::HalfUlp(ElementType::kF16, 1.0), 0x1p-11);
  EXPECT_EQ(gemm::HalfUlp(ElementType::kF16, 1.99), 0x1p-11);
  EXPECT_EQ(gemm::HalfUlp(ElementType::kF16, -2.0), 0x1p-10);
  EXPECT_EQ(gemm::HalfUlp(ElementType::kF16, 1000.0), 0x1p-2);  // 512 <= 1000 < 1024: ulp 2^-1
  EXPECT_EQ(gemm::HalfUlp(ElementType::kF16, 0x1p-20), 0x1p-25);  // subnormal: fixed spacing 2^-24
  EXPECT_EQ(gemm::HalfUlp(ElementType::kF16, 0.0), 0x1p-25);
  EXPECT_EQ(gemm::HalfUlp(ElementType::kBF16, 1.0), 0x1p-8);
  EXPECT_EQ(gemm::HalfUlp(ElementType::kF32, 1.0), 0x1p-24);
  EXPECT_EQ(gemm::HalfUlp(ElementType::kF32, 3.0), 0x1p-23);
  // The fp32 form the GPU's inner loop uses, down to bf16's subnormal half-ulp.
  // fp16's smallest subnormal, its largest (0x1.ff8p-15), its smallest
  // normal, just below a power of two, its largest finite value.
  for (float v : {0.0f, 0x1p-24f, 0x1.ff8p-15f, 0x1p-14f, 0x1p-20f, 1.0f, 0x1.ffcp-1f, 1.99f, -2.0f, 1000.0f,
                  60000.0f, 65504.0f}) {
    EXPECT_EQ(gemm::HalfUlpF(ElementType::kF16, v), gemm::HalfUlp(ElementType::kF16, v)) << v;
    EXPECT_EQ(gemm::HalfUlpF(ElementType::kBF16, v), gemm::HalfUlp(ElementType::kBF16, v)) << v;
  }
  // bf16's subnormals (fp32's), its smallest normal, its largest finite value.
  for (float v : {0x1p-133f, -0x1.fcp-127f, 0x1p-126f, 0x1.fep127f}) {
    EXPECT_EQ(gemm::HalfUlpF(ElementType::kBF16, v), gemm::HalfUlp(ElementType::kBF16, v)) << v;
  }
  EXPECT_EQ(gemm::HalfUlpF(ElementType::kBF16, 0.0f), 0x1p-134f);
  EXPECT_EQ(gemm::HalfUlpF(ElementType::kBF16, 0x1p-130f), 0x1p-134f);
  EXPECT_EQ(gemm::HalfUlpF(ElementType::kF16, 0x1p15f), 0x1p4f);  // fp16's top binade: ulp 32
  EXPECT_TRUE(std::isinf(gemm::HalfUlpF(ElementType::kF16, INFINITY)));
}

TEST(SketchCheck, AnHonestGemmPassesOnEveryKindOfShape) {
  uint64_t seed = 1;
  for (auto [m, n, k] :
       {std::tuple{1, 1, 1}, {7, 5, 3}, {64, 48, 80}, {33, 257, 129}, {256, 256, 1024}, {300, 17, 2000}}) {
    const PlainGemm g(m, n, k, static_cast<uint32_t>(seed));
    for (int trial = 0; trial < 6; ++trial) {
      const gemm::SketchResult r = gemm::SketchCheckOnHost(g.Problem(g.d, ++seed));
      ASSERT_TRUE(r.passed()) << m << "x" << n << "x" << k << " trial " << trial << ": " << r.failed_lines
                              << " lines, " << r.failed_samples << " samples, worst ratio " << r.worst_line_ratio;
      EXPECT_EQ(r.samples, static_cast<uint64_t>(std::min<int64_t>(m * n, gemm::kSketchSamples)));
      EXPECT_LT(r.worst_line_ratio, 1.0f);
    }
  }
}

// The bound each line is held to covers its honest errors: λ·sqrt(Σ e²),
// e_ij as docs/verification.md gives it, summed here in long double from
// norms of our own, is at most the largest row's and column's bound the
// check reports. The check sums e² from fp32 terms, in fp32 over at most 16
// elements (sketch_lines.h), and widens the sum by 2^-10; so its bound must
// lie above the exact one by most of that widening, and not far beyond it.
// Lengths that are not multiples of 16 leave partial groups at the ends.
TEST(SketchCheck, TheLineBoundsCoverTheHonestErrorsSummedExactly) {
  for (auto [m, n, k] : {std::tuple{37, 301, 129}, {203, 1000, 64}, {600, 45, 700}}) {
    const PlainGemm g(m, n, k, static_cast<uint32_t>(m + n));
    const gemm::SketchResult r = gemm::SketchCheckOnHost(g.Problem(g.d, 5));
    ASSERT_TRUE(r.passed());
    std::vector<long double> row_norm(m), column_norm(n);
    for (int64_t i = 0; i < m; ++i) row_norm[i] = g.RowNorm(g.a, i);
    for (int64_t j = 0; j < n; ++j) column_norm[j] = g.RowNorm(g.b, j);
    const long double per_norms = gemm::ProductTermPerNorms(gemm::FormTolerance{}, k, 1.0);
    std::vector<long double> row_sum(m), column_sum(n);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const float d = gemm::HalfToFloat(g.d[i * n + j]);
        const long double e = gemm::HalfUlp(ElementType::kF16, d) + 0x1p-24L * std::fabs(d) +
                              per_norms * row_norm[i] * column_norm[j];
        row_sum[i] += e * e;
        column_sum[j] += e * e;
      }
    }
    const long double exact_row = gemm::kSketchLambda * std::sqrt(*std::max_element(row_sum.begin(), row_sum.end()));
    const long double exact_column =
        gemm::kSketchLambda * std::sqrt(*std::max_element(column_sum.begin(), column_sum.end()));
    SCOPED_TRACE(::testing::Message() << m << "x" << n << "x" << k);
    // sqrt(1 + 2^-10) is 1 + 2^-11 and a little less; the reported bounds are floats.
    EXPECT_GE(r.largest_row_bound, exact_row * (1 + 0x1p-12L));
    EXPECT_GE(r.largest_column_bound, exact_column * (1 + 0x1p-12L));
    EXPECT_LE(r.largest_row_bound, exact_row * (1 + 0x1p-10L));
    EXPECT_LE(r.largest_column_bound, exact_column * (1 + 0x1p-10L));
  }
}

// Each fault 30 times (the GPU test plants each 1,000 times), each time at
// a new place with new vectors and samples. Every structural fault is caught every time, and so is every
// single-element fault larger than the error the report says it is sure
// to catch.
TEST(SketchCheck, EveryFaultItPromisesToCatchIsCaughtEveryTime) {
  const PlainGemm g(256, 384, 256, 7);
  std::mt19937_64 rng(11);
  constexpr int kTrials = 30;
  uint64_t seed = 1000;
  for (Fault fault : AllFaults()) {
    int caught = 0, promised = 0, promised_caught = 0;
    for (int trial = 0; trial < kTrials; ++trial) {
      const std::vector<uint16_t> d = g.Planted(fault, rng);
      const gemm::SketchResult r = gemm::SketchCheckOnHost(g.Problem(d, ++seed));
      caught += !r.passed();
      if (g.PlantedError(d) > r.sure_error()) {
        ++promised;
        promised_caught += !r.passed();
      }
    }
    SCOPED_TRACE(FaultName(fault));
    EXPECT_EQ(promised_caught, promised);
    if (fault != Fault::kElement1x && fault != Fault::kElement10x && fault != Fault::kElement100x) {
      EXPECT_EQ(caught, kTrials);
    }
    std::printf("%-40s caught %3d of %d (%d above the sure error)\n", FaultName(fault), caught, kTrials, promised);
  }
}

// Where an operand is stored MN-contiguous the samples come in clusters
// along it (16 rows of op(A), 16 columns of op(B), 4×4 for both; single
// elements where both run along K), each starting on the clusters' grid
// and clipped to D; the check passes an honest D in every layout and
// recomputes the clusters' elements.
TEST(SketchCheck, SamplesComeInClustersAlongTheOperandsStoredMnContiguous) {
  const PlainGemm g(301, 203, 64, 3);  // neither a multiple of 16: clipped clusters at both edges
  const MnStorage mn(g);
  struct Case {
    bool a_mn, b_mn;
    int rows, cols;
  };
  for (const Case c : {Case{false, false, 1, 1}, Case{true, false, 16, 1}, Case{false, true, 1, 16},
                       Case{true, true, 4, 4}}) {
    SCOPED_TRACE(::testing::Message() << "A " << (c.a_mn ? "MN" : "K") << ", B " << (c.b_mn ? "MN" : "K"));
    const gemm::SketchProblem p = mn.Problem(g, g.d, c.a_mn, c.b_mn, 77);
    const gemm::sketch::ClusterShape shape = gemm::sketch::SampleClusterShape(p);
    EXPECT_EQ(shape.rows, c.rows);
    EXPECT_EQ(shape.cols, c.cols);
    const int64_t clusters = gemm::sketch::SampleClustersPerEntry(p);
    EXPECT_EQ(clusters, gemm::kSketchSamples / (c.rows * c.cols));
    uint64_t elements = 0;
    for (int64_t s = 0; s < clusters; ++s) {
      const gemm::sketch::SampleCluster cl = gemm::sketch::SampleClusterOf(p, 0, s);
      EXPECT_EQ(cl.i % c.rows, 0);
      EXPECT_EQ(cl.j % c.cols, 0);
      EXPECT_EQ(cl.rows, std::min<int64_t>(c.rows, g.m - cl.i));
      EXPECT_EQ(cl.cols, std::min<int64_t>(c.cols, g.n - cl.j));
      elements += static_cast<uint64_t>(cl.rows) * cl.cols;
    }
    const gemm::SketchResult r = gemm::SketchCheckOnHost(p);
    EXPECT_TRUE(r.passed()) << r.failed_lines << " lines, " << r.failed_samples << " samples";
    EXPECT_EQ(r.samples, elements);
    EXPECT_GT(r.max_sample_error, 0.0f);  // D's own rounding, seen by the recomputed elements
  }
}

// Clusters sample every element as often as single draws would: over 400
// seeds, each element of a 70×50 D with A stored K×M (5×50 cells of 16×1,
// the last row of cells 6 rows high; 128 clusters a check) is sampled
// 1 - (1 - 1/250)^128 = 0.40 of the time, within six standard deviations.
// And a fault of twice an element's tolerance is caught by the samples
// exactly where a cluster covers it (the lines may catch it or not).
TEST(SketchCheck, ClustersSampleEveryElementAlikeAndCatchAFaultTheyCover) {
  const PlainGemm g(70, 50, 96, 5);
  const MnStorage mn(g);
  constexpr int kSeeds = 400;
  std::vector<int> sampled(g.m * g.n);
  for (int seed = 0; seed < kSeeds; ++seed) {
    const gemm::SketchProblem p = mn.Problem(g, g.d, true, false, 1000 + seed);
    std::vector<char> hit(g.m * g.n);
    for (int64_t s = 0; s < gemm::sketch::SampleClustersPerEntry(p); ++s) {
      const gemm::sketch::SampleCluster cl = gemm::sketch::SampleClusterOf(p, 0, s);
      for (int64_t i = cl.i; i < cl.i + cl.rows; ++i) {
        for (int64_t j = cl.j; j < cl.j + cl.cols; ++j) hit[i * g.n + j] = 1;
      }
    }
    for (size_t e = 0; e < hit.size(); ++e) sampled[e] += hit[e];
  }
  const double share = 1 - std::pow(1 - 1.0 / 250, 128);
  const double mean = kSeeds * share, sd = std::sqrt(kSeeds * share * (1 - share));
  const auto [low, high] = std::minmax_element(sampled.begin(), sampled.end());
  EXPECT_GT(*low, mean - 6 * sd);
  EXPECT_LT(*high, mean + 6 * sd);

  const gemm::SketchProblem honest = mn.Problem(g, g.d, true, false, 9);
  const gemm::sketch::SampleCluster first = gemm::sketch::SampleClusterOf(honest, 0, 0);
  std::vector<unsigned> covered(g.m * g.n);  // clusters are drawn with replacement: one may come twice
  for (int64_t s = 0; s < gemm::sketch::SampleClustersPerEntry(honest); ++s) {
    const gemm::sketch::SampleCluster cl = gemm::sketch::SampleClusterOf(honest, 0, s);
    for (int64_t i = cl.i; i < cl.i + cl.rows; ++i) ++covered[i * g.n + cl.j];
  }
  const int64_t outside = std::find(covered.begin(), covered.end(), 0u) - covered.begin();
  ASSERT_LT(outside, g.m * g.n);
  for (const int64_t at : {(first.i + first.rows - 1) * g.n + first.j, outside}) {
    std::vector<uint16_t> d = g.d;
    d[at] = gemm::FloatToHalf(static_cast<float>(g.exact[at] + 2 * g.tolerance[at]));
    const gemm::SketchResult r = gemm::SketchCheckOnHost(mn.Problem(g, d, true, false, 9));
    SCOPED_TRACE(::testing::Message() << "fault at " << at / g.n << ", " << at % g.n);
    EXPECT_EQ(r.failed_samples, covered[at]);
  }
}

}  // namespace
}  // namespace gemmd::testing
