// Step 0 on a real GPU for every form of GEMM beyond fp16 A·Bᵀ (cuBLASLt,
// engine/cuda_forms.cpp): every case of tests/form_cases.h on ragged
// shapes, D poisoned and checked against an fp64 product on the host; the
// refusals cuBLASLt's fp8 imposes; a planted fault caught in every type;
// each form the ladder computes checked by the other family (step 0 by the
// ladder, a ladder step by cuBLASLt); and the x @ W request
// through a real server.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/cuda_engine.h"
#include "form_cases.h"
#include "gemm/form_ops.h"
#include "gemm/sketch_check.h"
#include "gemm/steps.h"
#include "gemm/test_hooks.h"
#include "gpu_test_util.h"
#include "planted_batch_fault.h"
#include "server_fixture.h"
#include "x_times_w.h"

namespace gemmd::testing {
namespace {

std::unique_ptr<CudaEngine> MakeEngine(bool planned = false) {
  CudaEngineOptions o;
  o.staging_bytes = 4 << 20;  // small, so uploads take several chunks
  o.plan_vendor_kernels = planned;
  auto e = CudaEngine::Create(o);
  EXPECT_TRUE(e.ok()) << e.status();
  if (e.ok() && planned) EXPECT_TRUE((*e)->Warmup(0).ok());  // builds the plans
  return e.ok() ? std::move(*e) : nullptr;
}

bool GpuTakes(const Case& c) {
  return !gemm::IsFp8(c.types.a) || (c.a_layout == Layout::kKContiguous && c.b_layout == Layout::kKContiguous);
}

// Step 0's full check's reference on a GPU whose ladder tops out at step
// 10: the ladder for the forms it computes, and for fp8 over the operands
// widened to fp16 (gemm::WidenedToF16); the fp64 GEMM for the rest.
std::string StepZerosReference(const GemmForm& f) {
  if (gemm::IsLadderForm(f)) return "ladder-step-10";
  if (gemm::IsFp8(f.a) && gemm::IsLadderForm(gemm::WidenedToF16(f))) return "ladder-step-10-fp16";
  return "gpu-dmma-fp64";
}

TEST(FormsGpu, EveryCaseOnStepZeroMatchesAnFp64Product) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  uint32_t seed = 100;
  int ran = 0;
  for (const Case& c : AllCases()) {
    if (!GpuTakes(c)) continue;
    // fp8 rows are whole 16-byte pieces on the GPU (k % 16 == 0); the rest
    // also run on a shape with every dimension odd.
    RunCase(*engine, c, seed += 3, {130, 72, 96});
    if (!gemm::IsFp8(c.types.a)) RunCase(*engine, c, seed += 3, {67, 33, 45});
    ++ran;
  }
  int fp8_types = 0;
  for (const Types& t : AllTypes()) fp8_types += gemm::IsFp8(t.a);
  // All but fp8 with an MN-contiguous operand: 3 of 4 layouts, 3 C modes, 3 batch modes.
  EXPECT_EQ(ran, static_cast<int>(AllCases().size()) - fp8_types * 3 * 3 * 3);
}

// Step 0 on padded copies (kernels/src/vendor_form_padding.h), which
// large ragged problems take: every case, batches and shared operands
// included, on the ragged shapes, padded here however small. D checked
// against the fp64 product, verified by the engine as well.
TEST(FormsGpu, EveryCaseOnPaddedCopiesMatchesAnFp64Product) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  gemm::testing::SetVendorFormPadding(gemm::testing::VendorFormPadding::kEveryRagged);
  uint32_t seed = 1300;
  int ran = 0;
  for (const Case& c : AllCases()) {
    if (!GpuTakes(c)) continue;
    RunCase(*engine, c, seed += 3, {130, 72, 96});
    if (!gemm::IsFp8(c.types.a)) RunCase(*engine, c, seed += 3, {67, 33, 45});
    ++ran;
  }
  gemm::testing::SetVendorFormPadding(gemm::testing::VendorFormPadding::kAsBuilt);
  EXPECT_GT(ran, 0);
}

