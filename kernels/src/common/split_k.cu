#include "common/split_k_sum.h"
#include "common/tile_scheduler.h"

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

// Eight adjacent elements of a tile a thread (two 16-byte loads a range),
// kTileSumThreads a block, rows of the tile one after the other;
// blockIdx.y is the tile. A thread a single element spent most of its
// time working out its tile's place.
constexpr int kTileSumThreads = 256, kTileSumColumns = 8;
template <typename Form>
__global__ void SumTileSplitsKernel(const float* partials, int splits, int first_tile, int tile_rows, int tile_cols,
                                    int64_t m, int64_t n, __half* d, int64_t ldd, EpilogueArgs e) {
  using Out = typename Rounding<Form::kResult>::One;
  const int threads_a_row = tile_cols / kTileSumColumns;
  const int r = static_cast<int>(blockIdx.x) * (kTileSumThreads / threads_a_row) + threadIdx.x / threads_a_row;
  const int c = threadIdx.x % threads_a_row * kTileSumColumns;
  int tile_m, tile_n;
  TileScheduler(m, n, tile_rows, tile_cols).Coordinates(first_tile + static_cast<int>(blockIdx.y), &tile_m, &tile_n);
  const int64_t row = int64_t{tile_m} * tile_rows + r, col0 = int64_t{tile_n} * tile_cols + c;
  if (r >= tile_rows || row >= m || col0 >= n) return;
  const int64_t tile_elements = int64_t{tile_rows} * tile_cols;
  const float* p = partials + int64_t{blockIdx.y} * splits * tile_elements + int64_t{r} * tile_cols + c;
  float sum[kTileSumColumns] = {};
  for (int s = 0; s < splits; ++s) {
    const float4 lo = *reinterpret_cast<const float4*>(p + s * tile_elements);
    const float4 hi = *reinterpret_cast<const float4*>(p + s * tile_elements + 4);
    sum[0] += lo.x, sum[1] += lo.y, sum[2] += lo.z, sum[3] += lo.w;
    sum[4] += hi.x, sum[5] += hi.y, sum[6] += hi.z, sum[7] += hi.w;
  }
  Out* out = reinterpret_cast<Out*>(d) + row * ldd + col0;
  if (col0 + kTileSumColumns <= n && reinterpret_cast<uintptr_t>(out) % 16 == 0) {  // one 16-byte store
    union {
      uint4 bits;
      typename Rounding<Form::kResult>::Pair pairs[kTileSumColumns / 2];
    } packed;
#pragma unroll
    for (int j = 0; j < kTileSumColumns; j += 2) {
      packed.pairs[j / 2] = Rounding<Form::kResult>::RoundPair(Fuse<Form>(sum[j], e, row, col0 + j),
                                                               Fuse<Form>(sum[j + 1], e, row, col0 + j + 1));
    }
    *reinterpret_cast<uint4*>(out) = packed.bits;
    return;
  }
#pragma unroll
  for (int j = 0; j < kTileSumColumns; ++j) {
    if (col0 + j < n) out[j] = Rounding<Form::kResult>::Round(Fuse<Form>(sum[j], e, row, col0 + j));
  }
}

template <ElementType kResult>
auto TileSumKernel(bool fused) {
  return fused ? SumTileSplitsKernel<StepForm<kResult, kResult, Layout::kKContiguous, Layout::kKContiguous, true>>
               : SumTileSplitsKernel<StepForm<kResult, kResult>>;
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

cudaError_t SumTileSplits(const float* partials, int splits, int first_tile, int tiles, int tile_rows, int tile_cols,
                          int64_t m, int64_t n, ElementType result, __half* d, int64_t ldd,
                          const EpilogueArgs& epilogue, cudaStream_t stream) {
  if (tiles <= 0) return cudaSuccess;
  const int threads_a_row = tile_cols / kTileSumColumns;
  if (tile_cols % kTileSumColumns != 0 || kTileSumThreads % threads_a_row != 0) return cudaErrorInvalidValue;
  const int rows_a_block = kTileSumThreads / threads_a_row;
  const dim3 blocks((tile_rows + rows_a_block - 1) / rows_a_block, static_cast<unsigned>(tiles));
  const auto kernel = result == ElementType::kBF16 ? TileSumKernel<ElementType::kBF16>(IsFused(epilogue))
                                                   : TileSumKernel<ElementType::kF16>(IsFused(epilogue));
  kernel<<<blocks, kTileSumThreads, 0, stream>>>(partials, splits, first_tile, tile_rows, tile_cols, m, n, d, ldd,
                                                 epilogue);
  return cudaGetLastError();
}

}  // namespace gemm::common
