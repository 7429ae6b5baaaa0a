// gemm-bench --accuracy: how far each step's D is from the exact product,
// next to cuBLAS's at the same shape, and whether it passes the server's
// verification against cuBLAS under the bound of gemm/tolerance.h and
// under the bound without its K-aware term.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench_shape.h"

namespace gemm::bench {

// Prints a markdown table (and writes `csv` when not empty); 0 on success.
// Every shape runs with `seeds` pairs of fresh inputs; the worst is kept.
int RunAccuracy(const std::vector<BenchShape>& shapes, const std::vector<int>& steps, int device, int seeds,
                uint64_t first_seed, const std::string& csv);

}  // namespace gemm::bench
