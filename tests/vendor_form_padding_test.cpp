// Which of step 0's forms run on padded copies, and how they are padded
// (kernels/src/vendor_form_padding.h): rows of 16-byte multiples in every
// layout and type, K's and N's padding as small as that allows, nothing
// padded that is aligned or small, a batch's entries each padded (a shared
// operand once), and the buffers apart.
#include "vendor_form_padding.h"

#include <gtest/gtest.h>

namespace gemm {
namespace {

FormProblem Problem(int64_t m, int64_t n, int64_t k, ElementType in, ElementType out, Layout a, Layout b,
                    bool with_c = false, ElementType c = ElementType::kF32) {
  FormProblem p{m, n, k};
  p.form.a = p.form.b = in;
  p.form.d = out;
  p.form.c = with_c ? c : out;
  p.form.has_c = with_c;
  p.form.beta = with_c ? 0.5 : 0.0;
  p.form.a_layout = a, p.form.b_layout = b;
  p.form.StackDensely(m, n, k);
  return p;
}

constexpr Layout kK = Layout::kKContiguous, kMn = Layout::kMnContiguous;
constexpr ElementType kBf16 = ElementType::kBF16, kF32 = ElementType::kF32, kE4m3 = ElementType::kF8E4M3;

// bf16 x @ W at 2470x3725x3100 (bench/results/h200_2026-11-29_step0_ragged_summary.txt):
// K to 3104 (A's rows run along K), N to 3728 (B's and D's rows run along
// N), M stays (no row runs along M).
TEST(VendorFormPadding, RaggedXAtWPadsKAndNToEightElements) {
  const detail::PaddedForm padded = detail::PaddedFormOf(Problem(2470, 3725, 3100, kBf16, kBf16, kK, kMn));
  ASSERT_TRUE(padded.pads);
  EXPECT_EQ(padded.q.m, 2470);
  EXPECT_EQ(padded.q.n, 3728);
  EXPECT_EQ(padded.q.k, 3104);
  EXPECT_EQ(padded.q.form.stride_a, 2470 * 3104);
  EXPECT_EQ(padded.q.form.stride_b, 3728 * 3104);
}

// Every row of the padded problem is a 16-byte multiple, in each layout of
// each operand, with and without an fp32 C, for 16-bit, fp32 and fp8
// operands; each dimension grows by less than one 16-byte unit; the
// buffers lie 256-byte aligned, one after another.
TEST(VendorFormPadding, EveryPaddedRowIsSixteenByteMultiple) {
  struct Types {
    ElementType in, out;
  };
  for (const Types t : {Types{kBf16, kBf16}, Types{kBf16, kF32}, Types{kF32, kF32}, Types{kE4m3, kBf16}}) {
    for (const Layout a : {kK, kMn}) {
      for (const Layout b : {kK, kMn}) {
        if (IsFp8(t.in) && (a != kK || b != kK)) continue;  // fp8 takes K-contiguous operands only
        for (const bool with_c : {false, true}) {
          const FormProblem p = Problem(2049, 1027, 1029, t.in, t.out, a, b, with_c);
          SCOPED_TRACE(FormSummary(p.form));
          const detail::PaddedForm padded = detail::PaddedFormOf(p, 0);
          ASSERT_TRUE(padded.pads);
          const FormProblem& q = padded.q;
          const auto row_bytes = [](StoredShape s, ElementType type) { return s.cols * ElementBytes(type); };
          EXPECT_EQ(row_bytes(StoredShapeOf(a, q.m, q.k), t.in) % 16, 0u);
          EXPECT_EQ(row_bytes(StoredShapeOf(b, q.n, q.k), t.in) % 16, 0u);
          EXPECT_EQ(q.n * ElementBytes(t.out) % 16, 0u);
          if (with_c) {
            EXPECT_EQ(q.n * ElementBytes(kF32) % 16, 0u);
          }
          for (const auto [grown, was] : {std::pair{q.m, p.m}, {q.n, p.n}, {q.k, p.k}}) {
            EXPECT_GE(grown, was);
            EXPECT_LT((grown - was) * static_cast<int64_t>(ElementBytes(t.in == kE4m3 ? kE4m3 : kBf16)), 16);
          }
          EXPECT_EQ(padded.a_at, 0u);
          EXPECT_EQ(padded.b_at % 256, 0u);
          EXPECT_EQ(padded.d_at % 256, 0u);
          EXPECT_GE(padded.b_at, static_cast<uint64_t>(q.m) * q.k * ElementBytes(t.in));
          EXPECT_GE(padded.c_at, padded.b_at + static_cast<uint64_t>(q.n) * q.k * ElementBytes(t.in));
          EXPECT_GE(padded.d_at, padded.c_at + (with_c ? static_cast<uint64_t>(q.m) * q.n * 4 : 0));
          EXPECT_GE(padded.bytes(), padded.d_at + static_cast<uint64_t>(q.m) * q.n * ElementBytes(t.out));
          const FormProblem placed = padded.Place(reinterpret_cast<void*>(uintptr_t{1} << 20));
          EXPECT_EQ(static_cast<const char*>(placed.b) - static_cast<const char*>(placed.a),
                    static_cast<ptrdiff_t>(padded.b_at));
          EXPECT_EQ(placed.c != nullptr, with_c);
        }
      }
    }
  }
}

// Aligned shapes and small ones run as they are; the threshold counts an
// entry's multiply-adds, however many entries a batch has.
TEST(VendorFormPadding, AlignedAndSmallProblemsRunAsTheyAre) {
  EXPECT_FALSE(detail::PaddedFormOf(Problem(2470, 3728, 3104, kBf16, kBf16, kK, kMn)).pads);
  EXPECT_FALSE(detail::PaddedFormOf(Problem(4096, 4096, 4096, kBf16, kBf16, kMn, kMn)).pads);
  EXPECT_FALSE(detail::PaddedFormOf(Problem(200, 201, 203, kBf16, kBf16, kK, kMn)).pads) << "below 2^24";
  EXPECT_TRUE(detail::PaddedFormOf(Problem(200, 201, 203, kBf16, kBf16, kK, kMn), 0).pads) << "a test's threshold";
  EXPECT_TRUE(detail::PaddedFormOf(Problem(257, 383, 301, kBf16, kBf16, kK, kMn)).pads) << "above 2^24";
  FormProblem batch = Problem(127, 129, 131, kBf16, kBf16, kK, kMn);
  batch.form.batch = 64;
  batch.form.StackDensely(127, 129, 131);
  EXPECT_FALSE(detail::PaddedFormOf(batch).pads) << "64 entries of 127x129x131, each below 2^24";
  batch = Problem(257, 255, 263, kBf16, kBf16, kK, kMn);
  batch.form.batch = 16;
  batch.form.StackDensely(257, 255, 263);
  EXPECT_TRUE(detail::PaddedFormOf(batch).pads) << "16 entries of 257x255x263, each above 2^24";
  // A stored K×M pads M (its rows), A stored M×K does not.
  EXPECT_EQ(detail::PaddedFormOf(Problem(2470, 3728, 3104, kBf16, kBf16, kMn, kK)).q.m, 2472);
}

// Copies that would take more than 4 GiB are not made: 64 entries of about
// 4000³ in bf16 would copy 6.1 GB beside the request's own 6.1 GB.
TEST(VendorFormPadding, CopiesOverFourGibibytesAreNotMade) {
  FormProblem p = Problem(4001, 4003, 4005, kBf16, kBf16, kK, kMn);
  p.form.batch = 64;
  p.form.StackDensely(4001, 4003, 4005);
  EXPECT_FALSE(detail::PaddedFormOf(p).pads);
  p.form.batch = 8;  // 0.77 GB of copies
  EXPECT_TRUE(detail::PaddedFormOf(p).pads);
}

// A batch pads every entry, each dense at the padded shape, where a shared
// operand (stride 0) stays one copy that every entry reads.
TEST(VendorFormPadding, ABatchPadsEveryEntryAndKeepsASharedOperandOne) {
  for (const bool shared_b : {false, true}) {
    SCOPED_TRACE(shared_b ? "B shared" : "B per entry");
    FormProblem p = Problem(509, 511, 513, kBf16, kBf16, kK, kMn, /*with_c=*/true, kBf16);
    p.form.batch = 16;
    p.form.StackDensely(509, 511, 513);
    if (shared_b) p.form.stride_b = 0;
    const detail::PaddedForm padded = detail::PaddedFormOf(p);
    ASSERT_TRUE(padded.pads);
    const FormProblem& q = padded.q;
    EXPECT_EQ(q.m, 509);
    EXPECT_EQ(q.n, 512);
    EXPECT_EQ(q.k, 520);
    EXPECT_EQ(q.form.batch, 16);
    EXPECT_EQ(q.form.stride_a, 509 * 520);
    EXPECT_EQ(q.form.stride_b, shared_b ? 0 : 512 * 520);
    EXPECT_EQ(q.form.stride_c, 509 * 512);
    const uint64_t b_entries = shared_b ? 1 : 16;
    EXPECT_GE(padded.b_at, uint64_t{16} * 509 * 520 * 2);
    EXPECT_GE(padded.c_at, padded.b_at + b_entries * 512 * 520 * 2);
    EXPECT_LT(padded.c_at, padded.b_at + b_entries * 512 * 520 * 2 + 256);
    EXPECT_GE(padded.d_at, padded.c_at + uint64_t{16} * 509 * 512 * 2);
    EXPECT_GE(padded.bytes(), padded.d_at + uint64_t{16} * 509 * 512 * 2);
  }
}

}  // namespace
}  // namespace gemm
