// The kernel library's CUDA API: a problem, a step, a stream. Step 0 is
// cuBLAS; steps 1-10 are the ladder (kernels/src/sm90, kernels/src/sm100).
// No gRPC, no server: the engine and gemm-bench both sit on this.
#pragma once

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "gemm/element_type.h"
#include "gemm/form.h"

namespace gemm {

// D[m,n] = A[m,k]·B[n,k]ᵀ. Device pointers; all three row-major. lda, ldb
// and ldd count the elements from one row to the next (at least k, k and
// n, or m and n for A and B stored MN-contiguous); 0 means dense. The TMA steps read and write in place when a pitch is a
// multiple of 8 elements (16 bytes) and the base 16-byte aligned; any other
// layout goes through a padded copy, which costs a pass over the operand.
//
// TMA stores write whole 16-byte pieces: on an H100 a row of D whose length
// is not a multiple of 8 elements gets its tail overwritten up to the next
// 16 bytes (run.sh's StepPitchTest caught it; triton-lang/triton#11583 saw
// the same). So the TMA steps write such a D in place only when the caller
// says those elements are its own padding (d_tail_is_scratch, as the server's
// pitched buffers are); otherwise D goes through a copy and comes back n
// columns wide.
class VendorPlan;
struct VendorForms;  // gemm/vendor_forms.h

// The smallest pitch of at least `row` fp16 elements that the TMA steps take
// in place: a whole number of 16 bytes.
constexpr int64_t SixteenBytePitch(int64_t row) { return (row + 7) / 8 * 8; }

// The pitch the server's engine stores matrices at: whole 128-byte lines
// (64 fp16 elements), so that every row of a TMA box starts a line of L2.
// At a pitch of only whole 16 bytes, most rows start inside a 32-byte
// sector and each box row reads one sector more (kernels/README.md,
// "Leading dimensions").
constexpr int64_t LinePitch(int64_t row) { return (row + 63) / 64 * 64; }

struct Problem {
  int64_t m = 0, n = 0, k = 0;
  // 16-bit elements of the types below; __half is only their storage here.
  const __half* a = nullptr;
  const __half* b = nullptr;
  __half* d = nullptr;
  int64_t lda = 0, ldb = 0, ldd = 0;
  bool d_tail_is_scratch = false;
  // A and B share one type, fp16 or bf16; D is fp16 or bf16. Accumulation
  // is fp32 in every step.
  ElementType operands = ElementType::kF16;
  ElementType result = ElementType::kF16;
  // MN-contiguous: A is stored k×m (lda at least m), B k×n (ldb at least
  // n), as x @ W stores W; D = op(A)·op(B) is the same product.
  Layout a_layout = Layout::kKContiguous;
  Layout b_layout = Layout::kKContiguous;
  // D = alpha·A·B + beta·C, in fp32 before D's rounding. C is m×n of D's
  // type, rows ldc apart (0: n), read only where beta is not 0; it may be
  // D itself (at D's pitch).
  float alpha = 1, beta = 0;
  const __half* c = nullptr;
  int64_t ldc = 0;
  // A strided batch: `batch` problems of this shape, entry i's A, B and C
  // i·stride_a, i·stride_b and i·stride_c elements after entry 0's (0
  // shares one matrix across the batch), its D i·stride_d after (0: dense,
  // m·ldd). Entries of D must not overlap.
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_d = 0;
};

// "" when every step takes the problem's element types; otherwise why not.
std::string ProblemTypesError(const Problem& p);

// What one device needs to run any step; created once per device and owner
// (the engine keeps one per worker lane, gemm-bench one per process).
struct DeviceContext {
  int device = 0;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  size_t smem_optin = 0;  // largest dynamic shared memory a block may ask for
  cublasHandle_t cublas = nullptr;
  void* cublas_workspace = nullptr;
  size_t cublas_workspace_bytes = 0;
  // When set, step 0 runs the kernel this plan picked and loaded ahead
  // (gemm/vendor_plan.h); otherwise cublasGemmEx picks at each call.
  const VendorPlan* vendor_plan = nullptr;
  // Step 0's cuBLASLt handle and picks for the forms beyond fp16 A·Bᵀ.
  VendorForms* vendor_forms = nullptr;
};

// Fills the device facts, creates the cuBLAS handle and its workspace, and
// sets each kernel's shared-memory attribute once. Empty string on success.
std::string CreateContext(int device, DeviceContext* ctx);
void DestroyContext(DeviceContext* ctx);

struct StepSupport {
  bool supported = false;
  std::string reason;  // predicate of "step N", e.g. "has no sm_100a kernel in this build yet"
  std::string family;  // the kernel family that runs it: "sm_90a", "sm_100a"; "" for cuBLAS
};

// Whether this build has a kernel for `step` on this device's architecture.
StepSupport Supports(int step, const DeviceContext& ctx);

// `problem` with its dense leading dimensions and strides filled in (0
// means dense), into *out; "" or what is wrong with it. Launch runs it
// first.
std::string ExplicitProblem(const Problem& problem, Problem* out);

// Launches `step` on `stream`; asynchronous. Empty string, or what went wrong
// (a launch error, a shape the step does not take).
std::string Launch(int step, const Problem& p, const DeviceContext& ctx, cudaStream_t stream);

// Step 0 (cuBLAS) over `count` problems of `first`'s shape and leading
// dimensions, problem i's A, B and D lying i·stride_a, i·stride_b and
// i·stride_d elements after first's: one strided batched GEMM, so many
// small GEMMs cost one launch. Asynchronous; "" or what went wrong.
std::string LaunchVendorBatch(const Problem& first, int count, int64_t stride_a, int64_t stride_b, int64_t stride_d,
                              const DeviceContext& ctx, cudaStream_t stream);

}  // namespace gemm
