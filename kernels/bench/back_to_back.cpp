#include "back_to_back.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "cuda_check.h"
#include "gemm/device_ops.h"
#include "gemm/gemm.h"
#include "gemm/steps.h"

namespace gemm::bench {
namespace {

// Runs `launch` (which queues one iteration) for `seconds` of wall clock,
// a batch of launches at a time so the queue stays short, and returns the
// iterations per second the GPU's events measured.
template <class Launch>
int Rate(Launch launch, double seconds, cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, double* rate,
         uint64_t* runs) {
  constexpr int kBatch = 16;
  uint64_t n = 0;
  BENCH_RETURN_ON_CUDA_ERROR(cudaEventRecord(start, stream));
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < kBatch; ++i, ++n) {
      if (!launch(n)) return 1;
    }
    // Wait for the batch before last: kBatch to 2 kBatch launches stay queued.
    BENCH_RETURN_ON_CUDA_ERROR(cudaEventRecord(stop, stream));
    BENCH_RETURN_ON_CUDA_ERROR(cudaEventSynchronize(stop));
  }
  BENCH_RETURN_ON_CUDA_ERROR(cudaEventRecord(stop, stream));
  BENCH_RETURN_ON_CUDA_ERROR(cudaEventSynchronize(stop));
  float ms = 0;
  BENCH_RETURN_ON_CUDA_ERROR(cudaEventElapsedTime(&ms, start, stop));
  *rate = n / (ms * 1e-3);
  *runs = n;
  return 0;
}

}  // namespace

int RunBackToBack(const std::vector<BenchShape>& shapes, const std::vector<int>& steps, double seconds,
                  int device) {
  TimedDevice dev;
  if (!OpenTimedDevice(device, &dev)) return 1;
  const DeviceContext& ctx = dev.ctx;
  cudaStream_t stream = dev.stream;
  cudaEvent_t start = dev.start, stop = dev.stop;
  std::printf(
      "| shape | step | GEMM back to back TFLOPS | runs | A and B generated before each GEMM, TFLOPS | runs |\n"
      "| --- | ---: | ---: | ---: | ---: | ---: |\n");
  for (const BenchShape& s : shapes) {
    __half *a = nullptr, *b = nullptr, *d = nullptr;
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&a, s.m * s.k * 2));
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&b, s.n * s.k * 2));
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&d, s.m * s.n * 2));
    const double flops = 2.0 * s.m * s.n * s.k;
    for (int step : steps) {
      const Problem p{s.m, s.n, s.k, a, b, d, s.k, s.k, s.n};
      if (const StepInfo* info = FindStep(step); info == nullptr || !ShapeError(*info, s.m, s.n, s.k).empty() ||
                                                 !Supports(step, ctx).supported) {
        std::printf("| %ldx%ldx%ld | %d | not run | | | |\n", s.m, s.n, s.k, step);
        continue;
      }
      std::string err;
      const auto gemm = [&](uint64_t) {
        err = Launch(step, p, ctx, stream);
        return err.empty();
      };
      const auto generated_gemm = [&](uint64_t run) {
        const RandomMatrix inputs[] = {{a, s.m, s.k, s.k, run + 1, OperandId::kA},
                                       {b, s.n, s.k, s.k, run + 1, OperandId::kB}};
        return FillRandom(inputs, 2, stream) == cudaSuccess && gemm(run);
      };
      double warm = 0, alone = 0, with_inputs = 0;
      uint64_t warm_runs = 0, alone_runs = 0, input_runs = 0;
      if (Rate(generated_gemm, 1.0, stream, start, stop, &warm, &warm_runs) != 0 ||
          Rate(gemm, seconds, stream, start, stop, &alone, &alone_runs) != 0 ||
          Rate(generated_gemm, seconds, stream, start, stop, &with_inputs, &input_runs) != 0) {
        std::fprintf(stderr, "gemm-bench: step %d at %ldx%ldx%ld: %s\n", step, s.m, s.n, s.k,
                     err.empty() ? "a CUDA call failed" : err.c_str());
        return 1;
      }
      std::printf("| %ldx%ldx%ld | %d | %.0f | %lu | %.0f | %lu |\n", s.m, s.n, s.k, step, alone * flops / 1e12,
                  static_cast<unsigned long>(alone_runs), with_inputs * flops / 1e12,
                  static_cast<unsigned long>(input_runs));
      std::fflush(stdout);
    }
    for (void* ptr : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(d)}) cudaFree(ptr);
  }
  return 0;
}

}  // namespace gemm::bench
