#include "vendor_padding.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <string>

#include "cuda_check.h"
#include "gemm/device_ops.h"
#include "gemm/form_ops.h"
#include "gemm/test_hooks.h"
#include "gemm/vendor_forms.h"

namespace gemm::bench {
namespace {

using testing::VendorFormPadding;

// Padding's unit along each dimension: 16 bytes of the type, as
// vendor_form_padding.h rounds rows up to.
int64_t RoundUp(int64_t x, ElementType t) {
  const int64_t unit = 16 / static_cast<int64_t>(ElementBytes(t));
  return (x + unit - 1) / unit * unit;
}

FormProblem ProblemOf(int64_t m, int64_t n, int64_t k, const VendorPaddingForm& form, void* const buffers[4]) {
  FormProblem p{m, n, k};
  GemmForm& f = p.form;
  f.a = f.b = f.c = f.d = form.type;
  f.a_layout = form.a_layout;
  f.b_layout = form.b_layout;
  f.has_c = form.beta != 0;
  f.beta = form.beta;
  f.batch = form.batch;
  f.StackDensely(m, n, k);
  if (form.shared_b) f.stride_b = 0;
  p.a = buffers[0], p.b = buffers[1], p.c = f.has_c ? buffers[2] : nullptr, p.d = buffers[3];
  return p;
}

// One way of running a shape: the problem and the padding it runs under.
struct Way {
  FormProblem p;
  VendorFormPadding padding;
  std::vector<float> ms;
};

}  // namespace

int RunVendorPadding(const std::vector<BenchShape>& shapes, const VendorPaddingForm& form, int device) {
  TimedDevice dev;
  if (!OpenTimedDevice(device, &dev)) return 1;
  L2Flush flush;
  BENCH_RETURN_ON_CUDA_ERROR(flush.Init(device));
  cudaStream_t stream = dev.stream;
  std::printf("| shape | batch | dense ms | on padded copies ms | dense / padded | aligned shape | its ms |\n"
              "| --- | ---: | ---: | ---: | ---: | --- | ---: |\n");
  uint64_t seed = static_cast<uint64_t>(std::time(nullptr)) * 1000;
  for (const BenchShape& s : shapes) {
    const int64_t m = RoundUp(s.m, form.type), n = RoundUp(s.n, form.type), k = RoundUp(s.k, form.type);
    // Buffers for the aligned shape hold the ragged one's dense operands too.
    const uint64_t e = ElementBytes(form.type), entries = form.batch;
    const uint64_t elems[4] = {entries * m * k, (form.shared_b ? 1 : entries) * n * k, entries * m * n,
                               entries * m * n};
    void* buffers[4] = {};
    for (int i = 0; i < 4; ++i) BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&buffers[i], elems[i] * e));
    for (int i = 0; i < 3; ++i) {
      BENCH_RETURN_ON_CUDA_ERROR(FillRandom(buffers[i], form.type, elems[i], ++seed, static_cast<OperandId>(i), stream));
    }
    Way ways[3] = {{ProblemOf(s.m, s.n, s.k, form, buffers), VendorFormPadding::kNever},
                   {ProblemOf(s.m, s.n, s.k, form, buffers), VendorFormPadding::kEveryRagged},
                   {ProblemOf(m, n, k, form, buffers), VendorFormPadding::kNever}};
    // Whether the padded way pads: its copies need scratch the dense way does not.
    uint64_t scratch_bytes = 0, scratch_of[3] = {};
    for (int w = 0; w < 3; ++w) {
      testing::SetVendorFormPadding(ways[w].padding);
      scratch_of[w] = VendorFormScratchBytes(ways[w].p);
      scratch_bytes = std::max(scratch_bytes, scratch_of[w]);
      if (auto why = PrepareVendorForm(ways[w].p, dev.ctx); !why.empty()) {
        std::fprintf(stderr, "gemm-bench: %ldx%ldx%ld: %s\n", ways[w].p.m, ways[w].p.n, ways[w].p.k, why.c_str());
        testing::SetVendorFormPadding(VendorFormPadding::kAsBuilt);
        return 1;
      }
    }
    const bool pads = scratch_of[1] > scratch_of[0];
    void* scratch = nullptr;
    if (scratch_bytes > 0) BENCH_RETURN_ON_CUDA_ERROR(cudaMalloc(&scratch, scratch_bytes));
    for (int round = 0; round < 11; ++round) {
      for (Way& way : ways) {
        testing::SetVendorFormPadding(way.padding);
        BENCH_RETURN_ON_CUDA_ERROR(flush.Run(stream));
        BENCH_RETURN_ON_CUDA_ERROR(cudaEventRecord(dev.start, stream));
        if (auto err = LaunchVendorForm(way.p, dev.ctx, scratch, stream); !err.empty()) {
          std::fprintf(stderr, "gemm-bench: %s\n", err.c_str());
          testing::SetVendorFormPadding(VendorFormPadding::kAsBuilt);
          return 1;
        }
        BENCH_RETURN_ON_CUDA_ERROR(cudaEventRecord(dev.stop, stream));
        BENCH_RETURN_ON_CUDA_ERROR(cudaEventSynchronize(dev.stop));
        float t = 0;
        BENCH_RETURN_ON_CUDA_ERROR(cudaEventElapsedTime(&t, dev.start, dev.stop));
        if (round > 0) way.ms.push_back(t);
      }
    }
    testing::SetVendorFormPadding(VendorFormPadding::kAsBuilt);
    double median[3];
    for (int w = 0; w < 3; ++w) {
      std::vector<float>& v = ways[w].ms;
      std::sort(v.begin(), v.end());
      median[w] = 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    }
    const std::string aligned = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    if (pads) {
      std::printf("| %ldx%ldx%ld | %ld | %.4f | %.4f | %.2f | %s | %.4f |\n", s.m, s.n, s.k, form.batch, median[0],
                  median[1], median[0] / median[1], aligned.c_str(), median[2]);
    } else {
      std::printf("| %ldx%ldx%ld | %ld | %.4f | not padded | | %s | %.4f |\n", s.m, s.n, s.k, form.batch, median[0],
                  aligned.c_str(), median[2]);
    }
    for (void* ptr : buffers) cudaFree(ptr);
    cudaFree(scratch);
  }
  return 0;
}

}  // namespace gemm::bench
