#include "accuracy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>

#include "cuda_check.h"
#include "gemm/device_ops.h"
#include "gemm/gemm.h"
#include "gemm/half.h"
#include "gemm/steps.h"
#include "gemm/tolerance.h"

namespace gemm::bench {
namespace {

struct Measure {
  double max_error = 0;         // max |d - exact|
  uint64_t mismatches_old = 0;  // against cuBLAS, atol + rtol·|ref|
  uint64_t mismatches_new = 0;  // the same + the accumulation term
  uint64_t non_finite = 0;
  double needed = 0;            // the least accumulation term that passes every element
};

std::vector<float> ToFloat(const std::vector<uint16_t>& h) {
  std::vector<float> f(h.size());
  for (size_t i = 0; i < h.size(); ++i) f[i] = HalfToFloat(h[i]);
  return f;
}

void Accumulate(const std::vector<float>& d, const std::vector<float>& cublas, const std::vector<double>& exact,
                double accumulation, Measure* m) {
  for (size_t i = 0; i < d.size(); ++i) {
    if (!std::isfinite(d[i])) {
      ++m->non_finite;
      ++m->mismatches_old;
      ++m->mismatches_new;
      continue;
    }
    m->max_error = std::max(m->max_error, std::fabs(d[i] - exact[i]));
    const double vs_ref = std::fabs(double{d[i]} - cublas[i]), bound = kAtol + kRtol * std::fabs(cublas[i]);
    m->mismatches_old += vs_ref > bound;
    m->mismatches_new += vs_ref > bound + accumulation;
    m->needed = std::max(m->needed, vs_ref - bound);
  }
}

}  // namespace

int RunAccuracy(const std::vector<BenchShape>& shapes, const std::vector<int>& steps, int device, int seeds,
                uint64_t first_seed, const std::string& csv) {
  DeviceContext ctx;
  cudaStream_t stream;
  if (!OpenDevice(device, &ctx, &stream)) return 1;
  float* norms = nullptr;
  BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&norms, 2 * sizeof(float)));
  std::ofstream out_csv;
  if (!csv.empty()) {
    out_csv.open(csv);
    out_csv << "m,n,k,step,max_error,cublas_max_error,ratio_to_cublas,accumulation_atol,needed_term,"
               "mismatches_without_term,mismatches_with_term,non_finite,elements\n";
  }
  std::printf("| M×N×K | step | max \\|D − exact\\| | cuBLAS's | ratio | accumulation term | term needed | "
              "fail without term | fail with term |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const BenchShape& s : shapes) {
    const uint64_t ae = s.m * s.k, be = s.n * s.k, de = s.m * s.n;
    __half *a = nullptr, *b = nullptr, *d = nullptr, *ref = nullptr;
    double* exact = nullptr;
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&a, ae * 2));
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&b, be * 2));
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&d, de * 2));
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&ref, de * 2));
    BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&exact, de * sizeof(double)));
    std::vector<Measure> measures(steps.size());
    std::vector<std::string> status(steps.size(), "ok");
    Measure cublas;
    double accumulation = 0;
    std::vector<uint16_t> host16(de);
    std::vector<double> exact_host(de);
    for (int seed = 0; seed < seeds; ++seed) {
      const uint64_t sd = first_seed + 2 * static_cast<uint64_t>(seed);
      BENCH_RETURN_ON_CUDA_ERROR(FillRandom(a, ae, sd, OperandId::kA, stream));
      BENCH_RETURN_ON_CUDA_ERROR(FillRandom(b, be, sd + 1, OperandId::kB, stream));
      BENCH_RETURN_ON_CUDA_ERROR(ReferenceGemmFp64(s.m, s.n, s.k, a, s.k, b, s.k, exact, s.n, stream));
      BENCH_RETURN_ON_CUDA_ERROR(MaxRowNorm(a, s.m, s.k, s.k, norms, stream));
      BENCH_RETURN_ON_CUDA_ERROR(MaxRowNorm(b, s.n, s.k, s.k, norms + 1, stream));
      float norm_host[2];
      BENCH_RETURN_ON_CUDA_ERROR(cudaMemcpyAsync(norm_host, norms, sizeof norm_host, cudaMemcpyDeviceToHost, stream));
      BENCH_RETURN_ON_CUDA_ERROR(Poison(ref, de, stream));
      const std::string vendor_err = Launch(kVendorStep, Problem{s.m, s.n, s.k, a, b, ref, s.k, s.k, s.n}, ctx, stream);
      if (!vendor_err.empty()) {
        std::fprintf(stderr, "cuBLAS: %s\n", vendor_err.c_str());
        return 1;
      }
      BENCH_RETURN_ON_CUDA_ERROR(cudaMemcpyAsync(exact_host.data(), exact, de * sizeof(double), cudaMemcpyDeviceToHost, stream));
      BENCH_RETURN_ON_CUDA_ERROR(cudaMemcpyAsync(host16.data(), ref, de * 2, cudaMemcpyDeviceToHost, stream));
      BENCH_RETURN_ON_CUDA_ERROR(cudaStreamSynchronize(stream));
      accumulation = std::max(accumulation, AccumulationAtol(s.k, norm_host[0], norm_host[1]));
      const std::vector<float> cublas_d = ToFloat(host16);
      Accumulate(cublas_d, cublas_d, exact_host, accumulation, &cublas);
      for (size_t i = 0; i < steps.size(); ++i) {
        if (status[i] != "ok") continue;
        BENCH_RETURN_ON_CUDA_ERROR(Poison(d, de, stream));
        const std::string err = Launch(steps[i], Problem{s.m, s.n, s.k, a, b, d, s.k, s.k, s.n}, ctx, stream);
        if (!err.empty()) {
          status[i] = err;
          continue;
        }
        BENCH_RETURN_ON_CUDA_ERROR(cudaMemcpyAsync(host16.data(), d, de * 2, cudaMemcpyDeviceToHost, stream));
        BENCH_RETURN_ON_CUDA_ERROR(cudaStreamSynchronize(stream));
        Accumulate(ToFloat(host16), cublas_d, exact_host, accumulation, &measures[i]);
      }
    }
    auto row = [&](const std::string& step, const Measure& m) {
      const double ratio = cublas.max_error > 0 ? m.max_error / cublas.max_error : 0;
      std::printf("| %ldx%ldx%ld | %s | %.4g | %.4g | %.2f | %.3g | %.3g | %llu | %llu |\n", s.m, s.n, s.k,
                  step.c_str(), m.max_error, cublas.max_error, ratio, accumulation, m.needed,
                  static_cast<unsigned long long>(m.mismatches_old), static_cast<unsigned long long>(m.mismatches_new));
      if (out_csv) {
        out_csv << s.m << ',' << s.n << ',' << s.k << ',' << step << ',' << m.max_error << ',' << cublas.max_error << ','
                << ratio << ',' << accumulation << ',' << m.needed << ',' << m.mismatches_old << ','
                << m.mismatches_new << ',' << m.non_finite << ',' << de * seeds << '\n';
      }
    };
    row("0", cublas);
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i] == kVendorStep) continue;
      if (status[i] != "ok") {
        std::printf("| %ldx%ldx%ld | %d | %s |  |  |  |  |  |  |\n", s.m, s.n, s.k, steps[i], status[i].c_str());
        continue;
      }
      row(std::to_string(steps[i]), measures[i]);
    }
    std::fflush(stdout);
    cudaFree(a);
    cudaFree(b);
    cudaFree(d);
    cudaFree(ref);
    cudaFree(exact);
  }
  cudaFree(norms);
  cudaStreamDestroy(stream);
  return 0;
}

}  // namespace gemm::bench
