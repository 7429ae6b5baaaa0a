#include "fast_check.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "gemm/device_ops.h"
#include "gemm/gemm.h"
#include "gemm/sketch_check_gpu.h"
#include "gemm/steps.h"

namespace gemm::bench {
namespace {

#define FAST_CHECK(expr)                                                                          \
  do {                                                                                            \
    cudaError_t e_ = (expr);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      return 1;                                                                                   \
    }                                                                                             \
  } while (0)

// The median of ten timed runs of `run` on `stream`, after one untimed.
template <class Run>
int MedianMs(Run run, cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, double* ms) {
  std::vector<float> times;
  for (int i = 0; i < 11; ++i) {
    FAST_CHECK(cudaEventRecord(start, stream));
    if (!run()) return 1;
    FAST_CHECK(cudaEventRecord(stop, stream));
    FAST_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    FAST_CHECK(cudaEventElapsedTime(&t, start, stop));
    if (i > 0) times.push_back(t);
  }
  std::sort(times.begin(), times.end());
  *ms = 0.5 * (times[4] + times[5]);
  return 0;
}

}  // namespace

int RunFastCheck(const std::vector<FastCheckShape>& shapes, int device) {
  DeviceContext ctx;
  if (auto err = CreateContext(device, &ctx); !err.empty()) {
    std::fprintf(stderr, "gemm-bench: %s\n", err.c_str());
    return 1;
  }
  cudaStream_t stream;
  FAST_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  FAST_CHECK(cudaEventCreate(&start));
  FAST_CHECK(cudaEventCreate(&stop));
  SketchResult* result = nullptr;
  FAST_CHECK(cudaMalloc(&result, sizeof(SketchResult)));
  std::printf("| shape | GEMM ms (cuBLAS) | fast check ms | check / GEMM | passed | sure to catch one element off by |\n"
              "| --- | ---: | ---: | ---: | --- | ---: |\n");
  for (const FastCheckShape& s : shapes) {
    __half *a = nullptr, *b = nullptr, *d = nullptr;
    void* scratch = nullptr;
    SketchProblem p;
    p.m = s.m, p.n = s.n, p.k = s.k;
    p.seed = 2026;
    FAST_CHECK(cudaMalloc(&a, s.m * s.k * 2));
    FAST_CHECK(cudaMalloc(&b, s.n * s.k * 2));
    FAST_CHECK(cudaMalloc(&d, s.m * s.n * 2));
    FAST_CHECK(cudaMalloc(&scratch, SketchScratchBytes(p)));
    FAST_CHECK(FillRandom(a, s.m * s.k, 1, OperandId::kA, stream));
    FAST_CHECK(FillRandom(b, s.n * s.k, 2, OperandId::kB, stream));
    p.a = {a, ElementType::kF16, s.k, 1, 0};
    p.b = {b, ElementType::kF16, 1, s.k, 0};  // op(B) = Bᵀ
    p.d = {d, ElementType::kF16, s.n, 1, 0};
    const Problem gemm_problem{s.m, s.n, s.k, a, b, d, s.k, s.k, s.n};
    double gemm_ms = 0, check_ms = 0;
    if (MedianMs([&] { return Launch(kVendorStep, gemm_problem, ctx, stream).empty(); }, stream, start, stop,
                 &gemm_ms) != 0 ||
        MedianMs([&] { return SketchCheck(p, scratch, result, stream) == cudaSuccess; }, stream, start, stop,
                 &check_ms) != 0) {
      return 1;
    }
    SketchResult r{};
    FAST_CHECK(cudaMemcpy(&r, result, sizeof r, cudaMemcpyDeviceToHost));
    std::printf("| %ldx%ldx%ld | %.3f | %.3f | %.2f | %s | %.3g |\n", s.m, s.n, s.k, gemm_ms, check_ms,
                check_ms / gemm_ms, r.passed() ? "yes" : "NO", r.sure_error());
    for (void* ptr : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(d), scratch}) cudaFree(ptr);
  }
  cudaFree(result);
  return 0;
}

}  // namespace gemm::bench
