// Step 0 for every form of GEMM beyond gemmd's original fp16 A·Bᵀ
// (gemm/form.h): bf16, fp32 (tf32 where allowed) and fp8 operands, either
// storage of each, alpha·AB + beta·C and strided batches, through one
// cuBLASLt matmul, by the plan's pick (WarmVendorForms) or the heuristic's,
// kept per form and shape.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "gemm/form.h"
#include "gemm/gemm.h"

namespace gemm {

// "" when cuBLASLt on this device can take the form (its types, layouts
// and alignment), else a sentence for the client that says what it needs
// instead. cuBLASLt's fp8 matmul, for one, takes both operands with K
// contiguous only (cuBLAS documentation, cublasLtMatmul: "A must be
// transposed and B non-transposed", in its column-major terms).
std::string VendorFormError(const FormProblem& p, const DeviceContext& ctx);

// "" when p can run here, else why not (VendorFormError, or cuBLASLt's
// heuristic has no kernel for it): asks the heuristic once per form and
// shape, so that the launch that follows does not.
std::string PrepareVendorForm(const FormProblem& p, const DeviceContext& ctx);

// Launches p on `stream` (asynchronous); "" or what went wrong. A D of
// 16 bits with an fp32 C needs an fp32 scratch of batch·m·n in `scratch`
// (cuBLASLt takes C in D's type), and a large ragged GEMM runs on padded
// copies of its operands there (kernels/src/vendor_form_padding.h):
// VendorFormScratchBytes says how much.
std::string LaunchVendorForm(const FormProblem& p, const DeviceContext& ctx, void* scratch, cudaStream_t stream);
uint64_t VendorFormScratchBytes(const FormProblem& p);

// Step 0's plan for the forms, as its fp16 plan is (gemm/vendor_plan.h):
// for every family of forms (a type combination, its layouts, tf32) the
// heuristic's pick at every shape of a grid (m, n and k 128 to 8192, the
// powers of two), each pick run at every grid shape it holds, and each
// distinct one on small shapes whose rows are 2 to 16 bytes aligned, which
// loads its kernels. A request
// then runs the pick of the grid shape at or above its own (no heuristic:
// 0.2 ms, once 13 ms, on an H200), or the heuristic's where cuBLASLt will
// not take the plan's. Then every type combination and layout runs alone
// and with C at 1024³ and 4096³, and as a batch of 8 sharing B. All on
// `stream`, waited for; about 2.9 s per device context on an H100. The
// first bf16 matmul of a process had paid 158 ms and the first fp32 one
// 97 ms. What is left (bench/results/h100_2026-11-26_forms_summary.txt):
// first requests with C or a batch paid about 5 ms once there (x @ W +
// 0.5·C at 4096³: ×5.3 of steady; a batch of 8: ×2.5), measured while this
// warm-up ran those at 8192³ instead of 4096³ by mistake; at 4096³ the
// exact-shape warm-up had them at ×0.90 and ×1.29 on an H200. `forms` counts the matmuls run; "" or what failed.
std::string WarmVendorForms(const DeviceContext& ctx, cudaStream_t stream, int* forms);

namespace detail {
// CreateContext and DestroyContext keep one per device context.
std::string CreateVendorForms(VendorForms** out);
void DestroyVendorForms(VendorForms* forms);
// The K step 0 sums over: k, or half of it while testing::PlantVendorFault is on.
int64_t VendorKUsed(int64_t k);
}  // namespace detail

}  // namespace gemm
