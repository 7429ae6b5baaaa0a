// Server-generated inputs: element i of an operand is a pure function of
// (seed, operand, i), so the CPU and GPU engines, the client and the tests all
// produce the same matrix from the same seed without shipping any data.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GEMM_HOST_DEVICE __host__ __device__
#else
#define GEMM_HOST_DEVICE
#endif

namespace gemm {

enum class OperandId : uint32_t { kA = 0, kB = 1, kC = 2 };

// splitmix64's finaliser: a strong 64-bit mix, cheap on both CPU and GPU.
GEMM_HOST_DEVICE inline uint64_t Mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A value j/1024 with j uniform in [-1024, 1023]: exactly representable in
// fp16 (at most 11 significant bits), so every engine rounds it identically.
// Split in two so that a generator mixes the operand's stream once, not
// once per element: RandomStream, then RandomValueIn for each index.
GEMM_HOST_DEVICE inline uint64_t RandomStream(uint64_t seed, OperandId operand) {
  return Mix64(seed ^ (0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(operand) + 1)));
}

GEMM_HOST_DEVICE inline float RandomValueIn(uint64_t stream, uint64_t index) {
  const uint64_t bits = Mix64(stream + index);
  const int j = static_cast<int>(bits >> 53) - 1024;  // top 11 bits
  return static_cast<float>(j) * (1.0f / 1024.0f);
}

GEMM_HOST_DEVICE inline float RandomValue(uint64_t seed, OperandId operand, uint64_t index) {
  return RandomValueIn(RandomStream(seed, operand), index);
}

}  // namespace gemm
