#include "gemm/device_ops.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "common/atomic_max.h"
#include "common/random_eight.h"

namespace gemm {
namespace {

constexpr int kThreads = 256;

unsigned Blocks(uint64_t count) {
  const uint64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);  // grid-stride beyond
}

// Element i of a rows×cols matrix (i = r·cols + c) sits at r·ld + c. The
// dense case (ld == cols) skips the division.
__device__ inline uint64_t PitchedOffset(uint64_t i, uint64_t cols, uint64_t ld) {
  return ld == cols ? i : i / cols * ld + i % cols;
}

// Element i of a generated matrix at its place, eight at a time where rows
// allow (one 16-byte store, the operand's stream mixed once per thread):
// generating A and B for 4096³ ran one element and two 64-bit mixes per
// thread with 2-byte stores.
struct FillArgs {
  __half* dst;
  uint64_t count, cols, ld, seed;
  OperandId operand;
  bool vectors;  // rows start on 16 bytes and hold multiples of eight elements
};
struct FillList {
  FillArgs matrices[kMaxRandomMatrices];
};

__device__ void FillOne(const FillArgs& f) {
  const uint64_t stream = RandomStream(f.seed, f.operand);
  const uint64_t first = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x, step = uint64_t{gridDim.x} * blockDim.x;
  if (f.vectors) {
    const uint64_t row_vectors = f.cols / 8;
    for (uint64_t v = first; v < f.count / 8; v += step) {
      const uint64_t i = v * 8;
      const uint64_t at = f.ld == f.cols ? i : v / row_vectors * f.ld + v % row_vectors * 8;
      float values[8];
      RandomValuesIn8(stream, i, values);
      uint4 packed;
      __half2* h = reinterpret_cast<__half2*>(&packed);
#pragma unroll
      for (int j = 0; j < 4; ++j) h[j] = __floats2half2_rn(values[2 * j], values[2 * j + 1]);
      *reinterpret_cast<uint4*>(f.dst + at) = packed;
    }
  } else {
    for (uint64_t i = first; i < f.count; i += step) {
      f.dst[PitchedOffset(i, f.cols, f.ld)] = __float2half_rn(RandomValueIn(stream, i));
    }
  }
}

__global__ void FillRandomKernel(const FillArgs f) { FillOne(f); }

// blockIdx.y picks the matrix; its blocks stride over it as FillRandomKernel's do.
__global__ void FillRandomListKernel(const __grid_constant__ FillList list) { FillOne(list.matrices[blockIdx.y]); }

// The checks reduce in each block and publish with one atomic per field:
// an atomic per warp on one address serialized in L2, and at 4096² (524,288
// warps) cost more than the reference GEMM itself.
constexpr unsigned kReduceBlocks = 1024;  // enough to fill any GPU's SMs; the loops stride beyond

// A fill's blocks: at most kReduceBlocks, each thread striding over several
// vectors. A block per 256 vectors, retired after one store each, made a
// 4096² A and B in 40 us against 35 this way, and 8192² in 136 against 115
// (H100; a memset of the same bytes 29 and 91). Two vectors a thread per
// pass measured no better.
unsigned FillBlocks(uint64_t threads) { return std::min(Blocks(threads), kReduceBlocks); }

struct ComparePartial {
  unsigned long long mismatches = 0, non_finite = 0;
  float max_err = 0.0f;