// VERIFICATION_FAST on every case the GPU takes: no false alarm in any
// type, layout, C or batch, and D still the product.
TEST(FormsGpu, EveryCasePassesTheFastCheck) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  uint32_t seed = 900;
  for (const Case& c : AllCases()) {
    if (!GpuTakes(c)) continue;
    RunCase(*engine, c, seed += 3, {130, 72, 96}, /*fast=*/true);
    if (!gemm::IsFp8(c.types.a)) RunCase(*engine, c, seed += 3, {67, 33, 45}, /*fast=*/true);
  }
}

// With the start-up plan (gemm/vendor_forms.h) a request runs the pick of
// the grid shape at or above its own, or the heuristic's where cuBLASLt
// will not take that one: the same answers, ragged shapes, C and batches.
TEST(FormsGpu, ThePlansPicksComputeEveryCaseToo) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine(/*planned=*/true);
  uint32_t seed = 500;
  for (const Case& c : AllCases()) {
    if (!GpuTakes(c)) continue;
    RunCase(*engine, c, seed += 3, {130, 72, 96});
    if (!gemm::IsFp8(c.types.a)) RunCase(*engine, c, seed += 3, {67, 33, 45});
  }
}

// The ladder's steps through the engine on the forms they take beyond
// fp16 (gemm::IsLadderForm): bf16 operands with a bf16 or fp16 D, fp16
// operands with a bf16 D, operands stored MN-contiguous, α and β·C (the
// issue's bf16 x @ W + β·C among them). Each verified by the engine, fully
// and fast, and D checked here against an fp64 product; a shape each step
// takes, ragged.
TEST(FormsGpu, LadderStepsComputeTheirFormsThroughTheEngine) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  const ElementType kF16 = ElementType::kF16, kBF16 = ElementType::kBF16;
  const Layout kK = Layout::kKContiguous, kMn = Layout::kMnContiguous;
  struct LadderForm {
    ElementType in, out;
    Layout a, b;
    double alpha = 1, beta = 0;
    int64_t batch = 1;
    bool shared_b = false;
  };
  const LadderForm forms[] = {{kBF16, kBF16, kK, kK},  {kBF16, kF16, kK, kK},  {kF16, kBF16, kK, kK},
                              {kBF16, kBF16, kK, kMn}, {kF16, kF16, kMn, kK}, {kBF16, kF16, kMn, kMn},
                              {kBF16, kBF16, kK, kMn, 1.0, 0.5}, {kF16, kF16, kK, kK, -2.0, 1.0},
                              {kBF16, kBF16, kK, kMn, 1.0, 0.0, 3, true},    // a batch of x @ W, one W
                              {kF16, kF16, kK, kK, 0.5, 1.0, 2}};            // a batch with C
  uint32_t seed = 300;
  int ran = 0;
  for (int step = 1; step <= gemm::kLastStep; ++step) {
    if (!engine->availability(step, 0).available) continue;
    const CaseShape shape = step <= 2 ? CaseShape{100, 77, step == 1 ? 50 : 300} : CaseShape{300, 200, 130};
    for (const LadderForm& form : forms) {
      for (bool fast : {false, true}) {
        GemmForm f;
        f.a = f.b = form.in;
        f.d = form.out;
        f.a_layout = form.a;
        f.b_layout = form.b;
        f.alpha = form.alpha;
        f.beta = form.beta;
        f.has_c = form.beta != 0;
        f.c = f.d;
        f.batch = form.batch;
        f.StackDensely(shape.m, shape.n, shape.k);
        if (form.shared_b) f.stride_b = 0;
        SCOPED_TRACE("step " + std::to_string(step) + " " + gemm::FormSummary(f) + (fast ? " fast" : ""));
        ASSERT_EQ(gemm::FormError(step, f), "");
        CaseJob run(f, shape, seed += 3);
        run.job.step = step;
        run.job.verify_fast = fast;
        auto report = engine->Run(0, run.job);
        ASSERT_TRUE(report.ok()) << report.status();
        EXPECT_TRUE(report->verification.passed) << report->verification.max_abs_error;
        EXPECT_EQ(report->verification.fast, fast);
        // cuBLASLt checks the forms it computes too (one type in and out);
        // the fp64 GEMM the mixed ones.
        const char* full = form.in == form.out ? "cublaslt" : "gpu-dmma-fp64";
        EXPECT_EQ(report->verification.reference, fast ? gemm::kSketchReference : full);
        EXPECT_EQ(run.WrongElements(), 0);
        ++ran;
      }
    }
  }
  EXPECT_EQ(ran, 10 * 10 * 2) << "every step runs on this GPU";
}

