// What the start-up self-test asks of each ladder step before gemmd offers
// it (engine/self_test_jobs.h): every form the step claims (gemm::FormsOf:
// each type pair, each layout of A and of B, α with β·C, batches with a
// shared operand) on shapes that are ragged and shapes that fill several
// waves, every job one the step accepts and none of them unverified.
#include "engine/self_test_jobs.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

#include "common/split_k.h"
#include "common/tile_width.h"

namespace gemmd {
namespace {

using gemm::ElementType;
using gemm::Layout;

bool Ragged(const GemmJob& j) { return j.n % 8 != 0 || j.k % 8 != 0; }

TEST(SelfTestJobs, EveryJobIsOneTheStepAcceptsVerifiedFromSeeds) {
  for (const gemm::StepInfo& info : gemm::AllSteps()) {
    if (info.step == gemm::kVendorStep) continue;
    const auto jobs = SelfTestJobs(info);
    ASSERT_FALSE(jobs.empty()) << "step " << info.step;
    for (const GemmJob& j : jobs) {
      const std::string what = "step " + std::to_string(info.step) + " " + std::to_string(j.m) + "x" +
                               std::to_string(j.n) + "x" + std::to_string(j.k) + " " + gemm::FormSummary(j.form);
      EXPECT_EQ(j.step, info.step) << what;
      EXPECT_EQ(gemm::ShapeError(info, j.m, j.n, j.k), "") << what;
      EXPECT_EQ(gemm::FormError(info.step, j.form), "") << what;
      EXPECT_TRUE(j.verify) << what;
      EXPECT_FALSE(j.verify_fast) << what << ": the self-test checks every element";
      EXPECT_EQ(j.a.kind, OperandView::Kind::kRandom) << what;
      EXPECT_EQ(j.b.kind, OperandView::Kind::kRandom) << what;
      EXPECT_NE(j.a.seed, j.b.seed) << what << ": A and B must differ";
      if (j.form.ReadsC()) EXPECT_EQ(j.form.c, j.form.d) << what << ": the ladder reads C of D's type";
      if (j.form.batch > 1) EXPECT_LE(j.m * j.n * j.k, 100'000'000) << what << ": a batch of a large shape";
    }
  }
}

TEST(SelfTestJobs, EveryFormAStepClaimsIsCovered) {
  for (const gemm::StepInfo& info : gemm::AllSteps()) {
    if (info.step == gemm::kVendorStep) continue;
    const gemm::StepForms forms = gemm::FormsOf(info.step);
    std::set<std::pair<ElementType, ElementType>> type_pairs;
    std::set<std::pair<Layout, Layout>> layouts;
    bool alpha = false, beta_c = false, batch = false, shared_b = false, fused_ragged = false;
    for (const GemmJob& j : SelfTestJobs(info)) {
      type_pairs.insert({j.form.a, j.form.d});
      layouts.insert({j.form.a_layout, j.form.b_layout});
      alpha |= j.form.alpha != 1;
      beta_c |= j.form.ReadsC();
      fused_ragged |= j.form.ReadsC() && Ragged(j);
      batch |= j.form.batch > 1;
      shared_b |= j.form.batch > 1 && j.form.stride_b == 0;
    }
    const std::string step = "step " + std::to_string(info.step);
    EXPECT_TRUE(type_pairs.count({ElementType::kF16, ElementType::kF16})) << step;
    if (forms.bf16) {
      for (auto pair : {std::pair{ElementType::kBF16, ElementType::kBF16}, std::pair{ElementType::kBF16, ElementType::kF16},
                        std::pair{ElementType::kF16, ElementType::kBF16}}) {
        EXPECT_TRUE(type_pairs.count(pair)) << step << ": " << gemm::ElementName(pair.first) << " to "
                                            << gemm::ElementName(pair.second);
      }
    }
    if (forms.mn_contiguous) {
      for (Layout a : {Layout::kKContiguous, Layout::kMnContiguous}) {
        for (Layout b : {Layout::kKContiguous, Layout::kMnContiguous}) {
          EXPECT_TRUE(layouts.count({a, b})) << step << ": A " << gemm::LayoutName(a) << ", B " << gemm::LayoutName(b);
        }
      }
    }
    if (forms.alpha_beta_c) {
      EXPECT_TRUE(alpha) << step;
      EXPECT_TRUE(beta_c) << step;
      EXPECT_TRUE(fused_ragged) << step << ": C's ragged edge";
    }
    if (forms.batches) {
      EXPECT_TRUE(batch) << step;
      EXPECT_TRUE(shared_b) << step << ": a batch sharing B (stride 0)";
    }
  }
}

TEST(SelfTestJobs, ThePersistentStepsMeetRaggedEdgesLongKAndSeveralWaves) {
  const gemm::StepInfo* step10 = gemm::FindStep(10);
  ASSERT_NE(step10, nullptr);
  bool ragged = false, long_k = false, waves = false;
  // Split-K runs on one of three tiles (common/tile_width.h, SplitKTileWidth):
  // narrow where N <= 64, medium where M <= 128, else the pair.
  bool split_narrow = false, split_medium = false, split_pair = false, three_quarter = false, split_tail = false;
  for (const GemmJob& j : SelfTestJobs(*step10)) {
    if (!j.form.IsPlain()) continue;
    ragged |= j.m % 128 != 0 && Ragged(j);
    long_k |= j.k >= 4000;
    if (j.k >= 4000) {
      split_narrow |= j.n <= 64;
      split_medium |= j.n > 64 && j.m <= 128;
      split_pair |= j.n > 64 && j.m > 128;
    }
    // More 128×256 tiles than two waves of 132 SMs: every persistent CTA
    // takes several, and every stage ring wraps.
    waves |= ((j.m + 127) / 128) * ((j.n + 255) / 256) > 2 * 132;
    // Step 10's 128×192 tile on 132 SMs, K whole.
    const auto ctas = [&](int64_t rows, int64_t cols) {
      return static_cast<int>(((j.m + rows - 1) / rows) * ((j.n + cols - 1) / cols));
    };
    const gemm::common::TileCtas tiles = {2 * ctas(256, 256), ctas(128, 192), ctas(128, 128), ctas(128, 64)};
    const gemm::common::TileWidth width = gemm::common::ChooseTileWidth(tiles, 132, j.m <= 128);
    three_quarter |= j.k < 4000 && width == gemm::common::TileWidth::kThreeQuarter;
    // The wide tile's last wave split, on 60 to 66 resident pairs.
    bool tail_everywhere = width == gemm::common::TileWidth::kWide;
    const int k_tiles = static_cast<int>((j.k + 63) / 64);
    for (int slots = 60; slots <= 66; ++slots) {
      tail_everywhere &= gemm::common::ChooseSplitTail(ctas(256, 256), slots, k_tiles).splits > 1;
    }
    split_tail |= tail_everywhere;
  }
  EXPECT_TRUE(ragged);
  EXPECT_TRUE(long_k) << "split-K's shape";
  EXPECT_TRUE(split_narrow) << "split-K on the narrow tile";
  EXPECT_TRUE(split_medium) << "split-K on the medium tile";
  EXPECT_TRUE(split_pair) << "split-K on the pair tile";
  EXPECT_TRUE(waves);
  EXPECT_TRUE(three_quarter) << "step 10's three-quarter tile";
  EXPECT_TRUE(split_tail) << "step 10's split tail";
  // The single-tile steps are tested within their one tile.
  const gemm::StepInfo* step1 = gemm::FindStep(1);
  ASSERT_NE(step1, nullptr);
  for (const GemmJob& j : SelfTestJobs(*step1)) {
    EXPECT_LE(j.m, step1->max_m);
    EXPECT_LE(j.n, step1->max_n);
    EXPECT_LE(j.k, step1->max_k);
  }
}

}  // namespace
}  // namespace gemmd