  __device__ void Add(float v, float r, float atol, float rtol) {
    if (!isfinite(v)) {
      ++non_finite;
      ++mismatches;
      return;
    }
    const float err = fabsf(v - r);
    max_err = fmaxf(max_err, err);
    if (!(err <= atol + rtol * fabsf(r))) ++mismatches;  // a NaN reference fails too
  }
};

// The block's sums and maximum into *result, by its first thread.
__device__ void PublishBlock(ComparePartial p, CompareResult* result) {
  __shared__ ComparePartial warps[kThreads / 32];
  for (int off = 16; off > 0; off /= 2) {
    p.mismatches += __shfl_down_sync(0xffffffffu, p.mismatches, off);
    p.non_finite += __shfl_down_sync(0xffffffffu, p.non_finite, off);
    p.max_err = fmaxf(p.max_err, __shfl_down_sync(0xffffffffu, p.max_err, off));
  }
  if ((threadIdx.x & 31) == 0) warps[threadIdx.x / 32] = p;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (unsigned w = 1; w < blockDim.x / 32; ++w) {
    p.mismatches += warps[w].mismatches;
    p.non_finite += warps[w].non_finite;
    p.max_err = fmaxf(p.max_err, warps[w].max_err);
  }
  if (p.mismatches) atomicAdd(&result->mismatches, p.mismatches);
  if (p.non_finite) atomicAdd(&result->non_finite, p.non_finite);
  AtomicMaxNonNegative(&result->max_abs_error, p.max_err);
}

// Eight fp16 values from one 16-byte load.
__device__ inline void Unpack8(uint4 raw, float out[8]) {
  const __half2* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 f = __half22float2(h[j]);
    out[2 * j] = f.x;
    out[2 * j + 1] = f.y;
  }
}

// blockIdx.y picks the matrix: `stride` elements after the last, its own
// result. `vectors`: every row starts on 16 bytes and holds a multiple of
// eight elements, so each thread reads eight at a time.
__global__ void CompareKernel(const __half* d, const __half* ref, uint64_t count, uint64_t cols, uint64_t ld,
                              uint64_t stride, bool vectors, float rtol, float atol, AccumulationBound bound,
                              CompareResult* results) {
  d += blockIdx.y * stride;
  ref += blockIdx.y * stride;
  CompareResult* result = results + blockIdx.y;
  if (bound.norms != nullptr) {
    const float term = bound.unit_sqrt_k * bound.norms[0] * bound.norms[1];
    atol += term;
    if (blockIdx.x == 0 && threadIdx.x == 0) result->accumulation_atol = term;
  }
  ComparePartial p;
  const uint64_t first = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x, step = uint64_t{gridDim.x} * blockDim.x;
  if (vectors) {
    const uint64_t row_vectors = cols / 8;
    for (uint64_t i = first; i < count / 8; i += step) {
      const uint64_t at = ld == cols ? i * 8 : i / row_vectors * ld + i % row_vectors * 8;
      float v[8], r[8];
      Unpack8(*reinterpret_cast<const uint4*>(d + at), v);
      Unpack8(*reinterpret_cast<const uint4*>(ref + at), r);
#pragma unroll
      for (int j = 0; j < 8; ++j) p.Add(v[j], r[j], atol, rtol);
    }
  } else {
    for (uint64_t i = first; i < count; i += step) {
      const uint64_t at = PitchedOffset(i, cols, ld);
      p.Add(__half2float(d[at]), __half2float(ref[at]), atol, rtol);
    }
  }
  PublishBlock(p, result);
}

// One matrix for MaxRowNormKernel; blockIdx.y picks it.
struct RowNormArgs {
  const __half* x;
  int64_t rows, cols, ld;
  bool vectors;  // rows start on 16 bytes and hold multiples of eight elements
  float* norm;
};
struct RowNormList {
  RowNormArgs matrices[2];
};

