// gemm/form_ops.h says what these are. CUDA-core code, and fp64 tensor-core
// code for the reference GEMM, on purpose: the reference must share no
// instruction, library or tiling with cuBLASLt, whose kernels for the forms
// it checks (fp32, tf32, fp8, 16-bit operands) use no fp64 instruction.
#include "gemm/form_ops.h"

#include <mma.h>

#include <algorithm>
#include <cmath>

#include "common/atomic_max.h"
#include "common/random_eight.h"

namespace gemm {
namespace {

unsigned GridFor(uint64_t count, unsigned threads = 256) {
  const uint64_t blocks = (count + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 * 4 ? (blocks == 0 ? 1 : blocks) : 65535 * 4);
}

// Eight elements a thread from one RandomValuesIn8, rounded to T and
// stored as one vector of their bytes where `dst` is aligned to it (two
// 16-byte stores for fp32); the rest one element a thread. The loop it
// replaced, runtime-typed with one element and one 64-bit mix a thread,
// made a bf16 4096² A and B in 0.136 ms on an H100, where fp16's
// eight-at-a-time path (device_ops.cu) took 0.036. Storing a value rounds
// it as RandomValueAs does, so the bits are the same.
template <ElementType T>
__global__ void FillRandomKernel(void* dst, uint64_t count, uint64_t stream, bool eights) {
  constexpr int kBytes = 8 * static_cast<int>(ElementBytes(T));
  const uint64_t first = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x, step = uint64_t{gridDim.x} * blockDim.x;
  uint64_t done = 0;
  if (eights) {
    for (uint64_t v = first; v < count / 8; v += step) {
      float values[8];
      RandomValuesIn8(stream, v * 8, values);
      alignas(16) unsigned char bytes[kBytes];
#pragma unroll
      for (int j = 0; j < 8; ++j) StoreElement(T, bytes, j, values[j]);
      char* at = static_cast<char*>(dst) + v * kBytes;
      if constexpr (kBytes == 8) {
        *reinterpret_cast<uint2*>(at) = *reinterpret_cast<const uint2*>(bytes);
      } else {
#pragma unroll
        for (int q = 0; q < kBytes / 16; ++q) {
          reinterpret_cast<uint4*>(at)[q] = reinterpret_cast<const uint4*>(bytes)[q];
        }
      }
    }
    done = count / 8 * 8;
  }
  for (uint64_t i = done + first; i < count; i += step) StoreElement(T, dst, i, RandomValueIn(stream, i));
}

__global__ void ConvertKernel(const float* src, ElementType type, void* dst, uint64_t count) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += uint64_t{gridDim.x} * blockDim.x) {
    StoreElement(type, dst, i, src[i]);
  }
}

__global__ void WidenKernel(const void* src, ElementType type, __half* dst, uint64_t count) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += uint64_t{gridDim.x} * blockDim.x) {
    dst[i] = __float2half_rn(LoadElement(type, src, i));
  }
}

// A 64×64 block of outputs per four warps, each warp 32×32 of them as 4×4
// fp64 tensor-core tiles (wmma m8n8k4, DMMA), over 16-deep steps of K
// whose op(A) and op(B) tiles are widened to fp64 in shared memory. Batch
// entry per blockIdx.z. Every product of the stored types is exact in
// fp64, and DMMA adds in fp64 (FormsGpu.TheFp64ReferenceIsTheProductInEveryForm
// holds it within 1e-13 of the host's fp64 sums). DMMA's peak is twice the
// fp64 FMA units': on an H100 the SIMT kernel this replaced ran at 7.8
// TFLOPS, this one at about 20 (the fp32 4096^3 full check 17.7 -> 6.9 ms).
constexpr int kBlock = 64, kStep = 16, kWarpTile = 32, kFrag = 8, kFragK = 4, kReferenceThreads = 128;
// A row of 20 doubles: 160 bytes, so that 8 rows are a multiple of the 32
// that wmma's loads need, and each row 8 banks on from the last, so that
// the rows a half-warp's fragment load touches fall in different banks.
constexpr int kTileLd = kStep + 4;
using FragA = nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, kFrag, kFrag, kFragK, double, nvcuda::wmma::row_major>;
using FragB = nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, kFrag, kFrag, kFragK, double, nvcuda::wmma::col_major>;
using FragAcc = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, kFrag, kFrag, kFragK, double>;

