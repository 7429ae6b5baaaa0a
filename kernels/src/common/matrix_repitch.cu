#include "common/matrix_repitch.h"

#include <algorithm>

namespace gemm::common {
namespace {

constexpr int kWarps = 8, kUnroll = 16;

// A warp a segment of a destination row, 32·kUnroll elements: lane l
// takes columns l, l + 32, ... of it, so that each load and store
// instruction covers consecutive elements across the warp whatever the
// rows' alignment, and sixteen loads are in flight a lane (eight: 4% slower
// at 2470x3725x3100 in bf16). Segments, not whole rows, so that a few long
// rows (M = 64, K = 16000) still spread over the GPU. Sixteen bytes a
// thread, read element by element from unaligned source rows, moved 1.6
// TB/s on an H200 (gemm-bench --vendor-padding,
// bench/results/h200_2026-11-29_vendor_padding_summary.txt).
constexpr int64_t kSegment = 32 * kUnroll;

template <typename T>
__global__ void __launch_bounds__(kWarps * 32) RepitchKernel(MatrixRepitch c) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t segments = (c.to_cols + kSegment - 1) / kSegment;  // a row's
  const int64_t items = c.entries * c.to_rows * segments;
  const int64_t to_ld = c.to_ld != 0 ? c.to_ld : c.to_cols;
  for (int64_t item = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; item < items;
       item += static_cast<int64_t>(gridDim.x) * kWarps) {
    const int64_t row = item / segments, first = (item - row * segments) * kSegment + lane;
    const int64_t e = row / c.to_rows, r = row - e * c.to_rows;
    const int64_t cols = r < c.rows ? c.cols : 0;  // the source's columns in this row
    const T* from = static_cast<const T*>(c.from) + e * c.from_stride + r * c.from_ld;
    T* to = static_cast<T*>(c.to) + row * to_ld;
    T v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t col = first + 32 * u;
      v[u] = col < cols ? from[col] : T(0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t col = first + 32 * u;
      if (col < c.to_cols) to[col] = v[u];
    }
  }
}

template <typename T>
cudaError_t Launch(const MatrixRepitch& c, cudaStream_t stream) {
  const int64_t items = c.entries * c.to_rows * ((c.to_cols + kSegment - 1) / kSegment);
  if (items == 0) return cudaSuccess;
  int device = 0, sms = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess) return e;
  const int64_t blocks = std::min<int64_t>((items + kWarps - 1) / kWarps, int64_t{sms} * 16);
  RepitchKernel<T><<<static_cast<unsigned>(blocks), kWarps * 32, 0, stream>>>(c);
  return cudaGetLastError();
}

}  // namespace

cudaError_t CopyRepitched(const MatrixRepitch& c, cudaStream_t stream) {
  switch (c.element_bytes) {
    case 1: return Launch<uint8_t>(c, stream);
    case 2: return Launch<uint16_t>(c, stream);
    case 4: return Launch<uint32_t>(c, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace gemm::common