// One warp per row at a time, eight elements per lane per load where rows
// allow: each warp keeps its largest sum of squares, the block its largest,
// and one atomic per block on the bits publishes it.
__global__ void MaxRowNormKernel(const __grid_constant__ RowNormList list) {
  const RowNormArgs& m = list.matrices[blockIdx.y];
  __shared__ float warps[kThreads / 32];
  const int lane = threadIdx.x % 32;
  const int64_t all_warps = int64_t{gridDim.x} * (blockDim.x / 32);
  float largest = 0.0f;
  for (int64_t r = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32; r < m.rows; r += all_warps) {
    const __half* row = m.x + r * m.ld;
    float sum = 0.0f;
    if (m.vectors) {
#pragma unroll 4
      for (int64_t c = lane * 8; c < m.cols; c += 32 * 8) {
        float v[8];
        Unpack8(*reinterpret_cast<const uint4*>(row + c), v);
#pragma unroll
        for (int j = 0; j < 8; ++j) sum = fmaf(v[j], v[j], sum);
      }
    } else {
      for (int64_t c = lane; c < m.cols; c += 32) {
        const float v = __half2float(row[c]);
        sum = fmaf(v, v, sum);
      }
    }
    for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off);
    largest = fmaxf(largest, sum);
  }
  if (lane == 0) warps[threadIdx.x / 32] = largest;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (unsigned w = 1; w < blockDim.x / 32; ++w) largest = fmaxf(largest, warps[w]);
  AtomicMaxNonNegative(m.norm, sqrtf(largest));
}

// Whether rows of `cols` elements `ld` apart, from each base, can be read
// sixteen bytes at a time.
bool Vectorizable(uint64_t cols, uint64_t ld, std::initializer_list<const void*> bases) {
  if (cols % 8 != 0 || ld % 8 != 0) return false;
  for (const void* base : bases) {
    if (reinterpret_cast<uintptr_t>(base) % 16 != 0) return false;
  }
  return true;
}

// Whether a generated matrix of `count` elements is written eight at a
// time: only when that still gives every SM threads to spare, since a small
// one (a 64³ request's) is done sooner by a thread per element.
bool FillsInVectors(uint64_t count, uint64_t cols, uint64_t ld, const void* dst) {
  return count / 8 >= uint64_t{kReduceBlocks} * kThreads && Vectorizable(cols, ld, {dst});
}

// 128×128 tiles of D per 256-thread block, 8×8 per thread, K in slices of
// 16 staged through shared memory in the accumulator's type (fp32, or fp64
// for the exact reference). Out-of-range rows and columns load zeros and
// store nothing, so any m, n, k >= 1 works.
constexpr int kRefTile = 128, kRefSlice = 16, kRefPerThread = 8;

__device__ inline void StoreReference(__half* d, float v) { *d = __float2half_rn(v); }
__device__ inline void StoreReference(double* d, double v) { *d = v; }

// One block per SM is all it needs: with the default bounds, sm_100a's ptxas
// held it to 128 registers and spilled 24 bytes (run.sh's SASS check).
template <typename Acc, typename Out>
__global__ void __launch_bounds__(256, 1) ReferenceGemmKernel(const __half* a, int64_t lda, const __half* b,
                                                           int64_t ldb, Out* d, int64_t ldd, int64_t m, int64_t n,
                                                           int64_t k) {
  __shared__ Acc as[kRefSlice][kRefTile];
  __shared__ Acc bs[kRefSlice][kRefTile];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t row_tiles = (m + kRefTile - 1) / kRefTile, col_tiles = (n + kRefTile - 1) / kRefTile;
  for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
    for (int64_t ct = blockIdx.x; ct < col_tiles; ct += gridDim.x) {
      const int64_t row0 = rt * kRefTile, col0 = ct * kRefTile;
      Acc acc[kRefPerThread][kRefPerThread] = {};
      for (int64_t k0 = 0; k0 < k; k0 += kRefSlice) {
        for (int i = threadIdx.x; i < kRefTile * kRefSlice; i += blockDim.x) {
          const int r = i / kRefSlice, c = i % kRefSlice;
          const int64_t kk = k0 + c, ar = row0 + r, br = col0 + r;
          as[c][r] = (ar < m && kk < k) ? static_cast<Acc>(__half2float(a[ar * lda + kk])) : Acc{0};
          bs[c][r] = (br < n && kk < k) ? static_cast<Acc>(__half2float(b[br * ldb + kk])) : Acc{0};
        }
        __syncthreads();
#pragma unroll
        for (int c = 0; c < kRefSlice; ++c) {
          Acc av[kRefPerThread], bv[kRefPerThread];  // unrolled below: registers, not local memory
#pragma unroll
          for (int i = 0; i < kRefPerThread; ++i) av[i] = as[c][ty * kRefPerThread + i];
#pragma unroll
          for (int j = 0; j < kRefPerThread; ++j) bv[j] = bs[c][tx * kRefPerThread + j];
#pragma unroll
          for (int i = 0; i < kRefPerThread; ++i)
#pragma unroll
            for (int j = 0; j < kRefPerThread; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
        }
        __syncthreads();
      }
#pragma unroll
      for (int i = 0; i < kRefPerThread; ++i) {
        const int64_t r = row0 + ty * kRefPerThread + i;
#pragma unroll
        for (int j = 0; j < kRefPerThread; ++j) {
          const int64_t c = col0 + tx * kRefPerThread + j;
          if (r < m && c < n) StoreReference(&d[r * ldd + c], acc[i][j]);
        }
      }
    }
  }
}

}  // namespace

