#include "fast_check.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "cuda_check.h"
#include "gemm/device_ops.h"
#include "gemm/gemm.h"
#include "gemm/sketch_check_gpu.h"
#include "gemm/steps.h"

namespace gemm::bench {
namespace {

// The median of ten timed runs of `run` on `stream`, after one untimed.
template <class Run>
int MedianMs(Run run, cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, double* ms) {
  std::vector<float> times;
  for (int i = 0; i < 11; ++i) {
    BENCH_RETURN_ON_CUDA_ERROR(cudaEventRecord(start, stream));
    if (!run()) return 1;
    BENCH_RETURN_ON_CUDA_ERROR(cudaEventRecord(stop, stream));
    BENCH_RETURN_ON_CUDA_ERROR(cudaEventSynchronize(stop));
    float t = 0;
    BENCH_RETURN_ON_CUDA_ERROR(cudaEventElapsedTime(&t, start, stop));
    if (i > 0) times.push_back(t);
  }
  std::sort(times.begin(), times.end());
  *ms = 0.5 * (times[4] + times[5]);
  return 0;
}

}  // namespace

int RunFastCheck(const std::vector<FastCheckShape>& shapes, int device) {
  TimedDevice dev;
  if (!OpenTimedDevice(device, &dev)) return 1;
  const DeviceContext& ctx = dev.ctx;
  cudaStream_t stream = dev.stream;
  cudaEvent_t start = dev.start, stop = dev.stop;
  SketchResult* result = nullptr;
  BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&result, sizeof(SketchResult)));
  std::printf(
      "| shape | GEMM ms (cuBLAS) | fast check ms | check / GEMM | passed | sure to catch one element off by | A and B "
      "generated ms | their bytes written by memset ms |\n"
      "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |\n");
  for (const FastCheckShape& s : shapes) {
    __half *a = nullptr, *b = nullptr, *d = nullptr;
    void* scratch = nullptr;
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&a, s.m * s.k * 2));
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&b, s.n * s.k * 2));
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&d, s.m * s.n * 2));
    const SketchProblem p = SketchOfPlain(s.m, s.n, s.k, a, s.k, b, s.k, d, s.n, 2026);
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&scratch, SketchScratchBytes(p)));
    const Problem gemm_problem{s.m, s.n, s.k, a, b, d, s.k, s.k, s.n};
    // The server makes generated operands in one launch as this does; a
    // memset of the same bytes is the write's limit on this GPU.
    const RandomMatrix generated[] = {{a, s.m, s.k, s.k, 1, OperandId::kA}, {b, s.n, s.k, s.k, 2, OperandId::kB}};
    double gemm_ms = 0, check_ms = 0, generate_ms = 0, write_ms = 0;
    if (MedianMs([&] { return FillRandom(generated, 2, stream) == cudaSuccess; }, stream, start, stop,
                 &generate_ms) != 0 ||
        MedianMs([&] {
          return cudaMemsetAsync(a, 0, s.m * s.k * 2, stream) == cudaSuccess &&
                 cudaMemsetAsync(b, 0, s.n * s.k * 2, stream) == cudaSuccess;
        }, stream, start, stop, &write_ms) != 0) {
      return 1;
    }
    BENCH_RETURN_ON_CUDA_ERROR(FillRandom(generated, 2, stream));
    if (MedianMs([&] { return Launch(kVendorStep, gemm_problem, ctx, stream).empty(); }, stream, start, stop,
                 &gemm_ms) != 0 ||
        MedianMs([&] { return SketchCheck(p, scratch, result, stream) == cudaSuccess; }, stream, start, stop,
                 &check_ms) != 0) {
      return 1;
    }
    SketchResult r{};
    BENCH_RETURN_ON_CUDA_ERROR(cudaMemcpy(&r, result, sizeof r, cudaMemcpyDeviceToHost));
    std::printf("| %ldx%ldx%ld | %.3f | %.3f | %.2f | %s | %.3g | %.3f | %.3f |\n", s.m, s.n, s.k, gemm_ms,
                check_ms, check_ms / gemm_ms, r.passed() ? "yes" : "NO", r.sure_error(), generate_ms, write_ms);
    for (void* ptr : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(d), scratch}) cudaFree(ptr);
  }
  cudaFree(result);
  return 0;
}

}  // namespace gemm::bench
