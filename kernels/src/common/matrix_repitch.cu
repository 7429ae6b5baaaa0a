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
// bench/results/h200_2026-11-29_vendor_padding_summary.txt). Aligned
// 16-byte words, each shifted from the two source words it straddles, cut
// the large copies by 10-15% but made short rows and small copies slower,
// most of the ladder's dense sweep among them
// (bench/results/h200_2026-11-29_repitch_kernel_summary.txt).
constexpr int64_t kSegment = 32 * kUnroll;

// Index: uint32_t wherever every item's index fits, as it does for any
// copy under 2^32 segments: a warp's item is two divisions, which in 64 bits
// take several times the instructions, and a small copy is mostly this
// prologue.
template <typename T, typename Index>
__global__ void __launch_bounds__(kWarps * 32) RepitchKernel(MatrixRepitch c, Index segments, Index items) {
  const Index lane = threadIdx.x % 32;
  const Index to_rows = static_cast<Index>(c.to_rows), to_cols = static_cast<Index>(c.to_cols);
  const int64_t to_ld = c.to_ld != 0 ? c.to_ld : c.to_cols;
  for (Index item = blockIdx.x * kWarps + threadIdx.x / 32; item < items; item += gridDim.x * kWarps) {
    const Index row = segments == 1 ? item : item / segments;
    const Index first = (item - row * segments) * kSegment + lane;
    const Index e = c.entries == 1 ? 0 : row / to_rows, r = row - e * to_rows;
    const Index cols = r < c.rows ? static_cast<Index>(c.cols) : 0;  // the source's columns in this row
    const T* from = static_cast<const T*>(c.from) + static_cast<int64_t>(e) * c.from_stride +
                    static_cast<int64_t>(r) * c.from_ld;
    T* to = static_cast<T*>(c.to) + static_cast<int64_t>(row) * to_ld;
    T v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const Index col = first + 32 * u;
      v[u] = col < cols ? from[col] : T(0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const Index col = first + 32 * u;
      if (col < to_cols) to[col] = v[u];
    }
  }
}

template <typename T>
cudaError_t Launch(const MatrixRepitch& c, cudaStream_t stream) {
  const int64_t segments = (c.to_cols + kSegment - 1) / kSegment;  // a row's
  const int64_t items = c.entries * c.to_rows * segments;
  if (items == 0) return cudaSuccess;
  int device = 0, sms = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess) return e;
  const int64_t blocks = std::min<int64_t>((items + kWarps - 1) / kWarps, int64_t{sms} * 16);
  // The loop's last step past `items`, and a row's last column, stay in range.
  const int64_t reach = std::max(items + blocks * kWarps, segments * kSegment);
  if (reach <= INT32_MAX) {
    RepitchKernel<T, uint32_t><<<static_cast<unsigned>(blocks), kWarps * 32, 0, stream>>>(
        c, static_cast<uint32_t>(segments), static_cast<uint32_t>(items));
  } else {
    RepitchKernel<T, uint64_t><<<static_cast<unsigned>(blocks), kWarps * 32, 0, stream>>>(
        c, static_cast<uint64_t>(segments), static_cast<uint64_t>(items));
  }
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
