#include "common/split_k_sum.h"

#include "common/step_form.h"

namespace gemm::common {
namespace {

// One thread per element of D: its ranges summed in order, rounded once.
template <ElementType kResult>
__global__ void SumSplitsKernel(const float* partials, int splits, int64_t ldw, int64_t m, int64_t n, __half* d,
                                int64_t ldd) {
  using Out = typename Rounding<kResult>::One;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m * n) return;
  const int64_t row = i / n, col = i % n;
  const int64_t range = m * ldw;
  const float* p = partials + row * ldw + col;
  float sum = 0.0f;
  for (int s = 0; s < splits; ++s) sum += p[s * range];
  reinterpret_cast<Out*>(d)[row * ldd + col] = Rounding<kResult>::Round(sum);
}

}  // namespace

cudaError_t SumSplits(const float* partials, int splits, int64_t ldw, int64_t m, int64_t n, ElementType result,
                      __half* d, int64_t ldd, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = (m * n + kThreads - 1) / kThreads;
  if (blocks == 0) return cudaSuccess;
  const auto kernel =
      result == ElementType::kBF16 ? SumSplitsKernel<ElementType::kBF16> : SumSplitsKernel<ElementType::kF16>;
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(partials, splits, ldw, m, n, d, ldd);
  return cudaGetLastError();
}

}  // namespace gemm::common