// Long K over a few output tiles is where cuBLASLt splits K. Its partial
// sums must be added in fp32, not in a 16-bit D, for D to stay within the
// bound: by the heuristic's pick and by the plan's, in the 16-bit types.
TEST(FormsGpu, LongKOverFewTilesMeetsTheBoundInTheSixteenBitTypes) {
  SKIP_WITHOUT_GPU();
  using enum gemm::ElementType;
  const Case cases[] = {{{kBF16, kBF16, kBF16, false}, Layout::kKContiguous, Layout::kKContiguous, 0, 0},
                        {{kBF16, kBF16, kBF16, false}, Layout::kKContiguous, Layout::kMnContiguous, 0, 0},
                        {{kF16, kF16, kF16, false}, Layout::kKContiguous, Layout::kMnContiguous, 0, 0}};
  for (bool planned : {false, true}) {
    auto engine = MakeEngine(planned);
    uint32_t seed = planned ? 1700 : 1300;
    for (const Case& c : cases) {
      for (CaseShape s : {CaseShape{100, 300, 4000}, CaseShape{64, 128, 16384}}) RunCase(*engine, c, seed += 3, s);
    }
  }
}

// The full check's bound reads the largest ‖row‖₂ of op(A), ‖column‖₂ of
// op(B) and |c| on the GPU (gemm::FormBoundInputs): the same, to fp32's
// rounding, as they are computed here in fp64, for every type, both
// layouts of each operand, ragged sizes and batches with B shared.
TEST(FormsGpu, TheBoundsNormsAreTheOperandsLargest) {
  SKIP_WITHOUT_GPU();
  uint32_t seed = 2100;
  for (const Case& c : AllCases()) {
    const CaseShape s{37, 70, 133};
    const GemmForm f = FormOf(c, s);
    CaseJob run(f, s, seed += 3);
    SCOPED_TRACE(Name(c));
    void *a = nullptr, *b = nullptr, *cm = nullptr;
    float* bound = nullptr;
    ASSERT_EQ(cudaMalloc(&a, run.a.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&b, run.b.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&cm, std::max<size_t>(run.c.size(), 1)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&bound, 3 * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(a, run.a.data(), run.a.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(b, run.b.data(), run.b.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(cm, run.c.data(), run.c.size(), cudaMemcpyHostToDevice), cudaSuccess);
    const gemm::FormProblem p{s.m, s.n, s.k, f, a, b, cm, nullptr};
    ASSERT_EQ(gemm::FormBoundInputs(p, bound, nullptr), cudaSuccess);
    float got[3];
    ASSERT_EQ(cudaMemcpy(got, bound, sizeof got, cudaMemcpyDeviceToHost), cudaSuccess);
    // The largest ‖row‖₂ over K of `rows` rows whose element (r, kk) is at index(r, kk).
    const auto largest_norm = [&](gemm::ElementType type, const std::string& bytes, int64_t rows, auto index) {
      double largest = 0;
      for (int64_t r = 0; r < rows; ++r) {
        double sum = 0;
        for (int64_t kk = 0; kk < s.k; ++kk) {
          const double x = gemm::LoadElement(type, bytes.data(), index(r, kk));
          sum += x * x;
        }
        largest = std::max(largest, std::sqrt(sum));
      }
      return largest;
    };
    double want[3] = {0, 0, 0};
    for (int64_t e = 0; e < f.batch; ++e) {
      want[0] = std::max(want[0], largest_norm(f.a, run.a, s.m, [&](int64_t i, int64_t kk) {
                           return e * f.stride_a + gemm::IndexInA(f, s.m, s.k, i, kk);
                         }));
      want[1] = std::max(want[1], largest_norm(f.b, run.b, s.n, [&](int64_t j, int64_t kk) {
                           return e * f.stride_b + gemm::IndexInB(f, s.n, s.k, kk, j);
                         }));
    }
    const uint64_t c_count = f.ReadsC() ? gemm::StorageOfC(f, s.m, s.n).Footprint(f.batch) : 0;
    for (uint64_t i = 0; i < c_count; ++i) {
      want[2] = std::max<double>(want[2], std::fabs(gemm::LoadElement(f.c, run.c.data(), i)));
    }
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], want[i], 1e-6 * want[i]) << "bound input " << i;
    EXPECT_GT(want[0] * want[1], 0.0) << "random operands have rows";
    for (void* x : {a, b, cm, static_cast<void*>(bound)}) cudaFree(x);
  }
}

// The fp64 reference GEMM (gemm::ReferenceFormGemm, on the fp64 tensor
// cores) is the product in fp64 for every type, layout, C and batch mode,
// on ragged shapes over several blocks and a partial last step of K: within
// a few fp64 roundings of the host's fp64 sum of the same stored values.
TEST(FormsGpu, TheFp64ReferenceIsTheProductInEveryForm) {
  SKIP_WITHOUT_GPU();
  uint32_t seed = 4100;
  for (const Case& c : AllCases()) {
    for (const CaseShape s : {CaseShape{67, 33, 45}, CaseShape{130, 72, 37}}) {
      const GemmForm f = FormOf(c, s);
      CaseJob run(f, s, seed += 3);
      SCOPED_TRACE(Name(c) + " k " + std::to_string(s.k));
      void *a = nullptr, *b = nullptr, *cm = nullptr;
      double* ref = nullptr;
      const uint64_t d_count = static_cast<uint64_t>(f.batch) * s.m * s.n;
      ASSERT_EQ(cudaMalloc(&a, run.a.size()), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&b, run.b.size()), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&cm, std::max<size_t>(run.c.size(), 1)), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&ref, d_count * sizeof(double)), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(a, run.a.data(), run.a.size(), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(b, run.b.data(), run.b.size(), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(cm, run.c.data(), run.c.size(), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemset(ref, 0xff, d_count * sizeof(double)), cudaSuccess);  // NaN: unwritten fails
      const gemm::FormProblem p{s.m, s.n, s.k, f, a, b, cm, nullptr};
      ASSERT_EQ(gemm::ReferenceFormGemm(p, ref, nullptr), cudaSuccess);
      std::vector<double> got(d_count);
      ASSERT_EQ(cudaMemcpy(got.data(), ref, d_count * sizeof(double), cudaMemcpyDeviceToHost), cudaSuccess);
      int wrong = 0;
      for (int64_t e = 0; e < f.batch; ++e) {
        for (int64_t i = 0; i < s.m; ++i) {
          for (int64_t j = 0; j < s.n; ++j) {
            const CaseJob::Exact x = run.ExactAt(e, i, j);
            double want = f.ProductScale() * x.sum;
            double magnitude = std::fabs(f.ProductScale()) * x.magnitude;
            if (f.ReadsC()) {
              want += f.beta * x.c;
              magnitude += std::fabs(f.beta * x.c);
            }
            const double have = got[(e * s.m + i) * s.n + j];
            if (!(std::fabs(have - want) <= 1e-13 * magnitude + 1e-300) && ++wrong < 4) {
              ADD_FAILURE() << "entry " << e << " (" << i << "," << j << "): " << have << " vs " << want;
            }
          }
        }
      }
      EXPECT_EQ(wrong, 0);
      for (void* x : {a, b, cm, static_cast<void*>(ref)}) cudaFree(x);
    }
  }
}

TEST(FormsGpu, Fp8OutsideCublasLtsFormIsRefusedWithWhatItNeeds) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  for (const Case& c : AllCases()) {
    if (GpuTakes(c) || c.c_mode != 0 || c.batch_mode != 0) continue;
    GemmJob job;
    job.m = 32, job.n = 32, job.k = 32;
    job.form = FormOf(c, {32, 32, 32});
    auto r = engine->Run(0, job);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << Name(c);
    EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("K contiguous")) << Name(c);
  }
  GemmJob ragged;
  ragged.m = ragged.n = 32;
  ragged.k = 40;
  ragged.form.a = ragged.form.b = gemm::ElementType::kF8E4M3;
  ragged.form.d = gemm::ElementType::kBF16;
  auto r = engine->Run(0, ragged);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("multiple of 16"));
}

