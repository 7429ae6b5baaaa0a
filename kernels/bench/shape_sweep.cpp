#include "shape_sweep.h"

#include <algorithm>
#include <cmath>

namespace gemm::bench {
namespace {

// splitmix64: the same sequence from a seed with any compiler and library
// (std:: distributions are not specified bit for bit).
struct Random {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  // Log-uniform in [lo, hi].
  int64_t LogUniform(int64_t lo, int64_t hi) {
    const double x = std::exp(std::log(static_cast<double>(lo)) +
                              Unit() * (std::log(static_cast<double>(hi) + 1) - std::log(static_cast<double>(lo))));
    return std::clamp(static_cast<int64_t>(x), lo, hi);
  }
};

constexpr int64_t kMaxOperandElements = int64_t{1} << 28;
constexpr double kMaxMultiplyAdds = 0x1.0p39;

bool WithinBounds(int64_t m, int64_t n, int64_t k) {
  return m * k <= kMaxOperandElements && n * k <= kMaxOperandElements && m * n <= kMaxOperandElements &&
         static_cast<double>(m) * n * k <= kMaxMultiplyAdds;
}

}  // namespace

const std::vector<std::string>& SweepClasses() {
  static const std::vector<std::string> classes{"mixed", "skinny", "tiny", "long-K"};
  return classes;
}

std::vector<SweepShape> SweepShapes(int count, uint64_t seed) {
  Random rng{seed};
  std::vector<SweepShape> out;
  for (int i = 0; i < count; ++i) {
    const std::string& cls = SweepClasses()[i % SweepClasses().size()];
    SweepShape s{0, 0, 0, cls};
    do {
      if (cls == "mixed") {
        s.m = rng.LogUniform(64, 16384), s.n = rng.LogUniform(64, 16384), s.k = rng.LogUniform(64, 16384);
      } else if (cls == "skinny") {
        const int64_t thin = rng.LogUniform(1, 64), wide = rng.LogUniform(1024, 40000);
        const bool thin_m = rng.Next() & 1;
        s.m = thin_m ? thin : wide, s.n = thin_m ? wide : thin, s.k = rng.LogUniform(256, 16384);
      } else if (cls == "tiny") {
        s.m = rng.LogUniform(1, 512), s.n = rng.LogUniform(1, 512), s.k = rng.LogUniform(1, 512);
      } else {
        s.m = rng.LogUniform(8, 1024), s.n = rng.LogUniform(8, 1024), s.k = rng.LogUniform(8192, 40000);
      }
    } while (!WithinBounds(s.m, s.n, s.k));
    out.push_back(s);
  }
  return out;
}

RatioSummary Summarize(std::vector<double> ratios) {
  RatioSummary r;
  r.count = static_cast<int>(ratios.size());
  if (ratios.empty()) return r;
  std::sort(ratios.begin(), ratios.end());
  const size_t n = ratios.size();
  r.median = n % 2 ? ratios[n / 2] : 0.5 * (ratios[n / 2 - 1] + ratios[n / 2]);
  r.p10 = ratios[static_cast<size_t>(std::ceil(0.1 * n)) - 1];
  r.share_at_least_1 =
      static_cast<double>(ratios.end() - std::lower_bound(ratios.begin(), ratios.end(), 1.0)) / static_cast<double>(n);
  return r;
}

}  // namespace gemm::bench
