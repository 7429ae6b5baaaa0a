// Faults a test can plant in the kernel library, to prove that a check
// downstream catches them, and paths a test (or gemm-bench, to time both
// ways) can force. Never set in the server.
#pragma once

#include <cuda_runtime.h>

namespace gemm::testing {

// While on, step 0 (cuBLAS, and cuBLASLt for every form) multiplies over
// the first half of K only: a wrong result that a comparison with cuBLAS
// itself could never catch.
void PlantVendorFault(bool on);

// Which ragged GEMMs step 0's forms run on padded copies of their operands
// (kernels/src/vendor_form_padding.h): the large ones as built, every one
// however small (a test's small ragged shapes then take the padded path),
// or none (gemm-bench --vendor-padding times both ways).
enum class VendorFormPadding { kAsBuilt, kEveryRagged, kNever };
void SetVendorFormPadding(VendorFormPadding padding);

// Where VERIFICATION_FAST's operand passes take two outputs a thread
// (kernels/src/sketch_check.cu): only where enough threads remain to fill
// the GPU, as built, or wherever their loads allow (a test's small shapes
// then take that path).
enum class SketchPairs { kAsBuilt, kWhereAligned };
void SetSketchPairs(SketchPairs pairs);

// While planted, ladder step `step` computes a wrong D as a kernel with a
// typical fault would: kNarrowN leaves the right half of D's columns
// unwritten (a descriptor's N too small), kShortK reads only the first
// half of K (a K loop that stops early). kNone removes the plant.
enum class StepFault { kNone, kNarrowN, kShortK };
void PlantStepFault(int step, StepFault fault);

// While on, the TMA maps of steps 4 and up (both families) are encoded
// without the 128-byte swizzle that the MMAs' shared-memory descriptors
// read them with: a real swizzle fault in the real kernels.
void PlantTmaSwizzleFault(bool on);

// A kernel that never finishes, and one that writes to an illegal address
// (a sticky error: the process's CUDA context is lost).
cudaError_t LaunchHangingKernel(cudaStream_t stream);
cudaError_t LaunchFaultingKernel(cudaStream_t stream);

}  // namespace gemm::testing
