// The CUDA engine and the server on a real GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <thread>
#include <vector>

#include "engine/cuda_device.h"
#include "engine/cuda_engine.h"
#include "engine_test_util.h"
#include "gemm/random_fill.h"
#include "gemm/steps.h"
#include "gemm/test_hooks.h"
#include "gpu_test_util.h"
#include "planted_batch_fault.h"
#include "server_fixture.h"
#include "test_util.h"

namespace gemmd::testing {
namespace {

std::unique_ptr<CudaEngine> MakeEngine(uint32_t lanes = 1) {
  CudaEngineOptions o;
  o.lanes_per_device = lanes;
  o.staging_bytes = 4 << 20;  // small, so uploads take several chunks
  auto e = CudaEngine::Create(o);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : nullptr;
}

// What checks step 0: the ladder's top step where the GPU offers it (never
// cuBLAS's own path), else the SIMT kernel.
std::string StepZeroReference(const CudaEngine& engine) {
  if (engine.availability(10, 0).available) return "ladder-step-10";
  if (engine.availability(8, 0).available) return "ladder-step-8";
  return "gpu-simt-fp32";
}

TEST(CudaEngineGpu, DescribesEveryVisibleGpuAndOffersCublas) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  int count = 0;
  cudaGetDeviceCount(&count);
  ASSERT_EQ(engine->devices().size(), static_cast<size_t>(count));
  EXPECT_EQ(engine->devices()[0].id, "cuda:0");
  EXPECT_EQ(engine->devices()[0].kind, "cuda");
  EXPECT_THAT(engine->devices()[0].arch, ::testing::StartsWith("sm_"));
  EXPECT_TRUE(engine->availability(0, 0).available);
  EXPECT_TRUE(engine->healthy(0));
}

TEST(CudaEngineGpu, HostInputsThroughStagingMatchAnFp64Reference) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  const int64_t m = 1100, n = 300, k = 2000;  // A is 4.2 MB: two staging chunks
  const std::string a = RandomHalfBytes(m, k, 11), b = RandomHalfBytes(n, k, 12);
  std::string d(m * n * 2, '\0');
  auto r = engine->Run(0, HostJob(m, n, k, a, b, d));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->verification.passed);
  EXPECT_EQ(r->verification.reference, StepZeroReference(*engine));  // step 0 is cuBLAS: checked by another path
  EXPECT_GT(r->seconds.kernel, 0);
  EXPECT_EQ(CountMismatches(d, ReferenceGemm(ToDouble(a), ToDouble(b), m, n, k)), 0);
}

// With the server's own staging (8 MiB chunks) a chunk of 4 MiB or more is
// split over the copy threads. An A of 2226 rows of K = 1001 is one chunk
// of 4,456,452 bytes, and so is D with N = 1001: split 8 ways (a 16-core
// host) each once lost its last 4 bytes, two elements, and the check still
// passed, since it reads the same A. D's last row against an fp64
// reference on the host shows both.
TEST(CudaEngineGpu, StagingChunksSplitUnevenlyOverTheCopyThreadsArriveWhole) {
  SKIP_WITHOUT_GPU();
  auto engine = CudaEngine::Create(CudaEngineOptions{});
  ASSERT_TRUE(engine.ok()) << engine.status();
  const int64_t m = 2226, n = 1001, k = 1001;
  const std::string a = RandomHalfBytes(m, k, 31), b = RandomHalfBytes(n, k, 32);
  std::string d(m * n * 2, '\0');
  auto r = (*engine)->Run(0, HostJob(m, n, k, a, b, d));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->verification.passed);
  for (int64_t row : {int64_t{0}, m - 1}) {
    const std::string a_row = a.substr(row * k * 2, k * 2), d_row = d.substr(row * n * 2, n * 2);
    EXPECT_EQ(CountMismatches(d_row, ReferenceGemm(ToDouble(a_row), ToDouble(b), 1, n, k)), 0) << "row " << row;
  }
}