// Where one thread's elements of an operand's tile lie: its l-th at row
// r + l·dr and k kk + l·dk of the tile (the operand's rows being op(A)'s
// rows or op(B)'s columns), which memory holds `row_stride` and
// `k_stride` apart. Along K, neighbouring threads take neighbouring k;
// stored MN-contiguous, neighbouring rows.
struct TileWalk {
  static constexpr int kLoads = kBlock * kStep / kReferenceThreads;
  int r, kk, dr, dk;
  int64_t rows, k, row_stride, k_stride, first;  // first: element (r, kk) at k0 = 0

  __device__ TileWalk(Layout layout, int tid, int64_t row0, int64_t mn, int64_t k_, uint64_t base)
      : rows(mn - row0), k(k_) {
    const bool along_k = layout == Layout::kKContiguous;
    r = along_k ? tid / kStep : tid % kBlock;
    kk = along_k ? tid % kStep : tid / kBlock;
    dr = along_k ? kReferenceThreads / kStep : 0;
    dk = along_k ? 0 : kReferenceThreads / kBlock;
    row_stride = along_k ? k : 1;  // stored mn × k, or k × mn
    k_stride = along_k ? 1 : mn;
    first = static_cast<int64_t>(base) + (row0 + r) * row_stride + kk * k_stride;
  }
  template <ElementType kType>
  __device__ void Fetch(const void* x, int64_t k0, float out[kLoads]) const {
    const int64_t at = first + k0 * k_stride, step = dr * row_stride + dk * k_stride;
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const bool inside = r + l * dr < rows && k0 + kk + l * dk < k;
      out[l] = inside ? LoadElement(kType, x, static_cast<uint64_t>(at + l * step)) : 0.0f;
    }
  }
  __device__ void Stash(const float in[kLoads], double* tile) const {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) tile[(r + l * dr) * kTileLd + kk + l * dk] = in[l];
  }
};

