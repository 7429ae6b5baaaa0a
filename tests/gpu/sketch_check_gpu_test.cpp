// VERIFICATION_FAST on a GPU (gemm/sketch_check.h, sketch_check.cu): the
// planted-fault table (each fault 1,000 times at a new place, with new
// vectors and samples), the GPU's verdicts against the host's on the same
// D, no false alarm over gemm-bench's 150-shape sweep on step 0 and the
// ladder's top step, and a planted step-0 fault caught through the engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/cuda_engine.h"
#include "engine_test_util.h"
#include "gemm/sketch_check_gpu.h"
#include "gemm/steps.h"
#include "gemm/test_hooks.h"
#include "gpu_test_util.h"
#include "shape_sweep.h"
#include "sketch_d_tiles.h"
#include "sketch_operand_tiles.h"
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

// `dense` (m×n) with its rows `ld` apart, the padding NaN: as the server
// stores D and C, and a pass that read past a row would be caught.
std::vector<uint16_t> Pitched(const std::vector<uint16_t>& dense, int64_t m, int64_t n, int64_t ld) {
  std::vector<uint16_t> out(m * ld, 0x7e00);
  for (int64_t i = 0; i < m; ++i) std::copy(dense.begin() + i * n, dense.begin() + (i + 1) * n, out.begin() + i * ld);
  return out;
}

// The GPU's check of `p` (its matrices on the host: g's A and B, `d` and
// `c`) against the host's: the same verdict, with sums that agree but for
// the order of fp64 additions.
// `p`'s A and B are read from `a` and `b` (their storage as p's views
// say), and C from `c` (fp16 or fp32, as p.c.type says; empty where p
// reads no C).
template <class CElement = uint16_t>
void ExpectTheGpuAndTheHostAgree(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b,
                                 gemm::SketchProblem p, const std::vector<uint16_t>& d,
                                 const std::vector<CElement>& c) {
  p.a.data = a.data(), p.b.data = b.data(), p.d.data = d.data();
  p.c.data = c.empty() ? nullptr : c.data();
  const gemm::SketchResult host = gemm::SketchCheckOnHost(p);
  std::vector<void*> buffers;
  auto device = [&](const auto& x) {
    void* ptr = nullptr;
    const size_t bytes = x.size() * sizeof x[0];
    EXPECT_EQ(cudaMalloc(&ptr, bytes), cudaSuccess);
    cudaMemcpy(ptr, x.data(), bytes, cudaMemcpyHostToDevice);
    buffers.push_back(ptr);
    return ptr;
  };
  p.a.data = device(a), p.b.data = device(b), p.d.data = device(d);
  if (!c.empty()) p.c.data = device(c);
  void* scratch = nullptr;
  gemm::SketchResult* result = nullptr;
  EXPECT_EQ(cudaMalloc(&scratch, gemm::SketchScratchBytes(p)), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&result, sizeof(gemm::SketchResult)), cudaSuccess);
  gemm::SketchResult gpu{};
  EXPECT_EQ(gemm::SketchCheck(p, scratch, result, nullptr), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(&gpu, result, sizeof gpu, cudaMemcpyDeviceToHost), cudaSuccess);
  for (void* ptr : buffers) cudaFree(ptr);
  cudaFree(scratch);
  cudaFree(result);
  EXPECT_EQ(gpu.passed(), host.passed());
  EXPECT_EQ(gpu.failed_lines, host.failed_lines);
  EXPECT_EQ(gpu.failed_samples, host.failed_samples);
  EXPECT_EQ(gpu.non_finite, host.non_finite);
  EXPECT_EQ(gpu.samples, host.samples);
  EXPECT_NEAR(gpu.sure_error(), host.sure_error(), 1e-5 * host.sure_error());
  EXPECT_NEAR(gpu.worst_line_ratio, host.worst_line_ratio, 1e-4 * host.worst_line_ratio + 1e-6);
}

// C in [-1, 1] beside g's D (fp16 bits or fp32 as CElement says), and
// the D an epilogue with beta = 0.5 writes: the exact product plus 0.5·C,
// rounded once.
template <class CElement>
struct HalfC {
  std::vector<CElement> c;
  std::vector<uint16_t> d_with_c;

