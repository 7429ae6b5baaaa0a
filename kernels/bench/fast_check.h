// gemm-bench --fast-check: what VERIFICATION_FAST's check (gemm/sketch_check.h)
// costs beside the GEMM it checks, per shape: fp16 A·Bᵀ from seeded
// operands by cuBLAS (step 0), then the check, each the median of ten
// event-timed runs after a warm-up. Beside them, what generating A and B
// from seeds costs (the server's inputs for a seed), and a memset of the
// same bytes: the write's own limit on the GPU. Under ncu, each of its
// passes is a kernel of its own.
#pragma once

#include <cstdint>
#include <vector>

namespace gemm::bench {

struct FastCheckShape {
  int64_t m, n, k;
};

// Prints a markdown table; 0 on success.
int RunFastCheck(const std::vector<FastCheckShape>& shapes, int device);

}  // namespace gemm::bench
