// The sm_100a steps 7-10 barrier protocol, run on the CPU by the model in
// warp_specialized_model.h: the kernels' own role loops and constants
// (sm100/warp_specialized_protocol.h), under seeded random schedules and
// the orders most likely to break them, must finish with no deadlock, no
// stage refilled early and no TMEM accumulator overwritten early. Each
// planted bug (an arrival count off by one, a phase that never flips) must
// make it fail.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "warp_specialized_model.h"

namespace gemm::sm100 {
namespace {

using model::Mutation;
using model::Outcome;
using model::ProblemSlice;
using model::Schedule;

struct NamedSchedule {
  const char* name;
  Schedule schedule;
};

// The orders most likely to break a protocol, and an even one.
std::vector<NamedSchedule> Schedules() {
  std::vector<NamedSchedule> s;
  s.push_back({"even", {}});
  s.push_back({"slow writeback", {.writeback = 0.03}});
  s.push_back({"fast producer", {.producer = 30, .hardware = 5}});
  s.push_back({"slow hardware", {.hardware = 0.05}});
  s.push_back({"slow MMA issue", {.mma = 0.05}});
  s.push_back({"peer CTA far behind", {.peer = 0.02}});
  s.push_back({"leader CTA far behind", {.producer = 0.1, .mma = 0.02, .writeback = 0.1, .peer = 10}});
  return s;
}

// Shapes for one step: aligned; uneven tile and k-tile counts (neither a
// multiple of the stages or accumulator buffers); ragged edges, where whole
// blocks of a cluster tile lie outside the matrix; K under one stage; and a
// batch of ragged entries, whose tiles a cluster walks from one entry into
// the next.
std::vector<ProblemSlice> Problems(const WarpSpecializedProtocol& p) {
  const int64_t rows = p.ClusterTileRows(), cols = p.ClusterTileCols();
  return {
      {.m = 2 * rows, .n = 2 * cols, .k = 4 * 64, .clusters = 1, .cluster = 0},
      {.m = 3 * rows, .n = 1 * cols, .k = int64_t{p.stages + 1} * 64, .clusters = 1, .cluster = 0},
      {.m = 2 * rows + 130, .n = 2 * cols + 7, .k = 3 * 64 + 5, .clusters = 4, .cluster = 1},
      {.m = rows - 129, .n = 5 * cols, .k = 40, .clusters = 2, .cluster = 0},
      {.m = rows + 70, .n = cols - 3, .k = 2 * 64 + 9, .clusters = 3, .cluster = 2, .entries = 5},
  };
}

Outcome RunSeeds(const WarpSpecializedProtocol& p, const ProblemSlice& problem, Schedule schedule, int seeds,
                 const Mutation& mutation, int* failures) {
  Outcome last;
  for (int seed = 1; seed <= seeds; ++seed) {
    schedule.seed = static_cast<uint64_t>(seed) * 7919u + static_cast<uint64_t>(problem.m);
    last = model::Run(p, problem, schedule, mutation);
    if (!last.ok) {
      ++*failures;
      if (mutation.kind == Mutation::Kind::kNone) return last;
    }
  }
  return last;
}

class WarpSpecializedProtocolTest : public ::testing::TestWithParam<int> {};

TEST_P(WarpSpecializedProtocolTest, FinishesWithoutDeadlockOrEarlyReuseUnderRandomSchedules) {
  const WarpSpecializedProtocol p = WarpSpecializedStep(GetParam());  // the kernels' own numbers
  int64_t runs = 0, events = 0, tiles = 0;
  for (const ProblemSlice& problem : Problems(p)) {
    for (const NamedSchedule& s : Schedules()) {
      if (p.cta_group == 1 && s.schedule.peer != 1) continue;  // no peer to be behind
      int failures = 0;
      for (int seed = 1; seed <= 6; ++seed) {
        Schedule schedule = s.schedule;
        schedule.seed = static_cast<uint64_t>(seed) * 104729u + static_cast<uint64_t>(problem.m);
        const Outcome out = model::Run(p, problem, schedule);
        ASSERT_TRUE(out.ok) << "step " << GetParam() << ", " << s.name << " schedule, seed " << schedule.seed << ", "
                            << problem.m << "x" << problem.n << "x" << problem.k << " (cluster " << problem.cluster
                            << " of " << problem.clusters << "): " << out.failure;
        ASSERT_GT(out.events, 0);
        ++runs;
        events += out.events;
        tiles += out.tiles;
        (void)failures;
      }
    }
  }
  EXPECT_GT(tiles, runs);  // the problems give most runs several tiles
  RecordProperty("runs", static_cast<int>(runs));
  RecordProperty("events", static_cast<int>(events));
}

// A planted bug must fail the model on every seed tried.
void ExpectEveryRunFails(int step, const Mutation& mutation, const char* what) {
  const WarpSpecializedProtocol p = WarpSpecializedStep(step);
  // Enough tiles that every slot and stage is reused many times.
  const ProblemSlice problem{.m = 6 * p.ClusterTileRows(), .n = 3 * p.ClusterTileCols(), .k = 6 * 64};
  for (const NamedSchedule& s : {Schedules()[0], Schedules()[1], Schedules()[2]}) {
    int failures = 0;
    constexpr int kSeeds = 3;
    const Outcome last = RunSeeds(p, problem, s.schedule, kSeeds, mutation, &failures);
    EXPECT_EQ(failures, kSeeds) << "step " << step << ", " << what << ", " << s.name
                                << " schedule: the model missed the planted bug";
    if (failures > 0) ::testing::Test::RecordProperty(std::string(what) + " (" + s.name + ")", last.failure.substr(0, 200));
  }
}

TEST_P(WarpSpecializedProtocolTest, CatchesEveryBarrierExpectingOneArrivalTooMany) {
  for (Barrier b : {Barrier::kTma2Mma, Barrier::kMma2Tma, Barrier::kMma2Ld, Barrier::kLd2Mma}) {
    ExpectEveryRunFails(GetParam(), {Mutation::Kind::kArrivalCount, b, +1},
                        (std::string(model::BarrierName(b)) + " count + 1").c_str());
  }
}

TEST_P(WarpSpecializedProtocolTest, CatchesABarrierExpectingOneArrivalTooFew) {
  const WarpSpecializedProtocol p = WarpSpecializedStep(GetParam());
  for (Barrier b : {Barrier::kTma2Mma, Barrier::kMma2Tma, Barrier::kMma2Ld, Barrier::kLd2Mma}) {
    if (p.Arrivals(b) < 2) continue;  // one arrival less would be none: refused at init
    ExpectEveryRunFails(GetParam(), {Mutation::Kind::kArrivalCount, b, -1},
                        (std::string(model::BarrierName(b)) + " count - 1").c_str());
  }
}

TEST_P(WarpSpecializedProtocolTest, CatchesAPhaseThatIsNeverFlipped) {
  for (Barrier b : {Barrier::kTma2Mma, Barrier::kMma2Tma, Barrier::kMma2Ld, Barrier::kLd2Mma}) {
    ExpectEveryRunFails(GetParam(), {Mutation::Kind::kPhaseNotFlipped, b, 0},
                        (std::string(model::BarrierName(b)) + " phase not flipped").c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(Steps7To10, WarpSpecializedProtocolTest, ::testing::Values(7, 8, 9, 10),
                         [](const ::testing::TestParamInfo<int>& info) { return "Step" + std::to_string(info.param); });

// The numbers each step's protocol must have, from the seed's step
// descriptions (../shared/seed: steps 7-10, "Barrier init counts") and the
// sm_100a limits: TMEM holds 512 columns, a CTA 227 KB of shared memory.
TEST(WarpSpecializedProtocol, EachStepHasTheSeedsCountsAndFitsTheChip) {
  struct Expected {
    int step, stages, consumers, cta_group;
    uint32_t mma2tma, ld2mma;
    int cluster_rows, cluster_cols, tx_bytes;
  };
  // tx bytes: CTA_GROUP * (NUM_CONSUMER * BLK_M * BLK_K + BLK_N * BLK_K) * 2 (seed, step 10).
  for (const Expected& e : {Expected{7, 2, 1, 1, 1, 128, 128, 128, 32768}, Expected{8, 4, 1, 1, 1, 128, 128, 128, 32768},
                            Expected{9, 4, 1, 2, 1, 256, 256, 256, 65536},
                            // mma2tma: one commit per stage, from the one thread that issues for
                            // both consumers (as CUTLASS and DeepGEMM issue).
                            Expected{10, 4, 2, 2, 1, 256, 512, 256, 98304}}) {
    const WarpSpecializedProtocol p = WarpSpecializedStep(e.step);
    EXPECT_EQ(p.stages, e.stages) << e.step;
    EXPECT_EQ(p.consumers, e.consumers) << e.step;
    EXPECT_EQ(p.cta_group, e.cta_group) << e.step;
    EXPECT_EQ(p.Arrivals(Barrier::kTma2Mma), 1u) << e.step;
    EXPECT_EQ(p.Arrivals(Barrier::kMma2Tma), e.mma2tma) << e.step;
    EXPECT_EQ(p.Arrivals(Barrier::kMma2Ld), 1u) << e.step;
    EXPECT_EQ(p.Arrivals(Barrier::kLd2Mma), e.ld2mma) << e.step;
    EXPECT_EQ(p.ClusterTileRows(), e.cluster_rows) << e.step;
    EXPECT_EQ(p.ClusterTileCols(), e.cluster_cols) << e.step;
    EXPECT_EQ(p.StageTxBytes(1 << 20, 1 << 20, 0, 0), static_cast<uint32_t>(e.tx_bytes)) << e.step;
    EXPECT_LE(p.TmemColumns(), 512u) << e.step;
    EXPECT_LE(p.WritebackChunks() * 64, 256) << e.step;  // a tcgen05 MMA's N is at most 256
  }
}

// A cluster tile hanging over the matrix: blocks wholly outside are not
// loaded, so the leader must expect fewer bytes, and both CTAs agree.
TEST(WarpSpecializedProtocol, RaggedClusterTilesCountOnlyTheBlocksInside) {
  const WarpSpecializedProtocol p = WarpSpecializedStep(10);
  // m = 300: of the rows 0..511, A blocks start at 0, 128, 256 (inside) and 384 (outside).
  // n = 100: B blocks start at 0 (inside) and 128 (outside).
  EXPECT_EQ(p.StageTxBytes(300, 100, 0, 0), static_cast<uint32_t>((3 + 1) * common::kTileBytes));
  EXPECT_EQ(p.ARow(0, /*rank=*/1, /*consumer=*/1), 384);
  EXPECT_EQ(p.BRow(0, /*rank=*/1), 128);
}

}  // namespace
}  // namespace gemm::sm100
