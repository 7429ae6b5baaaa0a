// Blackwell's own faults, which Hopper has no analogue for, planted in a CPU
// model of the sm_100a epilogue's TMEM read (sm100/tmem_epilogue.h) and
// named by the pattern diagnostics (gemm/diagnose.h).
//
// The model: the MMA leaves row r of the 128×N accumulator in TMEM lane r,
// column c in column c (the PTX ISA's data path layout for M = 128,
// cta_group::1). Thread t of the epilogue warpgroup is warp t/32, lane
// t%32; `tcgen05.ld.32x32b.x32` at TmemAddress(base, 32·warp, c0) gives
// each thread of the warp lane 32·warp + its lane, columns c0..c0+31, and
// the thread stores them to D's row 32·warp + lane. A warp may read only
// its own quarter of the lanes (32·(warp % 4) on); the model refuses other
// reads, as the hardware does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "gemm/diagnose.h"
#include "gemm/half.h"
#include "sm100/umma_descriptors.h"

namespace gemm::sm100 {
namespace {

using ::testing::HasSubstr;

constexpr int kLanes = 128, kColumns = 512;

// The epilogue's choices a fault can change.
struct Epilogue {
  // The lane base the warp's load asks for.
  std::function<uint32_t(int warp)> lane_base = [](int warp) { return static_cast<uint32_t>(32 * warp); };
  // The row of D the thread writes what it read.
  std::function<int(int warp, int lane)> out_row = [](int warp, int lane) { return 32 * warp + lane; };
  // The column the load starts at, for columns c0..c0+31 of the tile.
  std::function<uint32_t(int c0)> load_column = [](int c0) { return static_cast<uint32_t>(c0); };
};

struct Tmem {
  std::vector<float> cells = std::vector<float>(kLanes * kColumns, 0.0f);
  float& at(uint32_t address) { return cells[(address >> 16) * kColumns + (address & 0xffff)]; }
};

// D (128×128 fp16 bits) of the probe, its accumulator at TMEM column 0 (and
// the tile before it, which the next accumulator slot still holds, at 128).
std::vector<uint16_t> RunModel(const DiagnosticProbe& p, const Epilogue& e, std::string* refused) {
  Tmem tmem;
  for (int r = 0; r < kLanes; ++r) {
    for (int c = 0; c < 128; ++c) {
      double sum = 0;
      for (int64_t k = 0; k < p.k; ++k) sum += double{HalfToFloat(p.a[r * p.k + k])} * HalfToFloat(p.b[c * p.k + k]);
      tmem.at(TmemAddress(0, static_cast<uint32_t>(r), static_cast<uint32_t>(c))) = static_cast<float>(sum);
      tmem.at(TmemAddress(0, static_cast<uint32_t>(r), static_cast<uint32_t>(128 + c))) = 1000.5f + r;  // a stale tile
    }
  }
  std::vector<uint16_t> d(128 * 128, 0x7e00);  // poisoned
  for (int warp = 0; warp < 4; ++warp) {
    const uint32_t base = e.lane_base(warp);
    if (base / 32 != static_cast<uint32_t>(warp % 4)) {
      *refused = "warp " + std::to_string(warp) + " asked for lanes " + std::to_string(base) + " on";
      continue;  // the hardware forbids it: the warp reads nothing
    }
    for (int c0 = 0; c0 < 128; c0 += 32) {
      for (int lane = 0; lane < 32; ++lane) {
        for (int j = 0; j < 32; ++j) {
          const float v = tmem.at(TmemAddress(0, base + static_cast<uint32_t>(lane), e.load_column(c0) + j));
          d[e.out_row(warp, lane) * 128 + c0 + j] = FloatToHalf(v);
        }
      }
    }
  }
  return d;
}

DiagnosticProbe Probe(DiagnosticProbe::Decodes decodes) {
  for (auto& p : DiagnosticProbes(128, 128, 64)) {
    if (p.decodes == decodes) return p;
  }
  return {};
}

std::string DiagnoseModel(const Epilogue& e, DiagnosticProbe::Decodes decodes, std::string* refused = nullptr) {
  std::string unused;
  const auto p = Probe(decodes);
  return Diagnose(p, RunModel(p, e, refused ? refused : &unused)).Summary();
}

TEST(TmemEpilogueModel, TheEpilogueAsWrittenReadsEveryProbeExactly) {
  for (auto decodes : {DiagnosticProbe::Decodes::kK, DiagnosticProbe::Decodes::kRow, DiagnosticProbe::Decodes::kColumn}) {
    EXPECT_EQ(DiagnoseModel(Epilogue{}, decodes), "exact");
  }
}

TEST(TmemEpilogueModel, AThreadWritingItsNeighboursRowIsALaneMappingFault) {
  Epilogue e;
  e.out_row = [](int warp, int lane) { return 32 * warp + (lane ^ 1); };
  EXPECT_THAT(DiagnoseModel(e, DiagnosticProbe::Decodes::kRow), HasSubstr("within each 32-row quarter are permuted"));
}

TEST(TmemEpilogueModel, RowsInterleavedAcrossWarpsAreNamedAsRowMoves) {
  Epilogue e;  // row = 4·lane + warp: the quarters interleaved instead of stacked
  e.out_row = [](int warp, int lane) { return 4 * lane + warp; };
  EXPECT_THAT(DiagnoseModel(e, DiagnosticProbe::Decodes::kRow), HasSubstr("rows hold other rows"));
}

TEST(TmemEpilogueModel, WarpsAskingForOtherQuartersLanesWriteNothing) {
  Epilogue e;  // a warpgroup counted from warp 1: warp w asks for quarter w + 1
  e.lane_base = [](int warp) { return static_cast<uint32_t>(32 * (warp + 1)); };
  std::string refused;
  const std::string s = DiagnoseModel(e, DiagnosticProbe::Decodes::kRow, &refused);
  EXPECT_THAT(refused, HasSubstr("asked for lanes"));
  EXPECT_THAT(s, HasSubstr("no element was written"));
  EXPECT_THAT(s, HasSubstr("outside its quarter"));
}

TEST(TmemEpilogueModel, ReadingTheOtherAccumulatorSlotShowsTheStaleTile) {
  Epilogue e;  // the slot's column offset forgotten the other way: slot 1 read for slot 0
  e.load_column = [](int c0) { return static_cast<uint32_t>(128 + c0); };
  EXPECT_THAT(DiagnoseModel(e, DiagnosticProbe::Decodes::kK), HasSubstr("accumulate flag"));
}

TEST(TmemEpilogueModel, ColumnsReadFromTheWrongOffsetAreNamedAsColumnMoves) {
  Epilogue e;  // the 32-column loads all start at column 0
  e.load_column = [](int) { return 0u; };
  EXPECT_THAT(DiagnoseModel(e, DiagnosticProbe::Decodes::kColumn), HasSubstr("columns from 32 on repeat the first 32"));
}

}  // namespace
}  // namespace gemm::sm100