// K and N not multiples of 8: the engine spreads A, B and D to 16-byte
// pitches on the device and gathers D back, over several staging chunks, for
// every step the GPU offers.
TEST(CudaEngineGpu, UnalignedShapesThroughPitchedStorageMatchAnFp64Reference) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  const int64_t m = 1100, n = 301, k = 1999;  // A is 4.4 MB: two staging chunks of whole rows
  const std::string a = RandomHalfBytes(m, k, 21), b = RandomHalfBytes(n, k, 22);
  const auto expected = ReferenceGemm(ToDouble(a), ToDouble(b), m, n, k);
  for (int step = 0; step <= 10; ++step) {
    if (!engine->availability(step, 0).available) continue;
    if (const auto* info = gemm::FindStep(step); !gemm::ShapeError(*info, m, n, k).empty()) continue;
    std::string d(m * n * 2, '\0');
    GemmJob job = HostJob(m, n, k, a, b, d);
    job.step = step;
    auto r = engine->Run(0, job);
    ASSERT_TRUE(r.ok()) << "step " << step << ": " << r.status();
    EXPECT_TRUE(r->verification.passed) << "step " << step;
    EXPECT_EQ(r->verification.elements, static_cast<uint64_t>(m * n));
    EXPECT_EQ(CountMismatches(d, expected), 0) << "step " << step;
  }
  // Server-generated, K unaligned too: still the documented values.
  const int64_t gm = 129, gn = 77, gk = 999;
  std::string d(gm * gn * 2, '\0');
  GemmJob job = SeededJob(gm, gn, gk, 4243);
  job.d = reinterpret_cast<uint16_t*>(d.data());
  auto r = engine->Run(0, job);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->verification.passed);
  EXPECT_EQ(CountMismatches(d, ReferenceGemm(SeededOperand(4243, gemm::OperandId::kA, gm * gk),
                                             SeededOperand(4243, gemm::OperandId::kB, gn * gk), gm, gn, gk)),
            0);
}

// A batch of one small shape runs as one strided batched launch: each job's
// D is its own product (server-generated and host inputs mixed, K and N
// unaligned), each is verified on its own by what checks a lone step-0
// request, and a planted cuBLAS fault fails every one. Mixed shapes run job by job.
TEST(CudaEngineGpu, ABatchOfOneShapeIsOneLaunchAndEachJobIsItsOwn) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  const int64_t m = 61, n = 47, k = 79;
  std::vector<std::string> ds(5, std::string(m * n * 2, '\0'));
  const std::string a_host = RandomHalfBytes(m, k, 31), b_host = RandomHalfBytes(n, k, 32);
  std::vector<GemmJob> jobs;
  for (int i = 0; i < 4; ++i) {
    jobs.push_back(SeededJob(m, n, k, 500 + i));
    jobs.back().d = reinterpret_cast<uint16_t*>(ds[i].data());
  }
  jobs.push_back(HostJob(m, n, k, a_host, b_host, ds[4]));
  jobs[2].verify = false;
  std::vector<const GemmJob*> batch;
  for (const auto& j : jobs) batch.push_back(&j);

  auto reports = engine->RunBatch(0, batch);
  ASSERT_EQ(reports.size(), jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_TRUE(reports[i].ok()) << i << ": " << reports[i].status();
    EXPECT_EQ(reports[i]->batch_size, 5u);
    EXPECT_GT(reports[i]->seconds.kernel, 0);
    EXPECT_EQ(reports[i]->verification.performed, i != 2) << i;
    if (i != 2) EXPECT_TRUE(reports[i]->verification.passed) << i;
    if (i != 2) EXPECT_EQ(reports[i]->verification.reference, StepZeroReference(*engine)) << "as a lone request";
    const auto expected = i < 4 ? ReferenceGemm(SeededOperand(500 + i, gemm::OperandId::kA, m * k),
                                                SeededOperand(500 + i, gemm::OperandId::kB, n * k), m, n, k)
                                : ReferenceGemm(ToDouble(a_host), ToDouble(b_host), m, n, k);
    EXPECT_EQ(CountMismatches(ds[i], expected), 0) << i;
  }

  ExpectAPlantedFaultFailsEveryVerifiedJob(*engine, batch);

  GemmJob other = SeededJob(m, n, k + 1, 9);
  batch.back() = &other;
  for (const auto& r : engine->RunBatch(0, batch)) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->batch_size, 1u) << "mixed shapes run job by job";
  }
}

