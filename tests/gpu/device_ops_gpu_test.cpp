// The kernel library's device helpers on a real GPU: the random
// generator, the comparisons and their bounds, the fp64 reference, pitched
// operands, the vendor plan and the pool a context keeps.
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
#include "kernels_gpu_fixture.h"
#include "test_util.h"

namespace gemmd::testing {
namespace {

using ::testing::HasSubstr;

// A pitched fp16 matrix as FillRandom leaves it: the host generator's
// values in its rows × cols, and `gap` (what was there before the fill)
// everywhere else in each row's pitch.
::testing::AssertionResult HoldsThePitchedFill(const std::vector<uint16_t>& host, int64_t rows, int64_t cols,
                                               int64_t ld, uint64_t seed, gemm::OperandId operand, uint16_t gap) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < ld; ++c) {
      const uint16_t got = host[r * ld + c];
      if (c >= cols) {
        if (got != gap) return ::testing::AssertionFailure() << "a gap was written at row " << r << ", column " << c;
      } else if (const float want = gemm::RandomValue(seed, operand, r * cols + c); gemm::HalfToFloat(got) != want) {
        return ::testing::AssertionFailure() << "seed " << seed << ", row " << r << ", column " << c << ": "
                                             << gemm::HalfToFloat(got) << ", not " << want;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

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
  EXPECT_TRUE(HoldsThePitchedFill(host, rows, cols, ld, seed, gemm::OperandId::kA, 0x7B7B));
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
  ASSERT_TRUE(HoldsThePitchedFill(host, rows, cols, ld, 99, gemm::OperandId::kA, 0xFFFF));
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

}  // namespace
}  // namespace gemmd::testing
