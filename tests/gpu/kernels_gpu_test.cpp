// The kernel library on a real GPU: device helpers, and every step this
// build has against cuBLAS on fresh random inputs with D poisoned, on tile
// shapes, squares and ragged shapes (ladder.md, "Correct means").
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "gemm/device_ops.h"
#include "gemm/diagnose_step.h"
#include "gemm/form_ops.h"
#include "gemm/gemm.h"
#include "gemm/half.h"
#include "gemm/steps.h"
#include "gemm/test_hooks.h"
#include "gemm/tolerance.h"
#include "gemm/vendor_plan.h"
#include "gpu_test_util.h"
#include "test_util.h"

namespace gemmd::testing {
namespace {

using ::testing::HasSubstr;

#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

class KernelsGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    ASSERT_EQ(gemm::CreateContext(0, &ctx_), "");
    ASSERT_CUDA(cudaStreamCreate(&stream_));
    ASSERT_CUDA(cudaMalloc(&cmp_, sizeof(gemm::CompareResult)));
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
    if (cmp_) cudaFree(cmp_);
    gemm::DestroyContext(&ctx_);
  }
  gemm::CompareResult CompareOnDevice(const __half* d, const __half* ref, uint64_t count) {
    gemm::CompareResult host{};
    EXPECT_EQ(gemm::Compare(d, ref, count, 1e-3f, 1e-2f, cmp_, stream_), cudaSuccess);
    EXPECT_EQ(cudaMemcpyAsync(&host, cmp_, sizeof host, cudaMemcpyDeviceToHost, stream_), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    return host;
  }
  // gemm-bench's autotuned cuBLASLt column, in a list of steps to run.
  static constexpr int kAutotuned = -1;
  std::string LaunchOrAutotuned(int step, const gemm::Problem& p, const gemm::VendorAutotune* tuned) {
    return step == kAutotuned ? gemm::LaunchAutotuned(*tuned, p, ctx_, stream_) : gemm::Launch(step, p, ctx_, stream_);
  }

  // `step` on fresh random operands of the m×n×k form `f` (each stored by
  // the form's strides; f.c is D's type), twice, after cuBLAS where A, B
  // and D share a type, and beside step 10 the autotuned cuBLASLt; before
  // each run D is poisoned, or holds C where `c_is_d` (C read in place, a
  // single GEMM). Each D is held to the form's bound against the fp64
  // product of every entry.
  void ExpectEveryRunWithinTheFormsBound(int step, const gemm::GemmForm& f, int64_t m, int64_t n, int64_t k,
                                         bool c_is_d, uint64_t seed) {
    gemm::FormProblem form{m, n, k, f};
    const uint64_t a_n = gemm::StorageOfA(f, m, k).Footprint(f.batch);
    const uint64_t b_n = gemm::StorageOfB(f, n, k).Footprint(f.batch);
    const uint64_t d_n = static_cast<uint64_t>(f.batch) * m * n;
    const uint64_t c_n = f.has_c ? gemm::StorageOfC(f, m, n).Footprint(f.batch) : d_n;
    void *a, *b, *d, *c;
    double* ref;
    float* bound;
    ASSERT_CUDA(cudaMalloc(&a, a_n * 2));
    ASSERT_CUDA(cudaMalloc(&b, b_n * 2));
    ASSERT_CUDA(cudaMalloc(&d, d_n * 2));
    ASSERT_CUDA(cudaMalloc(&c, c_n * 2));
    ASSERT_CUDA(cudaMalloc(&ref, d_n * sizeof(double)));
    ASSERT_CUDA(cudaMalloc(&bound, 3 * sizeof(float)));
    ASSERT_CUDA(gemm::FillRandom(a, f.a, a_n, seed, gemm::OperandId::kA, stream_));
    ASSERT_CUDA(gemm::FillRandom(b, f.b, b_n, seed, gemm::OperandId::kB, stream_));
    ASSERT_CUDA(gemm::FillRandom(c, f.d, c_n, seed, gemm::OperandId::kC, stream_));
    form.a = a, form.b = b, form.c = c, form.d = d;
    ASSERT_CUDA(gemm::ReferenceFormGemm(form, ref, stream_));
    ASSERT_CUDA(gemm::FormBoundInputs(form, bound, stream_));
    const gemm::FormTolerance tolerance = gemm::ToleranceOf(f);
    const gemm::FormBoundTerms terms{bound, gemm::ProductTermPerNorms(tolerance, k, f.ProductScale()),
                                     gemm::CTermPerValue(f.ReadsC(), f.beta)};
    gemm::Problem problem{m, n, k, static_cast<const __half*>(a), static_cast<const __half*>(b),
                          static_cast<__half*>(d)};
    problem.operands = f.a;
    problem.result = f.d;
    problem.a_layout = f.a_layout;
    problem.b_layout = f.b_layout;
    problem.alpha = static_cast<float>(f.alpha);
    problem.beta = static_cast<float>(f.beta);
    problem.c = static_cast<const __half*>(c_is_d ? d : c);
    problem.batch = f.batch;
    problem.stride_a = f.stride_a;
    problem.stride_b = f.stride_b;
    problem.stride_c = f.stride_c;
    std::vector<int> runs = {step, step};  // twice: a stale-state bug shows on the second
    if (f.a == f.d) runs.insert(runs.begin(), gemm::kVendorStep);
    gemm::VendorAutotunePtr tuned;  // beside step 10: gemm-bench's autotuned column, on the same form
    if (step == gemm::kLastStep && f.a == f.d) {
      ASSERT_EQ(gemm::AutotuneVendor(problem, ctx_, stream_, nullptr, &tuned, 4, 1), "");
      runs.push_back(kAutotuned);
    }
    for (int run : runs) {
      if (c_is_d) {
        ASSERT_CUDA(cudaMemcpyAsync(d, c, d_n * 2, cudaMemcpyDeviceToDevice, stream_));
      } else {
        ASSERT_CUDA(gemm::Poison(static_cast<__half*>(d), d_n, stream_));
      }
      ASSERT_EQ(LaunchOrAutotuned(run, problem, tuned.get()), "");
      ASSERT_CUDA(gemm::CompareForm(d, f.d, ref, d_n, tolerance.rtol, tolerance.atol, terms, cmp_, stream_));
      gemm::CompareResult r{};
      ASSERT_CUDA(cudaMemcpyAsync(&r, cmp_, sizeof r, cudaMemcpyDeviceToHost, stream_));
      ASSERT_CUDA(cudaStreamSynchronize(stream_));
      EXPECT_EQ(r.mismatches, 0u) << "step " << run << ": " << r.non_finite << " unwritten/non-finite, max err "
                                  << r.max_abs_error;
    }
    for (void* x : {a, b, c, d}) cudaFree(x);
    cudaFree(ref);
    cudaFree(bound);
  }
  gemm::DeviceContext ctx_;
  cudaStream_t stream_ = nullptr;
  gemm::CompareResult* cmp_ = nullptr;
};

// A context keeps at least split-K's workspace in the device's pool, and
// never lowers what the process chose to keep (gemmd keeps everything).
TEST_F(KernelsGpuTest, AContextRaisesThePoolsReleaseThresholdButNeverLowersIt) {
  cudaMemPool_t pool = nullptr;
  ASSERT_CUDA(cudaDeviceGetDefaultMemPool(&pool, 0));
  uint64_t keep = 0;
  ASSERT_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  EXPECT_GE(keep, 256ull << 20) << "the fixture's context set at least the split-K floor";
  uint64_t everything = UINT64_MAX;
  ASSERT_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &everything));
  gemm::DeviceContext another;
  ASSERT_EQ(gemm::CreateContext(0, &another), "");
  ASSERT_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  EXPECT_EQ(keep, UINT64_MAX);
  gemm::DestroyContext(&another);
}

TEST_F(KernelsGpuTest, FillRandomMatchesTheHostGenerator) {
  const uint64_t n = 100003;
  __half* d = nullptr;
  ASSERT_CUDA(cudaMalloc(&d, n * 2));
  ASSERT_CUDA(gemm::FillRandom(d, n, 99, gemm::OperandId::kB, stream_));
  std::vector<uint16_t> host(n);
  ASSERT_CUDA(cudaMemcpy(host.data(), d, n * 2, cudaMemcpyDeviceToHost));
  cudaFree(d);
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(gemm::HalfToFloat(host[i]), gemm::RandomValue(99, gemm::OperandId::kB, i)) << i;
  }
}