TEST(CudaEngineGpu, ServerGeneratedInputsAreTheDocumentedOnes) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  const int64_t m = 129, n = 77, k = 1000;
  std::string d(m * n * 2, '\0');
  GemmJob job = SeededJob(m, n, k, 4242);
  job.d = reinterpret_cast<uint16_t*>(d.data());
  job.repeats = 5;
  auto r = engine->Run(0, job);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->seconds.repeats, 5u);
  const auto a = SeededOperand(4242, gemm::OperandId::kA, m * k);
  const auto b = SeededOperand(4242, gemm::OperandId::kB, n * k);
  EXPECT_EQ(CountMismatches(d, ReferenceGemm(a, b, m, n, k)), 0);
}

// One operand sent and the other generated from a seed, either way round:
// the generated one is filled after the sent one is staged, on one stream.
TEST(CudaEngineGpu, OneOperandSentAndOneGeneratedMatchAnFp64Reference) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  const int64_t m = 300, n = 77, k = 1001;  // ragged N and K: pitched storage
  const std::string a = RandomHalfBytes(m, k, 21), b = RandomHalfBytes(n, k, 22);
  for (const bool a_sent : {true, false}) {
    std::string d(m * n * 2, '\0');
    GemmJob job = HostJob(m, n, k, a, b, d);
    OperandView& generated = a_sent ? job.b : job.a;
    generated.kind = OperandView::Kind::kRandom;
    generated.seed = 77;
    auto r = engine->Run(0, job);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->verification.passed) << "A sent: " << a_sent;
    const auto a_used = a_sent ? ToDouble(a) : SeededOperand(77, gemm::OperandId::kA, m * k);
    const auto b_used = a_sent ? SeededOperand(77, gemm::OperandId::kB, n * k) : ToDouble(b);
    EXPECT_EQ(CountMismatches(d, ReferenceGemm(a_used, b_used, m, n, k)), 0) << "A sent: " << a_sent;
  }
}

// A small request's whole path runs on the compute stream (kOneStreamBytes)
// and a big one's uploads on the copy stream, through one staging ring that
// goes on from where the last copy left it. Interleaved on one lane, long
// enough for the ring to wrap several times, each D is its own product: a
// small D queued behind the check, a D bigger than a slot (512 KiB here)
// through the chunked download, a big request's over several chunks.
TEST(CudaEngineGpu, SmallAndBigRequestsInterleavedThroughOneStagingRingMatchAnFp64Reference) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  struct Case {
    int64_t m, n, k;
    bool sent;  // A and B from the host, else generated
  };
  const Case cases[] = {{64, 64, 64, true},      // 24 KiB in all: one stream
                        {61, 47, 79, true},      // ragged
                        {1100, 300, 1000, true}, // 2.8 MB up: the copy stream, chunked
                        {300, 1001, 64, false},  // D is 600 KB, more than a slot
                        {200, 300, 500, true}};  // 0.9 MB in all: still one stream
  for (int round = 0; round < 4; ++round) {
    for (const Case& c : cases) {
      const uint64_t seed = 100 * round + c.m;
      const std::string a = RandomHalfBytes(c.m, c.k, seed), b = RandomHalfBytes(c.n, c.k, seed + 1);
      std::string d(c.m * c.n * 2, '\0');
      GemmJob job = HostJob(c.m, c.n, c.k, a, b, d);
      if (!c.sent) {
        job = SeededJob(c.m, c.n, c.k, seed);
        job.d = reinterpret_cast<uint16_t*>(d.data());
      }
      const std::string what = std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
                               ", round " + std::to_string(round);
      auto r = engine->Run(0, job);
      ASSERT_TRUE(r.ok()) << what << ": " << r.status();
      EXPECT_TRUE(r->verification.passed) << what;
      EXPECT_GT(r->seconds.upload, 0) << what;
      EXPECT_GT(r->seconds.download, 0) << what;
      const auto expected =
          c.sent ? ReferenceGemm(ToDouble(a), ToDouble(b), c.m, c.n, c.k)
                 : ReferenceGemm(SeededOperand(seed, gemm::OperandId::kA, c.m * c.k),
                                 SeededOperand(seed, gemm::OperandId::kB, c.n * c.k), c.m, c.n, c.k);
      EXPECT_EQ(CountMismatches(d, expected), 0) << what;
    }
  }
}

