// The pattern diagnostics on the CPU: each typical fault of a tensor-core
// GEMM, simulated on the probes' inputs as the faulty kernel would compute
// (a reference GEMM with the fault planted in its addressing), must be named
// as itself, and the right D must read "exact".
#include "gemm/diagnose.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "gemm/half.h"
#include "fault_phrases.h"

namespace gemm {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Decodes = DiagnosticProbe::Decodes;

// The probe of `decodes` on `shape` ("one tile, several k-tiles", ...).
DiagnosticProbe Probe(const std::string& shape, Decodes decodes) {
  for (auto& p : DiagnosticProbes(0, 0, 0)) {
    if (p.name.rfind(shape, 0) == 0 && p.decodes == decodes) return p;
  }
  ADD_FAILURE() << "no probe " << shape;
  return {};
}

// The faults a kernel can have, as maps from what it should read to what it
// reads: A's row for output row i, and the k of A and B for step k.
struct Fault {
  std::function<int64_t(int64_t)> a_row = [](int64_t i) { return i; };        // A's row that output row i reads
  std::function<int64_t(int64_t)> a_k = [](int64_t k) { return k; };          // A's k that step k reads
  std::function<int64_t(int64_t)> b_k = [](int64_t k) { return k; };          // B's k that step k reads
  std::function<int64_t(int64_t)> out_row = [](int64_t i) { return i; };      // the row the epilogue writes row i to
  int64_t columns = std::numeric_limits<int64_t>::max();                       // columns the tile computes
  std::function<float(int64_t, int64_t)> stale = [](int64_t, int64_t) { return 0.0f; };  // added to the sum
  // Where an operand's row r stores what belongs at k (a swizzle that
  // depends on the row); applied to A's and B's reads alike.
  std::function<int64_t(int64_t, int64_t)> k_in_row = [](int64_t, int64_t k) { return k; };
};

// A holds one nonzero per row, so the products are summed from A's side:
// each of them times a row of B, fast enough for the largest probe.
std::vector<uint16_t> RunWithFault(const DiagnosticProbe& p, const Fault& f) {
  std::vector<uint16_t> d(static_cast<size_t>(p.m * p.n), 0x7e00);  // poisoned: NaN
  std::vector<double> row(static_cast<size_t>(p.n));
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) row[static_cast<size_t>(j)] = f.stale(i, j);
    const int64_t ai = f.a_row(i);
    for (int64_t k = 0; k < p.k && ai >= 0 && ai < p.m; ++k) {
      const int64_t ak = f.a_k(k), bk = f.b_k(k);
      if (ak < 0 || ak >= p.k || bk < 0 || bk >= p.k) continue;
      const float a = HalfToFloat(p.a[static_cast<size_t>(ai * p.k + f.k_in_row(ai, ak))]);
      if (a == 0) continue;
      for (int64_t j = 0; j < p.n; ++j) {
        row[static_cast<size_t>(j)] += double{a} * HalfToFloat(p.b[static_cast<size_t>(j * p.k + f.k_in_row(j, bk))]);
      }
    }
    for (int64_t j = 0; j < p.n && j < f.columns; ++j) {
      d[static_cast<size_t>(f.out_row(i) * p.n + j)] = FloatToHalf(static_cast<float>(row[static_cast<size_t>(j)]));
    }
  }
  return d;
}

TEST(Diagnose, TheRightResultIsExactOnEveryProbe) {
  for (const auto& p : DiagnosticProbes(0, 0, 0)) {
    const Diagnosis d = Diagnose(p, RunWithFault(p, Fault{}));
    EXPECT_TRUE(d.exact) << p.name << ": " << d.Summary();
    EXPECT_EQ(d.Summary(), "exact");
  }
  EXPECT_EQ(DiagnosticProbes(128, 128, 64).size(), 3u);  // a single-tile step gets the one-tile probes only
}

TEST(Diagnose, RowsPermutedWithinA32RowQuarterAreTheTmemLaneMapping) {
  Fault f;
  f.out_row = [](int64_t i) { return (i / 32) * 32 + (i % 32) ^ 1; };  // neighbouring lanes swapped
  const auto p = Probe("one tile, one k-tile", Decodes::kRow);
  EXPECT_THAT(Diagnose(p, RunWithFault(p, f)).Summary(), HasSubstr("within each 32-row quarter are permuted"));
}

