#include "fast_check.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "cuda_check.h"
#include "gemm/device_ops.h"
#include "gemm/form_ops.h"
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

int RunFastCheck(const std::vector<BenchShape>& shapes, const FastCheckForm& form, int device) {
  TimedDevice dev;
  if (!OpenTimedDevice(device, &dev)) return 1;
  const DeviceContext& ctx = dev.ctx;
  cudaStream_t stream = dev.stream;
  cudaEvent_t start = dev.start, stop = dev.stop;
  SketchResult* result = nullptr;
  BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&result, sizeof(SketchResult)));
  GemmForm f;
  f.a = f.b = f.c = f.d = form.type;
  f.a_layout = form.a_layout;
  f.b_layout = form.b_layout;
  f.has_c = form.beta != 0;
  f.beta = form.beta;
  std::printf(
      "| shape | GEMM ms (cuBLAS) | fast check ms | check / GEMM | passed | sure to catch one element off by | A and B "
      "generated ms | their bytes written by memset ms |\n"
      "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |\n");
  for (const BenchShape& s : shapes) {
    __half *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
    void* scratch = nullptr;
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&a, s.m * s.k * 2));
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&b, s.n * s.k * 2));
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&d, s.m * s.n * 2));
    if (f.has_c) BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&c, s.m * s.n * 2));
    const int64_t lda = StoredShapeOf(f.a_layout, s.m, s.k).cols, ldb = StoredShapeOf(f.b_layout, s.n, s.k).cols;
    // The server's plain path checks through SketchOfPlain, its forms
    // through SketchOfForm (dense operands, C apart from D).
    const SketchProblem p = f.IsPlain() ? SketchOfPlain(s.m, s.n, s.k, a, s.k, b, s.k, d, s.n, 2026)
                                        : SketchOfForm(FormProblem{s.m, s.n, s.k, f, a, b, c, d}, 2026);
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&scratch, SketchScratchBytes(p)));
    Problem gemm_problem{s.m, s.n, s.k, a, b, d, lda, ldb, s.n};
    gemm_problem.operands = gemm_problem.result = form.type;
    gemm_problem.a_layout = f.a_layout;
    gemm_problem.b_layout = f.b_layout;
    gemm_problem.beta = form.beta;
    gemm_problem.c = c;
    gemm_problem.ldc = s.n;
    // The server makes generated operands in one launch as this does; a
    // memset of the same bytes is the write's limit on this GPU.
    const RandomMatrix generated[] = {{a, s.m, s.k, s.k, 1, OperandId::kA}, {b, s.n, s.k, s.k, 2, OperandId::kB}};
    auto generate = [&] {
      if (form.type == ElementType::kF16) return FillRandom(generated, 2, stream);
      const cudaError_t e = FillRandom(a, form.type, s.m * s.k, 1, OperandId::kA, stream);
      return e != cudaSuccess ? e : FillRandom(b, form.type, s.n * s.k, 2, OperandId::kB, stream);
    };
    double gemm_ms = 0, check_ms = 0, generate_ms = 0, write_ms = 0;
    if (MedianMs([&] { return generate() == cudaSuccess; }, stream, start, stop, &generate_ms) != 0 ||
        MedianMs([&] {
          return cudaMemsetAsync(a, 0, s.m * s.k * 2, stream) == cudaSuccess &&
                 cudaMemsetAsync(b, 0, s.n * s.k * 2, stream) == cudaSuccess;
        }, stream, start, stop, &write_ms) != 0) {
      return 1;
    }
    BENCH_RETURN_ON_CUDA_ERROR(generate());
    if (c != nullptr) BENCH_RETURN_ON_CUDA_ERROR(FillRandom(c, form.type, s.m * s.n, 3, OperandId::kC, stream));
    if (MedianMs([&] { return Launch(kVendorStep, gemm_problem, ctx, stream).empty(); }, stream, start, stop,
                 &gemm_ms) != 0 ||
        MedianMs([&] { return SketchCheck(p, scratch, result, stream) == cudaSuccess; }, stream, start, stop,
                 &check_ms) != 0) {
      return 1;
    }
    SketchResult r{};
    BENCH_RETURN_ON_CUDA_ERROR(cudaMemcpy(&r, result, sizeof r, cudaMemcpyDeviceToHost));
    // Where the check fails, what failed: lines, samples or non-finite elements.
    char verdict[160] = "yes";
    if (!r.passed()) {
      std::snprintf(verdict, sizeof verdict, "NO (%llu lines, worst at %.3g of its bound; %llu of %llu samples, "
                    "largest error %.3g; %llu non-finite)", r.failed_lines, r.worst_line_ratio, r.failed_samples,
                    r.samples, r.max_sample_error, r.non_finite);
    }
    std::printf("| %ldx%ldx%ld | %.3f | %.3f | %.2f | %s | %.3g | %.3f | %.3f |\n", s.m, s.n, s.k, gemm_ms,
                check_ms, check_ms / gemm_ms, verdict, r.sure_error(), generate_ms, write_ms);
    for (void* ptr : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(c), static_cast<void*>(d),
                      scratch}) {
      cudaFree(ptr);
    }
  }
  cudaFree(result);
  return 0;
}

}  // namespace gemm::bench