TEST(CudaEngineGpu, TooLargeForTheDeviceIsResourceExhaustedAndTheDeviceStaysHealthy) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  auto r = engine->Run(0, SeededJob(200000, 200000, 200000, 1));  // 80 GB per operand
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("bytes are free"));
  EXPECT_TRUE(engine->healthy(0));
  EXPECT_TRUE(engine->Run(0, SeededJob(256, 256, 256, 2)).ok());
}

// The keep-warm launches its kernel only once a device has been idle for a
// period, keeps launching while it stays idle, and stops with the engine.
// Each test runs in a process of its own (ctest), so the device's pool
// starts empty here.
TEST(CudaEngineGpu, TheReservedPoolHoldsARequestsBuffersWithoutGrowing) {
  SKIP_WITHOUT_GPU();
  CudaEngineOptions o;
  // More than the kernel library's split-K floor (256 MiB), which its
  // contexts once set as the pool's release threshold and so trimmed this.
  o.reserved_pool_bytes = 512ull << 20;
  auto created = CudaEngine::Create(o);
  ASSERT_TRUE(created.ok()) << created.status();
  auto& engine = *created;
  const DeviceMemory reserved = engine->memory(0);
  EXPECT_GE(reserved.pool_bytes, 512ull << 20);
  EXPECT_LT(reserved.used_bytes, 512ull << 20) << "mapped, then handed back to the pool";
  const GemmJob job = SeededJob(2048, 2048, 2048, 7);  // verified: A, B, D and the reference, 32 MiB
  const auto report = engine->Run(0, job);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->verification.passed);
  EXPECT_EQ(engine->memory(0).pool_bytes, reserved.pool_bytes) << "the request's buffers came from the reserve";
}

