// Every ladder step this build has on a real GPU, against cuBLAS on fresh
// random inputs with D poisoned, on tile shapes, squares and ragged shapes
// (ladder.md, "Correct means"), in every type, layout and batch a step
// claims, and the refusals of what a step does not take.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "gemm/device_ops.h"
#include "gemm/form_ops.h"
#include "gemm/gemm.h"
#include "gemm/half.h"
#include "gemm/steps.h"
#include "gemm/tolerance.h"
#include "gpu_test_util.h"
#include "kernels_gpu_fixture.h"
#include "test_util.h"

namespace gemmd::testing {
namespace {

using ::testing::HasSubstr;

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
