// gemm-bench --fast-check: what VERIFICATION_FAST's check (gemm/sketch_check.h)
// costs beside the GEMM it checks, per shape: D from seeded operands by
// cuBLAS (step 0), then the check, each the median of ten event-timed runs
// after a warm-up. The GEMM is fp16 A·Bᵀ unless the form says otherwise
// (gemm-bench's --dtype, --a-layout, --b-layout and --beta, C random and
// apart from D, as the server's forms keep it). Beside them, what
// generating A and B from seeds costs (the server's inputs for a seed),
// and a memset of the same bytes: the write's own limit on the GPU. Under
// ncu, each of its passes is a kernel of its own.
#pragma once

#include <cstdint>
#include <vector>

#include "bench_shape.h"
#include "gemm/form.h"

namespace gemm::bench {

// The form checked: A's and B's type (also D's and C's), their layouts,
// and β (C read where it is not 0).
struct FastCheckForm {
  ElementType type = ElementType::kF16;
  Layout a_layout = Layout::kKContiguous, b_layout = Layout::kKContiguous;
  float beta = 0;
};

// Prints a markdown table; 0 on success.
int RunFastCheck(const std::vector<BenchShape>& shapes, const FastCheckForm& form, int device);

}  // namespace gemm::bench
