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

// Problems whose entries have at least this many multiply-adds each
// (m·n·k, about 256³) are padded where ragged, batches whatever their
// count. On an H200, copies included, bf16 forms ran 1.03-1.07 times as fast
// padded at 257x383x301, 1.3 at 517x733x611, 1.6-1.8 at 1001³ and 4.3-5.7 at
// 2470x3725x3100; batches of 16 and 64 entries of 257x255x263 1.11-1.44
// times, of 127x129x131 (2^21) 0.75-0.79 (gemm-bench --vendor-padding,
// PARTS=padding, bench/results/h200_2026-11-29_vendor_padding_summary.txt).
// A small entry's copies cost more than its GEMM saves, however many
// entries share the launch.
inline constexpr uint64_t kPadFormsFrom = uint64_t{1} << 24;

// The copies are device memory the request holds beside its own operands:
// a problem whose copies would take more runs on its dense operands, so
// that what padding adds to a request's memory stays bounded.
inline constexpr uint64_t kPaddedCopiesAtMost = uint64_t{4} << 30;

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

// `from`: the least multiply-adds an entry to pad (kPadFormsFrom, or less
// in a test). The copies are vendor_forms.cpp's.
inline PaddedForm PaddedFormOf(const FormProblem& p, uint64_t from = kPadFormsFrom) {
  using padding::Aligned, padding::RoundUp, padding::Unit;
  const GemmForm& f = p.form;
  PaddedForm out;
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
  // Each entry dense at the padded shape; a shared operand stays one copy.
  q.form.StackDensely(m, n, k);
  if (f.stride_a == 0) q.form.stride_a = 0;
  if (f.stride_b == 0) q.form.stride_b = 0;
  if (f.stride_c == 0) q.form.stride_c = 0;
  const auto bytes = [&](const OperandStorage& s) { return s.Footprint(f.batch) * ElementBytes(s.type); };
  out.a_at = 0;
  out.b_at = Aligned(out.a_at + bytes(StorageOfA(q.form, m, k)));
  out.c_at = Aligned(out.b_at + bytes(StorageOfB(q.form, n, k)));
  out.d_at = Aligned(out.c_at + (f.ReadsC() ? bytes(StorageOfC(q.form, m, n)) : 0));
  out.end = Aligned(out.d_at + static_cast<uint64_t>(f.batch) * m * n * ElementBytes(f.d));
  if (out.end > kPaddedCopiesAtMost) return PaddedForm{};
  return out;
}

}  // namespace gemm::detail