// Step 0 summing only half of K: verification catches it in every type.
TEST(FormsGpu, APlantedVendorFaultIsCaughtInEveryType) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  gemm::testing::PlantVendorFault(true);
  for (const Types& t : AllTypes()) {
    const Case c{t, Layout::kKContiguous, Layout::kMnContiguous, 0, 0};
    if (!GpuTakes(c)) continue;
    GemmJob job;
    job.m = 64, job.n = 48, job.k = 128;
    job.form = FormOf(c, {64, 48, 128});
    job.a.seed = job.b.seed = 7;
    auto r = engine->Run(0, job);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(r->verification.passed) << Name(c);
    EXPECT_GT(r->verification.mismatches, 0u) << Name(c);
    EXPECT_EQ(r->verification.reference, StepZerosReference(job.form)) << Name(c);
    job.verify_fast = true;
    r = engine->Run(0, job);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(r->verification.passed) << Name(c) << " (fast)";
    EXPECT_EQ(r->verification.reference, gemm::kSketchReference);
  }
  gemm::testing::PlantVendorFault(false);
  GemmJob job;
  job.m = 64, job.n = 48, job.k = 128;
  job.form = FormOf({AllTypes()[2], Layout::kKContiguous, Layout::kMnContiguous, 0, 0}, {64, 48, 128});
  auto r = engine->Run(0, job);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->verification.passed) << "unplanted, the same request passes";
}

