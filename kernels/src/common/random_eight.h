// The GPU generator's fast path: eight consecutive elements of a
// server-generated matrix, each exactly gemm::RandomValueIn's.
#pragma once

#include <cstdint>

#include "gemm/element_type.h"  // element_detail::BitsFloat
#include "gemm/random_fill.h"

namespace gemm {

// Elements first .. first + 7 of a stream, each exactly RandomValueIn's, for
// a GPU generator that makes eight at a time. Generating is on the path of
// every request with server-generated inputs, beside a GEMM that cannot
// overlap it (a persistent GEMM holds every SM). With Mix64 in 64-bit
// arithmetic a 4096² A and B took 46 us to make and took 40 this way, on
// the same grid, against 29 for a memset of the same bytes (H100,
// gemm-bench --fast-check). It works on 32-bit halves and keeps only the
// bits the value reads:
// - the high half of stream + first + j is the same for all eight unless
//   the low half carries, so its part of the first mix is worked once;
// - the value is the top 11 bits of the last mix, and its last xor only
//   touches bits below 33, so the last product's high half is enough;
// - 2^23 + t is a float whose mantissa is t, so t/1024 - 1 is one fused
//   multiply-add away, exactly, with no integer-to-float conversion.
// A CPU test compares it with RandomValueIn across the carry
// (random_fill_test.cpp), a GPU test the kernel's output
// (KernelsGpuTest.FillRandomInVectorsMatchesTheHostGeneratorAcrossTheCarry).
GEMM_HOST_DEVICE inline uint32_t HighHalfOfProduct(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

GEMM_HOST_DEVICE inline void RandomValuesIn8(uint64_t stream, uint64_t first, float out[8]) {
  const uint64_t x = stream + first;
  const uint32_t lo = static_cast<uint32_t>(x), hi = static_cast<uint32_t>(x >> 32);
  if (lo > 0xFFFFFFF8u) {  // the low half carries within the eight: 1 time in 2^29
    for (int j = 0; j < 8; ++j) out[j] = RandomValueIn(stream, first + j);
    return;
  }
  constexpr uint32_t kC1Lo = 0x1ce4e5b9u, kC1Hi = 0xbf58476du;  // Mix64's constants in halves
  constexpr uint32_t kC2Lo = 0x133111ebu, kC2Hi = 0x94d049bbu;
  const uint32_t h1 = hi ^ (hi >> 30);
  const uint32_t h1_c1 = h1 * kC1Lo;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (uint32_t j = 0; j < 8; ++j) {
    const uint32_t l0 = lo + j;
    const uint32_t l1 = l0 ^ ((l0 >> 30) | (hi << 2));  // x ^= x >> 30
    const uint64_t p = static_cast<uint64_t>(l1) * kC1Lo;  // x *= C1
    const uint32_t l2 = static_cast<uint32_t>(p);
    const uint32_t h2 = static_cast<uint32_t>(p >> 32) + l1 * kC1Hi + h1_c1;
    const uint32_t l3 = l2 ^ ((l2 >> 27) | (h2 << 5));  // x ^= x >> 27
    const uint32_t h3 = h2 ^ (h2 >> 27);
    const uint32_t top = HighHalfOfProduct(l3, kC2Lo) + l3 * kC2Hi + h3 * kC2Lo;  // (x *= C2) >> 32
    out[j] = element_detail::BitsFloat(0x4B000000u | (top >> 21)) * (1.0f / 1024.0f) - 8193.0f;
  }
}

}  // namespace gemm
