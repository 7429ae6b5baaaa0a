// VERIFICATION_FAST on a GPU (gemm/sketch_check.h, sketch_check.cu): the
// planted-fault table (each fault 1,000 times at a new place, with new
// vectors and samples), the GPU's verdicts against the host's on the same
// D, no false alarm over gemm-bench's 150-shape sweep on step 0 and the
// ladder's top step, and a planted step-0 fault caught through the engine.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "engine/cuda_engine.h"
#include "engine_test_util.h"
#include "gemm/sketch_check_gpu.h"
#include "gemm/steps.h"
#include "gemm/test_hooks.h"
#include "gpu_test_util.h"
#include "shape_sweep.h"
#include "sketch_faults.h"

namespace gemmd::testing {
namespace {

// Device copies of a PlainGemm's A and B, and room for D, the check's
// scratch and result.
struct DeviceGemm {
  const PlainGemm& g;
  void *a = nullptr, *b = nullptr, *d = nullptr, *scratch = nullptr;
  gemm::SketchResult* result = nullptr;

  explicit DeviceGemm(const PlainGemm& gemm) : g(gemm) {
    EXPECT_EQ(cudaMalloc(&a, g.a.size() * 2), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&b, g.b.size() * 2), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&d, g.d.size() * 2), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&scratch, gemm::SketchScratchBytes(g.Problem(g.d, 0))), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&result, sizeof(gemm::SketchResult)), cudaSuccess);
    cudaMemcpy(a, g.a.data(), g.a.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(b, g.b.data(), g.b.size() * 2, cudaMemcpyHostToDevice);
  }
  ~DeviceGemm() {
    for (void* p : {a, b, d, scratch, static_cast<void*>(result)}) cudaFree(p);
  }
  // The GPU's check of `dd` with the vectors and samples of `seed`.
  gemm::SketchResult Check(const std::vector<uint16_t>& dd, uint64_t seed) const {
    cudaMemcpy(d, dd.data(), dd.size() * 2, cudaMemcpyHostToDevice);
    gemm::SketchProblem p = g.Problem(dd, seed);
    p.a.data = a, p.b.data = b, p.d.data = d;
    gemm::SketchResult r{};
    EXPECT_EQ(gemm::SketchCheck(p, scratch, result, nullptr), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(&r, result, sizeof r, cudaMemcpyDeviceToHost), cudaSuccess);
    return r;
  }
};

TEST(SketchCheckGpu, PlantedFaultsCaughtInAThousandTrialsEach) {
  SKIP_WITHOUT_GPU();
  const PlainGemm g(1024, 1024, 1024, 3);
  const DeviceGemm dev(g);
  const gemm::SketchResult clean = dev.Check(g.d, 1);
  ASSERT_TRUE(clean.passed());
  double tolerance = 0;  // the typical element's
  for (double t : g.tolerance) tolerance += t / g.tolerance.size();
  std::printf("planted faults, 1024x1024x1024 fp16, 1,000 trials each; sure to catch one element off by %.3g "
              "(%.0fx the mean element tolerance %.3g)\n",
              clean.sure_error(), clean.sure_error() / tolerance, tolerance);
  std::mt19937_64 rng(5);
  uint64_t seed = 100;
  for (Fault fault : {Fault::kNone, Fault::kElement1x, Fault::kElement10x, Fault::kElement100x, Fault::kRow,
                      Fault::kTile, Fault::kZeroTile, Fault::kSwapTiles, Fault::kNaN, Fault::kInf}) {
    int caught = 0, promised = 0, promised_caught = 0;
    for (int trial = 0; trial < 1000; ++trial) {
      const std::vector<uint16_t> d = g.Planted(fault, rng);
      const gemm::SketchResult r = dev.Check(d, ++seed);
      caught += !r.passed();
      if (g.PlantedError(d) > r.sure_error()) {
        ++promised;
        promised_caught += !r.passed();
      }
    }
    std::printf("  %-40s caught %4d of 1000 (%d of them above the sure error)\n", FaultName(fault), caught,
                promised);
    SCOPED_TRACE(FaultName(fault));
    EXPECT_EQ(promised_caught, promised);
    if (fault == Fault::kNone) EXPECT_EQ(caught, 0) << "false alarms";
    if (fault >= Fault::kRow) EXPECT_EQ(caught, 1000);
  }
}

