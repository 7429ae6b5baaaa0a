// The whole GEMM's description (gemm/form.h): which types combine, what
// each operand spans, what the verification bound adds, how a log names it.
#include "gemm/form.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gemm/steps.h"

namespace gemm {
namespace {

TEST(GemmForm, EveryListedCombinationIsOneTheRuleTakes) {
  for (const TypeCombination& t : kTypeCombinations) {
    GemmForm f;
    f.a = t.a, f.b = t.b, f.d = f.c = t.d;
    f.allow_tf32 = t.tf32;
    EXPECT_EQ(CombinationError(f), "") << ElementName(t.a) << " x " << ElementName(t.b) << " -> " << ElementName(t.d);
    f.has_c = true;
    f.c = ElementType::kF32;
    EXPECT_EQ(CombinationError(f), "") << "an fp32 C goes with every D";
  }
  GemmForm bad;
  bad.a = bad.b = ElementType::kF8E5M2;
  bad.d = ElementType::kBF16;
  EXPECT_NE(CombinationError(bad), "");
  bad.a = ElementType::kF8E4M3;
  bad.d = ElementType::kF32;
  EXPECT_NE(CombinationError(bad), "") << "fp8 writes bf16 or fp16 here";
}

TEST(GemmForm, AnOperandSpansItsBatchEntriesAndASharedOneSpansOne) {
  GemmForm f;
  f.batch = 4;
  f.b_layout = Layout::kMnContiguous;
  f.stride_a = 3 * 5 + 2;  // padded entries
  f.stride_b = 0;          // shared
  const OperandStorage a = StorageOfA(f, 3, 5), b = StorageOfB(f, 7, 5);
  EXPECT_EQ(a.rows, 3);
  EXPECT_EQ(a.cols, 5);
  EXPECT_EQ(a.Footprint(4), uint64_t{3 * 17 + 15});
  EXPECT_EQ(b.rows, 5) << "B stored k x n";
  EXPECT_EQ(b.cols, 7);
  EXPECT_EQ(b.Footprint(4), uint64_t{35});
  EXPECT_EQ(b.StoredRows(4), 5) << "one shared k x n matrix";
  EXPECT_EQ(a.StoredRows(4), 0) << "entries 17 elements apart are not whole 5-element rows";
  f.stride_a = 3 * 5;
  EXPECT_EQ(StorageOfA(f, 3, 5).StoredRows(4), 12) << "four 3x5 entries stacked";
  const OperandStorage huge{1 << 20, 1 << 20, int64_t{1} << 62, ElementType::kF16};
  EXPECT_EQ(huge.Footprint(8), 0u) << "an overflowing span reads as 0";
  EXPECT_EQ(IndexInA(f, 3, 5, 2, 4), 2u * 5 + 4);
  EXPECT_EQ(IndexInB(f, 7, 5, 4, 6), 4u * 7 + 6) << "(k, j) of a k x n B";
}

TEST(GemmForm, TheBoundAddsWhatEachTypeAndCBring) {
  GemmForm f;  // fp16: 2^-23·√K·‖a‖‖b‖
  EXPECT_DOUBLE_EQ(FormAccumulationAtol(f, 64, 2, 3, 0), 0x1p-23 * 8 * 6);
  f.a = f.b = ElementType::kF8E4M3;
  f.d = ElementType::kBF16;
  f.a_scale = 0.5, f.b_scale = 4;  // α' = 2
  EXPECT_DOUBLE_EQ(FormAccumulationAtol(f, 64, 2, 3, 0), 0x1p-13 * 8 * 2 * 6);
  GemmForm tf32;
  tf32.a = tf32.b = tf32.d = ElementType::kF32;
  tf32.allow_tf32 = true;
  EXPECT_DOUBLE_EQ(FormAccumulationAtol(tf32, 64, 2, 3, 0), 0x1p-23 * 8 * 6 + 0x1p-10 * 6);
  GemmForm with_c;
  with_c.has_c = true;
  with_c.beta = -2;
  EXPECT_DOUBLE_EQ(FormAccumulationAtol(with_c, 64, 2, 3, 5), 0x1p-23 * 8 * 6 + 0x1p-23 * 2 * 5);
  EXPECT_EQ(ToleranceOf(tf32).rtol, 1.3e-6);
  EXPECT_EQ(ToleranceOf(f).rtol, 1.6e-2);
}

TEST(GemmForm, LogsNameOnlyWhatDiffersFromThePlainForm) {
  EXPECT_EQ(FormSummary(GemmForm{}), "fp16xfp16->fp16");
  GemmForm f;
  f.a = f.b = f.d = f.c = ElementType::kBF16;
  f.b_layout = Layout::kMnContiguous;
  f.has_c = true;
  f.beta = 0.5;
  f.batch = 4;
  EXPECT_EQ(FormSummary(f), "bf16xbf16->bf16 b=KxN beta=0.5 c=bf16 batch=4");
  EXPECT_TRUE(GemmForm{}.IsPlain());
  EXPECT_FALSE(f.IsPlain());
  EXPECT_EQ(FormError(10, GemmForm{}), "");
  EXPECT_EQ(FormError(10, f), "") << "the ladder computes a batch of bf16 x @ W + beta·C";
  f.d = ElementType::kF32;
  EXPECT_NE(FormError(10, f).find("this request asks for fp32 D, C in bf16"), std::string::npos) << FormError(10, f);
  EXPECT_EQ(FormError(0, f), "") << "step 0 computes every form";
}

// The ladder's steps take bf16 as well as fp16, A and B of one type and D
// of either, each operand stored either way; anything else of the whole
// GEMM is step 0's.
TEST(GemmForm, LadderStepsTakeBothSixteenBitTypesAndBothLayoutsAndNothingElse) {
  for (ElementType in : {ElementType::kF16, ElementType::kBF16}) {
    for (ElementType out : {ElementType::kF16, ElementType::kBF16}) {
      for (Layout a : {Layout::kKContiguous, Layout::kMnContiguous}) {
        for (Layout b : {Layout::kKContiguous, Layout::kMnContiguous}) {
          GemmForm f;
          f.a = f.b = in;
          f.d = out;
          f.a_layout = a;
          f.b_layout = b;
          EXPECT_TRUE(IsLadderForm(f));
          for (int step = 1; step <= 10; ++step) EXPECT_EQ(FormError(step, f), "") << step;
        }
      }
    }
  }
  GemmForm mixed;
  mixed.a = ElementType::kBF16;
  EXPECT_FALSE(IsLadderForm(mixed));
  EXPECT_NE(FormError(4, mixed).find("bf16 x fp16 operands"), std::string::npos) << FormError(4, mixed);
  GemmForm wide;
  wide.d = ElementType::kF32;
  EXPECT_NE(FormError(4, wide).find("fp32 D"), std::string::npos) << FormError(4, wide);
  GemmForm fp8;
  fp8.a = fp8.b = ElementType::kF8E4M3;
  EXPECT_NE(FormError(10, fp8).find("fp8_e4m3 x fp8_e4m3 operands"), std::string::npos) << FormError(10, fp8);
  GemmForm scaled;  // x @ W·2 - C, C in D's type
  scaled.a = scaled.b = scaled.d = scaled.c = ElementType::kBF16;
  scaled.b_layout = Layout::kMnContiguous;
  scaled.alpha = 2;
  scaled.has_c = true;
  scaled.beta = -1;
  EXPECT_TRUE(IsLadderForm(scaled));
  EXPECT_EQ(FormError(10, scaled), "");
  scaled.c = ElementType::kF32;
  EXPECT_FALSE(IsLadderForm(scaled));
  EXPECT_NE(FormError(4, scaled).find("C in fp32 (D's type is bf16)"), std::string::npos) << FormError(4, scaled);
  scaled.beta = 0;  // a C that is not read may be of any type
  EXPECT_TRUE(IsLadderForm(scaled));
  scaled.batch = 2;  // a strided batch of them too
  EXPECT_TRUE(IsLadderForm(scaled));
  EXPECT_EQ(FormError(10, scaled), "");
  EXPECT_TRUE(FormsOf(10).batches);
  scaled.a = ElementType::kF32;
  EXPECT_NE(FormError(10, scaled).find("fp32 x bf16 operands"), std::string::npos) << FormError(10, scaled);
  EXPECT_EQ(FormError(10, scaled).find("asks for fp32 x bf16 operands;"), FormError(10, scaled).find("asks for"))
      << "a batch is not what the step lacks: " << FormError(10, scaled);
  EXPECT_TRUE(FormsOf(10).alpha_beta_c);
  EXPECT_TRUE(FormsOf(10).bf16);
  EXPECT_TRUE(FormsOf(10).mn_contiguous);
  EXPECT_FALSE(FormsOf(10).every_form);
  EXPECT_FALSE(FormsOf(11).bf16) << "not a step";
}

// Every fp8 form cuBLASLt computes, widened to fp16 operands with its
// scales in α, is a form the ladder computes: what lets step 10 check it.
// Only where C is in fp32 is it not.
TEST(GemmForm, AnFp8FormWidenedToFp16IsALadderFormWithItsScalesInAlpha) {
  for (const TypeCombination& t : kTypeCombinations) {
    if (!IsFp8(t.a)) continue;
    GemmForm f;
    f.a = t.a, f.b = t.b, f.d = f.c = t.d;
    f.alpha = 0.5, f.a_scale = 3, f.b_scale = -0.25;
    f.has_c = true, f.beta = 2, f.batch = 3;
    f.StackDensely(64, 32, 48);
    ASSERT_EQ(CombinationError(f), "");
    const GemmForm w = WidenedToF16(f);
    EXPECT_EQ(w.a, ElementType::kF16);
    EXPECT_EQ(w.b, ElementType::kF16);
    EXPECT_EQ(w.d, f.d);
    EXPECT_EQ(w.alpha, 0.5 * 3 * -0.25);
    EXPECT_EQ(w.ProductScale(), f.ProductScale());
    EXPECT_EQ(w.beta, 2);
    EXPECT_EQ(w.stride_a, f.stride_a) << "the same elements at the same places";
    EXPECT_TRUE(IsLadderForm(w)) << ElementName(t.a) << " x " << ElementName(t.b) << " -> " << ElementName(t.d);
    EXPECT_EQ(FormError(10, w), "");
    f.c = ElementType::kF32;
    EXPECT_FALSE(IsLadderForm(WidenedToF16(f)));
  }
}

// The server batches requests whose forms compute the same function: the
// batch and strides do not matter, every other field does, and beta and
// C's type only where C is read.
TEST(GemmForm, SameComputationIgnoresOnlyTheBatchAndAnUnreadC) {
  GemmForm base;
  base.a = base.b = ElementType::kBF16;
  base.d = ElementType::kBF16;
  base.b_layout = Layout::kMnContiguous;
  GemmForm batched = base;
  batched.batch = 4;
  batched.StackDensely(8, 8, 8);
  EXPECT_TRUE(SameComputation(base, batched));
  GemmForm unread_c = base;
  unread_c.has_c = true;  // beta 0: C is not read
  unread_c.c = ElementType::kF32;
  EXPECT_TRUE(SameComputation(base, unread_c));

  const std::vector<void (*)(GemmForm&)> changes = {
      [](GemmForm& f) { f.a = f.b = ElementType::kF16; },
      [](GemmForm& f) { f.d = ElementType::kF32; },
      [](GemmForm& f) { f.a_layout = Layout::kMnContiguous; },
      [](GemmForm& f) { f.b_layout = Layout::kKContiguous; },
      [](GemmForm& f) { f.alpha = 2; },
      [](GemmForm& f) { f.has_c = true, f.beta = 0.5; },
      [](GemmForm& f) { f.a_scale = 2; },
      [](GemmForm& f) { f.b_scale = 2; },
      [](GemmForm& f) { f.allow_tf32 = true; },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    GemmForm other = base;
    changes[i](other);
    EXPECT_FALSE(SameComputation(base, other)) << "change " << i;
  }
  GemmForm with_c = base;
  with_c.has_c = true, with_c.beta = 0.5;
  GemmForm other_beta = with_c, other_c_type = with_c;
  other_beta.beta = 1;
  other_c_type.c = ElementType::kF32;
  EXPECT_FALSE(SameComputation(with_c, other_beta));
  EXPECT_FALSE(SameComputation(with_c, other_c_type));
}

}  // namespace
}  // namespace gemm
