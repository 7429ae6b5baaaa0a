// gemm-bench --vendor-padding: what running step 0's forms on padded copies
// of ragged operands (kernels/src/vendor_form_padding.h) buys, per shape.
// Each shape's form runs three ways through LaunchVendorForm, interleaved
// round by round with L2 flushed before each run: on its dense operands,
// on padded copies (the copies timed with the GEMM), and dense at the
// aligned shape, every dimension rounded up to 16 bytes' worth (about the
// padded GEMM without its copies: the padding leaves M as it is where no
// stored row runs along it). Medians of ten rounds after one untimed. The rows show where the
// padding starts to pay, which sets kPadFormsFrom.
#pragma once

#include <cstdint>
#include <vector>

#include "bench_shape.h"
#include "gemm/form.h"

namespace gemm::bench {

// A, B, C and D all of `type`; C read where beta is not 0; a strided batch
// of `batch` entries, B shared where `shared_b`.
struct VendorPaddingForm {
  ElementType type = ElementType::kBF16;
  Layout a_layout = Layout::kKContiguous, b_layout = Layout::kKContiguous;
  float beta = 0;
  int64_t batch = 1;
  bool shared_b = false;
};

// Prints a markdown table; 0 on success.
int RunVendorPadding(const std::vector<BenchShape>& shapes, const VendorPaddingForm& form, int device);

}  // namespace gemm::bench
