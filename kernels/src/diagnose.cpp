// gemm/diagnose.h says what the probes are and why they work.
#include "gemm/diagnose.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "gemm/half.h"

namespace gemm {

namespace {

using Decodes = DiagnosticProbe::Decodes;

constexpr int64_t kTileRows = 128, kKTile = 64, kKSlice = 16, kQuarter = 32, kRowGroup = 8;

// Every right value is 1024 + an index mod 1024: an exact fp16 integer, and
// no sum of two of them is one (a sum is at least 2048), so a product
// counted twice or a stale sum never passes for a value moved.
constexpr int64_t kValueBase = 1024, kPeriod = 1024;
float ValueOf(int64_t index) { return static_cast<float>(kValueBase + index % kPeriod); }
bool IsValue(float v) { return v >= kValueBase && v < kValueBase + kPeriod && v == std::round(v); }
// The index a value names (mod kPeriod).
int64_t Source(float v) { return static_cast<int64_t>(v) - kValueBase; }
// The index in [0, extent) congruent to `source` (mod kPeriod) nearest to
// `near`: where a value read from a probe with more than kPeriod rows or
// columns came from.
int64_t Nearest(int64_t source, int64_t near, int64_t extent) {
  int64_t best = source;
  for (int64_t c = source; c < extent; c += kPeriod) {
    if (std::llabs(c - near) < std::llabs(best - near)) best = c;
  }
  return best;
}

// The k that row i of a probe's A selects: spread over every k-tile. The
// i/8 and i/128 terms make rows of other 8-row groups, and of the other CTA
// of a pair, select k's that are not a multiple of 8 away: a row fault
// (a stride byte offset, a pair's loads, an epilogue's row mapping) then
// never passes for a K16 slice or swizzle fault in the k probes.
int64_t KOfRow(int64_t row, int64_t m, int64_t k) {
  const int64_t stride = std::max<int64_t>(1, k / std::max<int64_t>(1, std::min(m, k)));
  return (row * stride + row / kRowGroup + row / kTileRows) % k;
}

uint16_t Half(float x) { return FloatToHalf(x); }

DiagnosticProbe Make(const std::string& shape_name, int64_t m, int64_t n, int64_t k, Decodes decodes) {
  DiagnosticProbe p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.decodes = decodes;
  const char* what = decodes == Decodes::kRow ? "rows" : decodes == Decodes::kColumn ? "columns" : "k";
  p.name = shape_name + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + ", decoding " + what;
  p.a.assign(static_cast<size_t>(m * k), Half(0));
  p.b.assign(static_cast<size_t>(n * k), Half(0));
  // Row i of A is one-hot at KOfRow(i): D's row i is B's column KOfRow(i).
  for (int64_t i = 0; i < m; ++i) {
    const float one = decodes == Decodes::kRow ? ValueOf(i) : 1.0f;
    p.a[static_cast<size_t>(i * k + KOfRow(i, m, k))] = Half(one);
  }
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t x = 0; x < k; ++x) {
      const float v = decodes == Decodes::kRow ? 1.0f : decodes == Decodes::kColumn ? ValueOf(j) : ValueOf(x);
      p.b[static_cast<size_t>(j * k + x)] = Half(v);
    }
  }
  return p;
}

// "a-b" or "a" for a sorted set of indices, at most `most` ranges.
std::string Ranges(const std::set<int64_t>& s, size_t most = 6) {
  std::ostringstream out;
  size_t shown = 0;
  for (auto it = s.begin(); it != s.end();) {
    const int64_t first = *it;
    int64_t last = first;
    while (++it != s.end() && *it == last + 1) last = *it;
    if (shown++ == most) {
      out << ", ...";
      break;
    }
    out << (shown > 1 ? ", " : "") << first;
    if (last != first) out << "-" << last;
  }
  return out.str();
}

struct Bad {
  int64_t row, col;
  float expected, seen;
};