// An fp8 form is checked by step 10 over its operands widened to fp16,
// scales in α, C and batches included, except where C is fp32 (the ladder
// reads C in D's type only); at long K too, where cuBLASLt's fp8 sums keep
// fewer bits than fp32's. Honest, every element passes (and D is the
// product, by the host's check where K is short enough for it to be
// quick); with cuBLASLt planted to sum half of K, the check fails.
TEST(FormsGpu, AnFp8FormIsCheckedByStepTenOverItsOperandsWidened) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  if (!engine->availability(10, 0).available) GTEST_SKIP() << "step 10 is withdrawn on this GPU";
  uint32_t seed = 3100;
  for (const Types& t : AllTypes()) {
    if (!gemm::IsFp8(t.a)) continue;
    for (int c_mode : {0, 1, 2}) {
      for (int batch_mode : {0, 2}) {
        const Case c{t, Layout::kKContiguous, Layout::kKContiguous, c_mode, batch_mode};
        for (CaseShape s : {CaseShape{130, 72, 96}, CaseShape{136, 72, 8192}}) {
          const bool long_k = s.k > 1024;
          if (long_k && (batch_mode != 0 || c_mode == 2)) continue;
          SCOPED_TRACE(Name(c) + " k " + std::to_string(s.k));
          for (bool planted : {false, true}) {
            gemm::testing::PlantVendorFault(planted);
            CaseJob run(FormOf(c, s), s, seed += 3);
            auto r = engine->Run(0, run.job);
            gemm::testing::PlantVendorFault(false);
            ASSERT_TRUE(r.ok()) << r.status();
            EXPECT_EQ(r->verification.reference, c_mode == 2 ? "gpu-dmma-fp64" : "ladder-step-10-fp16");
            EXPECT_EQ(r->verification.passed, !planted) << r->verification.max_abs_error;
            if (!planted && !long_k) EXPECT_EQ(run.WrongElements(), 0);
          }
        }
      }
    }
  }
}

