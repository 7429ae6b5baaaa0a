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

// Up to kMaxCopies copies of one element size in one launch, each on its
// own range of blocks: every launch costs a small copy more than its work
// does, and a padded problem copies two or three operands before its GEMM.
// A block works out its copy once and keeps it in registers: dispatching
// each warp's item among the copies made large copies 25% slower.
constexpr int kMaxCopies = 3;
struct RepitchLaunch {
  MatrixRepitch copy[kMaxCopies];
  int64_t segments[kMaxCopies];  // a row's, in each copy
  int64_t items[kMaxCopies];
  unsigned first_block[kMaxCopies + 1];  // where each copy's blocks start; the last: the grid
  int count;
};

// A warp's segment `item` of copy c.
template <typename T, typename Index>
__device__ void CopySegment(const MatrixRepitch& c, Index segments, Index item, Index lane) {
  const Index to_rows = static_cast<Index>(c.to_rows), to_cols = static_cast<Index>(c.to_cols);
  const int64_t to_ld = c.to_ld != 0 ? c.to_ld : c.to_cols;
  const Index row = segments == 1 ? item : item / segments;
  const Index first = (item - row * segments) * kSegment + lane;
  const Index e = c.entries == 1 ? 0 : row / to_rows, r = row - e * to_rows;
  const Index cols = r < c.rows ? static_cast<Index>(c.cols) : 0;  // the source's columns in this row
  // This lane's first element, so that each load and store is that address
  // plus a constant: indexing from the row's start cost four instructions an
  // element.
  const T* from = static_cast<const T*>(c.from) + static_cast<int64_t>(e) * c.from_stride +
                  static_cast<int64_t>(r) * c.from_ld + first;
  T* to = static_cast<T*>(c.to) + static_cast<int64_t>(row) * to_ld + first;
  T v[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) v[u] = first + 32 * u < cols ? from[32 * u] : T(0);
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    if (first + 32 * u < to_cols) to[32 * u] = v[u];
  }
}

// Index: uint32_t wherever every item's index fits, as it does for any
// copy under 2^31 segments: a warp's item is two divisions, which in 64 bits
// take several times the instructions, and a small copy is mostly this
// prologue.
template <typename T, typename Index>
__global__ void __launch_bounds__(kWarps * 32) RepitchKernel(const __grid_constant__ RepitchLaunch l) {
  int j = 0;  // this block's copy
  while (j + 1 < l.count && blockIdx.x >= l.first_block[j + 1]) ++j;
  const MatrixRepitch c = l.copy[j];
  const Index items = static_cast<Index>(l.items[j]), segments = static_cast<Index>(l.segments[j]);
  const Index blocks = l.first_block[j + 1] - l.first_block[j], lane = threadIdx.x % 32;
  for (Index item = (blockIdx.x - l.first_block[j]) * kWarps + threadIdx.x / 32; item < items;
       item += blocks * kWarps) {
    CopySegment<T, Index>(c, segments, item, lane);
  }
}

// copies[0..count): one element size, count <= kMaxCopies.
template <typename T>
cudaError_t Launch(const MatrixRepitch* copies, int count, cudaStream_t stream) {
  int device = 0, sms = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess) return e;
  const int64_t most_blocks = int64_t{sms} * 16;
  RepitchLaunch l{};
  int64_t all_items = 0, widest = 0;
  for (int i = 0; i < count; ++i) {
    const MatrixRepitch& c = copies[i];
    const int64_t rows = c.entries * c.to_rows;
    l.copy[i] = c;
    l.segments[i] = (c.to_cols + kSegment - 1) / kSegment;  // a row's
    l.items[i] = rows * l.segments[i];
    widest = std::max({widest, l.segments[i] * kSegment, rows});
    all_items += l.items[i];
  }
  if (all_items == 0) return cudaSuccess;
  // Blocks in proportion to each copy's items, at least one each.
  const int64_t grid_warps = std::min(all_items, most_blocks * kWarps);
  for (int i = 0; i < count; ++i) {
    const int64_t warps = std::max<int64_t>(1, l.items[i] * grid_warps / all_items);
    l.first_block[i + 1] = l.first_block[i] + static_cast<unsigned>(std::min<int64_t>(
                                                  (warps + kWarps - 1) / kWarps, (l.items[i] + kWarps - 1) / kWarps));
  }
  l.count = count;
  const unsigned blocks = l.first_block[count];
  // The loop's last step past the items, and a row's last column, stay in range.
  if (std::max(all_items + int64_t{blocks} * kWarps, widest) <= INT32_MAX) {
    RepitchKernel<T, uint32_t><<<blocks, kWarps * 32, 0, stream>>>(l);
  } else {
    RepitchKernel<T, uint64_t><<<blocks, kWarps * 32, 0, stream>>>(l);
  }
  return cudaGetLastError();
}

cudaError_t LaunchOfSize(uint32_t element_bytes, const MatrixRepitch* copies, int count, cudaStream_t stream) {
  switch (element_bytes) {
    case 1: return Launch<uint8_t>(copies, count, stream);
    case 2: return Launch<uint16_t>(copies, count, stream);
    case 4: return Launch<uint32_t>(copies, count, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t CopyRepitched(const MatrixRepitch& c, cudaStream_t stream) {
  return LaunchOfSize(c.element_bytes, &c, 1, stream);
}

cudaError_t CopyRepitched(const MatrixRepitch* copies, int count, cudaStream_t stream) {
  // Every element size checked before anything is launched.
  for (int i = 0; i < count; ++i) {
    const uint32_t bytes = copies[i].element_bytes;
    if (bytes != 1 && bytes != 2 && bytes != 4) return cudaErrorInvalidValue;
  }
  // One launch per element size (a second where it has more than
  // kMaxCopies), its copies in the order given.
  for (uint32_t bytes : {1u, 2u, 4u}) {
    MatrixRepitch same[kMaxCopies];
    int n = 0;
    for (int i = 0; i < count; ++i) {
      const MatrixRepitch& c = copies[i];
      if (c.element_bytes != bytes) continue;
      if (n == kMaxCopies) {
        if (cudaError_t e = LaunchOfSize(bytes, same, n, stream); e != cudaSuccess) return e;
        n = 0;
      }
      same[n++] = c;
    }
    if (n > 0) {
      if (cudaError_t e = LaunchOfSize(bytes, same, n, stream); e != cudaSuccess) return e;
    }
  }
  return cudaSuccess;
}

}  // namespace gemm::common
