// The shapes of gemm-bench's sweep and the statistics it reports: random
// problems in four classes a client sends (mixed sizes, skinny, tiny, long
// K), reproducible from a seed on any platform, and the median, 10th
// percentile and share >= 1 of each step's ratio to cuBLAS.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gemm::bench {

struct SweepShape {
  int64_t m, n, k;
  std::string shape_class;  // one of SweepClasses()
};

// "mixed": m, n, k from 64 to 16384. "skinny": m or n from 1 to 64, the other
// from 1024 to 40000, k from 256 to 16384. "tiny": m, n, k from 1 to 512.
// "long-K": m, n from 8 to 1024, k from 8192 to 40000. Each dimension is
// log-uniform in its range; no operand exceeds 2^28 elements and no problem
// 2^39 multiply-adds.
const std::vector<std::string>& SweepClasses();

// `count` shapes from `seed`, the classes taking turns.
std::vector<SweepShape> SweepShapes(int count, uint64_t seed);

struct RatioSummary {
  int count = 0;
  double median = 0, p10 = 0, share_at_least_1 = 0;
};

// Of ratios to cuBLAS (above 1: faster than cuBLAS). p10 is the value a
// tenth of the ratios fall below (nearest rank).
RatioSummary Summarize(std::vector<double> ratios);

}  // namespace gemm::bench