// A ladder step's form is checked by cuBLASLt: with cuBLASLt planted to sum
// half of K, step 10's D, right, fails its check; unplanted, it passes.
TEST(FormsGpu, ALadderStepsFormIsCheckedByCublasLt) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  if (!engine->availability(10, 0).available) GTEST_SKIP() << "step 10 is withdrawn on this GPU";
  const CaseShape shape{300, 200, 130};
  GemmForm f;
  f.a = f.b = f.d = ElementType::kBF16;
  f.b_layout = Layout::kMnContiguous;  // x @ W
  f.StackDensely(shape.m, shape.n, shape.k);
  for (bool planted : {true, false}) {
    SCOPED_TRACE(planted ? "cuBLASLt planted" : "unplanted");
    gemm::testing::PlantVendorFault(planted);
    CaseJob run(f, shape, 77);
    run.job.step = 10;
    auto report = engine->Run(0, run.job);
    gemm::testing::PlantVendorFault(false);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->verification.reference, "cublaslt");
    EXPECT_EQ(report->verification.passed, !planted);
    EXPECT_EQ(run.WrongElements(), 0) << "step 10's D is right either way";
  }
}

// A stored operand (one with a cache key) stays on the device after the
// request that brought it: the next request by it reads that copy, and a
// deleted matrix's copy goes.
TEST(FormsGpu, AStoredOperandStaysOnTheDeviceForTheNextRequest) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  const Case c{AllTypes()[2], Layout::kKContiguous, Layout::kMnContiguous, 0, 2};  // bf16, B k x n shared by a batch
  const CaseShape shape{96, 80, 64};
  const gemm::GemmForm f = FormOf(c, shape);
  const std::string b = RandomBytes(f.b, gemm::StorageOfB(f, shape.n, shape.k).Footprint(f.batch), 4);
  GemmJob job;
  job.m = shape.m, job.n = shape.n, job.k = shape.k;
  job.form = f;
  job.a.seed = 5;
  job.b = {OperandView::Kind::kHost, HostBytes(b.data(), b.size()), 0, "m-0123456789abcdef0123456789abcdef"};
  std::string first(f.batch * shape.m * shape.n * 2, '\0'), second = first, third = first;
  const auto run = [&](std::string& d) {
    job.d = d.data();
    auto r = engine->Run(0, job);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->verification.passed);
  };
  const DeviceMemory before = engine->memory(0);
  run(first);
  EXPECT_EQ(engine->memory(0).cache_misses, before.cache_misses + 1);
  EXPECT_EQ(engine->HeldBytes(0, {"m-0123456789abcdef0123456789abcdef"}), b.size())
      << "the dispatcher sees the copy, to send the next request where it is";
  run(second);
  EXPECT_EQ(engine->memory(0).cache_hits, before.cache_hits + 1) << "the second request read the device's copy";
  EXPECT_EQ(first, second);
  engine->ForgetMatrix("m-0123456789abcdef0123456789abcdef");
  run(third);
  EXPECT_EQ(engine->memory(0).cache_misses, before.cache_misses + 2) << "a deleted matrix's copy went";
  EXPECT_EQ(first, third);
}

