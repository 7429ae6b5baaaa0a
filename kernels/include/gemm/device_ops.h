// Device-side helpers around a GEMM: server-generated inputs, poisoning, the
// comparison with a reference that reads back a few numbers, not D, and the
// L2 flush before a timed run.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "gemm/random_fill.h"

namespace gemm {

// dst[i] = RandomValue(seed, operand, i), the generator every engine shares.
cudaError_t FillRandom(__half* dst, uint64_t count, uint64_t seed, OperandId operand, cudaStream_t stream);
// The same rows×cols matrix with its rows `ld` elements apart: element
// (r, c) is RandomValue(seed, operand, r·cols + c), whatever the pitch; the
// gaps between rows are left as they are.
cudaError_t FillRandom(__half* dst, int64_t rows, int64_t cols, int64_t ld, uint64_t seed, OperandId operand,
                       cudaStream_t stream);
// One pitched matrix for the many-matrix fill below.
struct RandomMatrix {
  __half* dst;
  int64_t rows, cols, ld;
  uint64_t seed;
  OperandId operand;
};
// `count` matrices, each as the pitched FillRandom above fills it, in one
// launch per kMaxRandomMatrices: a small request's A and B, or a batch's
// every A and B, cost one launch's host time (about 5 us on an H100 host)
// instead of one each.
inline constexpr size_t kMaxRandomMatrices = 64;  // kernel parameters: 3 KiB of the 4
cudaError_t FillRandom(const RandomMatrix* matrices, size_t count, cudaStream_t stream);

// Every element becomes 0xFFFF, an fp16 NaN: an element a kernel does not
// write then fails verification.
cudaError_t Poison(__half* dst, uint64_t count, cudaStream_t stream);

struct CompareResult {
  unsigned long long mismatches;  // |d - ref| > atol + rtol·|ref| (+ the accumulation term), or non-finite
  unsigned long long non_finite;  // NaN or Inf in d
  float max_abs_error;            // over finite elements
  float accumulation_atol;        // the K-aware term the comparison added to atol (gemm/tolerance.h)
};

// The largest row norm ‖x_r‖₂ of a rows×cols fp16 matrix whose rows lie
// `ld` elements apart, into *norm (device memory, zeroed by this call).
cudaError_t MaxRowNorm(const __half* x, int64_t rows, int64_t cols, int64_t ld, float* norm, cudaStream_t stream);
// Both operands' (A: a_rows×cols, B: b_rows×cols) into norms[0] and
// norms[1], in one launch.
cudaError_t MaxRowNorms(const __half* a, int64_t a_rows, int64_t lda, const __half* b, int64_t b_rows, int64_t ldb,
                        int64_t cols, float* norms, cudaStream_t stream);

// The K-aware part of the verification bound (gemm/tolerance.h), taken on
// the device: kAccumulationUnit·√K (`unit_sqrt_k`) times norms[0]·norms[1],
// the largest row norms of A and B that MaxRowNorm wrote earlier on the same
// stream. No norms: no such term.
struct AccumulationBound {
  const float* norms = nullptr;
  float unit_sqrt_k = 0;
};

// Compares d with ref into *result (device memory, zeroed by this call).
cudaError_t Compare(const __half* d, const __half* ref, uint64_t count, float rtol, float atol,
                    CompareResult* result, cudaStream_t stream);
// The same over rows×cols matrices whose rows lie `ld` elements apart (both
// d and ref); the gaps between rows are not read.
cudaError_t Compare(const __half* d, const __half* ref, int64_t rows, int64_t cols, int64_t ld, float rtol,
                    float atol, CompareResult* result, cudaStream_t stream);
// With the accumulation term added to atol.
cudaError_t Compare(const __half* d, const __half* ref, int64_t rows, int64_t cols, int64_t ld, float rtol,
                    float atol, AccumulationBound bound, CompareResult* result, cudaStream_t stream);
// `matrices` such pairs in one launch, each `stride` elements after the one
// before (at least rows·ld), into results[0..matrices) (zeroed by this
// call): a batch's checks cost one launch, not one each.
constexpr uint32_t kMaxCompareBatch = 65535;  // the grid's y dimension
cudaError_t CompareBatch(const __half* d, const __half* ref, int64_t rows, int64_t cols, int64_t ld,
                         uint64_t stride, uint32_t matrices, float rtol, float atol, CompareResult* results,
                         cudaStream_t stream);

// D = A·Bᵀ (Problem's layout) by a plain SIMT kernel: fp32 products and
// sums on the CUDA cores, one rounding to fp16. Slow next to the tensor
// cores, but it shares no code, instruction or library with cuBLAS or the
// ladder, so it is the independent reference for step 0 (cuBLAS itself).
cudaError_t ReferenceGemm(int64_t m, int64_t n, int64_t k, const __half* a, const __half* b, __half* d,
                          cudaStream_t stream);
// With leading dimensions (rows lda, ldb, ldd elements apart).
cudaError_t ReferenceGemm(int64_t m, int64_t n, int64_t k, const __half* a, int64_t lda, const __half* b, int64_t ldb,
                          __half* d, int64_t ldd, cudaStream_t stream);

// The exact product, as far as fp64 holds it: fp16 products are exact in
// fp64 and the sum's rounding is at most K·2^-53·Σ|a·b|, far below what any
// fp32-accumulated GEMM carries. D is fp64 (rows ldd apart). For measuring
// the accuracy of the steps and of cuBLAS (gemm-bench --accuracy).
cudaError_t ReferenceGemmFp64(int64_t m, int64_t n, int64_t k, const __half* a, int64_t lda, const __half* b,
                              int64_t ldb, double* d, int64_t ldd, cudaStream_t stream);

// Evicts what earlier work left in L2 by writing a buffer twice the L2's
// size. Run before every timed GEMM (outside the timed region) so that each
// run reads A and B from DRAM, as a request's freshly written inputs mostly
// are, whatever ran before it: the server and gemm-bench time under the same
// conditions, and a step timed after cuBLAS on the same inputs gains nothing.
class L2Flush {
 public:
  L2Flush() = default;
  ~L2Flush();
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;

  // Allocates on `device`, which must be the current device.
  cudaError_t Init(int device);
  cudaError_t Run(cudaStream_t stream);

 private:
  void* buffer_ = nullptr;
  uint64_t bytes_ = 0;
  unsigned char fill_ = 0;  // changes every run, so no write is a no-op
};

}  // namespace gemm