cudaError_t ReferenceGemm(int64_t m, int64_t n, int64_t k, const __half* a, const __half* b, __half* d,
                          cudaStream_t stream) {
  return ReferenceGemm(m, n, k, a, k, b, k, d, n, stream);
}

cudaError_t ReferenceGemm(int64_t m, int64_t n, int64_t k, const __half* a, int64_t lda, const __half* b, int64_t ldb,
                          __half* d, int64_t ldd, cudaStream_t stream) {
  if (m < 1 || n < 1 || k < 1 || lda < k || ldb < k || ldd < n) return cudaErrorInvalidValue;
  const int64_t row_tiles = (m + kRefTile - 1) / kRefTile, col_tiles = (n + kRefTile - 1) / kRefTile;
  const dim3 grid(static_cast<unsigned>(col_tiles < 65535 ? col_tiles : 65535),
                  static_cast<unsigned>(row_tiles < 65535 ? row_tiles : 65535));  // the kernel strides beyond
  ReferenceGemmKernel<float, __half><<<grid, 256, 0, stream>>>(a, lda, b, ldb, d, ldd, m, n, k);
  return cudaGetLastError();
}

cudaError_t ReferenceGemmFp64(int64_t m, int64_t n, int64_t k, const __half* a, int64_t lda, const __half* b,
                              int64_t ldb, double* d, int64_t ldd, cudaStream_t stream) {
  if (m < 1 || n < 1 || k < 1 || lda < k || ldb < k || ldd < n) return cudaErrorInvalidValue;
  const int64_t row_tiles = (m + kRefTile - 1) / kRefTile, col_tiles = (n + kRefTile - 1) / kRefTile;
  const dim3 grid(static_cast<unsigned>(col_tiles < 65535 ? col_tiles : 65535),
                  static_cast<unsigned>(row_tiles < 65535 ? row_tiles : 65535));
  ReferenceGemmKernel<double, double><<<grid, 256, 0, stream>>>(a, lda, b, ldb, d, ldd, m, n, k);
  return cudaGetLastError();
}

// The sum of squares in fp32 per row, the largest norm by atomics on the
// bits (non-negative floats order like their bit patterns); the matrices
// of one call in one launch.
static cudaError_t LaunchRowNorms(RowNormList list, unsigned count, cudaStream_t stream) {
  uint64_t most_rows = 0;
  for (unsigned i = 0; i < count; ++i) {
    const RowNormArgs& m = list.matrices[i];
    if (m.rows < 0 || m.cols < 0 || m.ld < m.cols) return cudaErrorInvalidValue;
    if (cudaError_t e = cudaMemsetAsync(m.norm, 0, sizeof(float), stream); e != cudaSuccess) return e;
    if (m.cols > 0) most_rows = std::max<uint64_t>(most_rows, m.rows);
  }
  if (most_rows == 0) return cudaSuccess;
  for (unsigned i = 0; i < count; ++i) {
    RowNormArgs& m = list.matrices[i];
    m.vectors = Vectorizable(m.cols, m.ld, {m.x});
    if (m.cols == 0) m.rows = 0;
  }
  const unsigned blocks = std::min(Blocks(most_rows * 32), kReduceBlocks);
  MaxRowNormKernel<<<dim3(blocks, count), kThreads, 0, stream>>>(list);
  return cudaGetLastError();
}

