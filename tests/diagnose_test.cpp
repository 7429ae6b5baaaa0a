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

namespace gemm {
namespace {

using ::testing::HasSubstr;
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
};

std::vector<uint16_t> RunWithFault(const DiagnosticProbe& p, const Fault& f) {
  std::vector<uint16_t> d(static_cast<size_t>(p.m * p.n), 0x7e00);  // poisoned: NaN
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n && j < f.columns; ++j) {
      double sum = f.stale(i, j);
      for (int64_t k = 0; k < p.k; ++k) {
        const int64_t ak = f.a_k(k), bk = f.b_k(k), ai = f.a_row(i);
        if (ak < 0 || ak >= p.k || bk < 0 || bk >= p.k || ai < 0 || ai >= p.m) continue;
        sum += double{HalfToFloat(p.a[static_cast<size_t>(ai * p.k + ak)])} * HalfToFloat(p.b[static_cast<size_t>(j * p.k + bk)]);
      }
      d[static_cast<size_t>(f.out_row(i) * p.n + j)] = FloatToHalf(static_cast<float>(sum));
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

TEST(Diagnose, ChunksPermutedByRowAreTheSwizzle) {
  const auto p = Probe("one tile, one k-tile", Decodes::kK);
  // A read with the 128-byte swizzle left out: 8-element chunk c of row r
  // is taken from chunk c ^ (r % 8). Modelled per row through a_row and a
  // k map that depends on the row: simplest as a custom run.
  std::vector<uint16_t> d(static_cast<size_t>(p.m * p.n));
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < p.k; ++k) {
        const int64_t chunk = (k % 64) / 8, ak = k - (k % 64) + ((chunk ^ (i % 8)) * 8) + k % 8;
        sum += double{HalfToFloat(p.a[static_cast<size_t>(i * p.k + ak)])} * HalfToFloat(p.b[static_cast<size_t>(j * p.k + k)]);
      }
      d[static_cast<size_t>(i * p.n + j)] = FloatToHalf(static_cast<float>(sum));
    }
  }
  EXPECT_THAT(Diagnose(p, d).Summary(), HasSubstr("swizzle"));
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

TEST(Diagnose, AStaleAccumulatorShowsAsSums) {
  Fault f;
  f.stale = [](int64_t i, int64_t j) { return static_cast<float>((i * 7 + j * 3) % 50) + 0.5f; };
  const auto p = Probe("one tile, several k-tiles", Decodes::kK);
  EXPECT_THAT(Diagnose(p, RunWithFault(p, f)).Summary(), HasSubstr("accumulate flag"));
}

TEST(Diagnose, MixedKTilesAreAStageReusedEarly) {
  Fault f;  // k-tile 2's MMAs read k-tile 1's stage (A and B)
  f.a_k = f.b_k = [](int64_t k) { return k / 64 == 2 ? k - 64 : k; };
  const auto p = Probe("one tile, several k-tiles", Decodes::kK);
  const std::string s = Diagnose(p, RunWithFault(p, f)).Summary();
  EXPECT_THAT(s, HasSubstr("k-tiles 2 are never read, and k-tiles 1 are read twice"));
  EXPECT_THAT(s, HasSubstr("phase"));
}

}  // namespace
}  // namespace gemm