// A seeded operand of every type, as the forms generate it: eight elements
// a thread where the destination is aligned to their bytes, one a thread
// where it is not (an entry of a stacked batch may start anywhere), and a
// count that leaves a tail of fewer than eight. Every byte as the host's
// RandomValueAs stores it, and none written past the end.
TEST_F(KernelsGpuTest, TypedFillRandomMatchesTheHostGeneratorInEveryType) {
  const uint64_t n = 100003;
  for (gemm::ElementType t : {gemm::ElementType::kF16, gemm::ElementType::kBF16, gemm::ElementType::kF32,
                              gemm::ElementType::kF8E4M3, gemm::ElementType::kF8E5M2}) {
    const size_t bytes = gemm::ElementBytes(t);
    for (uint64_t offset : {uint64_t{0}, uint64_t{1}, uint64_t{3}}) {  // elements past a 256-byte boundary
      SCOPED_TRACE(::testing::Message() << gemm::ElementName(t) << ", " << offset << " elements in");
      char* buffer = nullptr;
      const size_t total = (n + offset + 8) * bytes;
      ASSERT_CUDA(cudaMalloc(&buffer, total));
      ASSERT_CUDA(cudaMemsetAsync(buffer, 0x5A, total, stream_));
      ASSERT_CUDA(gemm::FillRandom(buffer + offset * bytes, t, n, 41, gemm::OperandId::kC, stream_));
      std::vector<unsigned char> got(total);
      ASSERT_CUDA(cudaMemcpyAsync(got.data(), buffer, total, cudaMemcpyDeviceToHost, stream_));
      ASSERT_CUDA(cudaStreamSynchronize(stream_));
      cudaFree(buffer);
      std::vector<unsigned char> want(total, 0x5A);
      const uint64_t stream = gemm::RandomStream(41, gemm::OperandId::kC);
      for (uint64_t i = 0; i < n; ++i) {
        gemm::StoreElement(t, want.data() + offset * bytes, i, gemm::RandomValueAs(t, stream, i));
      }
      ASSERT_EQ(got, want);
    }
  }
}

// Big matrices are made eight elements a thread (gemm::RandomValuesIn8):
// every element as the host generator gives it, at a pitch, with the gaps
// left alone, from a seed whose stream carries out of its low 32 bits
// inside the matrix (the eight-at-a-time path's one special case).
TEST_F(KernelsGpuTest, FillRandomInVectorsMatchesTheHostGeneratorAcrossTheCarry) {
  const int64_t rows = 2048, cols = 1032, ld = 1040;
  const uint64_t count = rows * cols;
  uint64_t seed = 1;
  while (static_cast<uint32_t>(gemm::RandomStream(seed, gemm::OperandId::kA)) < (1ull << 32) - count + 8) ++seed;
  __half* d = nullptr;
  ASSERT_CUDA(cudaMalloc(&d, rows * ld * 2));
  ASSERT_CUDA(cudaMemsetAsync(d, 0x7B, rows * ld * 2, stream_));
  ASSERT_CUDA(gemm::FillRandom(d, rows, cols, ld, seed, gemm::OperandId::kA, stream_));
  std::vector<uint16_t> host(rows * ld);
  ASSERT_CUDA(cudaMemcpyAsync(host.data(), d, host.size() * 2, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  cudaFree(d);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < ld; ++c) {
      const uint16_t got = host[r * ld + c];
      if (c >= cols) {
        ASSERT_EQ(got, 0x7B7B) << "gap at row " << r << ", column " << c;
      } else {
        ASSERT_EQ(gemm::HalfToFloat(got), gemm::RandomValue(seed, gemm::OperandId::kA, r * cols + c))
            << "seed " << seed << ", row " << r << ", column " << c;
      }
    }
  }
}

// The many-matrix fill gives each matrix what the one-matrix fill gives it,
// pitches included, leaves the gaps between rows alone, and takes more
// matrices than one launch holds.
TEST_F(KernelsGpuTest, FillingManyMatricesInOneLaunchMatchesFillingEach) {
  struct Case {
    int64_t rows, cols, ld;
  };
  const std::vector<std::vector<Case>> lists = {
      {{64, 64, 64}, {64, 64, 64}},
      {{77, 50, 56}, {100, 50, 64}, {1, 3, 8}, {1000, 129, 136}},
      {{0, 5, 8}, {3, 3, 3}},
      std::vector<Case>(gemm::kMaxRandomMatrices + 3, Case{9, 7, 8}),  // two launches
  };
  for (const auto& cases : lists) {
    const size_t n = cases.size();
    std::vector<__half*> one(n), many(n);
    std::vector<gemm::RandomMatrix> matrices(n);
    for (size_t i = 0; i < n; ++i) {
      const Case& c = cases[i];
      const size_t bytes = std::max<size_t>(2, c.rows * c.ld * 2);
      const uint64_t seed = 11 + i;
      const auto id = i % 2 ? gemm::OperandId::kB : gemm::OperandId::kA;
      ASSERT_CUDA(cudaMalloc(&one[i], bytes));
      ASSERT_CUDA(cudaMalloc(&many[i], bytes));
      ASSERT_CUDA(cudaMemsetAsync(one[i], 0x7B, bytes, stream_));  // the gaps: equal and not a fill's value
      ASSERT_CUDA(cudaMemsetAsync(many[i], 0x7B, bytes, stream_));
      ASSERT_CUDA(gemm::FillRandom(one[i], c.rows, c.cols, c.ld, seed, id, stream_));
      matrices[i] = {many[i], c.rows, c.cols, c.ld, seed, id};
    }
    ASSERT_CUDA(gemm::FillRandom(matrices.data(), n, stream_));
    for (size_t i = 0; i < n; ++i) {
      const Case& c = cases[i];
      const size_t elements = std::max<size_t>(1, c.rows * c.ld);
      std::vector<uint16_t> expected(elements), got(elements);
      ASSERT_CUDA(cudaMemcpyAsync(expected.data(), one[i], elements * 2, cudaMemcpyDeviceToHost, stream_));
      ASSERT_CUDA(cudaMemcpyAsync(got.data(), many[i], elements * 2, cudaMemcpyDeviceToHost, stream_));
      ASSERT_CUDA(cudaStreamSynchronize(stream_));
      EXPECT_EQ(expected, got) << "matrix " << i << " of " << n << ": " << c.rows << "x" << c.cols << " ld " << c.ld;
      if (c.rows > 0) {  // written, not left as set
        EXPECT_EQ(gemm::HalfToFloat(got[0]), gemm::RandomValue(matrices[i].seed, matrices[i].operand, 0));
      }
      cudaFree(one[i]);
      cudaFree(many[i]);
    }
  }
  const gemm::RandomMatrix bad[] = {{nullptr, 0, 0, 0, 1, gemm::OperandId::kB},
                                    {nullptr, 2, 8, 4, 1, gemm::OperandId::kA}};  // ld shorter than a row
  EXPECT_EQ(gemm::FillRandom(bad, 2, stream_), cudaErrorInvalidValue);
}

TEST_F(KernelsGpuTest, CompareCatchesAPlantedWrongElementAndAnUnwrittenOne) {
  const uint64_t n = 1 << 20;
  __half *ref = nullptr, *d = nullptr;
  ASSERT_CUDA(cudaMalloc(&ref, n * 2));
  ASSERT_CUDA(cudaMalloc(&d, n * 2));
  ASSERT_CUDA(gemm::FillRandom(ref, n, 5, gemm::OperandId::kA, stream_));
  ASSERT_CUDA(cudaMemcpyAsync(d, ref, n * 2, cudaMemcpyDeviceToDevice, stream_));
  EXPECT_EQ(CompareOnDevice(d, ref, n).mismatches, 0u);

  const __half wrong = __float2half(7.5f);  // far outside |ref| < 1 + tolerance
  ASSERT_CUDA(cudaMemcpyAsync(d + 123457, &wrong, 2, cudaMemcpyHostToDevice, stream_));
  auto r = CompareOnDevice(d, ref, n);
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.non_finite, 0u);
  EXPECT_GT(r.max_abs_error, 6.0f);

  ASSERT_CUDA(gemm::Poison(d + 999, 1, stream_));  // as if the kernel never wrote it
  r = CompareOnDevice(d, ref, n);
  EXPECT_EQ(r.mismatches, 2u);
  EXPECT_EQ(r.non_finite, 1u);
  cudaFree(ref);
  cudaFree(d);
}

