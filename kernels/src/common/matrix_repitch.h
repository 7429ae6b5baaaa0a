// Batched row-major matrices copied from one pitch to another in one pass
// over the destination, zeros wherever the destination is larger: step 0's
// padded copies (vendor_form_padding.h) in, and D out of its padding; the
// ladder's copies of operands at pitches TMA cannot take (tma_problem.h),
// and D back to the caller's pitch.
// A memset and cudaMemcpy2DAsync did the same in two passes: on an H200 the
// copies for bf16 x @ W at 2470x3725x3100 took 0.097 ms beside its 0.079 ms
// GEMM; this kernel takes 0.041 (gemm-bench --vendor-padding).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gemm::common {

struct MatrixRepitch {
  const void* from = nullptr;
  int64_t from_ld = 0;      // elements from one row to the next
  int64_t from_stride = 0;  // elements from one entry to the next; 0 reads entry 0 for each
  void* to = nullptr;       // entries of to_rows x to_cols, one after another
  int64_t to_rows = 0, to_cols = 0;
  int64_t to_ld = 0;  // elements from one row of `to` to the next; 0: to_cols. Past to_cols nothing is written
  int64_t rows = 0, cols = 0;  // what is copied (at most to's); the rest of `to` is zero
  int64_t entries = 1;
  uint32_t element_bytes = 2;  // 1, 2 or 4
};

cudaError_t CopyRepitched(const MatrixRepitch& c, cudaStream_t stream);
// Several copies, in one launch for each element size among them (a few
// microseconds each, which a small padded problem feels): a padded
// problem's operands before its GEMM.
cudaError_t CopyRepitched(const MatrixRepitch* copies, int count, cudaStream_t stream);

}  // namespace gemm::common