TEST(CudaEngineGpu, KeepWarmRunsOnlyWhileTheDeviceIsIdle) {
  SKIP_WITHOUT_GPU();
  CudaEngineOptions o;
  o.keep_warm_ms = 20;
  auto created = CudaEngine::Create(o);
  ASSERT_TRUE(created.ok()) << created.status();
  auto& engine = *created;
  // Busy: a request every few milliseconds, never 20 idle.
  const uint64_t before = engine->keep_warm_launches(0);
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(engine->Run(0, SeededJob(64, 64, 64, i)).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_LE(engine->keep_warm_launches(0) - before, 1u);  // at most the one a tick just after the first Run saw
  // Idle: about one launch per period.
  const uint64_t idle_start = engine->keep_warm_launches(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_GE(engine->keep_warm_launches(0) - idle_start, 5u);
  EXPECT_LE(engine->keep_warm_launches(0) - idle_start, 16u);
  EXPECT_EQ(MakeEngine()->keep_warm_launches(0), 0u) << "off by default";
}

TEST(CudaEngineGpu, LanesRunConcurrentlyAndCorrectly) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine(3);
  std::atomic<int> passed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        auto r = engine->Run(0, SeededJob(512 + t, 384 + i, 1024, t * 100 + i));
        if (r.ok() && r->verification.passed) ++passed;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(passed.load(), 30);
  // Those fit each lane's scratch; a big request draws on the pool.
  auto big = engine->Run(0, SeededJob(2048, 2048, 1024, 5));
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_TRUE(big->verification.passed);
  EXPECT_GT(engine->memory(0).pool_bytes, 0u);
}

// Step 0 is cuBLAS: checked against cuBLAS it could never fail. A fault
// planted in its launch must fail verification, and the report names the
// reference that caught it.
TEST(CudaEngineGpu, StepZeroIsVerifiedAgainstAnIndependentReference) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  GemmJob job = SeededJob(300, 200, 64, 7);
  auto ok = engine->Run(0, job);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_TRUE(ok->verification.passed);
  EXPECT_EQ(ok->verification.reference, StepZeroReference(*engine));

  gemm::testing::PlantVendorFault(true);
  auto faulty = engine->Run(0, job);
  gemm::testing::PlantVendorFault(false);
  ASSERT_TRUE(faulty.ok()) << faulty.status();
  EXPECT_FALSE(faulty->verification.passed);
  EXPECT_GT(faulty->verification.mismatches, faulty->verification.elements / 2);

  if (engine->availability(10, 0).available) {  // the ladder is still checked against cuBLAS
    GemmJob ladder_job = SeededJob(300, 200, 64, 7);
    ladder_job.step = 10;
    auto ladder = engine->Run(0, ladder_job);
    ASSERT_TRUE(ladder.ok()) << ladder.status();
    EXPECT_TRUE(ladder->verification.passed);
    EXPECT_EQ(ladder->verification.reference, "cublas");
  }
}

// At K = 65536 with few output elements, steps 3-9 (one fp32 chain per
// element) used to fail their own check against cuBLAS (split K) for one
// element in 10,000 at one seed in two, though as accurate as the tensor
// cores' accumulation allows (docs/verification.md). The bound's K-aware
// term covers that drift, and a planted fault is still caught.
TEST(CudaEngineGpu, LongKResultsPassTheirCheckOnEveryStepAndAFaultStillFails) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  for (int step = 0; step <= 10; ++step) {
    if (!engine->availability(step, 0).available) continue;
    if (!gemm::ShapeError(*gemm::FindStep(step), 100, 100, 65536).empty()) continue;  // step 1: k <= 64
    for (uint64_t seed : {1, 2, 3}) {
      GemmJob job = SeededJob(100, 100, 65536, seed);
      job.step = step;
      auto r = engine->Run(0, job);
      ASSERT_TRUE(r.ok()) << "step " << step << ": " << r.status();
      EXPECT_TRUE(r->verification.passed) << "step " << step << " seed " << seed << ": "
                                          << r->verification.mismatches << " mismatches, max error "
                                          << r->verification.max_abs_error;
      EXPECT_GT(r->verification.accumulation_atol, 0.5) << "step " << step;  // about 0.67
      EXPECT_LT(r->verification.accumulation_atol, 1.0) << "step " << step;
    }
  }
  GemmJob job = SeededJob(100, 100, 65536, 1);
  gemm::testing::PlantVendorFault(true);
  auto faulty = engine->Run(0, job);
  gemm::testing::PlantVendorFault(false);
  ASSERT_TRUE(faulty.ok()) << faulty.status();
  EXPECT_FALSE(faulty->verification.passed);
}

TEST(CudaEngineGpu, WarmupSelfTestsEveryOfferedStep) {
  SKIP_WITHOUT_GPU();
  auto engine = MakeEngine();
  ASSERT_TRUE(engine->Warmup(0).ok());
  for (int s = 0; s <= 10; ++s) {
    const auto a = engine->availability(s, 0);
    EXPECT_THAT(a.reason, ::testing::Not(::testing::HasSubstr("self-test"))) << "step " << s;
  }
}

