// The CPU engine's GEMMs beyond the plain fp16 A·Bᵀ (gemm/form.h): any
// element type, layout, alpha/beta/C and batch. Every operand is widened to
// fp32 (exact for every type here) and multiplied by the BLAS's sgemm with
// the layouts as its transpose flags; D is rounded to its type once. Debian's
// OpenBLAS exports no bf16 GEMM (cblas_sbgemm is built only with
// BUILD_BFLOAT16), so bf16 goes through the widening too, as fp8 does.
// Verified against dgemm in fp64 on the same widened values.
#pragma once

#include <absl/status/statusor.h>

#include <vector>

#include "engine/blas_api.h"
#include "engine/engine.h"

namespace gemmd {

absl::StatusOr<GemmReport> RunFormOnCpu(const BlasApi& blas, const GemmJob& job);

// An operand of `count` elements of `type` widened to float: its host bytes,
// or generated from its seed as the GPU engine generates it.
std::vector<float> WidenOperand(const OperandView& op, gemm::ElementType type, gemm::OperandId id, uint64_t count);

}  // namespace gemmd
