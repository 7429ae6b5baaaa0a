#include "common/split_k_sum.h"

namespace gemm::common {
namespace {

// One thread per element of D: its ranges summed in order, fused, rounded once.
template <typename Form>
__global__ void SumSplitsKernel(const float* partials, int splits, int64_t ldw, int64_t m, int64_t n, __half* d,
                                int64_t ldd, EpilogueArgs e) {
  using Out = typename Rounding<Form::kResult>::One;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m * n) return;
  const int64_t row = i / n, col = i % n;
  const int64_t range = m * ldw;
  const float* p = partials + row * ldw + col;
  float sum = 0.0f;
  for (int s = 0; s < splits; ++s) sum += p[s * range];
  reinterpret_cast<Out*>(d)[row * ldd + col] = Rounding<Form::kResult>::Round(Fuse<Form>(sum, e, row, col));
}

template <ElementType kResult>
auto SumKernel(bool fused) {
  return fused ? SumSplitsKernel<StepForm<kResult, kResult, Layout::kKContiguous, Layout::kKContiguous, true>>
               : SumSplitsKernel<StepForm<kResult, kResult>>;
}

}  // namespace

cudaError_t SumSplits(const float* partials, int splits, int64_t ldw, int64_t m, int64_t n, ElementType result,
                      __half* d, int64_t ldd, const EpilogueArgs& epilogue, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = (m * n + kThreads - 1) / kThreads;
  if (blocks == 0) return cudaSuccess;
  const auto kernel = result == ElementType::kBF16 ? SumKernel<ElementType::kBF16>(IsFused(epilogue))
                                                   : SumKernel<ElementType::kF16>(IsFused(epilogue));
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(partials, splits, ldw, m, n, d, ldd, epilogue);
  return cudaGetLastError();
}

}  // namespace gemm::common