// With the cuBLAS plan (gemm/vendor_plan.h), step 0 on shapes no request
// used is still checked by the independent reference, on every lane, and a
// planted fault in it is still caught.
TEST(CudaEngineGpu, PlannedStepZeroIsVerifiedAndAPlantedFaultIsCaught) {
  SKIP_WITHOUT_GPU();
  CudaEngineOptions o;
  o.lanes_per_device = 2;
  o.plan_vendor_kernels = true;
  auto created = CudaEngine::Create(o);
  ASSERT_TRUE(created.ok()) << created.status();
  auto engine = std::move(*created);
  ASSERT_TRUE(engine->Warmup(0).ok());
  for (const auto& [m, n, k] : std::vector<std::array<int64_t, 3>>{{3000, 2000, 1000}, {333, 77, 999}, {9000, 3, 5}}) {
    auto r = engine->Run(0, SeededJob(m, n, k, 5));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->verification.passed) << m << "x" << n << "x" << k;
    EXPECT_EQ(r->verification.reference, StepZeroReference(*engine));
  }
  gemm::testing::PlantVendorFault(true);
  auto faulty = engine->Run(0, SeededJob(300, 200, 64, 7));
  gemm::testing::PlantVendorFault(false);
  ASSERT_TRUE(faulty.ok()) << faulty.status();
  EXPECT_FALSE(faulty->verification.passed);
}