// Four blocks an SM: 128 registers a thread, where ptxas otherwise took
// 255 and left room for two. The K step's fragments are unrolled two deep
// for the same reason (four deep spilled).
template <ElementType kA, ElementType kB>
__global__ void __launch_bounds__(kReferenceThreads, 4) ReferenceKernel(FormProblem p, double* ref) {
  // op(A)'s tile row-major (row i, then k) and op(B)'s column-major (column
  // j, then k): both K-contiguous, as the fragments read them. The block's
  // sums go out through the same space.
  constexpr int kTileDoubles = kBlock * kTileLd;
  __shared__ __align__(128) double tiles[std::max(2 * kTileDoubles, kBlock * kBlock)];
  double* as = tiles;
  double* bs = tiles + kTileDoubles;
  const GemmForm& f = p.form;
  const int64_t e = blockIdx.z;
  const int64_t row0 = int64_t{blockIdx.y} * kBlock, col0 = int64_t{blockIdx.x} * kBlock;
  const int tid = threadIdx.x, warp = tid / 32;
  const int warp_row = (warp / 2) * kWarpTile, warp_col = (warp % 2) * kWarpTile;
  const uint64_t a0 = static_cast<uint64_t>(e * f.stride_a), b0 = static_cast<uint64_t>(e * f.stride_b);
  FragAcc acc[kWarpTile / kFrag][kWarpTile / kFrag];
#pragma unroll
  for (auto& row : acc) {
#pragma unroll
    for (auto& tile : row) nvcuda::wmma::fill_fragment(tile, 0.0);
  }
  // 1,024 elements of each tile, 8 a thread; neighbouring threads take
  // neighbouring elements of memory: along K or along M (N), as stored.
  // The next step's are loaded while this one's products run, as floats
  // (every stored type widens to fp32 exactly), and widened into the
  // tiles after: the loads' latency, not the DMMA, had set the time.
  const TileWalk walk_a(f.a_layout, tid, row0, p.m, p.k, a0), walk_b(f.b_layout, tid, col0, p.n, p.k, b0);
  float next_a[TileWalk::kLoads], next_b[TileWalk::kLoads];
  walk_a.Fetch<kA>(p.a, 0, next_a);
  walk_b.Fetch<kB>(p.b, 0, next_b);
  for (int64_t k0 = 0; k0 < p.k; k0 += kStep) {
    walk_a.Stash(next_a, as);
    walk_b.Stash(next_b, bs);
    __syncthreads();
    if (k0 + kStep < p.k) {
      walk_a.Fetch<kA>(p.a, k0 + kStep, next_a);
      walk_b.Fetch<kB>(p.b, k0 + kStep, next_b);
    }
#pragma unroll 2
    for (int kk = 0; kk < kStep; kk += kFragK) {
      FragA fa[kWarpTile / kFrag];
      FragB fb[kWarpTile / kFrag];
#pragma unroll
      for (int u = 0; u < kWarpTile / kFrag; ++u) {
        nvcuda::wmma::load_matrix_sync(fa[u], as + (warp_row + kFrag * u) * kTileLd + kk, kTileLd);
        nvcuda::wmma::load_matrix_sync(fb[u], bs + (warp_col + kFrag * u) * kTileLd + kk, kTileLd);
      }
#pragma unroll
      for (int u = 0; u < kWarpTile / kFrag; ++u) {
#pragma unroll
        for (int v = 0; v < kWarpTile / kFrag; ++v) nvcuda::wmma::mma_sync(acc[u][v], fa[u], fb[v], acc[u][v]);
      }
    }
    __syncthreads();
  }
  // The block's sums through shared memory (the tiles' space, free now),
  // then out a row at a time with α' and β·C.
  double* out = tiles;
#pragma unroll
  for (int u = 0; u < kWarpTile / kFrag; ++u) {
#pragma unroll
    for (int v = 0; v < kWarpTile / kFrag; ++v) {
      nvcuda::wmma::store_matrix_sync(out + (warp_row + kFrag * u) * kBlock + warp_col + kFrag * v, acc[u][v], kBlock,
                                      nvcuda::wmma::mem_row_major);
    }
  }
  __syncthreads();
  const double scale = f.ProductScale();
  for (int idx = tid; idx < kBlock * kBlock; idx += kReferenceThreads) {
    const int64_t i = row0 + idx / kBlock, j = col0 + idx % kBlock;
    if (i >= p.m || j >= p.n) continue;
    double value = scale * out[idx];
    if (f.ReadsC()) value += f.beta * LoadElement(f.c, p.c, static_cast<uint64_t>(e * f.stride_c + i * p.n + j));
    ref[(static_cast<uint64_t>(e) * p.m + i) * p.n + j] = value;
  }
}

// The largest ‖row‖₂ over K of one operand, `mn` rows (M of A, N of B) in
// each of `gridDim.y` batch entries `stride` apart, into *out. A block takes
// 32 rows, and its reads run along memory whichever way they are stored:
// stored mn × k, a warp takes a row, its lanes along K; stored k × mn, lane
// i takes the i-th row (a column of storage, so a warp reads 32 adjacent
// elements) and each warp a 32nd of K. Loads unrolled eight deep, the type
// a template parameter so that each is one load and a widening; sums of
// squares in fp64, as the reference's.
constexpr int kNormWarps = 32, kNormThreads = 32 * kNormWarps;

