// Planted faults for VERIFICATION_FAST (gemm/sketch_check.h): an honest D of
// a random fp16 A·Bᵀ, computed here as a tensor core would (fp32 sums, one
// rounding to fp16), and the faults issue 35 names, each planted in a copy
// of it at a random place.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gemm/element_type.h"
#include "gemm/half.h"
#include "gemm/sketch_check.h"
#include "gemm/tolerance.h"

namespace gemmd::testing {

using gemm::ElementType;

enum class Fault { kNone, kElement1x, kElement10x, kElement100x, kRow, kTile, kZeroTile, kSwapTiles, kNaN, kInf };

inline const char* FaultName(Fault f) {
  switch (f) {
    case Fault::kNone: return "none (an honest D)";
    case Fault::kElement1x: return "one element off by 1x its tolerance";
    case Fault::kElement10x: return "one element off by 10x its tolerance";
    case Fault::kElement100x: return "one element off by 100x its tolerance";
    case Fault::kRow: return "one row holding the next row's values";
    case Fault::kTile: return "one 128x128 tile summed over half of K";
    case Fault::kZeroTile: return "one 128x128 tile zeroed";
    case Fault::kSwapTiles: return "two 128x128 tiles swapped";
    case Fault::kNaN: return "one NaN";
    case Fault::kInf: return "one Inf";
  }
  return "?";
}

inline std::vector<Fault> AllFaults() {
  return {Fault::kElement1x, Fault::kElement10x, Fault::kElement100x, Fault::kRow,  Fault::kTile,
          Fault::kZeroTile,  Fault::kSwapTiles,  Fault::kNaN,         Fault::kInf};
}

// A plain fp16 GEMM D = A·Bᵀ (A m×k, B n×k, K contiguous) with its exact
// product and each element's tolerance under the element-wise check.
struct PlainGemm {
  int64_t m, n, k;
  std::vector<uint16_t> a, b, d;  // fp16 bits
  std::vector<double> exact, tolerance;