// Step 0's plan on a ragged K or N reads A and B as if K and N were
// rounded up to 8 (VendorProblem). On B's buffer poisoned with NaNs,
// ZeroVendorPadding must leave zeros wherever the plan reads past the
// matrix, and the buffers (VendorB, a cached copy) must hold what it reads.
TEST(CudaEngineGpu, VendorPaddingIsZeroWhereverThePlanReadsPastTheMatrix) {
  SKIP_WITHOUT_GPU();
  constexpr uint64_t kSlot = 64 << 20;
  for (const auto& [m, n, k] :
       std::vector<std::array<int64_t, 3>>{{333, 77, 999}, {1001, 999, 1003}, {64, 3, 5}, {9, 130, 64}, {7, 64, 65}}) {
    const DeviceMatrix a = Pitched(m, k, kSlot), b = Pitched(n, k, kSlot), d = Pitched(m, n, kSlot);
    ASSERT_TRUE(PaddedForVendor(a, b, d)) << m << "x" << n << "x" << k;
    const gemm::Problem p = VendorProblem(a, b, nullptr, d.ld);
    const DeviceMatrix vendor_b = VendorB(b);
    EXPECT_GE(vendor_b.rows, p.n);
    EXPECT_LE(p.k, a.ld);
    EXPECT_LE(p.n, d.ld) << "D's columns up to N' are the engine's padding";
    EXPECT_GE(CachedMatrixBytes(b), vendor_b.elements() * 2) << "a cached copy serves as B";
    for (const DeviceMatrix* operand : {&a, &vendor_b}) {
      const int64_t rows = operand == &a ? a.rows : p.n;
      std::vector<uint16_t> host(operand->elements(), 0x7e00);  // fp16 NaN
      __half* dev = nullptr;
      ASSERT_EQ(cudaMalloc(&dev, host.size() * 2), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(dev, host.data(), host.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
      DeviceMatrix placed = operand == &a ? a : b;
      placed.data = dev;
      const bool is_a = operand == &a;
      ASSERT_EQ(ZeroVendorPadding(is_a ? placed : a, is_a ? b : placed, nullptr, is_a, !is_a), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(host.data(), dev, host.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
      cudaFree(dev);
      int64_t nonzero = 0;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < p.k; ++c) {
          const bool inside = r < placed.rows && c < placed.cols;
          if (!inside && host[r * operand->ld + c] != 0) ++nonzero;
        }
      }
      EXPECT_EQ(nonzero, 0) << (is_a ? "A " : "B ") << m << "x" << n << "x" << k;
    }
  }
}

// A warmed engine with small staging (so that a 1001×1003 operand takes
// several slots) and the cuBLAS plan (so that step 0 reads the padded
// operands): what the device cache's tests run on.
std::unique_ptr<CudaEngine> WarmEngineWithVendorPlan() {
  CudaEngineOptions o;
  o.staging_bytes = 4 << 20;
  o.plan_vendor_kernels = true;
  auto created = CudaEngine::Create(o);
  EXPECT_TRUE(created.ok()) << created.status();
  if (!created.ok()) return nullptr;
  auto engine = std::move(*created);
  const absl::Status warm = engine->Warmup(0);
  EXPECT_TRUE(warm.ok()) << warm;
  return warm.ok() ? std::move(engine) : nullptr;
}

// Stored operands stay on the device (engine/device_matrix_cache.h): the
// first request fills a copy, the next reads it without an upload, and
// both match an fp64 reference; with the vendor plan's padded operands, on
// a ragged shape, as A of one request and B of another; a ladder step reads
// the same copies; a deleted matrix's copies go.
TEST(CudaEngineGpu, StoredOperandsKeptOnTheDeviceGiveTheSameDAndGoWhenDeleted) {
  SKIP_WITHOUT_GPU();
  auto engine = WarmEngineWithVendorPlan();
  ASSERT_NE(engine, nullptr);
  const int64_t m = 1001, n = 999, k = 1003;  // ragged: the plan pads, D's pitch differs from n
  const std::string x = RandomHalfBytes(m, k, 61), y = RandomHalfBytes(n, k, 62);
  const auto want = ReferenceGemm(ToDouble(x), ToDouble(y), m, n, k);
  const auto want_swapped = ReferenceGemm(ToDouble(y), ToDouble(x), n, m, k);
  const DeviceMemory before = engine->memory(0);
  for (int round = 0; round < 2; ++round) {
    for (int step : {0, 10}) {
      if (!engine->availability(step, 0).available) continue;
      std::string d(m * n * 2, '\0');
      GemmJob job = HostJob(m, n, k, x, y, d);
      job.step = step;
      job.a.cache_key = "m-x";
      job.b.cache_key = "m-y";
      auto r = engine->Run(0, job);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_TRUE(r->verification.passed) << "round " << round << " step " << step;
      EXPECT_EQ(CountMismatches(d, want), 0) << "round " << round << " step " << step;
    }
    std::string d(n * m * 2, '\0');  // the same copies the other way round
    GemmJob swapped = HostJob(n, m, k, y, x, d);
    swapped.a.cache_key = "m-y";
    swapped.b.cache_key = "m-x";
    auto r = engine->Run(0, swapped);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(CountMismatches(d, want_swapped), 0) << "round " << round;
  }
  const DeviceMemory kept = engine->memory(0);
  EXPECT_EQ(kept.cache_misses - before.cache_misses, 2u) << "each matrix copied up once";
  EXPECT_GE(kept.cache_hits - before.cache_hits, 6u);
  EXPECT_GT(kept.cache_bytes, static_cast<uint64_t>((m + n) * k * 2) - 1);
  engine->ForgetMatrix("m-x");
  engine->ForgetMatrix("m-y");
  EXPECT_EQ(engine->memory(0).cache_bytes, 0u);
  std::string d(m * n * 2, '\0');
  GemmJob job = HostJob(m, n, k, x, y, d);
  job.a.cache_key = "m-x";
  auto r = engine->Run(0, job);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(engine->memory(0).cache_misses - kept.cache_misses, 1u) << "a deleted matrix is copied again";
  EXPECT_EQ(CountMismatches(d, want), 0);
}

// A D stored to a handle stays on the device under it: the next request
// that reads it by that handle finds its copy (no upload), gets the same
// product as from the host's bytes, and the copy goes with ForgetMatrix.
TEST(CudaEngineGpu, ADStoredToAHandleIsReadFromTheDeviceByTheNextRequest) {
  SKIP_WITHOUT_GPU();
  auto engine = WarmEngineWithVendorPlan();
  ASSERT_NE(engine, nullptr);
  const int64_t m = 1001, n = 999, k = 1003;  // ragged: D's pitch has gaps the plan reads as padding
  const std::string x = RandomHalfBytes(m, k, 71), y = RandomHalfBytes(n, k, 72), w = RandomHalfBytes(517, n, 73);
  std::string d(m * n * 2, '\0');
  GemmJob first = HostJob(m, n, k, x, y, d);
  first.step = 10;
  first.d_cache_key = "m-d";
  if (!engine->availability(10, 0).available) first.step = 0;
  auto r = engine->Run(0, first);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->verification.passed);
  const DeviceMemory kept = engine->memory(0);
  EXPECT_GE(kept.cache_bytes, static_cast<uint64_t>(m * n * 2));

  // D as the next request's A (m x n) against W (517 x n): D·Wᵀ.
  const auto want = ReferenceGemm(ToDouble(d), ToDouble(w), m, 517, n);
  for (int step : {0, 10}) {
    if (!engine->availability(step, 0).available) continue;
    std::string e(m * 517 * 2, '\0');
    GemmJob next = HostJob(m, 517, n, d, w, e);
    next.step = step;
    next.a.cache_key = "m-d";
    auto again = engine->Run(0, next);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(again->verification.passed) << step;
    EXPECT_EQ(CountMismatches(e, want), 0) << step;
  }
  const DeviceMemory read = engine->memory(0);
  EXPECT_EQ(read.cache_misses, kept.cache_misses) << "D was never copied up";
  EXPECT_GE(read.cache_hits - kept.cache_hits, 1u);
  engine->ForgetMatrix("m-d");
  EXPECT_EQ(engine->memory(0).cache_bytes, 0u);
}

// ---------------------------------------------------------- over gRPC

class GpuServerTest : public ServerFixture {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    ServerConfig c = LoopbackConfig();
    c.max_message_bytes = 64 << 20;
    StartServer(c, MakeEngine());
  }
};

