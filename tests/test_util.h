// Helpers shared by the tests: random fp16 matrices and an fp64 reference.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gemm/half.h"
#include "gemm/random_fill.h"

namespace gemmd::testing {

// Row-major fp16 bytes of a rows×cols matrix, uniform in [-1, 1).
inline std::string RandomHalfBytes(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::string bytes(static_cast<size_t>(rows * cols * 2), '\0');
  auto* h = reinterpret_cast<uint16_t*>(bytes.data());
  for (int64_t i = 0; i < rows * cols; ++i) h[i] = gemm::FloatToHalf(dist(rng));
  return bytes;
}

inline std::vector<double> ToDouble(const std::string& half_bytes) {
  const auto* h = reinterpret_cast<const uint16_t*>(half_bytes.data());
  std::vector<double> out(half_bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = gemm::HalfToFloat(h[i]);
  return out;
}

// The operand a server generates from `seed` (gemm/random_fill.h), in fp64.
inline std::vector<double> SeededOperand(uint64_t seed, gemm::OperandId operand, int64_t count) {
  std::vector<double> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out[i] = gemm::RandomValue(seed, operand, i);
  return out;
}

// D = A·Bᵀ in fp64.
inline std::vector<double> ReferenceGemm(const std::vector<double>& a, const std::vector<double>& b, int64_t m,
                                         int64_t n, int64_t k) {
  std::vector<double> d(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += a[i * k + p] * b[j * k + p];
      d[i * n + j] = acc;
    }
  return d;
}

// Elements of fp16 `d` outside ladder.md's bound around `ref` (NaN counts).
inline int64_t CountMismatches(const std::string& d_bytes, const std::vector<double>& ref) {
  const std::vector<double> d = ToDouble(d_bytes);
  int64_t bad = d.size() == ref.size() ? 0 : static_cast<int64_t>(ref.size());
  for (size_t i = 0; i < d.size() && i < ref.size(); ++i) {
    if (!(std::fabs(d[i] - ref[i]) <= 1e-2 + 1e-3 * std::fabs(ref[i]))) ++bad;
  }
  return bad;
}

}  // namespace gemmd::testing