TEST(Diagnose, QuartersExchangedAreTheWarpToLaneQuarterAssignment) {
  Fault f;
  f.out_row = [](int64_t i) { return (i + 32) % 128 + (i / 128) * 128; };
  const auto p = Probe("one tile, one k-tile", Decodes::kRow);
  EXPECT_THAT(Diagnose(p, RunWithFault(p, f)).Summary(), HasSubstr("warp-to-lane-quarter"));
}

TEST(Diagnose, RepeatedEightRowGroupsAreTheStrideByteOffset) {
  Fault f;
  f.a_row = [](int64_t i) { return (i / 16) * 8 + i % 8; };  // group g reads group g/2
  const auto p = Probe("one tile, one k-tile", Decodes::kRow);
  EXPECT_THAT(Diagnose(p, RunWithFault(p, f)).Summary(), HasSubstr("stride byte offset"));
}

TEST(Diagnose, SwappedK16SlicesAreTheStartAddressAdvance) {
  Fault f;  // A's descriptor advanced wrongly: slices 1 and 2 exchanged
  f.a_k = [](int64_t k) {
    const int64_t slice = (k % 64) / 16;
    const int64_t to = slice == 1 ? 2 : slice == 2 ? 1 : slice;
    return k - (k % 64) + to * 16 + k % 16;
  };
  const auto p = Probe("one tile, one k-tile", Decodes::kK);
  const std::string s = Diagnose(p, RunWithFault(p, f)).Summary();
  EXPECT_THAT(s, HasSubstr("K16 slices exchanged"));
  EXPECT_THAT(s, HasSubstr("start-address advance"));
}

TEST(Diagnose, AnAdvanceThatRepeatsASliceCountsSomeProductsTwiceAndOthersNever) {
  Fault f;  // A and B both stay on slice 0 for slice 1
  f.a_k = f.b_k = [](int64_t k) { return (k % 64) / 16 == 1 ? k - 16 : k; };
  const auto p = Probe("one tile, one k-tile", Decodes::kK);
  const std::string s = Diagnose(p, RunWithFault(p, f)).Summary();
  EXPECT_THAT(s, HasSubstr("never read"));
  EXPECT_THAT(s, HasSubstr("more than once"));
}

// TMA boxes written without the 128-byte swizzle the MMA reads with: the
// 16-byte chunk c of row r is read from chunk c ^ (r % 8), in A and B.
Fault UnswizzledBoxes() {
  Fault f;
  f.k_in_row = [](int64_t r, int64_t k) { return k - k % 64 + (((k % 64) / 8) ^ (r % 8)) * 8 + k % 8; };
  return f;
}

TEST(Diagnose, ChunksPermutedByRowAreTheSwizzle) {
  const auto p = Probe("one tile, one k-tile", Decodes::kK);
  EXPECT_THAT(Diagnose(p, RunWithFault(p, UnswizzledBoxes())).Summary(), HasSubstr("swizzle"));
}

TEST(Diagnose, ANarrowerTileLeavesColumnsUnwritten) {
  Fault f;
  f.columns = 64;  // the descriptor's N says 64
  const auto p = Probe("one tile, one k-tile", Decodes::kColumn);
  const std::string s = Diagnose(p, RunWithFault(p, f)).Summary();
  EXPECT_THAT(s, HasSubstr("columns 64-127 of every row"));
  EXPECT_THAT(s, HasSubstr("N"));
}

TEST(Diagnose, SwappedTileHalvesAreThePairLoadingIntoTheWrongCta) {
  Fault f;
  f.a_row = [](int64_t i) { return i < 256 ? (i + 128) % 256 : i; };  // each CTA's A rows from the other
  const auto p = Probe("one cluster tile", Decodes::kRow);
  EXPECT_THAT(Diagnose(p, RunWithFault(p, f)).Summary(), HasSubstr("tile halves swapped between the CTAs of a pair"));
}

// A persistent CTA's second tile added onto its first: every tile past the
// grid's first wave starts from the sums of the tile a grid earlier.
Fault StaleAccumulator(const DiagnosticProbe& p, int64_t grid) {
  Fault f;
  f.stale = [&p, grid](int64_t i, int64_t j) {
    const int64_t tiles_n = (p.n + 127) / 128, tile = (i / 128) * tiles_n + j / 128;
    if (tile < grid) return 0.0f;
    const int64_t earlier = tile - grid;
    return ExpectedValue(p, (earlier / tiles_n) * 128 + i % 128, (earlier % tiles_n) * 128 + j % 128);
  };
  return f;
}