  PlainGemm(int64_t m, int64_t n, int64_t k, uint32_t seed) : m(m), n(n), k(k), a(m * k), b(n * k), d(m * n) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& x : a) x = gemm::FloatToHalf(u(rng));
    for (auto& x : b) x = gemm::FloatToHalf(u(rng));
    exact.resize(m * n);
    tolerance.resize(m * n);
    double max_a = 0, max_b = 0;
    for (int64_t i = 0; i < m; ++i) max_a = std::max(max_a, RowNorm(a, i));
    for (int64_t j = 0; j < n; ++j) max_b = std::max(max_b, RowNorm(b, j));
    const double accumulation = gemm::AccumulationAtol(k, max_a, max_b);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        float sum32 = 0;
        double sum64 = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const float x = gemm::HalfToFloat(a[i * k + kk]), y = gemm::HalfToFloat(b[j * k + kk]);
          sum32 += x * y;
          sum64 += double{x} * y;
        }
        d[i * n + j] = gemm::FloatToHalf(sum32);
        exact[i * n + j] = sum64;
        tolerance[i * n + j] = gemm::kAtol + gemm::kRtol * std::fabs(sum64) + accumulation;
      }
    }
  }
  double RowNorm(const std::vector<uint16_t>& x, int64_t row) const {
    double s = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      const double v = gemm::HalfToFloat(x[row * k + kk]);
      s += v * v;
    }
    return std::sqrt(s);
  }
  // D's element (i, j) summed over the first half of K only.
  uint16_t HalfK(int64_t i, int64_t j) const {
    float sum = 0;
    for (int64_t kk = 0; kk < k / 2; ++kk) {
      sum += gemm::HalfToFloat(a[i * k + kk]) * gemm::HalfToFloat(b[j * k + kk]);
    }
    return gemm::FloatToHalf(sum);
  }

  // The check's problem over `dd` (this GEMM's D, or a faulty copy of it).
  gemm::SketchProblem Problem(const std::vector<uint16_t>& dd, uint64_t seed) const {
    return gemm::SketchOfPlain(m, n, k, a.data(), k, b.data(), k, dd.data(), n, seed);
  }

  // The largest change a planted fault made to one element of D (NaN
  // where it planted one, which compares as no change).
  double PlantedError(const std::vector<uint16_t>& planted) const {
    double largest = 0;
    for (size_t e = 0; e < planted.size(); ++e) {
      largest = std::max(largest, std::fabs(double{gemm::HalfToFloat(planted[e])} - gemm::HalfToFloat(d[e])));
    }
    return largest;
  }

  // A copy of D with `fault` planted at a place `rng` picks.
  std::vector<uint16_t> Planted(Fault fault, std::mt19937_64& rng) const {
    std::vector<uint16_t> out = d;
    std::uniform_int_distribution<int64_t> row(0, m - 1), col(0, n - 1);
    const int64_t i = row(rng), j = col(rng);
    const int64_t tiles_m = m / 128, tiles_n = n / 128;
    std::uniform_int_distribution<int64_t> tile_row(0, tiles_m - 1), tile_col(0, tiles_n - 1);
    const auto element = [&](double times) {
      const double sign = (rng() & 1) ? 1.0 : -1.0;
      // Off from the exact product by `times` its tolerance, on top of D's own error.
      const double wrong = exact[i * n + j] + sign * times * tolerance[i * n + j];
      out[i * n + j] = gemm::FloatToHalf(static_cast<float>(wrong));
    };
    switch (fault) {
      case Fault::kNone: break;
      case Fault::kElement1x: element(1); break;
      case Fault::kElement10x: element(10); break;
      case Fault::kElement100x: element(100); break;
      case Fault::kRow:
        for (int64_t c = 0; c < n; ++c) out[i * n + c] = d[((i + 1) % m) * n + c];
        break;
      case Fault::kTile:
      case Fault::kZeroTile: {
        const int64_t ti = tile_row(rng) * 128, tj = tile_col(rng) * 128;
        for (int64_t r = ti; r < ti + 128; ++r) {
          for (int64_t c = tj; c < tj + 128; ++c) out[r * n + c] = fault == Fault::kTile ? HalfK(r, c) : 0;
        }
        break;
      }
      case Fault::kSwapTiles: {
        const int64_t t1 = std::uniform_int_distribution<int64_t>(0, tiles_m * tiles_n - 1)(rng);
        int64_t t2 = std::uniform_int_distribution<int64_t>(0, tiles_m * tiles_n - 2)(rng);
        if (t2 >= t1) ++t2;
        const int64_t r1 = t1 / tiles_n * 128, c1 = t1 % tiles_n * 128;
        const int64_t r2 = t2 / tiles_n * 128, c2 = t2 % tiles_n * 128;
        for (int64_t r = 0; r < 128; ++r) {
          for (int64_t c = 0; c < 128; ++c) std::swap(out[(r1 + r) * n + c1 + c], out[(r2 + r) * n + c2 + c]);
        }
        break;
      }
      case Fault::kNaN: out[i * n + j] = 0x7e00; break;
      case Fault::kInf: out[i * n + j] = 0x7c00; break;
    }
    return out;
  }
};

// PlainGemm's operands stored the other way: A as K×M (op(A)'s rows side
// by side in memory) and B as K×N, as a form with MN-contiguous operands
// has them.
struct MnStorage {
  std::vector<uint16_t> a, b;  // A k×m, B k×n
  explicit MnStorage(const PlainGemm& g) : a(g.k * g.m), b(g.k * g.n) {
    for (int64_t kk = 0; kk < g.k; ++kk) {
      for (int64_t i = 0; i < g.m; ++i) a[kk * g.m + i] = g.a[i * g.k + kk];
      for (int64_t j = 0; j < g.n; ++j) b[kk * g.n + j] = g.b[j * g.k + kk];
    }
  }
  gemm::SketchProblem Problem(const PlainGemm& g, const std::vector<uint16_t>& d, bool a_mn, bool b_mn,
                              uint64_t seed) const {
    gemm::SketchProblem p = g.Problem(d, seed);
    if (a_mn) p.a = {a.data(), ElementType::kF16, 1, g.m, 0};
    if (b_mn) p.b = {b.data(), ElementType::kF16, g.n, 1, 0};
    return p;
  }
};

}  // namespace gemmd::testing
