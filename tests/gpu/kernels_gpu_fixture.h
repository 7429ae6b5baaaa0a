// The fixture the kernel library's GPU tests share (kernels_gpu_test.cpp,
// device_ops_gpu_test.cpp): a context and a stream on device 0, and the
// checks both files' tests make. Outside an anonymous namespace, so that
// both files' tests name one fixture class.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gemm/device_ops.h"
#include "gemm/form_ops.h"
#include "gemm/gemm.h"
#include "gemm/half.h"
#include "gemm/steps.h"
#include "gemm/tolerance.h"
#include "gemm/vendor_plan.h"
#include "gpu_test_util.h"

#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

namespace gemmd::testing {

class KernelsGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    ASSERT_EQ(gemm::CreateContext(0, &ctx_), "");
    ASSERT_CUDA(cudaStreamCreate(&stream_));
    ASSERT_CUDA(cudaMalloc(&cmp_, sizeof(gemm::CompareResult)));
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
    if (cmp_) cudaFree(cmp_);
    gemm::DestroyContext(&ctx_);
  }
  gemm::CompareResult CompareOnDevice(const __half* d, const __half* ref, uint64_t count) {
    gemm::CompareResult host{};
    EXPECT_EQ(gemm::Compare(d, ref, count, 1e-3f, 1e-2f, cmp_, stream_), cudaSuccess);
    EXPECT_EQ(cudaMemcpyAsync(&host, cmp_, sizeof host, cudaMemcpyDeviceToHost, stream_), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    return host;
  }
  // gemm-bench's autotuned cuBLASLt column, in a list of steps to run.
  static constexpr int kAutotuned = -1;
  std::string LaunchOrAutotuned(int step, const gemm::Problem& p, const gemm::VendorAutotune* tuned) {
    return step == kAutotuned ? gemm::LaunchAutotuned(*tuned, p, ctx_, stream_) : gemm::Launch(step, p, ctx_, stream_);
  }

  // `step` on fresh random operands of the m×n×k form `f` (each stored by
  // the form's strides; f.c is D's type), twice, after cuBLAS where A, B
  // and D share a type, and beside step 10 the autotuned cuBLASLt; before
  // each run D is poisoned, or holds C where `c_is_d` (C read in place, a
  // single GEMM). Each D is held to the form's bound against the fp64
  // product of every entry.
  void ExpectEveryRunWithinTheFormsBound(int step, const gemm::GemmForm& f, int64_t m, int64_t n, int64_t k,
                                         bool c_is_d, uint64_t seed) {
    gemm::FormProblem form{m, n, k, f};
    const uint64_t a_n = gemm::StorageOfA(f, m, k).Footprint(f.batch);
    const uint64_t b_n = gemm::StorageOfB(f, n, k).Footprint(f.batch);
    const uint64_t d_n = static_cast<uint64_t>(f.batch) * m * n;
    const uint64_t c_n = f.has_c ? gemm::StorageOfC(f, m, n).Footprint(f.batch) : d_n;
    void *a, *b, *d, *c;
    double* ref;
    float* bound;
    ASSERT_CUDA(cudaMalloc(&a, a_n * 2));
    ASSERT_CUDA(cudaMalloc(&b, b_n * 2));
    ASSERT_CUDA(cudaMalloc(&d, d_n * 2));
    ASSERT_CUDA(cudaMalloc(&c, c_n * 2));
    ASSERT_CUDA(cudaMalloc(&ref, d_n * sizeof(double)));
    ASSERT_CUDA(cudaMalloc(&bound, 3 * sizeof(float)));
    ASSERT_CUDA(gemm::FillRandom(a, f.a, a_n, seed, gemm::OperandId::kA, stream_));
    ASSERT_CUDA(gemm::FillRandom(b, f.b, b_n, seed, gemm::OperandId::kB, stream_));
    ASSERT_CUDA(gemm::FillRandom(c, f.d, c_n, seed, gemm::OperandId::kC, stream_));
    form.a = a, form.b = b, form.c = c, form.d = d;
    ASSERT_CUDA(gemm::ReferenceFormGemm(form, ref, stream_));
    ASSERT_CUDA(gemm::FormBoundInputs(form, bound, stream_));
    const gemm::FormTolerance tolerance = gemm::ToleranceOf(f);
    const gemm::FormBoundTerms terms{bound, gemm::ProductTermPerNorms(tolerance, k, f.ProductScale()),
                                     gemm::CTermPerValue(f.ReadsC(), f.beta)};
    gemm::Problem problem{m, n, k, static_cast<const __half*>(a), static_cast<const __half*>(b),
                          static_cast<__half*>(d)};
    problem.operands = f.a;
    problem.result = f.d;
    problem.a_layout = f.a_layout;
    problem.b_layout = f.b_layout;
    problem.alpha = static_cast<float>(f.alpha);
    problem.beta = static_cast<float>(f.beta);
    problem.c = static_cast<const __half*>(c_is_d ? d : c);
    problem.batch = f.batch;
    problem.stride_a = f.stride_a;
    problem.stride_b = f.stride_b;
    problem.stride_c = f.stride_c;
    std::vector<int> runs = {step, step};  // twice: a stale-state bug shows on the second
    if (f.a == f.d) runs.insert(runs.begin(), gemm::kVendorStep);
    gemm::VendorAutotunePtr tuned;  // beside step 10: gemm-bench's autotuned column, on the same form
    if (step == gemm::kLastStep && f.a == f.d) {
      ASSERT_EQ(gemm::AutotuneVendor(problem, ctx_, stream_, nullptr, &tuned, 4, 1), "");
      runs.push_back(kAutotuned);
    }
    for (int run : runs) {
      if (c_is_d) {
        ASSERT_CUDA(cudaMemcpyAsync(d, c, d_n * 2, cudaMemcpyDeviceToDevice, stream_));
      } else {
        ASSERT_CUDA(gemm::Poison(static_cast<__half*>(d), d_n, stream_));
      }
      ASSERT_EQ(LaunchOrAutotuned(run, problem, tuned.get()), "");
      ASSERT_CUDA(gemm::CompareForm(d, f.d, ref, d_n, tolerance.rtol, tolerance.atol, terms, cmp_, stream_));
      gemm::CompareResult r{};
      ASSERT_CUDA(cudaMemcpyAsync(&r, cmp_, sizeof r, cudaMemcpyDeviceToHost, stream_));
      ASSERT_CUDA(cudaStreamSynchronize(stream_));
      EXPECT_EQ(r.mismatches, 0u) << "step " << run << ": " << r.non_finite << " unwritten/non-finite, max err "
                                  << r.max_abs_error;
    }
    for (void* x : {a, b, c, d}) cudaFree(x);
    cudaFree(ref);
    cudaFree(bound);
  }
  gemm::DeviceContext ctx_;
  cudaStream_t stream_ = nullptr;
  gemm::CompareResult* cmp_ = nullptr;
};

}  // namespace gemmd::testing