cudaError_t MaxRowNorm(const __half* x, int64_t rows, int64_t cols, int64_t ld, float* norm, cudaStream_t stream) {
  return LaunchRowNorms({{{x, rows, cols, ld, false, norm}}}, 1, stream);
}

cudaError_t MaxRowNorms(const __half* a, int64_t a_rows, int64_t lda, const __half* b, int64_t b_rows, int64_t ldb,
                        int64_t cols, float* norms, cudaStream_t stream) {
  return LaunchRowNorms({{{a, a_rows, cols, lda, false, norms}, {b, b_rows, cols, ldb, false, norms + 1}}}, 2, stream);
}

cudaError_t FillRandom(__half* dst, uint64_t count, uint64_t seed, OperandId operand, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  const FillArgs f{dst, count, count, count, seed, operand, FillsInVectors(count, count, count, dst)};
  FillRandomKernel<<<FillBlocks(f.vectors ? count / 8 : count), kThreads, 0, stream>>>(f);
  return cudaGetLastError();
}

cudaError_t FillRandom(__half* dst, int64_t rows, int64_t cols, int64_t ld, uint64_t seed, OperandId operand,
                       cudaStream_t stream) {
  if (rows < 1 || cols < 1) return rows < 0 || cols < 0 ? cudaErrorInvalidValue : cudaSuccess;
  if (ld < cols) return cudaErrorInvalidValue;
  const uint64_t count = static_cast<uint64_t>(rows) * cols;
  const FillArgs f{dst, count, static_cast<uint64_t>(cols), static_cast<uint64_t>(ld), seed, operand,
                   FillsInVectors(count, cols, ld, dst)};
  FillRandomKernel<<<FillBlocks(f.vectors ? count / 8 : count), kThreads, 0, stream>>>(f);
  return cudaGetLastError();
}

