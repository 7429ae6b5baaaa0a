// Step 0 for every form of GEMM beyond gemmd's original fp16 A·Bᵀ
// (gemm/form.h): bf16, fp32 (tf32 where allowed) and fp8 operands, either
// storage of each, alpha·AB + beta·C and strided batches, through one
// cuBLASLt matmul. The heuristic's pick is kept per form and shape, so a
// form's first request of a shape pays the heuristic once.
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
// (cuBLASLt takes C in D's type): VendorFormScratchBytes says how much.
std::string LaunchVendorForm(const FormProblem& p, const DeviceContext& ctx, void* scratch, cudaStream_t stream);
uint64_t VendorFormScratchBytes(const FormProblem& p);

// Loads ahead what a form's first request would: every type combination
// and layout, alone and with C at 1024³ and 4096³, and as a batch of 8
// sharing B, each asked of the heuristic and run once on `stream` (then
// waited for). The first bf16 matmul of a process otherwise paid 158 ms
// and the first fp32 one 97 ms on an H200. Only those shapes are warm: a
// form's first request of another shape still pays about 3 ms once, for
// the heuristic and what cuBLASLt sets up per kernel and shape (a grid of
// shapes whose picks ran once did not remove it: the kernel a pick
// launches depends on the shape too). `forms` counts the matmuls run; ""
// or what failed.
std::string WarmVendorForms(const DeviceContext& ctx, cudaStream_t stream, int* forms);

namespace detail {
// CreateContext and DestroyContext keep one per device context.
std::string CreateVendorForms(VendorForms** out);
void DestroyVendorForms(VendorForms* forms);
// The K step 0 sums over: k, or half of it while testing::PlantVendorFault is on.
int64_t VendorKUsed(int64_t k);
}  // namespace detail

}  // namespace gemm
