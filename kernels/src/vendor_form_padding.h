// Step 0's forms on ragged shapes: cuBLASLt picks slower kernels wherever
// the rows of an operand, C or D are not 16-byte multiples, or N or K is
// not a multiple of 16 bytes' worth of elements. On an H200, bf16 x @ W at
// 2470x3725x3100 took 0.55 ms on dense operands, against 0.10 ms for the
// fp16 GEMM, whose operands the server stores padded
// (bench/results/h200_2026-11-29_step0_ragged_summary.txt). So a large
// ragged form runs on copies padded to such multiples: A and B with zeros
// in K's padding (the products there are 0), C at D's padded width, and D
// computed at that width and copied back. Rows and columns of padding in M
// and N give D rows and columns that are dropped.
#pragma once

#include <algorithm>
#include <cstdint>

#include "gemm/form.h"

namespace gemm::detail {

// GEMMs of at least this many multiply-adds (about 2600³) are padded where
// ragged. The copies cost about as much as the aligned GEMM at the shapes
// measured (2.8·10^10 multiply-adds: 0.20 ms in all against 0.10 aligned
// and 0.55 unpadded); smaller GEMMs were not measured, and run as before.
inline constexpr uint64_t kPadFormsFrom = uint64_t{1} << 34;

// The padded problem's shape and strides, and where its buffers lie in a
// scratch of `bytes()` (each 256-byte aligned), or none (`pads` false)
// where p's rows are 16-byte multiples already or p is small.
struct PaddedForm {
  bool pads = false;
  FormProblem q;                 // data pointers relative to the scratch until Place
  uint64_t a_at = 0, b_at = 0, c_at = 0, d_at = 0, end = 0;  // byte offsets in the scratch
  uint64_t bytes() const { return end; }
  // q's pointers into `scratch`.
  FormProblem Place(void* scratch) const {
    char* base = static_cast<char*>(scratch);
    FormProblem placed = q;
    placed.a = base + a_at, placed.b = base + b_at, placed.d = base + d_at;
    placed.c = q.form.ReadsC() ? base + c_at : nullptr;
    return placed;
  }
};

namespace padding {
inline int64_t RoundUp(int64_t x, int64_t unit) { return (x + unit - 1) / unit * unit; }
// Elements of type t in 16 bytes: what a row's length is padded to.
inline int64_t Unit(ElementType t) { return 16 / static_cast<int64_t>(ElementBytes(t)); }
inline uint64_t Aligned(uint64_t bytes) { return (bytes + 255) / 256 * 256; }
}  // namespace padding

// `from`: the least multiply-adds to pad (kPadFormsFrom, or less in a
// test). The copies are vendor_forms.cpp's.
inline PaddedForm PaddedFormOf(const FormProblem& p, uint64_t from = kPadFormsFrom) {
  using padding::Aligned, padding::RoundUp, padding::Unit;
  const GemmForm& f = p.form;
  PaddedForm out;
  // One GEMM only: a batch's entries would each take a copy per operand.
  if (f.batch != 1) return out;
  const bool a_k = f.a_layout == Layout::kKContiguous, b_k = f.b_layout == Layout::kKContiguous;
  // K pads the rows that run along it; N pads D's (and C's, and B's where
  // B is stored K×N); M pads A's where A is stored K×M.
  int64_t k_unit = 1, n_unit = Unit(f.d);
  if (a_k) k_unit = std::max(k_unit, Unit(f.a));
  if (b_k) k_unit = std::max(k_unit, Unit(f.b));
  if (!b_k) n_unit = std::max(n_unit, Unit(f.b));
  if (f.ReadsC()) n_unit = std::max(n_unit, Unit(f.c));
  const int64_t m_unit = a_k ? 1 : Unit(f.a);
  const int64_t m = RoundUp(p.m, m_unit), n = RoundUp(p.n, n_unit), k = RoundUp(p.k, k_unit);
  const uint64_t macs = static_cast<uint64_t>(p.m) * static_cast<uint64_t>(p.n) * static_cast<uint64_t>(p.k);
  if ((m == p.m && n == p.n && k == p.k) || macs < from) return out;
  out.pads = true;
  FormProblem& q = out.q;
  q.m = m, q.n = n, q.k = k;
  q.form = f;
  q.form.StackDensely(m, n, k);
  out.a_at = 0;
  out.b_at = Aligned(out.a_at + static_cast<uint64_t>(m) * k * ElementBytes(f.a));
  out.c_at = Aligned(out.b_at + static_cast<uint64_t>(n) * k * ElementBytes(f.b));
  out.d_at = Aligned(out.c_at + (f.ReadsC() ? static_cast<uint64_t>(m) * n * ElementBytes(f.c) : 0));
  out.end = Aligned(out.d_at + static_cast<uint64_t>(m) * n * ElementBytes(f.d));
  return out;
}

}  // namespace gemm::detail