template <ElementType kType, bool kKContiguous>
__global__ void __launch_bounds__(kNormThreads) NormsKernel(const void* x, int64_t mn, int64_t k, int64_t stride,
                                                            float* out) {
  const uint64_t base = static_cast<uint64_t>(blockIdx.y) * static_cast<uint64_t>(stride);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  double sum = 0;
  if constexpr (kKContiguous) {
    const int64_t row = int64_t{blockIdx.x} * 32 + warp;
    if (row < mn) {
      const uint64_t first = base + static_cast<uint64_t>(row) * k;
#pragma unroll 8
      for (int64_t kk = lane; kk < k; kk += 32) {
        const double v = LoadElement(kType, x, first + kk);
        sum += v * v;
      }
    }
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffff, sum, offset);
    if (lane == 0) AtomicMaxNonNegative(out, static_cast<float>(sqrt(sum)));
  } else {
    __shared__ double partial[kNormWarps][32];
    const int64_t row = int64_t{blockIdx.x} * 32 + lane;
    if (row < mn) {
#pragma unroll 8
      for (int64_t kk = warp; kk < k; kk += kNormWarps) {
        const double v = LoadElement(kType, x, base + static_cast<uint64_t>(kk) * mn + row);
        sum += v * v;
      }
    }
    partial[warp][lane] = sum;
    __syncthreads();
    if (warp != 0) return;
    sum = 0;
    for (int w = 0; w < kNormWarps; ++w) sum += partial[w][lane];
    for (int offset = 16; offset > 0; offset /= 2) sum = fmax(sum, __shfl_down_sync(0xffffffff, sum, offset));
    if (lane == 0) AtomicMaxNonNegative(out, static_cast<float>(sqrt(sum)));
  }
}

// NormsKernel over one operand: its type, layout and batch entries (one
// where the batch shares it).
cudaError_t LaunchNorms(const void* x, ElementType type, Layout layout, int64_t mn, int64_t k, int64_t stride,
                        int64_t batch, float* out, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((mn + 31) / 32), static_cast<unsigned>(stride == 0 ? 1 : batch));
  WithElementType(type, [&](auto t) {
    if (layout == Layout::kKContiguous) {
      NormsKernel<t.value, true><<<grid, kNormThreads, 0, stream>>>(x, mn, k, stride, out);
    } else {
      NormsKernel<t.value, false><<<grid, kNormThreads, 0, stream>>>(x, mn, k, stride, out);
    }
  });
  return cudaGetLastError();
}

__global__ void MaxAbsKernel(const void* c, ElementType type, uint64_t count, float* out) {
  float largest = 0;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += uint64_t{gridDim.x} * blockDim.x) {
    largest = fmaxf(largest, fabsf(LoadElement(type, c, i)));
  }
  WarpAtomicMaxNonNegative(out, largest);
}

// A reference's element i: the fp64 GEMM's, or another tensor-core
// GEMM's D in its element type.
struct Fp64Reference {
  const double* data;
  __device__ double operator()(uint64_t i) const { return data[i]; }
};
struct TypedReference {
  const void* data;
  ElementType type;
  __device__ double operator()(uint64_t i) const { return LoadElement(type, data, i); }
};

// An element fails where d is not finite or not within the bound of the
// reference, a reference that is not finite included.
template <typename Reference>
__global__ void CompareKernel(const void* d, ElementType type, Reference ref, uint64_t count, double rtol,
                              double atol, FormBoundTerms terms, CompareResult* result) {
  const double term = terms.bound == nullptr
                          ? 0.0
                          : terms.product * terms.bound[0] * terms.bound[1] + terms.c * terms.bound[2];
  if (blockIdx.x == 0 && threadIdx.x == 0) result->accumulation_atol = static_cast<float>(term);
  unsigned long long mismatches = 0, non_finite = 0;
  float worst = 0;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += uint64_t{gridDim.x} * blockDim.x) {
    const double value = LoadElement(type, d, i);
    if (!isfinite(value)) {
      ++non_finite;
      ++mismatches;
      continue;
    }
    const double expected = ref(i);
    const double err = fabs(value - expected);
    worst = fmaxf(worst, static_cast<float>(err));
    if (!(err <= atol + term + rtol * fabs(expected))) ++mismatches;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    mismatches += __shfl_down_sync(0xffffffff, mismatches, offset);
    non_finite += __shfl_down_sync(0xffffffff, non_finite, offset);
  }
  if ((threadIdx.x & 31) == 0) {
    if (mismatches) atomicAdd(&result->mismatches, mismatches);
    if (non_finite) atomicAdd(&result->non_finite, non_finite);
  }
  WarpAtomicMaxNonNegative(&result->max_abs_error, worst);
}

// The grid of a pass that ends in atomics on one address: a few waves of
// blocks, each thread looping over elements. A thread an element made
// those atomics the comparison's cost: 0.41 ms at 4096² on an H100,
// against 0.03 for the plain GEMM's comparison.
constexpr unsigned kReducingBlocks = 1024;
unsigned ReducingGrid(uint64_t count) { return std::min(GridFor(count), kReducingBlocks); }

}  // namespace