  HalfC(const PlainGemm& g, std::mt19937_64& rng) : c(g.m * g.n), d_with_c(g.m * g.n) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& x : c) x = Stored(u(rng));
    for (int64_t e = 0; e < g.m * g.n; ++e) {
      d_with_c[e] = gemm::FloatToHalf(static_cast<float>(g.exact[e] + 0.5 * Value(c[e])));
    }
  }
  // A planted fault moved onto the D with C: where it left D alone, that
  // D; where it changed D, the changed value plus 0.5·C.
  std::vector<uint16_t> Onto(const PlainGemm& g, std::vector<uint16_t> planted) const {
    for (size_t e = 0; e < planted.size(); ++e) {
      planted[e] = planted[e] == g.d[e] ? d_with_c[e]
                                        : gemm::FloatToHalf(gemm::HalfToFloat(planted[e]) + 0.5f * Value(c[e]));
    }
    return planted;
  }
  static CElement Stored(float x) {
    if constexpr (std::is_same_v<CElement, uint16_t>) {
      return gemm::FloatToHalf(x);
    } else {
      return x;
    }
  }
  static float Value(CElement x) {
    if constexpr (std::is_same_v<CElement, uint16_t>) {
      return gemm::HalfToFloat(x);
    } else {
      return x;
    }
  }
};

// With and without C, on a D in whole 128-column tiles, on a ragged one
// stored as the server stores it (rows 8-aligned, NaN in the padding: a
// pass that read past a row's last column would see it), on a ragged dense
// one, and on one whose rows are whole 4-element words in a pitch (without
// C, D's rows and columns are summed by tiles there: sketch_d_tiles.cu).
TEST(SketchCheckGpu, TheGpuAndTheHostAgree) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(7);
  uint64_t seed = 1;
  struct Layout {
    int64_t m, n, k, ld;
    const char* what;
  };
  for (const Layout& l : {Layout{200, 256, 264, 256, "whole tiles"}, Layout{300, 133, 200, 136, "ragged, pitched"},
                          Layout{300, 133, 200, 133, "ragged, dense"},
                          Layout{300, 132, 200, 136, "a part strip, pitched"}}) {
    const PlainGemm g(l.m, l.n, l.k, 9);
    const HalfC<uint16_t> c(g, rng);
    for (Fault fault : {Fault::kNone, Fault::kElement100x, Fault::kRow, Fault::kNaN}) {
      for (bool with_c : {false, true}) {
        SCOPED_TRACE(std::string(l.what) + ", " + FaultName(fault) + (with_c ? ", beta = 0.5" : ""));
        std::vector<uint16_t> d = g.Planted(fault, rng);
        if (with_c) d = c.Onto(g, std::move(d));
        gemm::SketchProblem p = g.Problem(d, ++seed);
        p.d.row_stride = l.ld;
        if (with_c) {
          p.reads_c = true;
          p.beta = 0.5;
          p.c = {nullptr, gemm::ElementType::kF16, l.ld, 1, 0};
        }
        ExpectTheGpuAndTheHostAgree(g.a, g.b, p, Pitched(d, l.m, l.n, l.ld),
                                    with_c ? Pitched(c.c, l.m, l.n, l.ld) : std::vector<uint16_t>{});
      }
    }
  }
}

// The same with A stored K×M, B stored K×N or both (the samples in
// clusters along them), and with C in fp32 beside D's fp16 (a pass of its
// own), on a ragged dense D.
TEST(SketchCheckGpu, TheGpuAndTheHostAgreeOnMnContiguousOperandsAndAnFp32C) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(8);
  uint64_t seed = 100;
  const PlainGemm g(300, 133, 200, 10);
  const MnStorage mn(g);
  const HalfC<float> c(g, rng);
  for (auto [a_mn, b_mn] : {std::pair{true, false}, {false, true}, {true, true}, {false, false}}) {
    for (Fault fault : {Fault::kNone, Fault::kElement100x, Fault::kRow}) {
      for (bool with_c : {false, true}) {
        if (!with_c && !a_mn && !b_mn) continue;  // TheGpuAndTheHostAgree's
        SCOPED_TRACE(std::string("A ") + (a_mn ? "MN" : "K") + ", B " + (b_mn ? "MN" : "K") + ", " +
                     FaultName(fault) + (with_c ? ", beta = 0.5 with an fp32 C" : ""));
        std::vector<uint16_t> d = g.Planted(fault, rng);
        if (with_c) d = c.Onto(g, std::move(d));
        gemm::SketchProblem p = mn.Problem(g, d, a_mn, b_mn, ++seed);
        if (with_c) {
          p.reads_c = true;
          p.beta = 0.5;
          p.c = {nullptr, gemm::ElementType::kF32, g.n, 1, 0};
        }
        ExpectTheGpuAndTheHostAgree(a_mn ? mn.a : g.a, b_mn ? mn.b : g.b, p, d,
                                    with_c ? c.c : std::vector<float>{});
      }
    }
  }
}

