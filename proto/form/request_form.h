// The whole GEMM a MultiplyRequest asks for (gemm/form.h), read from its
// type, layout, alpha/beta/C, scale and batch fields, and the proto's
// element types to and from the kernels' own.
#pragma once

#include <absl/status/statusor.h>

#include "gemm/form.h"
#include "gemm/v1/gemm.pb.h"

namespace gemmd {

// The most GEMMs one request may batch: the GPU engine's reference and
// norms launch one grid slice per entry (a grid's y and z dimensions).
inline constexpr uint32_t kMaxBatch = 65535;

// INVALID_ARGUMENT for an unknown enum value; `unset` stands for
// ELEMENT_TYPE_UNSPECIFIED.
absl::StatusOr<gemm::ElementType> ElementTypeOf(gemm::v1::ElementType type, gemm::ElementType unset,
                                                const char* field);
gemm::v1::ElementType ToProto(gemm::ElementType type);
gemm::v1::Layout ToProto(gemm::Layout layout);

// The request's form with every default filled in and every stride
// explicit (dense stacking where the request gave none). INVALID_ARGUMENT,
// naming the field, for values that do not combine: types cuBLASLt has no
// GEMM for, a missing or needless fp8 scale, beta without C, a batch count
// of 0, strides that overlap entries, non-finite alpha, beta or scales.
// Does not look at the operands' sizes (ValidateMultiply does).
absl::StatusOr<gemm::GemmForm> FormOfRequest(const gemm::v1::MultiplyRequest& req);

}  // namespace gemmd
