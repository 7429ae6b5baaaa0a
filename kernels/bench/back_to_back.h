// gemm-bench --back-to-back SECONDS: the most a server can deliver, per
// shape and step. A server's GEMMs run one after another with no L2 flush
// and no pause between them, so the GPU holds its power limit and its
// clock settles lower than in the interleaved, flushed timing of a plain
// gemm-bench run. Two loops, each SECONDS long after one second of warm-up:
// the GEMM alone on one set of inputs, and the GEMM with its A and B
// generated from a fresh seed before each run (what a request with
// server-generated inputs asks of the device).
#pragma once

#include <cstdint>
#include <vector>

#include "bench_shape.h"

namespace gemm::bench {

// Prints a markdown table; 0 on success.
int RunBackToBack(const std::vector<BenchShape>& shapes, const std::vector<int>& steps, double seconds,
                  int device);

}  // namespace gemm::bench