TEST(Diagnose, AStaleAccumulatorShowsAsSums) {
  for (Decodes decodes : {Decodes::kK, Decodes::kRow, Decodes::kColumn}) {
    const auto p = Probe("more tiles than CTAs", decodes);
    for (int64_t grid : {396, 264, 508}) {  // the earlier tile in other rows, or in the same rows (the k probe doubles)
      const std::string s = Diagnose(p, RunWithFault(p, StaleAccumulator(p, grid))).Summary();
      EXPECT_THAT(s, HasSubstr("accumulate flag")) << p.name << ", grid " << grid;
      EXPECT_THAT(s, Not(HasSubstr("phase"))) << p.name << ", grid " << grid;
    }
  }
}

TEST(Diagnose, MixedKTilesAreAStageReusedEarly) {
  Fault f;  // k-tile 2's MMAs read k-tile 1's stage (A and B)
  f.a_k = f.b_k = [](int64_t k) { return k / 64 == 2 ? k - 64 : k; };
  const auto p = Probe("one tile, several k-tiles", Decodes::kK);
  const std::string s = Diagnose(p, RunWithFault(p, f)).Summary();
  EXPECT_THAT(s, HasSubstr("k-tiles 2 are never read, and k-tiles 1 are read twice"));
  EXPECT_THAT(s, HasSubstr("phase"));
}

// The faults tests/gpu/planted_faults_gpu_test.cpp plants in the real
// sm_90a kernels, simulated here: over every probe, each is named as itself
// and as no other (tests/fault_phrases.h).
TEST(Diagnose, EachPlantedFaultIsNamedAsItselfAndNothingElse) {
  std::vector<std::pair<std::string, std::function<Fault(const DiagnosticProbe&)>>> faults;
  faults.emplace_back("K16 advance", [](const DiagnosticProbe&) {
    Fault f;  // A's slices 1 and 2 read each other's
    f.a_k = [](int64_t k) {
      const int64_t slice = (k % 64) / 16, to = slice == 1 ? 2 : slice == 2 ? 1 : slice;
      return k - k % 64 + to * 16 + k % 16;
    };
    return f;
  });
  faults.emplace_back("stride byte offset", [](const DiagnosticProbe&) {
    Fault f;  // A's stride byte offset 0: every 8-row group of a 64-row MMA reads the first
    f.a_row = [](int64_t i) { return i - i % 64 + i % 8; };
    return f;
  });
  faults.emplace_back("epilogue rows", [](const DiagnosticProbe&) {
    Fault f;  // each thread's rows written to its neighbour's
    f.out_row = [](int64_t i) { return i ^ 1; };
    return f;
  });
  faults.emplace_back("accumulate flag", [](const DiagnosticProbe& p) { return StaleAccumulator(p, 396); });
  faults.emplace_back("pair loads", [](const DiagnosticProbe& p) {
    Fault f;  // each CTA of a pair loads the other's A rows, where both have rows
    f.a_row = [m = p.m](int64_t i) { return (i ^ 128) < m ? i ^ 128 : i; };
    return f;
  });
  for (const char* operands : {"A and B", "A", "B"}) {
    faults.emplace_back("stage phase", [operands](const DiagnosticProbe&) {
      Fault f;  // from k-tile 2 on, a 2-stage ring's MMA reads what the stage held a round earlier
      const auto early = [](int64_t k) { return k / 64 >= 2 ? k - 128 : k; };
      if (std::string(operands).find('A') != std::string::npos) f.a_k = early;
      if (std::string(operands).find('B') != std::string::npos) f.b_k = early;
      return f;
    });
  }
  faults.emplace_back("swizzle", [](const DiagnosticProbe&) { return UnswizzledBoxes(); });
  for (const auto& [fault, make] : faults) {
    std::string summary;
    for (const auto& p : DiagnosticProbes(0, 0, 0)) summary += Diagnose(p, RunWithFault(p, make(p))).Summary() + "; ";
    EXPECT_THAT(summary, HasSubstr(PhraseOf(fault))) << fault << ": " << summary;
    EXPECT_EQ(OtherFaultsNamed(summary, fault), "") << fault << ": " << summary;
  }
}

}  // namespace
}  // namespace gemm