// Lines long enough for the passes' wide loads, and shapes that refuse
// them: D's rows (with C beside them or not) and the MN-stored operands'
// lines past 512 elements, eight a lane with a tail element by element;
// the K-stored operands' k-vector passes two outputs a thread where K is
// even (forced: shapes this small take one as built), one where it is odd
// or as built; matrices of odd width, whose rows start
// 16-byte aligned only every eighth row (a warp loads wide only where all
// its lines are aligned, else element by element).
TEST(SketchCheckGpu, TheGpuAndTheHostAgreeOnLongLinesLoadedWide) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(9);
  uint64_t seed = 200;
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{520, 2600, 600}, {72, 2597, 601}}) {
    const PlainGemm g(m, n, k, 11);
    const MnStorage mn(g);
    const HalfC<uint16_t> c(g, rng);
    for (auto [operands_mn, pairs] : {std::pair{false, gemm::testing::SketchPairs::kWhereAligned},
                                      {false, gemm::testing::SketchPairs::kAsBuilt},
                                      {true, gemm::testing::SketchPairs::kAsBuilt}}) {
      gemm::testing::SetSketchPairs(pairs);
      for (Fault fault : {Fault::kNone, Fault::kElement100x, Fault::kRow, Fault::kNaN}) {
        for (bool with_c : {false, true}) {
          SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                       (operands_mn ? ", A and B MN-stored, " : ", A and B K-stored, ") +
                       (pairs == gemm::testing::SketchPairs::kWhereAligned ? "pairs forced, " : "") +
                       FaultName(fault) + (with_c ? ", beta = 0.5" : ""));
          std::vector<uint16_t> d = g.Planted(fault, rng);
          if (with_c) d = c.Onto(g, std::move(d));
          gemm::SketchProblem p = mn.Problem(g, d, operands_mn, operands_mn, ++seed);
          if (with_c) {
            p.reads_c = true;
            p.beta = 0.5;
            p.c = {nullptr, gemm::ElementType::kF16, n, 1, 0};
          }
          ExpectTheGpuAndTheHostAgree(operands_mn ? mn.a : g.a, operands_mn ? mn.b : g.b, p, d,
                                      with_c ? c.c : std::vector<uint16_t>{});
        }
      }
    }
  }
  gemm::testing::SetSketchPairs(gemm::testing::SketchPairs::kAsBuilt);
}

// Which checks sum D by tiles (sketch_d_tiles.cu) and which keep the two
// line passes: a 16-bit D whose rows are contiguous whole 4-element words
// from an 8-byte boundary, and C, where read, of D's type laid out the
// same way; nothing else. No GPU needed.
TEST(SketchCheckGpu, DTilesTakeASixteenBitDInWholeWordsAndACOfItsType) {
  alignas(16) static uint16_t storage[8];
  gemm::SketchProblem plain;
  plain.m = 64, plain.n = 128, plain.k = 32;
  plain.d = {storage, gemm::ElementType::kF16, 128, 1, 0};
  auto takes = [](const gemm::SketchProblem& p) {
    gemm::sketch::DLines rows{};
    rows.problem = p;
    rows.per_row = true;
    return gemm::DTilesApply(rows);
  };
  auto with = [&](auto change) {
    gemm::SketchProblem p = plain;
    change(p);
    return p;
  };
  EXPECT_TRUE(takes(plain));
  EXPECT_TRUE(takes(with([](auto& p) { p.d.type = gemm::ElementType::kBF16; })));
  EXPECT_TRUE(takes(with([](auto& p) { p.d.row_stride = 132; })));  // pitched
  EXPECT_TRUE(takes(with([](auto& p) { p.batch = 3, p.d.batch_stride = 64 * 132, p.d.row_stride = 132; })));
  EXPECT_FALSE(takes(with([](auto& p) { p.d.type = gemm::ElementType::kF32; })));
  EXPECT_TRUE(takes(with([](auto& p) {
    p.reads_c = true, p.beta = 0.5;
    p.c = p.d;
  })));
  EXPECT_FALSE(takes(with([](auto& p) {
    p.reads_c = true, p.beta = 0.5;
    p.c = {storage, gemm::ElementType::kF32, 128, 1, 0};
  })));
  EXPECT_FALSE(takes(with([](auto& p) {
    p.reads_c = true, p.beta = 0.5;
    p.c = p.d;
    p.c.row_stride = 130;
  })));
  EXPECT_FALSE(takes(with([](auto& p) { p.n = 130, p.d.row_stride = 130; })));   // a part word a row
  EXPECT_FALSE(takes(with([](auto& p) { p.n = 124, p.d.row_stride = 126; })));   // rows off 8-byte bounds
  EXPECT_FALSE(takes(with([](auto& p) { p.d.row_stride = 1, p.d.col_stride = 64; })));  // column-major D
  EXPECT_FALSE(takes(with([](auto& p) { p.d.data = storage + 1; })));
  EXPECT_FALSE(takes(with([](auto& p) { p.batch = 2, p.d.batch_stride = 64 * 128 + 2; })));
}

