// gemm-bench --diagnose: each step on the structured probes of
// gemm/diagnose.h, and what D says: "exact", or the faults it shows.
#pragma once

#include <vector>

namespace gemm::bench {

// Prints a markdown table, one row per step and probe; 0 when every step
// that ran read "exact", 1 otherwise.
int RunDiagnostics(const std::vector<int>& steps, int device);

}  // namespace gemm::bench