std::string Evidence(const std::vector<Bad>& bad) {
  std::ostringstream out;
  for (size_t i = 0; i < bad.size() && i < 3; ++i) {
    out << (i ? ", " : " (e.g. ") << "D[" << bad[i].row << "][" << bad[i].col << "] expected " << bad[i].expected
        << ", seen " << bad[i].seen;
  }
  out << ")";
  return out.str();
}

// Rows (or columns) that hold another's: named by how they moved.
std::string ExplainRowMoves(const std::map<int64_t, std::set<int64_t>>& moves) {
  bool within_quarter = true, same_lane_other_quarter = true, same_in_group_other_group = true, pair_swap = true;
  for (const auto& [from, tos] : moves) {
    for (int64_t to : tos) {
      within_quarter &= to / kQuarter == from / kQuarter;
      same_lane_other_quarter &= to % kQuarter == from % kQuarter && to / kQuarter != from / kQuarter;
      same_in_group_other_group &= to % kRowGroup == from % kRowGroup && to / kRowGroup != from / kRowGroup;
      pair_swap &= std::llabs(to - from) == kTileRows;
    }
  }
  std::ostringstream out;
  auto example = [&] {
    std::ostringstream e;
    int shown = 0;
    for (const auto& [from, tos] : moves) {
      if (shown++ == 4) break;
      e << (shown > 1 ? ", " : "") << "row " << from << " holds row " << *tos.begin();
    }
    return e.str();
  };
  if (pair_swap) {
    out << "tile halves swapped between the CTAs of a pair: rows hold the rows 128 away (" << example() << ")";
  } else if (same_lane_other_quarter) {
    out << "whole 32-row quarters exchanged: each warp reads another warp's lane quarter, the warp-to-lane-quarter "
           "assignment ("
        << example() << ")";
  } else if (within_quarter) {
    out << "rows within each 32-row quarter are permuted: the TMEM lane (or accumulator row) mapping of the "
           "epilogue ("
        << example() << ")";
  } else if (same_in_group_other_group) {
    out << "8-row groups repeated or skipped: a shared-memory descriptor's stride byte offset (" << example() << ")";
  } else {
    out << "rows hold other rows (" << example() << ")";
  }
  return out.str();
}

std::string ExplainColumnMoves(const std::map<int64_t, std::set<int64_t>>& moves) {
  int64_t first = moves.begin()->first;
  bool repeats = true, within_chunks = true;
  for (const auto& [from, tos] : moves) {
    for (int64_t to : tos) {
      repeats &= first > 0 && from >= first && to < first && (from - to) % first == 0;
      within_chunks &= to / 64 == from / 64 && (to - from) % 8 == 0;
    }
  }
  std::ostringstream out;
  int shown = 0;
  std::ostringstream e;
  for (const auto& [from, tos] : moves) {
    if (shown++ == 4) break;
    e << (shown > 1 ? ", " : "") << "column " << from << " holds column " << *tos.begin();
  }
  if (repeats && first > 0) {
    out << "columns from " << first << " on repeat the first " << first << ": the tile's N (the MMA descriptor's N, "
        << "or the epilogue's column offset) (" << e.str() << ")";
  } else if (within_chunks) {
    out << "columns permuted in 8-column (16-byte) chunks within each 64: the swizzle of D's staging or store ("
        << e.str() << ")";
  } else {
    out << "columns hold other columns (" << e.str() << ")";
  }
  return out.str();
}

