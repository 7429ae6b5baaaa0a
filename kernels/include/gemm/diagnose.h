// Pattern diagnostics: what a wrong D says about the kernel that wrote it.
//
// A hand-written tensor-core GEMM goes wrong in a few typical ways (a TMEM
// lane or warp-quarter mapping, a swizzle, the start-address advance per
// K16 slice, a stride byte offset, an MMA descriptor's N, a pair loading
// into the wrong CTA, an accumulate flag, a barrier phase), and with
// structured inputs each leaves its own fingerprint in D. The probes here
// make every element of D a copy of one element of B or of A (one-hot rows
// of A or B against a ramp that names its source), so D can be decoded into
// where each element came from, and the difference to where it should have
// come from is named in a kernel writer's terms.
//
// Host code only: the probes' inputs, and the reading of a D that a caller
// ran the step on (gemm-bench --diagnose, the start-up gate).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gemm {

// One structured problem: D = A·Bᵀ with A m×k and B n×k, fp16 bits,
// row-major and dense. Every element of the right D is an exact integer in
// [1024, 2048) that names its source by `decodes` (mod 1024); a sum of two
// products is 2048 or more, so it never passes for a moved value.
struct DiagnosticProbe {
  enum class Decodes { kRow, kColumn, kK };  // what D's value names: A's row, B's row (D's column), or k
  std::string name;
  int64_t m = 0, n = 0, k = 0;
  Decodes decodes = Decodes::kK;
  std::vector<uint16_t> a, b;
};

// The probes for a step whose largest problem is max_m × max_n × max_k
// (0: no limit): one tile, one k-tile and several, one cluster tile (256
// rows and columns), several waves, and more tiles than a GPU holds CTAs
// (so that a persistent CTA takes a second tile); each decoding rows,
// columns and k.
std::vector<DiagnosticProbe> DiagnosticProbes(int64_t max_m, int64_t max_n, int64_t max_k);

// The value every element of the probe's right D holds.
float ExpectedValue(const DiagnosticProbe& probe, int64_t row, int64_t col);

// What `d` (m×n fp16 bits, dense) says: "exact", or one sentence per fault
// seen, with the evidence (where, expected and seen).
struct Diagnosis {
  bool exact = false;
  std::vector<std::string> findings;
  std::string Summary() const;  // "exact", or the findings joined by "; "
};
Diagnosis Diagnose(const DiagnosticProbe& probe, const std::vector<uint16_t>& d);

}  // namespace gemm