// Whether an operand's passes take tiles, by_signs summing `length`
// elements along op's rows (per_row) or columns into `outputs` sums.
bool OperandTilesTake(gemm::StridedView m, bool per_row, int64_t length, int64_t outputs, int64_t batch) {
  gemm::sketch::OperandLines by_signs{};
  by_signs.matrix = m;
  by_signs.per_row = per_row;
  by_signs.length = length;
  by_signs.outputs = outputs;
  return gemm::OperandTilesApply(by_signs, batch);
}

// Which checks take B's two passes by tiles (sketch_operand_tiles.cu): a
// 16-bit B stored with K or with N contiguous, its stored rows whole
// 4-element words from an 8-byte boundary; nothing else. No GPU needed.
TEST(SketchCheckGpu, OperandTilesTakeASixteenBitBInWholeWordsEitherWay) {
  alignas(16) static uint16_t storage[8];
  const int64_t n = 128, k = 64;
  auto takes = [&](gemm::StridedView b, int64_t batch = 1) { return OperandTilesTake(b, true, n, k, batch); };
  using gemm::ElementType;
  const gemm::StridedView k_contiguous{storage, ElementType::kF16, 1, k, 0};  // B stored N×K: A·Bᵀ
  const gemm::StridedView n_contiguous{storage, ElementType::kBF16, n, 1, 0};  // B stored K×N: x @ W
  EXPECT_TRUE(takes(k_contiguous));
  EXPECT_TRUE(takes(n_contiguous));
  EXPECT_TRUE(takes({storage, ElementType::kF16, 1, k + 4, 0}));             // pitched
  EXPECT_TRUE(takes({storage, ElementType::kF16, 1, k, 0}, 3));             // one B for every entry
  EXPECT_TRUE(takes({storage, ElementType::kF16, 1, k, n * k}, 3));
  EXPECT_FALSE(takes({storage, ElementType::kF32, 1, k, 0}));
  EXPECT_FALSE(takes({storage, ElementType::kF8E4M3, 1, k, 0}));
  EXPECT_FALSE(takes({storage, ElementType::kF16, 1, k + 2, 0}));           // rows off 8-byte bounds
  EXPECT_FALSE(takes({storage + 1, ElementType::kF16, 1, k, 0}));
  EXPECT_FALSE(takes({storage, ElementType::kF16, 2, 2 * k, 0}));           // neither way contiguous
  EXPECT_FALSE(takes({storage, ElementType::kF16, 1, k, n * k + 2}, 3));
}

// A's passes take the same tiles, A's sign axis being M: yᵀ·op(A) sums
// over op(A)'s rows (per_row false). No GPU needed.
TEST(SketchCheckGpu, OperandTilesTakeASixteenBitAInWholeWordsEitherWay) {
  alignas(16) static uint16_t storage[8];
  const int64_t m = 96, k = 64;
  auto takes = [&](gemm::StridedView a, int64_t batch = 1) { return OperandTilesTake(a, false, m, k, batch); };
  using gemm::ElementType;
  EXPECT_TRUE(takes({storage, ElementType::kF16, k, 1, 0}));              // A stored M×K
  EXPECT_TRUE(takes({storage, ElementType::kBF16, 1, m, 0}));             // A stored K×M
  EXPECT_TRUE(takes({storage, ElementType::kF16, k + 8, 1, 0}));          // pitched
  EXPECT_TRUE(takes({storage, ElementType::kF16, k, 1, m * k}, 3));       // a batch
  EXPECT_FALSE(takes({storage, ElementType::kF16, k + 2, 1, 0}));         // rows off 8-byte bounds
  EXPECT_FALSE(takes({storage, ElementType::kBF16, 1, m + 2, 0}));
  EXPECT_FALSE(takes({storage, ElementType::kF32, k, 1, 0}));
  EXPECT_FALSE(takes({storage, ElementType::kF16, 2 * k, 2, 0}));         // neither way contiguous
  // M×K with K not a whole number of words: the line passes take it.
  EXPECT_FALSE(OperandTilesTake({storage, ElementType::kF16, 62, 1, 0}, false, m, 62, 1));
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