std::string ExplainKMoves(const std::vector<std::pair<int64_t, int64_t>>& moves) {  // (expected k, seen k)
  bool same_tile = true, slice_multiple = true, chunk_multiple = true, tile_multiple = true;
  std::set<int64_t> deltas;
  std::map<int64_t, std::set<int64_t>> slices;  // expected slice -> seen slices
  for (auto [k, seen] : moves) {
    const int64_t delta = seen - k;
    deltas.insert(delta);
    same_tile &= seen / kKTile == k / kKTile;
    slice_multiple &= delta % kKSlice == 0;
    chunk_multiple &= delta % 8 == 0;
    tile_multiple &= delta % kKTile == 0;
    slices[k / kKSlice].insert(seen / kKSlice);
  }
  std::ostringstream out;
  if (tile_multiple) {
    out << "k-tiles mixed: a k-tile's MMAs read another k-tile's stage (deltas of " << *deltas.begin()
        << (deltas.size() > 1 ? " and more" : "") << " in k): a stage reused before its phase, or the k-tile order";
  } else if (same_tile && slice_multiple) {
    out << "K16 slices exchanged within a k-tile:";
    std::set<std::pair<int64_t, int64_t>> exchanged;  // (slice, the slice it reads), within a k-tile
    for (const auto& [from, tos] : slices) {
      if (*tos.begin() != from) exchanged.emplace(from % (kKTile / kKSlice), *tos.begin() % (kKTile / kKSlice));
    }
    for (const auto& [from, to] : exchanged) out << " slice " << from << " reads slice " << to << ";";
    out << " the per-K16 start-address advance of the MMA's descriptors";
  } else if (same_tile && chunk_multiple) {
    out << "k within a k-tile permuted in 8-element (16-byte) chunks, differently by row: the 128-byte swizzle "
           "(of the TMA box, the descriptor's layout field, or a synchronous load)";
  } else {
    out << "rows read the wrong k (deltas " << *deltas.begin() << (deltas.size() > 1 ? " and more" : "")
        << "): an operand's row or k addressing, or the epilogue's row mapping (the rows probe tells which)";
  }
  return out.str();
}

}  // namespace

std::vector<DiagnosticProbe> DiagnosticProbes(int64_t max_m, int64_t max_n, int64_t max_k) {
  struct Shape {
    const char* name;
    int64_t m, n, k;
  };
  const Shape shapes[] = {{"one tile, one k-tile", 128, 128, 64},
                          {"one tile, several k-tiles", 128, 128, 256},
                          {"one cluster tile", 256, 256, 256},
                          {"several waves", 1024, 512, 128},
                          // More tiles than a GPU holds CTAs (three per SM on 148 SMs take 444 of its 512):
                          // a persistent CTA's second tile starts on an accumulator that held its first.
                          // One k-tile each, so that a stage ring's rounds never hold two tiles' k-tiles
                          // (a stale stage would read as a stale accumulator here); the single-tile probe
                          // with several k-tiles is the one for the ring.
                          {"more tiles than CTAs", 4096, 2048, 64}};
  std::vector<DiagnosticProbe> probes;
  for (const Shape& s : shapes) {
    if ((max_m && s.m > max_m) || (max_n && s.n > max_n) || (max_k && s.k > max_k)) continue;
    for (Decodes d : {Decodes::kK, Decodes::kRow, Decodes::kColumn}) probes.push_back(Make(s.name, s.m, s.n, s.k, d));
  }
  return probes;
}

float ExpectedValue(const DiagnosticProbe& p, int64_t row, int64_t col) {
  switch (p.decodes) {
    case Decodes::kRow: return ValueOf(row);
    case Decodes::kColumn: return ValueOf(col);
    case Decodes::kK: return ValueOf(KOfRow(row, p.m, p.k));
  }
  return 0;
}

std::string Diagnosis::Summary() const {
  if (exact) return "exact";
  std::string s;
  for (const auto& f : findings) s += (s.empty() ? "" : "; ") + f;
  return s;
}