// The K-aware part of the bound (gemm/tolerance.h): MaxRowNorm finds the
// largest row norm, pitched; the comparison adds unit·√K·‖a‖·‖b‖ to atol,
// reports it, and still catches an error beyond it.
TEST_F(KernelsGpuTest, TheAccumulationTermWidensTheBoundByExactlyWhatItReports) {
  const int64_t rows = 300, cols = 1000, ld = 1024;
  __half* x = nullptr;
  float* norms = nullptr;
  ASSERT_CUDA(cudaMalloc(&x, rows * ld * 2));
  ASSERT_CUDA(cudaMalloc(&norms, 2 * sizeof(float)));
  ASSERT_CUDA(gemm::Poison(x, rows * ld, stream_));  // the gaps must not be read
  ASSERT_CUDA(gemm::FillRandom(x, rows, cols, ld, 3, gemm::OperandId::kA, stream_));
  ASSERT_CUDA(gemm::MaxRowNorm(x, rows, cols, ld, norms, stream_));
  ASSERT_CUDA(gemm::MaxRowNorm(x, rows / 2, cols, ld, norms + 1, stream_));
  float got[2];
  ASSERT_CUDA(cudaMemcpyAsync(got, norms, sizeof got, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  double want[2] = {0, 0};
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double v = gemm::RandomValue(3, gemm::OperandId::kA, static_cast<uint64_t>(r * cols + c));
      sum += v * v;
    }
    want[0] = std::max(want[0], std::sqrt(sum));
    if (r < rows / 2) want[1] = std::max(want[1], std::sqrt(sum));
  }
  EXPECT_NEAR(got[0], want[0], want[0] * 1e-5);
  EXPECT_NEAR(got[1], want[1], want[1] * 1e-5);
  // Both operands in one launch, as the engine takes them, give the same.
  float both[2];
  ASSERT_CUDA(gemm::MaxRowNorms(x, rows, ld, x, rows / 2, ld, cols, norms, stream_));
  ASSERT_CUDA(cudaMemcpyAsync(both, norms, sizeof both, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_EQ(both[0], got[0]);
  EXPECT_EQ(both[1], got[1]);

  // d = ref + 0.5 in one element: outside atol + rtol·|ref| alone, inside
  // once a term of 0.6 is added.
  const uint64_t n = 4096;
  __half *ref = nullptr, *d = nullptr;
  ASSERT_CUDA(cudaMalloc(&ref, n * 2));
  ASSERT_CUDA(cudaMalloc(&d, n * 2));
  ASSERT_CUDA(gemm::FillRandom(ref, n, 9, gemm::OperandId::kB, stream_));
  ASSERT_CUDA(cudaMemcpyAsync(d, ref, n * 2, cudaMemcpyDeviceToDevice, stream_));
  __half planted;
  ASSERT_CUDA(cudaMemcpy(&planted, ref + 77, 2, cudaMemcpyDeviceToHost));
  planted = __float2half(__half2float(planted) + 0.5f);
  ASSERT_CUDA(cudaMemcpy(d + 77, &planted, 2, cudaMemcpyHostToDevice));
  const float unit_sqrt_k = 0.6f / (got[0] * got[1]);
  const float term = unit_sqrt_k * got[0] * got[1];
  gemm::CompareResult host{};
  for (const auto& [bound, mismatches] : {std::pair{gemm::AccumulationBound{}, 1ull},
                                          std::pair{gemm::AccumulationBound{norms, unit_sqrt_k}, 0ull}}) {
    ASSERT_CUDA(gemm::Compare(d, ref, 64, 64, 64, 1e-3f, 1e-2f, bound, cmp_, stream_));
    ASSERT_CUDA(cudaMemcpyAsync(&host, cmp_, sizeof host, cudaMemcpyDeviceToHost, stream_));
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
    EXPECT_EQ(host.mismatches, mismatches);
    EXPECT_FLOAT_EQ(host.accumulation_atol, bound.norms ? term : 0.0f);
  }
  planted = __float2half(__half2float(planted) + 2 * term);  // beyond the widened bound
  ASSERT_CUDA(cudaMemcpy(d + 77, &planted, 2, cudaMemcpyHostToDevice));
  ASSERT_CUDA(gemm::Compare(d, ref, 64, 64, 64, 1e-3f, 1e-2f, {norms, unit_sqrt_k}, cmp_, stream_));
  ASSERT_CUDA(cudaMemcpyAsync(&host, cmp_, sizeof host, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_EQ(host.mismatches, 1u);
  for (void* p : {static_cast<void*>(x), static_cast<void*>(norms), static_cast<void*>(ref), static_cast<void*>(d)}) {
    cudaFree(p);
  }
}

// A real fault in the real kernels (gemm/diagnose.h): TMA maps encoded
// without the 128-byte swizzle that the MMAs read with. Every TMA step's
// k-decoding probes name the swizzle; the rows and columns probes, whose
// ramps do not vary along k, stay exact; unplanted, everything is exact.
TEST_F(KernelsGpuTest, APlantedSwizzleFaultIsDiagnosedAsTheSwizzleInEveryTmaStep) {
  for (int step = 4; step <= 10; ++step) {
    if (!gemm::Supports(step, ctx_).supported) continue;
    gemm::testing::PlantTmaSwizzleFault(true);
    const auto planted = gemm::DiagnoseStep(step, ctx_, stream_);
    gemm::testing::PlantTmaSwizzleFault(false);
    ASSERT_FALSE(planted.empty()) << step;
    int named = 0;
    for (const auto& v : planted) {
      if (v.probe.find("decoding k") != std::string::npos) {
        EXPECT_THAT(v.verdict, HasSubstr("swizzle")) << "step " << step << ", " << v.probe;
        ++named;
      }
    }
    EXPECT_GT(named, 0) << step;
    for (const auto& v : gemm::DiagnoseStep(step, ctx_, stream_)) {
      EXPECT_EQ(v.verdict, "exact") << "step " << step << ", " << v.probe;
    }
  }
}

// The fp64 reference is the exact product of small integers (every partial
// sum fits fp64's mantissa), and cuBLAS's fp16 D rounds it.
TEST_F(KernelsGpuTest, TheFp64ReferenceIsExactWhereFp64IsExact) {
  const int64_t m = 37, n = 53, k = 3000;
  std::vector<uint16_t> ah(m * k), bh(n * k);
  std::vector<double> want(m * n, 0.0);
  for (int64_t i = 0; i < m * k; ++i) ah[i] = gemm::FloatToHalf(static_cast<float>((i * 7) % 5) - 2.0f);
  for (int64_t i = 0; i < n * k; ++i) bh[i] = gemm::FloatToHalf(static_cast<float>((i * 3) % 7) - 3.0f);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c)
      for (int64_t x = 0; x < k; ++x)
        want[r * n + c] += double{gemm::HalfToFloat(ah[r * k + x])} * gemm::HalfToFloat(bh[c * k + x]);
  __half *a = nullptr, *b = nullptr;
  double* d = nullptr;
  ASSERT_CUDA(cudaMalloc(&a, m * k * 2));
  ASSERT_CUDA(cudaMalloc(&b, n * k * 2));
  ASSERT_CUDA(cudaMalloc(&d, m * n * sizeof(double)));
  ASSERT_CUDA(cudaMemcpy(a, ah.data(), m * k * 2, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemcpy(b, bh.data(), n * k * 2, cudaMemcpyHostToDevice));
  ASSERT_CUDA(gemm::ReferenceGemmFp64(m, n, k, a, k, b, k, d, n, stream_));
  std::vector<double> got(m * n);
  ASSERT_CUDA(cudaMemcpyAsync(got.data(), d, m * n * sizeof(double), cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_EQ(got, want);
  for (void* p : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(d)}) cudaFree(p);
}

// The pitched device helpers the engine uses: a fill gives each element the
// value of its dense index and leaves the gaps; a compare reads no gap (they
// hold poison here) and still catches a planted error; the SIMT reference
// with leading dimensions matches cuBLAS with the same ones.
// A batch's checks in one launch give each matrix what checking it alone
// gives: pitched rows, poisoned gaps and slot tails left unread, a planted
// wrong value, a NaN, and several wrong values, each in its own matrix.
TEST_F(KernelsGpuTest, CompareBatchGivesEachMatrixWhatCompareGivesIt) {
  const int64_t rows = 61, cols = 47, ld = 48;
  const uint64_t stride = (rows * ld + 127) / 128 * 128;  // 256-byte slots, as a batch's
  const uint32_t matrices = 5;
  __half *x = nullptr, *y = nullptr;
  gemm::CompareResult* results = nullptr;
  ASSERT_CUDA(cudaMalloc(&x, stride * matrices * 2));
  ASSERT_CUDA(cudaMalloc(&y, stride * matrices * 2));
  ASSERT_CUDA(cudaMalloc(&results, matrices * sizeof(gemm::CompareResult)));
  ASSERT_CUDA(gemm::Poison(x, stride * matrices, stream_));
  for (uint32_t i = 0; i < matrices; ++i) {
    ASSERT_CUDA(gemm::FillRandom(x + i * stride, rows, cols, ld, 40 + i, gemm::OperandId::kA, stream_));
  }
  ASSERT_CUDA(cudaMemcpyAsync(y, x, stride * matrices * 2, cudaMemcpyDeviceToDevice, stream_));
  __half_raw nan_bits{};
  nan_bits.x = 0x7E00;
  const __half wrong = __float2half(7.5f), nan = nan_bits;
  auto plant = [&](__half* base, uint32_t matrix, int64_t r, int64_t c, const __half& value) {
    return cudaMemcpyAsync(base + matrix * stride + r * ld + c, &value, 2, cudaMemcpyHostToDevice, stream_);
  };
  ASSERT_CUDA(plant(y, 1, 17, 46, wrong));
  ASSERT_CUDA(plant(x, 3, 60, 0, nan));
  for (int64_t r : {0, 30, 60}) ASSERT_CUDA(plant(y, 4, r, 5, wrong));

  ASSERT_CUDA(gemm::CompareBatch(x, y, rows, cols, ld, stride, matrices, 1e-3f, 1e-2f, results, stream_));
  std::vector<gemm::CompareResult> batched(matrices);
  ASSERT_CUDA(cudaMemcpyAsync(batched.data(), results, matrices * sizeof(gemm::CompareResult),
                              cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  const std::array<unsigned long long, matrices> mismatches = {0, 1, 0, 1, 3}, non_finite = {0, 0, 0, 1, 0};
  for (uint32_t i = 0; i < matrices; ++i) {
    gemm::CompareResult alone{};
    ASSERT_CUDA(gemm::Compare(x + i * stride, y + i * stride, rows, cols, ld, 1e-3f, 1e-2f, cmp_, stream_));
    ASSERT_CUDA(cudaMemcpyAsync(&alone, cmp_, sizeof alone, cudaMemcpyDeviceToHost, stream_));
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
    EXPECT_EQ(batched[i].mismatches, mismatches[i]) << i;
    EXPECT_EQ(batched[i].non_finite, non_finite[i]) << i;
    EXPECT_EQ(batched[i].mismatches, alone.mismatches) << i;
    EXPECT_EQ(batched[i].non_finite, alone.non_finite) << i;
    EXPECT_EQ(batched[i].max_abs_error, alone.max_abs_error) << i;
  }
  EXPECT_GT(batched[1].max_abs_error, 1.0f);
  EXPECT_EQ(gemm::CompareBatch(x, y, rows, cols, ld, rows * ld - 1, 2, 1e-3f, 1e-2f, results, stream_),
            cudaErrorInvalidValue)
      << "matrices that overlap";
  EXPECT_EQ(gemm::CompareBatch(x, y, rows, cols, cols - 1, stride, 2, 1e-3f, 1e-2f, results, stream_),
            cudaErrorInvalidValue)
      << "rows longer than their pitch";
  EXPECT_EQ(gemm::CompareBatch(x, y, rows, cols, ld, stride, 0, 1e-3f, 1e-2f, results, stream_), cudaSuccess);
  cudaFree(x);
  cudaFree(y);
  cudaFree(results);
}

// The checks read sixteen bytes at a time where rows allow (multiples of
// eight elements, 16-byte bases and pitches) and element by element
// otherwise, and reduce in each block: both paths count the same planted
// faults, across more blocks than the grid has, pitched, one matrix or a batch.
TEST_F(KernelsGpuTest, TheVectorAndElementPathsOfTheChecksFindTheSameFaults) {
  const int64_t rows = 513, cols = 1000, ld = 1008;
  const uint32_t matrices = 3;
  const uint64_t aligned = rows * ld, odd = rows * ld + 1;  // matrix strides: the second defeats the vectors
  __half *x = nullptr, *y = nullptr;
  gemm::CompareResult* results = nullptr;
  ASSERT_CUDA(cudaMalloc(&x, odd * matrices * 2));
  ASSERT_CUDA(cudaMalloc(&y, odd * matrices * 2));
  ASSERT_CUDA(cudaMalloc(&results, matrices * sizeof(gemm::CompareResult)));
  __half_raw nan_bits{};
  nan_bits.x = 0x7E00;
  const __half wrong = __float2half(7.5f), nan = nan_bits;
  for (uint64_t stride : {aligned, odd}) {
    ASSERT_CUDA(gemm::Poison(x, odd * matrices, stream_));  // the gaps must not be read
    for (uint32_t i = 0; i < matrices; ++i) {
      ASSERT_CUDA(gemm::FillRandom(x + i * stride, rows, cols, ld, 60 + i, gemm::OperandId::kA, stream_));
    }
    ASSERT_CUDA(cudaMemcpyAsync(y, x, odd * matrices * 2, cudaMemcpyDeviceToDevice, stream_));
    for (uint32_t i = 0; i < matrices; ++i) {  // the first and last elements, and one in the middle
      ASSERT_CUDA(cudaMemcpyAsync(y + i * stride, &wrong, 2, cudaMemcpyHostToDevice, stream_));
      ASSERT_CUDA(cudaMemcpyAsync(x + i * stride + (rows - 1) * ld + cols - 1, &nan, 2, cudaMemcpyHostToDevice,
                                  stream_));
      ASSERT_CUDA(cudaMemcpyAsync(y + i * stride + 256 * ld + 504, &wrong, 2, cudaMemcpyHostToDevice, stream_));
    }
    ASSERT_CUDA(gemm::CompareBatch(x, y, rows, cols, ld, stride, matrices, 1e-3f, 1e-2f, results, stream_));
    std::vector<gemm::CompareResult> batched(matrices);
    ASSERT_CUDA(cudaMemcpyAsync(batched.data(), results, matrices * sizeof(gemm::CompareResult),
                                cudaMemcpyDeviceToHost, stream_));
    gemm::CompareResult alone{};
    ASSERT_CUDA(gemm::Compare(x + stride, y + stride, rows, cols, ld, 1e-3f, 1e-2f, cmp_, stream_));
    ASSERT_CUDA(cudaMemcpyAsync(&alone, cmp_, sizeof alone, cudaMemcpyDeviceToHost, stream_));
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
    for (const gemm::CompareResult& r : {batched[0], batched[1], batched[2], alone}) {
      EXPECT_EQ(r.mismatches, 3u) << "stride " << stride;
      EXPECT_EQ(r.non_finite, 1u) << "stride " << stride;
      EXPECT_GT(r.max_abs_error, 6.0f) << "stride " << stride;
    }
  }
  // Many short rows: more warps' worth than the grid has, the largest row last.
  const int64_t many = 20000, narrow = 16;
  __half* tall = x;  // reused: many·narrow elements fit
  float* norm = nullptr;
  ASSERT_CUDA(cudaMalloc(&norm, sizeof(float)));
  ASSERT_CUDA(gemm::FillRandom(tall, many, narrow, narrow, 5, gemm::OperandId::kB, stream_));
  std::vector<__half> big(narrow, __float2half(2.0f));
  ASSERT_CUDA(cudaMemcpyAsync(tall + (many - 1) * narrow, big.data(), narrow * 2, cudaMemcpyHostToDevice, stream_));
  ASSERT_CUDA(gemm::MaxRowNorm(tall, many, narrow, narrow, norm, stream_));
  float got = 0;
  ASSERT_CUDA(cudaMemcpyAsync(&got, norm, sizeof got, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_FLOAT_EQ(got, 8.0f);  // √(16·2²)
  for (void* p : {static_cast<void*>(x), static_cast<void*>(y), static_cast<void*>(results),
                  static_cast<void*>(norm)}) {
    cudaFree(p);
  }
}

// Generation eight elements at a time (big enough, rows of multiples of
// eight at a 16-byte pitch) writes the documented values and never the
// gaps, two matrices in one launch, beside one the element path writes.
TEST_F(KernelsGpuTest, GeneratedMatricesHoldTheDocumentedValuesOnBothWritePaths) {
  const int64_t rows = 2049, cols = 1024, ld = 1032, odd_cols = 1021;  // 2,098,176 elements: written in vectors
  __half *x = nullptr, *y = nullptr;
  ASSERT_CUDA(cudaMalloc(&x, rows * ld * 2));
  ASSERT_CUDA(cudaMalloc(&y, rows * ld * 2));
  ASSERT_CUDA(gemm::Poison(x, rows * ld, stream_));
  ASSERT_CUDA(gemm::Poison(y, rows * ld, stream_));
  const gemm::RandomMatrix both[2] = {{x, rows, cols, ld, 21, gemm::OperandId::kA},
                                      {y, rows, odd_cols, ld, 22, gemm::OperandId::kB}};
  ASSERT_CUDA(gemm::FillRandom(both, 2, stream_));
  for (auto [p, c, seed, id] : {std::tuple{x, cols, 21, gemm::OperandId::kA},
                                std::tuple{y, odd_cols, 22, gemm::OperandId::kB}}) {
    std::vector<uint16_t> host(rows * ld);
    ASSERT_CUDA(cudaMemcpyAsync(host.data(), p, host.size() * 2, cudaMemcpyDeviceToHost, stream_));
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t col = 0; col < ld; ++col) {
        if (col < c) {
          ASSERT_EQ(gemm::HalfToFloat(host[r * ld + col]), gemm::RandomValue(seed, id, r * c + col))
              << r << ", " << col;
        } else {
          ASSERT_EQ(host[r * ld + col], 0xFFFF) << "a gap was written at " << r << ", " << col;
        }
      }
    }
  }
  cudaFree(x);
  cudaFree(y);
}

TEST_F(KernelsGpuTest, PitchedFillCompareAndReferenceSkipTheGaps) {
  const int64_t rows = 301, cols = 77, ld = 80, k = 77;
  __half *x = nullptr, *y = nullptr, *b = nullptr;
  ASSERT_CUDA(cudaMalloc(&x, rows * ld * 2));
  ASSERT_CUDA(cudaMalloc(&y, rows * ld * 2));
  ASSERT_CUDA(cudaMalloc(&b, rows * ld * 2));
  ASSERT_CUDA(gemm::Poison(x, rows * ld, stream_));
  ASSERT_CUDA(gemm::FillRandom(x, rows, cols, ld, 99, gemm::OperandId::kA, stream_));
  std::vector<uint16_t> host(rows * ld);
  ASSERT_CUDA(cudaMemcpyAsync(host.data(), x, host.size() * 2, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < ld; ++c) {
      if (c < cols) {
        ASSERT_EQ(gemm::HalfToFloat(host[r * ld + c]), gemm::RandomValue(99, gemm::OperandId::kA, r * cols + c));
      } else {
        ASSERT_EQ(host[r * ld + c], 0xFFFF) << "a gap was written at " << r << ", " << c;
      }
    }
  }
  ASSERT_CUDA(cudaMemcpyAsync(y, x, rows * ld * 2, cudaMemcpyDeviceToDevice, stream_));
  gemm::CompareResult host_cmp{};
  auto compare = [&] {
    EXPECT_EQ(gemm::Compare(x, y, rows, cols, ld, 1e-3f, 1e-2f, cmp_, stream_), cudaSuccess);
    EXPECT_EQ(cudaMemcpyAsync(&host_cmp, cmp_, sizeof host_cmp, cudaMemcpyDeviceToHost, stream_), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  };
  compare();
  EXPECT_EQ(host_cmp.mismatches, 0u) << "the poisoned gaps were read";
  const __half wrong = __float2half(7.5f);
  ASSERT_CUDA(cudaMemcpyAsync(y + 17 * ld + 76, &wrong, 2, cudaMemcpyHostToDevice, stream_));
  compare();
  EXPECT_EQ(host_cmp.mismatches, 1u);

  // D = X·Bᵀ with X as A (rows×k at pitch ld), B rows×k at pitch ld, D at pitch ld.
  ASSERT_CUDA(gemm::FillRandom(b, rows, k, ld, 7, gemm::OperandId::kB, stream_));
  __half *d = nullptr, *ref = nullptr;
  const int64_t ldd = rows + 3;
  ASSERT_CUDA(cudaMalloc(&d, rows * ldd * 2));
  ASSERT_CUDA(cudaMalloc(&ref, rows * ldd * 2));
  ASSERT_CUDA(gemm::Poison(d, rows * ldd, stream_));
  ASSERT_CUDA(gemm::Poison(ref, rows * ldd, stream_));
  ASSERT_CUDA(gemm::ReferenceGemm(rows, rows, k, x, ld, b, ld, d, ldd, stream_));
  ASSERT_EQ(gemm::Launch(gemm::kVendorStep, {rows, rows, k, x, b, ref, ld, ld, ldd}, ctx_, stream_), "");
  EXPECT_EQ(gemm::Compare(d, ref, rows, rows, ldd, 1e-3f, 1e-2f, cmp_, stream_), cudaSuccess);
  ASSERT_CUDA(cudaMemcpyAsync(&host_cmp, cmp_, sizeof host_cmp, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  EXPECT_EQ(host_cmp.mismatches, 0u);
  EXPECT_EQ(host_cmp.non_finite, 0u);
  for (__half* p : {x, y, b, d, ref}) cudaFree(p);
}

// Step 0 through a plan (gemm/vendor_plan.h): every grid shape asked, each
// distinct pick loaded. Then, on fresh inputs with D poisoned, against the
// SIMT reference: the plan's pick on the problem padded to K and N's
// 16-byte pitches with zeros (as the engine runs it; 9000 rows is beyond
// the grid), and step 0 on the problem as it is (the pick, or cublasGemmEx
// where cuBLAS refuses the pick for a ragged K or N).
TEST_F(KernelsGpuTest, VendorPlanLoadsItsPicksAndStepZeroThroughItMatchesTheReference) {
  gemm::VendorPlanPtr plan;
  gemm::VendorPlanStats stats;
  ASSERT_EQ(gemm::BuildVendorPlan(ctx_, stream_, &plan, &stats), "");
  EXPECT_EQ(stats.shapes, 26 * 20 * 20);  // m: 1, 2, 3, 4, 6, ... 8192; n and k: its multiples of 8
  EXPECT_GT(stats.picks, 0);
  EXPECT_EQ(stats.loaded, stats.picks);
  ctx_.vendor_plan = plan.get();
  for (const auto& [m, n, k] : std::vector<std::array<int64_t, 3>>{
           {3000, 2000, 1000}, {77, 100, 50}, {1, 1, 1}, {640, 480, 4096}, {333, 77, 999}, {8192, 8192, 8192},
           {9000, 3, 5}}) {
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
    const int64_t ld = gemm::SixteenBytePitch(k), ldd = gemm::SixteenBytePitch(n);  // B has ldd rows, the last ldd - n of them zeros
    __half *a = nullptr, *b = nullptr, *d = nullptr, *ref = nullptr;
    ASSERT_CUDA(cudaMalloc(&a, m * ld * 2));
    ASSERT_CUDA(cudaMalloc(&b, ldd * ld * 2));
    ASSERT_CUDA(cudaMalloc(&d, m * ldd * 2));
    ASSERT_CUDA(cudaMalloc(&ref, m * ldd * 2));
    ASSERT_CUDA(cudaMemsetAsync(a, 0, m * ld * 2, stream_));
    ASSERT_CUDA(cudaMemsetAsync(b, 0, ldd * ld * 2, stream_));
    ASSERT_CUDA(gemm::FillRandom(a, m, k, ld, 31, gemm::OperandId::kA, stream_));
    ASSERT_CUDA(gemm::FillRandom(b, n, k, ld, 32, gemm::OperandId::kB, stream_));
    ASSERT_CUDA(gemm::Poison(ref, m * ldd, stream_));
    ASSERT_CUDA(gemm::ReferenceGemm(m, n, k, a, ld, b, ld, ref, ldd, stream_));
    auto check = [&](const char* what) {
      gemm::CompareResult host{};
      ASSERT_CUDA(gemm::Compare(d, ref, m, n, ldd, 1e-3f, 1e-2f, cmp_, stream_));
      ASSERT_CUDA(cudaMemcpyAsync(&host, cmp_, sizeof host, cudaMemcpyDeviceToHost, stream_));
      ASSERT_CUDA(cudaStreamSynchronize(stream_));
      EXPECT_EQ(host.mismatches, 0u) << what;
      EXPECT_EQ(host.non_finite, 0u) << what;
    };
    ASSERT_CUDA(gemm::Poison(d, m * ldd, stream_));
    EXPECT_TRUE(gemm::detail::LaunchPlanned(*plan, {m, ldd, ld, a, b, d, ld, ld, ldd, true}, static_cast<int>(ld),
                                            ctx_, stream_));
    check("the plan's pick, padded");
    ASSERT_CUDA(gemm::Poison(d, m * ldd, stream_));
    ASSERT_EQ(gemm::Launch(gemm::kVendorStep, {m, n, k, a, b, d, ld, ld, ldd}, ctx_, stream_), "");
    check("step 0 as it is");
    for (__half* x : {a, b, d, ref}) cudaFree(x);
  }
  ctx_.vendor_plan = nullptr;
}

// The SIMT reference (step 0's independent check) against cuBLAS on
// squares, ragged shapes and K not a multiple of 8, D poisoned first.
TEST_F(KernelsGpuTest, ReferenceGemmMatchesCublas) {
  const std::vector<std::array<int64_t, 3>> shapes = {
      {1, 1, 1}, {77, 100, 50}, {128, 128, 64}, {300, 200, 13}, {129, 4095, 8}, {1000, 1000, 1000}, {2048, 512, 4096}};
  for (const auto& [m, n, k] : shapes) {
    __half *a = nullptr, *b = nullptr, *d = nullptr, *ref = nullptr;
    ASSERT_CUDA(cudaMalloc(&a, m * k * 2));
    ASSERT_CUDA(cudaMalloc(&b, n * k * 2));
    ASSERT_CUDA(cudaMalloc(&d, m * n * 2));
    ASSERT_CUDA(cudaMalloc(&ref, m * n * 2));
    ASSERT_CUDA(gemm::FillRandom(a, m * k, 11 + m, gemm::OperandId::kA, stream_));
    ASSERT_CUDA(gemm::FillRandom(b, n * k, 13 + n, gemm::OperandId::kB, stream_));
    ASSERT_CUDA(gemm::Poison(d, m * n, stream_));
    ASSERT_CUDA(gemm::ReferenceGemm(m, n, k, a, b, d, stream_));
    ASSERT_EQ(gemm::Launch(gemm::kVendorStep, {m, n, k, a, b, ref}, ctx_, stream_), "");
    const auto r = CompareOnDevice(d, ref, m * n);
    EXPECT_EQ(r.mismatches, 0u) << m << "x" << n << "x" << k;
    EXPECT_EQ(r.non_finite, 0u) << m << "x" << n << "x" << k;
    for (__half* p : {a, b, d, ref}) cudaFree(p);
  }
}

struct StepShape {
  int step;
  int64_t m, n, k;
};

std::vector<StepShape> AllStepShapes() {
  // Tile shapes, squares 128..8192, ragged shapes, K not a multiple of 8.
  const std::vector<std::array<int64_t, 3>> shapes = {
      {128, 128, 64}, {128, 128, 1024}, {77, 100, 50},     {1, 1, 1},          {128, 128, 128},
      {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096},
      {8192, 8192, 8192}, {1000, 1000, 1000}, {4097, 129, 77}, {1, 8192, 4096}, {8192, 1, 64},
      {129, 4095, 8},  {300, 200, 13},  {255, 257, 1023},
      // Cluster and wide tiles (steps 9, 10): one cluster tile, an odd count
      // of tile-rows (the pair's lower CTA has no rows), many tiles per CTA.
      // Step 10 takes its narrow tile for the small ones (and most above:
      // 1000^3, 4097x129, 1x8192...), so the next two keep its wide tile on
      // an odd tile-row count and on edges ragged in M, N and K; the last
      // two take its medium tile (common/tile_width.h), the second ragged,
      // and the two after them its three-quarter tile, the first ragged.
      {256, 128, 64},  {128, 256, 64},  {384, 640, 192}, {4096, 8192, 128}, {2432, 4000, 192}, {3001, 1999, 517},
      {2048, 1024, 1024}, {1100, 1500, 136}, {1500, 1430, 200}, {1024, 3072, 256},
      // Step 10's wide tile with a split tail (common/split_k.h: SplitTail)
      // on 60 to 66 resident pairs: 150 pair tiles, a last wave of 18 to 30
      // split into two or three ranges of its 49 k-tiles, ragged M, N and K; in
      // the second, the last tile-row's lower CTA has no rows.
      {2470, 3725, 3100}, {3600, 2501, 3080},
      // Long K on few tiles: step 10 splits K (common/split_k.h), into 2 to
      // 66 ranges on an H100, a range ending mid k-tile where K is ragged;
      // on the narrow tile where N <= 64 (16x16, 8192x32, 300x37), on the
      // medium one where M <= 128 (56x151, 1x1306, 100x333), else on the
      // pair (872x644, 300x700).
      {16, 16, 16384}, {56, 151, 16853}, {1, 1306, 7895}, {872, 644, 14932}, {300, 700, 20000},
      {8192, 32, 4096}, {300, 37, 12000}, {100, 333, 9999}};
  std::vector<StepShape> out;
  for (const auto& info : gemm::AllSteps()) {
    for (const auto& s : shapes) {
      if (gemm::ShapeError(info, s[0], s[1], s[2]).empty()) out.push_back({info.step, s[0], s[1], s[2]});
    }
  }
  return out;
}

class StepCorrectnessTest : public KernelsGpuTest, public ::testing::WithParamInterface<StepShape> {};

TEST_P(StepCorrectnessTest, MatchesCublasWithDPoisoned) {
  const StepShape p = GetParam();
  const gemm::StepSupport support = gemm::Supports(p.step, ctx_);
  if (!support.supported) GTEST_SKIP() << "step " << p.step << " " << support.reason;
  const uint64_t a_n = p.m * p.k, b_n = p.n * p.k, d_n = p.m * p.n;
  __half *a, *b, *d, *ref;
  ASSERT_CUDA(cudaMalloc(&a, a_n * 2));
  ASSERT_CUDA(cudaMalloc(&b, b_n * 2));
  ASSERT_CUDA(cudaMalloc(&d, d_n * 2));
  ASSERT_CUDA(cudaMalloc(&ref, d_n * 2));
  const uint64_t seed = ::testing::UnitTest::GetInstance()->random_seed() * 7919ull + p.m * 31 + p.k;
  ASSERT_CUDA(gemm::FillRandom(a, a_n, seed, gemm::OperandId::kA, stream_));
  ASSERT_CUDA(gemm::FillRandom(b, b_n, seed, gemm::OperandId::kB, stream_));
  ASSERT_CUDA(gemm::Poison(ref, d_n, stream_));
  ASSERT_EQ(gemm::Launch(0, {p.m, p.n, p.k, a, b, ref}, ctx_, stream_), "");
  for (int run = 0; run < 2; ++run) {  // twice: a stale-state bug shows on the second
    ASSERT_CUDA(gemm::Poison(d, d_n, stream_));
    ASSERT_EQ(gemm::Launch(p.step, {p.m, p.n, p.k, a, b, d}, ctx_, stream_), "");
    ASSERT_CUDA(cudaGetLastError());
    const auto r = CompareOnDevice(d, ref, d_n);
    EXPECT_EQ(r.mismatches, 0u) << "run " << run << ": " << r.non_finite << " unwritten/non-finite, max err "
                                << r.max_abs_error;
  }
  if (p.step == 0 && d_n * p.k <= (1ull << 27)) {
    // cuBLAS itself against an fp64 host reference, on shapes small enough.
    std::string a_h(a_n * 2, 0), b_h(b_n * 2, 0), d_h(d_n * 2, 0);
    ASSERT_CUDA(cudaMemcpy(a_h.data(), a, a_n * 2, cudaMemcpyDeviceToHost));
    ASSERT_CUDA(cudaMemcpy(b_h.data(), b, b_n * 2, cudaMemcpyDeviceToHost));
    ASSERT_CUDA(cudaMemcpy(d_h.data(), d, d_n * 2, cudaMemcpyDeviceToHost));
    EXPECT_EQ(CountMismatches(d_h, ReferenceGemm(ToDouble(a_h), ToDouble(b_h), p.m, p.n, p.k)), 0);
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  cudaFree(ref);
}

INSTANTIATE_TEST_SUITE_P(AllSteps, StepCorrectnessTest, ::testing::ValuesIn(AllStepShapes()),
                         [](const auto& info) {
                           const auto& p = info.param;
                           return "step" + std::to_string(p.step) + "_" + std::to_string(p.m) + "x" +
                                  std::to_string(p.n) + "x" + std::to_string(p.k);
                         });

// A ladder step's form: A and B of `operands`, D and (where beta is not
// 0) C of `result`, each operand stored as said.
gemm::GemmForm LadderForm(gemm::ElementType operands, gemm::ElementType result, gemm::Layout a_layout,
                          gemm::Layout b_layout, float alpha, float beta) {
  gemm::GemmForm f;
  f.a = f.b = operands;
  f.d = f.c = result;
  f.a_layout = a_layout;
  f.b_layout = b_layout;
  f.alpha = alpha;
  f.beta = beta;
  f.has_c = beta != 0;
  return f;
}

// bf16, MN-contiguous operands and the fused epilogue: every step with
// bf16 A and B and a bf16 or fp16 D, and with fp16 A and B and a bf16 D;
// fp16 and bf16 with A stored k×m, B stored k×n, or both; α alone,
// α·AB + β·C, and β·C with C being D itself. Fresh random inputs, D
// poisoned (or holding C, in place). Each D,
// the step's and (where A, B and D share a type, which cublasGemmEx
// needs) cuBLAS's on the same problem, and beside step 10 gemm-bench's
// autotuned cuBLASLt's, is held to the form's bound (gemm/form.h) against
// an fp64 product on the GPU, which shares nothing with either: ragged
// shapes, split-K's long K, step 10's wide, medium and three-quarter tiles
// and its split tail, and squares up to 4096.
struct TypedStepShape {
  int step;
  gemm::ElementType operands, result;
  gemm::Layout a_layout, b_layout;
  int64_t m, n, k;
  float alpha = 1, beta = 0;
  bool c_is_d = false;  // C read from D's own memory (in place)
};

std::vector<TypedStepShape> AllTypedStepShapes() {
  const std::vector<std::array<int64_t, 3>> shapes = {
      {128, 128, 64}, {77, 100, 50},     {1, 1, 1},         {1000, 1000, 1000}, {2048, 2048, 2048},
      {4096, 4096, 4096}, {4097, 129, 77}, {129, 4095, 8},   {3001, 1999, 517},  {2432, 4000, 192},
      {1100, 1500, 136},  // step 10's medium tile
      {1536, 1432, 136},  // its three-quarter tile, C by TMA with the last tiles' right columns outside
      {1040, 1032, 200},  // C by TMA (n a multiple of 8) with tiles whose lower rows or right columns lie outside
      {56, 151, 16853}, {300, 700, 20000},
      {3600, 2504, 3080}};  // step 10's split tail where there is no C (only step 10 has one: only there)
  const gemm::ElementType kF16 = gemm::ElementType::kF16, kBF16 = gemm::ElementType::kBF16;
  const gemm::Layout kK = gemm::Layout::kKContiguous, kMn = gemm::Layout::kMnContiguous;
  struct Form {
    gemm::ElementType in, out;
    gemm::Layout a, b;
    float alpha = 1, beta = 0;
    bool c_is_d = false;
  };
  const std::vector<Form> forms = {{kBF16, kBF16, kK, kK}, {kBF16, kF16, kK, kK},  {kF16, kBF16, kK, kK},
                                   {kF16, kF16, kK, kMn},  {kBF16, kBF16, kK, kMn}, {kF16, kF16, kMn, kK},
                                   {kBF16, kBF16, kMn, kK}, {kF16, kF16, kMn, kMn}, {kBF16, kBF16, kMn, kMn},
                                   {kF16, kF16, kK, kK, 2.0f},                     // alpha alone
                                   {kBF16, kBF16, kK, kMn, 0.75f, -1.5f},          // x @ W·0.75 - 1.5·C
                                   {kF16, kF16, kMn, kK, 1.0f, 1.0f, true}};      // D += A·B, in place
  std::vector<TypedStepShape> out;
  for (const auto& info : gemm::AllSteps()) {
    if (info.step == gemm::kVendorStep) continue;  // the reference beside every step
    for (const Form& f : forms) {
      for (const auto& s : shapes) {
        if (f.a == kMn || f.b == kMn || f.alpha != 1) {  // fewer shapes: no 4096^3, one long K
          if (s[0] == 4096 || s[2] == 20000) continue;
        }
        if (s[0] == 3600 && info.step != 10) continue;
        if (gemm::ShapeError(info, s[0], s[1], s[2]).empty()) {
          out.push_back({info.step, f.in, f.out, f.a, f.b, s[0], s[1], s[2], f.alpha, f.beta, f.c_is_d});
        }
      }
    }
  }
  return out;
}

class TypedStepTest : public KernelsGpuTest, public ::testing::WithParamInterface<TypedStepShape> {};

TEST_P(TypedStepTest, MatchesAnFp64ProductAsCublasDoes) {
  const TypedStepShape p = GetParam();
  const gemm::StepSupport support = gemm::Supports(p.step, ctx_);
  if (!support.supported) GTEST_SKIP() << "step " << p.step << " " << support.reason;
  const gemm::GemmForm f = LadderForm(p.operands, p.result, p.a_layout, p.b_layout, p.alpha, p.beta);
  const uint64_t seed = ::testing::UnitTest::GetInstance()->random_seed() * 7919ull + p.m * 31 + p.k;
  ExpectEveryRunWithinTheFormsBound(p.step, f, p.m, p.n, p.k, p.c_is_d, seed);
}

INSTANTIATE_TEST_SUITE_P(AllSteps, TypedStepTest, ::testing::ValuesIn(AllTypedStepShapes()), [](const auto& info) {
  const auto& p = info.param;
  const auto layout = [](gemm::Layout l) { return l == gemm::Layout::kKContiguous ? "K" : "MN"; };
  const std::string epilogue = p.alpha == 1 && p.beta == 0 ? ""
                               : p.c_is_d                   ? "_plus_c_in_place"
                               : p.beta != 0                ? "_alpha_beta_c"
                                                            : "_alpha";
  return "step" + std::to_string(p.step) + "_" + gemm::ElementName(p.operands) + "_to_" +
         gemm::ElementName(p.result) + "_a" + layout(p.a_layout) + "_b" + layout(p.b_layout) + epilogue + "_" +
         std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k);
});

// Strided batches on every step: each entry's A, B (and C) its own or
// shared by the whole batch (stride 0), D dense. Steps 4-10 walk a batch
// whose strides and pitches TMA takes in one launch (the ragged M of
// 77x104x56 included); any other batch (a stride or row not a whole 16
// bytes, steps 1-3) runs entry by entry. Each D, and cuBLAS's strided
// batched call's where A, B and D share a type (and the autotuned
// cuBLASLt's beside step 10), is held to the form's bound against the fp64
// reference of every entry.
struct BatchedStepShape {
  int step;
  gemm::ElementType operands, result;
  gemm::Layout a_layout, b_layout;
  int64_t batch, m, n, k;
  bool a_shared = false, b_shared = false;
  float alpha = 1, beta = 0;
  bool c_shared = false;
};

std::vector<BatchedStepShape> AllBatchedStepShapes() {
  const gemm::ElementType kF16 = gemm::ElementType::kF16, kBF16 = gemm::ElementType::kBF16;
  const gemm::Layout kK = gemm::Layout::kKContiguous, kMn = gemm::Layout::kMnContiguous;
  struct Case {
    gemm::ElementType in, out;
    gemm::Layout a, b;
    int64_t batch, m, n, k;
    bool a_shared = false, b_shared = false;
    float alpha = 1, beta = 0;
    bool c_shared = false;
  };
  const std::vector<Case> cases = {
      {kF16, kF16, kK, kK, 3, 77, 104, 56},                           // ragged M in one launch
      {kF16, kF16, kK, kK, 3, 77, 100, 50},                           // strides of no whole 16 bytes
      {kF16, kF16, kK, kK, 4, 300, 200, 130, false, true},            // B shared
      {kBF16, kBF16, kK, kMn, 5, 128, 256, 192, true, false},         // x @ W, A shared
      {kBF16, kBF16, kMn, kMn, 2, 1000, 1000, 1000},                  // step 10: medium tiles over two entries
      {kBF16, kBF16, kK, kMn, 2, 768, 1536, 128},                     // step 10: three-quarter tiles, two entries
      {kF16, kF16, kK, kK, 64, 128, 128, 128},                        // many small entries
      {kBF16, kBF16, kK, kMn, 3, 200, 136, 72, false, true, 0.5f, -1.0f},        // x @ W·0.5 - C
      {kF16, kBF16, kK, kK, 2, 256, 512, 64, false, false, 1.0f, 1.0f, true}};  // one C for every entry
  std::vector<BatchedStepShape> out;
  for (const auto& info : gemm::AllSteps()) {
    if (info.step == gemm::kVendorStep) continue;
    for (const Case& c : cases) {
      if (!gemm::ShapeError(info, c.m, c.n, c.k).empty()) continue;
      out.push_back({info.step, c.in, c.out, c.a, c.b, c.batch, c.m, c.n, c.k, c.a_shared, c.b_shared, c.alpha,
                     c.beta, c.c_shared});
    }
  }
  return out;
}

class BatchedStepTest : public KernelsGpuTest, public ::testing::WithParamInterface<BatchedStepShape> {};

TEST_P(BatchedStepTest, EveryEntryMatchesAnFp64Product) {
  const BatchedStepShape p = GetParam();
  const gemm::StepSupport support = gemm::Supports(p.step, ctx_);
  if (!support.supported) GTEST_SKIP() << "step " << p.step << " " << support.reason;
  gemm::GemmForm f = LadderForm(p.operands, p.result, p.a_layout, p.b_layout, p.alpha, p.beta);
  f.batch = p.batch;
  f.StackDensely(p.m, p.n, p.k);
  if (p.a_shared) f.stride_a = 0;
  if (p.b_shared) f.stride_b = 0;
  if (p.c_shared) f.stride_c = 0;
  const uint64_t seed = ::testing::UnitTest::GetInstance()->random_seed() * 7919ull + p.batch * 131 + p.m;
  ExpectEveryRunWithinTheFormsBound(p.step, f, p.m, p.n, p.k, /*c_is_d=*/false, seed);
}

INSTANTIATE_TEST_SUITE_P(AllSteps, BatchedStepTest, ::testing::ValuesIn(AllBatchedStepShapes()), [](const auto& info) {
  const auto& p = info.param;
  const auto layout = [](gemm::Layout l) { return l == gemm::Layout::kKContiguous ? "K" : "MN"; };
  std::string shared = p.a_shared ? "_a_shared" : p.b_shared ? "_b_shared" : "";
  if (p.beta != 0) shared += p.c_shared ? "_one_c" : "_alpha_beta_c";
  return "step" + std::to_string(p.step) + "_" + gemm::ElementName(p.operands) + "_to_" +
         gemm::ElementName(p.result) + "_a" + layout(p.a_layout) + "_b" + layout(p.b_layout) + shared + "_" +
         std::to_string(p.batch) + "x" + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" +
         std::to_string(p.k);
});

// A Problem's batch: at least one entry, no negative stride, D's entries
// apart, and C in place only entry for entry. Nothing is launched.
TEST_F(KernelsGpuTest, ABatchsStridesAreCheckedBeforeAnythingRuns) {
  __half* x = reinterpret_cast<__half*>(uintptr_t{256});  // never read
  for (int step : {0, 2, 6, 10}) {
    gemm::Problem p{64, 32, 16, x, x, x};
    p.batch = 0;
    EXPECT_THAT(gemm::Launch(step, p, ctx_, stream_), HasSubstr("batch = 0 must be >= 1"));
    p.batch = 2;
    p.stride_b = -16;
    EXPECT_THAT(gemm::Launch(step, p, ctx_, stream_), HasSubstr("strides must be >= 0"));
    p.stride_b = 0;
    p.stride_d = 64 * 32 - 8;
    EXPECT_THAT(gemm::Launch(step, p, ctx_, stream_), HasSubstr("makes D's batch entries overlap (m * ldd = 2048)"));
    p.stride_d = 0;
    p.beta = 1;
    p.c = x;  // D itself, but every entry would read entry 0's
    EXPECT_THAT(gemm::Launch(step, p, ctx_, stream_), HasSubstr("stride_c must equal stride_d"));
  }
}

TEST_F(KernelsGpuTest, TypesTheLadderLacksAreRefusedWithAMessage) {
  gemm::Problem p{64, 64, 64};
  p.operands = gemm::ElementType::kF8E4M3;
  for (int step : {0, 4, 10}) EXPECT_THAT(gemm::Launch(step, p, ctx_, stream_), HasSubstr("not fp8_e4m3 operands"));
  p.operands = gemm::ElementType::kBF16;
  p.result = gemm::ElementType::kF32;
  EXPECT_THAT(gemm::Launch(10, p, ctx_, stream_), HasSubstr("fp32 D"));
  p.result = gemm::ElementType::kF16;
  EXPECT_THAT(gemm::Launch(0, p, ctx_, stream_), HasSubstr("a D of A and B's type"));
}

// beta needs a C at least n wide; a batch takes no alpha or C; batch
// strides are checked against each operand's stored rows.
TEST_F(KernelsGpuTest, AFusedEpilogueNeedsItsCAndABatchTakesNone) {
  __half* x = nullptr;
  gemm::Problem p{64, 32, 16, x, x, x};
  p.beta = 1;
  for (int step : {0, 4, 10}) EXPECT_THAT(gemm::Launch(step, p, ctx_, stream_), HasSubstr("there is no C"));
  p.c = reinterpret_cast<const __half*>(uintptr_t{256});  // never read: the pitch is refused first
  p.ldc = 31;
  for (int step : {0, 4, 10}) EXPECT_THAT(gemm::Launch(step, p, ctx_, stream_), HasSubstr("ldc = 31"));
  gemm::Problem batch{64, 32, 16, x, x, x};
  batch.alpha = 2;
  EXPECT_THAT(gemm::LaunchVendorBatch(batch, 2, 64 * 16, 32 * 16, 64 * 32, ctx_, stream_),
              HasSubstr("no alpha, beta or C"));
  batch.alpha = 1;
  batch.a_layout = gemm::Layout::kMnContiguous;  // A stored 16 x 64: 1,024 elements, as m x k would be
  batch.b_layout = gemm::Layout::kMnContiguous;  // B stored 16 x 32
  EXPECT_THAT(gemm::LaunchVendorBatch(batch, 2, 16 * 64 - 1, 16 * 32, 64 * 32, ctx_, stream_),
              HasSubstr("batch strides must keep the problems apart"));
}

// Split-K sums its ranges in one fixed order: D is the same bits every run,
// on shapes that split into few ranges and into many, and where only the
// last wave's tiles split.
TEST_F(KernelsGpuTest, SplitKIsBitIdenticalFromRunToRun) {
  if (!gemm::Supports(10, ctx_).supported) GTEST_SKIP() << "step 10 does not run here";
  for (const auto& s : std::vector<std::array<int64_t, 3>>{
           {56, 151, 16853}, {872, 644, 14932}, {1, 1306, 7895}, {300, 37, 12000}, {100, 333, 9999},
           {2470, 3725, 3100}}) {  // the last: a split tail
    const int64_t m = s[0], n = s[1], k = s[2];
    __half *a, *b, *d;
    ASSERT_CUDA(cudaMalloc(&a, m * k * 2));
    ASSERT_CUDA(cudaMalloc(&b, n * k * 2));
    ASSERT_CUDA(cudaMalloc(&d, m * n * 2));
    const uint64_t seed = ::testing::UnitTest::GetInstance()->random_seed() * 31ull + k;
    ASSERT_CUDA(gemm::FillRandom(a, m * k, seed, gemm::OperandId::kA, stream_));
    ASSERT_CUDA(gemm::FillRandom(b, n * k, seed, gemm::OperandId::kB, stream_));
    std::vector<uint16_t> first(m * n), again(m * n);
    for (int run = 0; run < 4; ++run) {
      ASSERT_CUDA(gemm::Poison(d, m * n, stream_));
      ASSERT_EQ(gemm::Launch(10, {m, n, k, a, b, d}, ctx_, stream_), "");
      ASSERT_CUDA(cudaStreamSynchronize(stream_));
      ASSERT_CUDA(cudaMemcpy((run == 0 ? first : again).data(), d, m * n * 2, cudaMemcpyDeviceToHost));
      if (run > 0) EXPECT_EQ(again, first) << m << "x" << n << "x" << k << ", run " << run;
    }
    for (__half* p : {a, b, d}) cudaFree(p);
  }
}

// Leading dimensions: operands and D with rows further apart than their
// length, at pitches TMA takes in place (multiples of 8) and at pitches it
// cannot (odd ones: a pitched copy). The gaps hold random numbers in A and B
// and poison in D: the result must match cuBLAS on dense copies, and D's
// gaps must still hold their poison. With d_tail_is_scratch, the TMA steps
// may write a row's tail up to its next 16 bytes (gemm.h), never past it.
struct PitchCase {
  int step;
  int64_t m, n, k, lda, ldb, ldd;
};

std::vector<PitchCase> AllPitchCases() {
  const std::vector<std::array<int64_t, 6>> cases = {
      {100, 120, 50, 56, 53, 121},       // single tile: aligned A, odd B and D
      {77, 100, 50, 56, 56, 104},        // K and N not multiples of 8, every pitch aligned: no copies
      {300, 200, 13, 21, 16, 205},       // odd A and D, aligned B
      {384, 640, 192, 200, 193, 648},    // wider than the row, aligned and odd
      {1000, 1001, 999, 1000, 1000, 1008},
      {200, 130, 64, 64, 64, 144},      // room past N's 16-byte tail: even scratch stops there
      {40, 300, 9000, 9001, 9008, 301}}; // step 10 splits K: odd A, aligned B, odd D
  std::vector<PitchCase> out;
  for (const auto& info : gemm::AllSteps()) {
    for (const auto& c : cases) {
      if (gemm::ShapeError(info, c[0], c[1], c[2]).empty()) out.push_back({info.step, c[0], c[1], c[2], c[3], c[4], c[5]});
    }
  }
  return out;
}

class StepPitchTest : public KernelsGpuTest, public ::testing::WithParamInterface<PitchCase> {};

TEST_P(StepPitchTest, MatchesCublasOnDenseCopiesAndLeavesDsGapsAlone) {
  const PitchCase c = GetParam();
  const gemm::StepSupport support = gemm::Supports(c.step, ctx_);
  if (!support.supported) GTEST_SKIP() << "step " << c.step << " " << support.reason;
  __half *a, *b, *d, *a_dense, *b_dense, *d_dense, *ref;
  ASSERT_CUDA(cudaMalloc(&a, c.m * c.lda * 2));
  ASSERT_CUDA(cudaMalloc(&b, c.n * c.ldb * 2));
  ASSERT_CUDA(cudaMalloc(&d, c.m * c.ldd * 2));
  ASSERT_CUDA(cudaMalloc(&a_dense, c.m * c.k * 2));
  ASSERT_CUDA(cudaMalloc(&b_dense, c.n * c.k * 2));
  ASSERT_CUDA(cudaMalloc(&d_dense, c.m * c.n * 2));
  ASSERT_CUDA(cudaMalloc(&ref, c.m * c.n * 2));
  const uint64_t seed = ::testing::UnitTest::GetInstance()->random_seed() * 7919ull + c.lda * 31 + c.ldd;
  ASSERT_CUDA(gemm::FillRandom(a, c.m * c.lda, seed, gemm::OperandId::kA, stream_));
  ASSERT_CUDA(gemm::FillRandom(b, c.n * c.ldb, seed, gemm::OperandId::kB, stream_));
  ASSERT_CUDA(cudaMemcpy2DAsync(a_dense, c.k * 2, a, c.lda * 2, c.k * 2, c.m, cudaMemcpyDeviceToDevice, stream_));
  ASSERT_CUDA(cudaMemcpy2DAsync(b_dense, c.k * 2, b, c.ldb * 2, c.k * 2, c.n, cudaMemcpyDeviceToDevice, stream_));
  ASSERT_CUDA(gemm::Poison(ref, c.m * c.n, stream_));
  ASSERT_EQ(gemm::Launch(0, {c.m, c.n, c.k, a_dense, b_dense, ref}, ctx_, stream_), "");
  for (int run = 0; run < 3; ++run) {
    const bool tail_is_scratch = run == 2;
    ASSERT_CUDA(gemm::Poison(d, c.m * c.ldd, stream_));
    ASSERT_EQ(gemm::Launch(c.step, {c.m, c.n, c.k, a, b, d, c.lda, c.ldb, c.ldd, tail_is_scratch}, ctx_, stream_), "");
    ASSERT_CUDA(cudaMemcpy2DAsync(d_dense, c.n * 2, d, c.ldd * 2, c.n * 2, c.m, cudaMemcpyDeviceToDevice, stream_));
    const auto r = CompareOnDevice(d_dense, ref, c.m * c.n);
    EXPECT_EQ(r.mismatches, 0u) << "run " << run << ": " << r.non_finite << " unwritten/non-finite, max err "
                                << r.max_abs_error;
    std::vector<uint16_t> d_host(c.m * c.ldd);
    ASSERT_CUDA(cudaMemcpy(d_host.data(), d, d_host.size() * 2, cudaMemcpyDeviceToHost));
    const int64_t may_write_to = tail_is_scratch ? std::min(c.ldd, gemm::SixteenBytePitch(c.n)) : c.n;
    int64_t gap_written = 0;
    for (int64_t row = 0; row < c.m; ++row) {
      for (int64_t col = may_write_to; col < c.ldd; ++col) gap_written += d_host[row * c.ldd + col] != 0xFFFF;
    }
    EXPECT_EQ(gap_written, 0) << "run " << run << ": elements between D's rows were written, from column "
                              << may_write_to;
  }
  for (__half* p : {a, b, d, a_dense, b_dense, d_dense, ref}) cudaFree(p);
}

INSTANTIATE_TEST_SUITE_P(AllSteps, StepPitchTest, ::testing::ValuesIn(AllPitchCases()), [](const auto& info) {
  const auto& c = info.param;
  return "step" + std::to_string(c.step) + "_" + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
         std::to_string(c.k) + "_ld" + std::to_string(c.lda) + "_" + std::to_string(c.ldb) + "_" +
         std::to_string(c.ldd);
});

TEST_F(KernelsGpuTest, ALeadingDimensionShorterThanARowIsRefused) {
  __half* p = nullptr;
  for (int step : {0, 3, 10}) {
    EXPECT_THAT(gemm::Launch(step, {64, 64, 64, p, p, p, 63, 0, 0}, ctx_, stream_), ::testing::HasSubstr("lda = 63"));
    EXPECT_THAT(gemm::Launch(step, {64, 64, 64, p, p, p, 0, 0, 32}, ctx_, stream_), ::testing::HasSubstr("ldd = 32"));
  }
}

TEST_F(KernelsGpuTest, SingleTileStepsRefuseLargerShapesWithAMessage) {
  __half* p = nullptr;
  EXPECT_THAT(gemm::Launch(1, {256, 128, 64, p, p, nullptr}, ctx_, stream_), ::testing::HasSubstr("m <= 128"));
  EXPECT_THAT(gemm::Launch(2, {128, 129, 64, p, p, nullptr}, ctx_, stream_), ::testing::HasSubstr("n <= 128"));
  EXPECT_THAT(gemm::Launch(11, {1, 1, 1, p, p, nullptr}, ctx_, stream_), ::testing::HasSubstr("unknown step"));
}

}  // namespace
}  // namespace gemmd::testing