// The GPU and the host run the same passes: on the same D and seed they
// reach the same verdict, with sums that agree but for the order of fp64
// additions.
TEST(SketchCheckGpu, TheGpuAndTheHostAgree) {
  SKIP_WITHOUT_GPU();
  const PlainGemm g(200, 136, 264, 9);
  const DeviceGemm dev(g);
  std::mt19937_64 rng(7);
  uint64_t seed = 1;
  for (Fault fault : {Fault::kNone, Fault::kElement100x, Fault::kRow, Fault::kNaN}) {
    const std::vector<uint16_t> d = g.Planted(fault, rng);
    const gemm::SketchResult gpu = dev.Check(d, ++seed), host = gemm::SketchCheckOnHost(g.Problem(d, seed));
    SCOPED_TRACE(FaultName(fault));
    EXPECT_EQ(gpu.passed(), host.passed());
    EXPECT_EQ(gpu.failed_lines, host.failed_lines);
    EXPECT_EQ(gpu.failed_samples, host.failed_samples);
    EXPECT_EQ(gpu.non_finite, host.non_finite);
    EXPECT_EQ(gpu.samples, host.samples);
    EXPECT_NEAR(gpu.sure_error(), host.sure_error(), 1e-5 * host.sure_error());
    EXPECT_NEAR(gpu.worst_line_ratio, host.worst_line_ratio, 1e-4 * host.worst_line_ratio + 1e-6);
  }
}

std::unique_ptr<CudaEngine> MakeEngine() {
  auto e = CudaEngine::Create(CudaEngineOptions{});
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : nullptr;
}

// gemm-bench's sweep (150 random shapes, four classes) through the engine
// with VERIFICATION_FAST, on step 0 and on the ladder's top step: no
// false alarm.
TEST(SketchCheckGpu, NoFalseAlarmOverTheSweepsShapes) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  const int top = engine->availability(10, 0).available ? 10 : engine->availability(8, 0).available ? 8 : 0;
  std::vector<int> steps = {0};
  if (top != 0) steps.push_back(top);
  int runs = 0;
  double worst = 0;
  for (const auto& s : gemm::bench::SweepShapes(150, 2026)) {
    for (int step : steps) {
      if (step != 0 && !gemm::ShapeError(*gemm::FindStep(step), s.m, s.n, s.k).empty()) continue;
      GemmJob job = SeededJob(s.m, s.n, s.k, 1000 + runs);
      job.step = step;
      job.verify_fast = true;
      auto r = engine->Run(0, job);
      ASSERT_TRUE(r.ok()) << s.m << "x" << s.n << "x" << s.k << " step " << step << ": " << r.status();
      EXPECT_TRUE(r->verification.passed) << s.m << "x" << s.n << "x" << s.k << " (" << s.shape_class << ") step "
                                          << step << ": ratio " << r->verification.worst_line_ratio << ", "
                                          << r->verification.mismatches << " failed";
      EXPECT_TRUE(r->verification.fast);
      EXPECT_EQ(r->verification.reference, gemm::kSketchReference);
      worst = std::max(worst, r->verification.worst_line_ratio);
      ++runs;
    }
  }
  std::printf("sweep: %d runs with VERIFICATION_FAST, no false alarm; the worst row or column at %.3f of its bound\n",
              runs, worst);
}

// Step 0 summing half of K, through the engine: the fast check fails it.
TEST(SketchCheckGpu, APlantedStepZeroFaultFailsTheFastCheck) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  GemmJob job = SeededJob(512, 384, 1024, 3);
  job.verify_fast = true;
  gemm::testing::PlantVendorFault(true);
  auto faulty = engine->Run(0, job);
  gemm::testing::PlantVendorFault(false);
  ASSERT_TRUE(faulty.ok()) << faulty.status();
  EXPECT_FALSE(faulty->verification.passed);
  EXPECT_GT(faulty->verification.mismatches, 0u);
  auto honest = engine->Run(0, job);
  ASSERT_TRUE(honest.ok()) << honest.status();
  EXPECT_TRUE(honest->verification.passed);
}

}  // namespace
}  // namespace gemmd::testing