cudaError_t FillRandom(void* dst, ElementType type, uint64_t count, uint64_t seed, OperandId operand,
                       cudaStream_t stream) {
  const uint64_t vector_bytes = std::min<uint64_t>(8 * ElementBytes(type), 16);
  const bool eights = reinterpret_cast<uintptr_t>(dst) % vector_bytes == 0;
  WithElementType(type, [&](auto t) {
    FillRandomKernel<t.value><<<GridFor(eights ? count / 8 : count), 256, 0, stream>>>(
        dst, count, RandomStream(seed, operand), eights);
  });
  return cudaGetLastError();
}

cudaError_t ConvertFromFloat(const float* src, ElementType type, void* dst, uint64_t count, cudaStream_t stream) {
  ConvertKernel<<<GridFor(count), 256, 0, stream>>>(src, type, dst, count);
  return cudaGetLastError();
}

cudaError_t WidenToF16(const void* src, ElementType type, __half* dst, uint64_t count, cudaStream_t stream) {
  WidenKernel<<<GridFor(count), 256, 0, stream>>>(src, type, dst, count);
  return cudaGetLastError();
}

cudaError_t ReferenceFormGemm(const FormProblem& p, double* ref, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.n + kBlock - 1) / kBlock), static_cast<unsigned>((p.m + kBlock - 1) / kBlock),
                  static_cast<unsigned>(p.form.batch));
  // The type pairs gemm::CombinationError takes: one type, or two fp8.
  bool launched = false;
  WithElementType(p.form.a, [&](auto a) {
    WithElementType(p.form.b, [&](auto b) {
      if constexpr (a.value == b.value || (IsFp8(a.value) && IsFp8(b.value))) {
        ReferenceKernel<a.value, b.value><<<grid, kReferenceThreads, 0, stream>>>(p, ref);
        launched = true;
      }
    });
  });
  return launched ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t FormBoundInputs(const FormProblem& p, float* bound, cudaStream_t stream) {
  if (auto e = cudaMemsetAsync(bound, 0, 3 * sizeof(float), stream); e != cudaSuccess) return e;
  const GemmForm& f = p.form;
  if (auto e = LaunchNorms(p.a, f.a, f.a_layout, p.m, p.k, f.stride_a, f.batch, bound, stream); e != cudaSuccess) {
    return e;
  }
  if (auto e = LaunchNorms(p.b, f.b, f.b_layout, p.n, p.k, f.stride_b, f.batch, bound + 1, stream); e != cudaSuccess) {
    return e;
  }
  if (!p.form.ReadsC()) return cudaSuccess;
  const uint64_t c_count = StorageOfC(p.form, p.m, p.n).Footprint(p.form.batch);
  MaxAbsKernel<<<ReducingGrid(c_count), 256, 0, stream>>>(p.c, p.form.c, c_count, bound + 2);
  return cudaGetLastError();
}

cudaError_t CompareForm(const void* d, ElementType type, const double* ref, uint64_t count, double rtol, double atol,
                        FormBoundTerms terms, CompareResult* result, cudaStream_t stream) {
  if (auto e = cudaMemsetAsync(result, 0, sizeof(CompareResult), stream); e != cudaSuccess) return e;
  CompareKernel<<<ReducingGrid(count), 256, 0, stream>>>(d, type, Fp64Reference{ref}, count, rtol, atol, terms,
                                                        result);
  return cudaGetLastError();
}

cudaError_t CompareForm(const void* d, ElementType type, const void* ref, ElementType ref_type, uint64_t count,
                        double rtol, double atol, FormBoundTerms terms, CompareResult* result, cudaStream_t stream) {
  if (auto e = cudaMemsetAsync(result, 0, sizeof(CompareResult), stream); e != cudaSuccess) return e;
  CompareKernel<<<ReducingGrid(count), 256, 0, stream>>>(d, type, TypedReference{ref, ref_type}, count, rtol, atol,
                                                        terms, result);
  return cudaGetLastError();
}

}  // namespace gemm