Diagnosis Diagnose(const DiagnosticProbe& p, const std::vector<uint16_t>& d) {
  Diagnosis out;
  if (d.size() != static_cast<size_t>(p.m * p.n)) {
    out.findings.push_back("D has " + std::to_string(d.size()) + " elements, not " + std::to_string(p.m * p.n));
    return out;
  }
  std::vector<Bad> unwritten, zeros, multiples, moved, sums;
  std::set<int64_t> unwritten_rows, unwritten_cols, zero_k_slices;
  std::map<int64_t, std::set<int64_t>> row_moves, col_moves, multiple_k_slices;
  std::vector<std::pair<int64_t, int64_t>> k_moves;
  std::vector<int64_t> sum_k_deltas;  // k probe: how far the k of a sum's extra term lies from the right k
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      const float seen = HalfToFloat(d[static_cast<size_t>(i * p.n + j)]);
      const float want = ExpectedValue(p, i, j);
      if (seen == want) continue;
      const Bad bad{i, j, want, seen};
      if (!std::isfinite(seen)) {
        unwritten.push_back(bad);
        unwritten_rows.insert(i);
        unwritten_cols.insert(j);
      } else if (seen == 0) {
        zeros.push_back(bad);
        if (p.decodes == Decodes::kK) zero_k_slices.insert(Source(want) / kKSlice);
      } else if (IsValue(seen)) {
        moved.push_back(bad);
        if (p.decodes == Decodes::kRow) row_moves[i].insert(Nearest(Source(seen), i, p.m));
        if (p.decodes == Decodes::kColumn) col_moves[j].insert(Nearest(Source(seen), j, p.n));
        if (p.decodes == Decodes::kK) k_moves.emplace_back(Source(want), Source(seen));
      } else if (seen > want && std::fmod(seen, want) == 0) {
        multiples.push_back(bad);
        if (p.decodes == Decodes::kK) multiple_k_slices[Source(want) / kKSlice].insert(static_cast<int64_t>(seen / want));
      } else {
        sums.push_back(bad);
        const float extra = seen - want;
        if (p.decodes == Decodes::kK) sum_k_deltas.push_back(IsValue(extra) ? Source(extra) - Source(want) : -1);
      }
    }
  }
  if (unwritten.empty() && zeros.empty() && multiples.empty() && moved.empty() && sums.empty()) {
    out.exact = true;
    return out;
  }
  if (zeros.empty() && !multiples.empty()) {
    // Products counted twice and none lost: whole sums doubled (a tile
    // added onto its own earlier sums, the accumulate flag), not a slice or
    // a k-tile read twice, which would lose another. In the k probe a
    // k-tile read twice loses none where the K loop runs over; there it
    // takes every K16 slice that any row selects being doubled, or other
    // sums outnumbering the multiples (an accumulator's stale values,
    // which equal a multiple of the right one only by chance).
    std::set<int64_t> selected;
    for (int64_t i = 0; i < p.m; ++i) selected.insert(KOfRow(i, p.m, p.k) / kKSlice);
    if (p.decodes != Decodes::kK || multiple_k_slices.size() == selected.size() || sums.size() > multiples.size()) {
      sum_k_deltas.insert(sum_k_deltas.end(), multiples.size(), 0);
      sums.insert(sums.end(), multiples.begin(), multiples.end());
      multiples.clear();
      multiple_k_slices.clear();
    }
  }
  if (static_cast<int64_t>(unwritten.size()) == p.m * p.n) {
    out.findings.push_back("no element was written: the epilogue stored nothing (its TMEM or register reads refused, "
                           "e.g. a warp asking for lanes outside its quarter, or its stores skipped)" +
                           Evidence(unwritten));
  } else if (!unwritten.empty()) {
    const bool all_rows = static_cast<int64_t>(unwritten_rows.size()) == p.m;
    std::string where = all_rows ? "columns " + Ranges(unwritten_cols) + " of every row"
                                 : "rows " + Ranges(unwritten_rows) + ", columns " + Ranges(unwritten_cols);
    std::string why = all_rows && *unwritten_cols.begin() > 0 ? ": the tile's N (the MMA descriptor's N, or the epilogue's "
                                                                "column count) is narrower"
                                                              : ": never written (the epilogue's bounds, or a tile the "
                                                                "scheduler skipped)";
    out.findings.push_back(std::to_string(unwritten.size()) + " elements not written (NaN or Inf), " + where + why +
                           Evidence(unwritten));
  }
  if (!zeros.empty() || !multiples.empty()) {
    std::ostringstream f;
    f << zeros.size() + multiples.size() << " elements count their product zero or several times";
    if (p.decodes == Decodes::kK) {
      std::set<int64_t> twice;
      for (const auto& [slice, times] : multiple_k_slices) twice.insert(slice);
      // Whole k-tiles (four K16 slices each) lost or doubled, or products
      // lost in some k-tiles and doubled in others: a stage consumed before
      // its refill. Slices lost and doubled within the same k-tiles: the
      // descriptor's advance.
      constexpr int64_t kSlicesPerTile = kKTile / kKSlice;
      const auto tiles_of = [](const std::set<int64_t>& slices) {
        std::set<int64_t> tiles;
        for (int64_t s : slices) tiles.insert(s / kSlicesPerTile);
        return tiles;
      };
      const auto whole = [](const std::set<int64_t>& slices, const std::set<int64_t>& tiles) {
        for (int64_t t : tiles) {
          for (int64_t s = t * kSlicesPerTile; s < (t + 1) * kSlicesPerTile; ++s) {
            if (!slices.count(s)) return false;
          }
        }
        return true;
      };
      const std::set<int64_t> lost_tiles = tiles_of(zero_k_slices), doubled_tiles = tiles_of(twice);
      bool apart = !lost_tiles.empty() && !doubled_tiles.empty();
      for (int64_t t : lost_tiles) apart &= !doubled_tiles.count(t);
      if (apart || (whole(zero_k_slices, lost_tiles) && whole(twice, doubled_tiles))) {
        if (!lost_tiles.empty()) f << ": k-tiles " << Ranges(lost_tiles) << " are never read";
        if (!doubled_tiles.empty()) {
          f << (lost_tiles.empty() ? ": " : ", and ") << "k-tiles " << Ranges(doubled_tiles) << " are read twice";
        }
        f << ": a stage consumed again before its refill (a barrier's phase), or the K loop's bounds";
      } else {
        if (!zero_k_slices.empty()) f << ": the k of K16 slices " << Ranges(zero_k_slices) << " is never read";
        if (!twice.empty()) {
          f << (zero_k_slices.empty() ? ": " : ", and ") << "slices " << Ranges(twice) << " are read more than once";
        }
        f << ": the per-K16 start-address advance of the MMA's descriptors, or a K loop that stops inside a k-tile";
      }
    } else {
      f << ": a K loop that skips or repeats k-tiles, or K16 slices or stages read twice (the k probe tells which)";
    }
    std::vector<Bad> both = zeros;
    both.insert(both.end(), multiples.begin(), multiples.end());
    out.findings.push_back(f.str() + Evidence(both));
  }
  if (!moved.empty()) {
    std::string what;
    if (p.decodes == Decodes::kRow) what = ExplainRowMoves(row_moves);
    if (p.decodes == Decodes::kColumn) what = ExplainColumnMoves(col_moves);
    if (p.decodes == Decodes::kK) what = ExplainKMoves(k_moves);
    out.findings.push_back(std::to_string(moved.size()) + " elements hold another element's value: " + what +
                           Evidence(moved));
  }
  if (!sums.empty()) {
    // In the k probe, a sum whose extra term is another k-tile's product
    // (its k a multiple of 64 away) is a stage read while its refill
    // landed; any other sum is a tile added onto stale sums.
    bool other_k_tile = p.decodes == Decodes::kK;
    for (int64_t delta : sum_k_deltas) other_k_tile &= delta != 0 && delta % kKTile == 0;
    out.findings.push_back(
        std::to_string(sums.size()) + " elements hold sums of several products where one was due" +
        (other_k_tile ? ": each adds another k-tile's product (k a multiple of 64 away): a stage read while its refill "
                        "landed (a barrier's phase)"
                      : ": an accumulate flag set on a tile's first k-tile (the accumulator's stale sums added)") +
        Evidence(sums));
  }
  return out;
}

}  // namespace gemm
