// A GEMM's shape as gemm-bench's modes take it: D is m x n, and k the
// length of the products summed into each element.
#pragma once

#include <cstdint>

namespace gemm::bench {

struct BenchShape {
  int64_t m, n, k;
};

}  // namespace gemm::bench