TEST_F(GpuServerTest, ServesStepZeroVerifiedWithTimingAndDevice) {
  gemm::v1::MultiplyRequest req = SeededRequest(4096, 4096, 4096, 1, 2);
  req.set_repeats(10);
  gemm::v1::MultiplyResponse resp;
  ASSERT_TRUE(client().Multiply(req, &resp).ok());
  EXPECT_TRUE(resp.verification().passed());
  EXPECT_EQ(resp.engine(), "cuda");
  EXPECT_EQ(resp.device(), "cuda:0");
  EXPECT_GT(resp.tflops(), 50.0);  // a sanity floor far below any Hopper, not a speed claim
  RecordProperty("tflops_4096", std::to_string(resp.tflops()));
}

TEST_F(GpuServerTest, InlineRaggedDataMatchesTheHostReference) {
  const int64_t m = 129, n = 77, k = 1000;
  gemm::v1::MultiplyRequest req;
  req.mutable_shape()->set_m(m);
  req.mutable_shape()->set_n(n);
  req.mutable_shape()->set_k(k);
  req.mutable_a()->set_data(RandomHalfBytes(m, k, 3));
  req.mutable_b()->set_data(RandomHalfBytes(n, k, 4));
  req.set_output(gemm::v1::OUTPUT_INLINE);
  gemm::v1::MultiplyResponse resp;
  ASSERT_TRUE(client().Multiply(req, &resp).ok());
  EXPECT_TRUE(resp.verification().passed());
  EXPECT_EQ(CountMismatches(resp.d(), ReferenceGemm(ToDouble(req.a().data()), ToDouble(req.b().data()), m, n, k)),
            0);
}

TEST_F(GpuServerTest, ListKernelsShowsTheGpu) {
  gemm::v1::ListKernelsResponse r;
  ASSERT_TRUE(client().ListKernels(&r).ok());
  EXPECT_EQ(r.engine(), "cuda");
  ASSERT_GE(r.devices_size(), 1);
  EXPECT_EQ(r.devices(0).kind(), "cuda");
  EXPECT_GT(r.devices(0).memory_bytes(), 1ull << 30);
  EXPECT_TRUE(r.kernels(0).available());
}

}  // namespace
}  // namespace gemmd::testing