// Small requests of one form that queued together (the server's batching)
// run as one batched matmul: each job's D is its own product (sent and
// server-generated operands mixed), checked here in fp64, each is verified
// on its own, a planted fault fails every one, and jobs of different forms
// run one by one.
TEST(FormsGpu, RequestsOfOneFormShareOneLaunchAndEachIsItsOwn) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  for (const Types& t : AllTypes()) {
    // fp8's batch entries 16-byte aligned, as cuBLASLt needs them, and K
    // a multiple of 32, so that the planted fault's half of K is one it
    // takes too; the rest ragged.
    const CaseShape shape = gemm::IsFp8(t.a) ? CaseShape{64, 48, 96} : CaseShape{61, 47, 80};
    const Case c{t, Layout::kKContiguous, gemm::IsFp8(t.a) ? Layout::kKContiguous : Layout::kMnContiguous, 1, 0};
    SCOPED_TRACE(Name(c));
    CaseBatch cases(FormOf(c, shape), shape, 4, 40);
    auto& [jobs, batch] = cases;
    jobs[2]->job.verify = false;
    // Job 1's A generated by the server from a seed: its bytes here are
    // the documented values, for the check.
    CaseJob& seeded = *jobs[1];
    seeded.job.a = {OperandView::Kind::kRandom, {}, 77};
    const uint64_t stream = gemm::RandomStream(77, gemm::OperandId::kA);
    for (uint64_t i = 0; i < seeded.a.size() / gemm::ElementBytes(t.a); ++i) {
      gemm::StoreElement(t.a, seeded.a.data(), i, gemm::RandomValueAs(t.a, stream, i));
    }
    auto reports = engine->RunBatch(0, batch);
    ASSERT_EQ(reports.size(), jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
      ASSERT_TRUE(reports[i].ok()) << i << ": " << reports[i].status();
      EXPECT_EQ(reports[i]->batch_size, 4u);
      EXPECT_EQ(reports[i]->verification.performed, i != 2) << i;
      if (i != 2) EXPECT_TRUE(reports[i]->verification.passed) << i;
      if (i != 2) EXPECT_EQ(reports[i]->verification.elements, static_cast<uint64_t>(shape.m * shape.n)) << i;
      EXPECT_EQ(jobs[i]->WrongElements(), 0) << i;
    }

    ExpectAPlantedFaultFailsEveryVerifiedJob(*engine, batch);

    jobs[3]->job.form.alpha = 2;  // another form: each runs alone
    for (const auto& r : engine->RunBatch(0, batch)) {
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->batch_size, 1u);
    }
  }
}

// fp8 requests whose Ds are not 16-byte multiples: cuBLASLt takes no batch
// of them, so the batch runs job by job and each gets what it would alone.
TEST(FormsGpu, ABatchCublasLtWillNotTakeRunsItsJobsAlone) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  const CaseShape shape{61, 47, 80};
  for (const Types& t : AllTypes()) {
    if (!gemm::IsFp8(t.a)) continue;
    const Case fp8{t, Layout::kKContiguous, Layout::kKContiguous, 1, 0};
    SCOPED_TRACE(Name(fp8));
    CaseBatch cases(FormOf(fp8, shape), shape, 3, 90);
    auto& [jobs, batch] = cases;
    const auto alone = engine->Run(0, *batch[0]);
    const auto reports = engine->RunBatch(0, batch);
    ASSERT_EQ(reports.size(), jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
      EXPECT_EQ(reports[i].status().code(), alone.status().code()) << i << ": " << reports[i].status();
      if (!reports[i].ok()) continue;
      EXPECT_EQ(reports[i]->batch_size, 1u);
      EXPECT_TRUE(reports[i]->verification.passed) << i;
      EXPECT_EQ(jobs[i]->WrongElements(), 0) << i;
    }
  }
}

class FormsServerGpu : public ServerFixture {};

// y = x @ W + 0.5·r in bf16, W uploaded once (K×N) and shared by a batch.
TEST_F(FormsServerGpu, Bf16XTimesWPlusBetaCBatchedThroughTheServer) {
  SKIP_WITHOUT_GPU();
  StartServer(LoopbackConfig(), MakeEngine());
  const XTimesW problem(8, 200, 136, 264);
  gemm::v1::MultiplyResponse resp;
  ASSERT_TRUE(client().Multiply(problem.Request(client()), &resp).ok());
  EXPECT_TRUE(resp.verification().passed());
  EXPECT_EQ(resp.verification().reference(), "ladder-step-10");  // step 0 of a form the ladder computes
  EXPECT_EQ(resp.engine(), "cuda");
  EXPECT_EQ(problem.Mismatches(resp.d(), 7), 0);
}

}  // namespace
}  // namespace gemmd::testing