cudaError_t FillRandom(const RandomMatrix* matrices, size_t count, cudaStream_t stream) {
  for (size_t i = 0; i < count; ++i) {
    const RandomMatrix& r = matrices[i];
    if (r.rows < 0 || r.cols < 0 || (r.rows > 0 && r.cols > 0 && r.ld < r.cols)) return cudaErrorInvalidValue;
  }
  for (size_t first = 0; first < count; first += kMaxRandomMatrices) {
    FillList list{};
    unsigned n = 0;
    uint64_t largest = 0;
    for (size_t i = first; i < count && i < first + kMaxRandomMatrices; ++i) {
      const RandomMatrix& r = matrices[i];
      const uint64_t elements = static_cast<uint64_t>(r.rows) * static_cast<uint64_t>(r.cols);
      const bool vectors = FillsInVectors(elements, r.cols, r.ld, r.dst);
      list.matrices[n++] = {r.dst, elements, static_cast<uint64_t>(r.cols), static_cast<uint64_t>(r.ld),
                            r.seed, r.operand, vectors};
      const uint64_t threads = vectors ? elements / 8 : elements;  // each thread's first write
      largest = threads > largest ? threads : largest;
    }
    if (largest == 0) continue;
    FillRandomListKernel<<<dim3(FillBlocks(largest), n), kThreads, 0, stream>>>(list);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t Poison(__half* dst, uint64_t count, cudaStream_t stream) {
  return cudaMemsetAsync(dst, 0xFF, count * sizeof(__half), stream);
}

// One matrix is a batch of one.
cudaError_t Compare(const __half* d, const __half* ref, uint64_t count, float rtol, float atol,
                    CompareResult* result, cudaStream_t stream) {
  const auto n = static_cast<int64_t>(count);
  return CompareBatch(d, ref, 1, n, n, 0, 1, rtol, atol, result, stream);
}

cudaError_t Compare(const __half* d, const __half* ref, int64_t rows, int64_t cols, int64_t ld, float rtol,
                    float atol, CompareResult* result, cudaStream_t stream) {
  return CompareBatch(d, ref, rows, cols, ld, 0, 1, rtol, atol, result, stream);
}

cudaError_t Compare(const __half* d, const __half* ref, int64_t rows, int64_t cols, int64_t ld, float rtol,
                    float atol, AccumulationBound bound, CompareResult* result, cudaStream_t stream) {
  if (rows < 0 || cols < 0 || ld < cols) return cudaErrorInvalidValue;
  if (cudaError_t e = cudaMemsetAsync(result, 0, sizeof(CompareResult), stream); e != cudaSuccess) return e;
  const uint64_t count = static_cast<uint64_t>(rows) * cols;
  if (count == 0) return cudaSuccess;
  const bool vectors = Vectorizable(cols, ld, {d, ref});
  const unsigned blocks = std::min(Blocks(vectors ? count / 8 : count), kReduceBlocks);
  CompareKernel<<<dim3(blocks, 1), kThreads, 0, stream>>>(d, ref, count, cols, ld, 0, vectors, rtol, atol, bound,
                                                          result);
  return cudaGetLastError();
}

cudaError_t CompareBatch(const __half* d, const __half* ref, int64_t rows, int64_t cols, int64_t ld,
                         uint64_t stride, uint32_t matrices, float rtol, float atol, CompareResult* results,
                         cudaStream_t stream) {
  if (rows < 0 || cols < 0 || ld < cols || matrices > kMaxCompareBatch) return cudaErrorInvalidValue;
  if (matrices > 1 && stride < static_cast<uint64_t>(rows) * ld) return cudaErrorInvalidValue;
  if (matrices == 0) return cudaSuccess;
  if (cudaError_t e = cudaMemsetAsync(results, 0, matrices * sizeof(CompareResult), stream); e != cudaSuccess) {
    return e;
  }
  const uint64_t count = static_cast<uint64_t>(rows) * cols;
  if (count == 0) return cudaSuccess;
  // Every matrix of the batch starts on 16 bytes when the first does and
  // the stride keeps it so.
  const bool vectors = Vectorizable(cols, ld, {d, ref}) && (matrices == 1 || stride % 8 == 0);
  // Fewer blocks per matrix the more matrices: the grid-stride loop covers the rest.
  const unsigned per_matrix =
      std::max(1u, std::min(Blocks(vectors ? count / 8 : count), kReduceBlocks) / std::min(matrices, kReduceBlocks));
  CompareKernel<<<dim3(per_matrix, matrices), kThreads, 0, stream>>>(d, ref, count, cols, ld, stride, vectors, rtol,
                                                                      atol, AccumulationBound{}, results);
  return cudaGetLastError();
}

L2Flush::~L2Flush() {
  if (buffer_ != nullptr) cudaFree(buffer_);
}

cudaError_t L2Flush::Init(int device) {
  int l2 = 0;
  if (cudaError_t e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device); e != cudaSuccess) return e;
  bytes_ = 2 * static_cast<uint64_t>(l2 > 0 ? l2 : 64 << 20);
  return cudaMalloc(&buffer_, bytes_);
}

cudaError_t L2Flush::Run(cudaStream_t stream) {
  if (buffer_ == nullptr) return cudaErrorInvalidValue;  // Init was not called or failed
  return cudaMemsetAsync(buffer_, ++fill_, bytes_, stream);
}

}  // namespace gemm
