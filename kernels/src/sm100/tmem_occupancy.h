// How many CTAs of one kernel an SM holds is set by shared memory, threads
// and registers, not by TMEM: a CTA that finds TMEM full waits inside
// tcgen05.alloc, holding its SM slot and doing nothing. Steps 3-4 allocate
// 128 of the SM's 512 columns per CTA, so more than four resident CTAs only
// queue. Asking for enough shared memory that a fifth cannot fit bounds
// the residency to what TMEM holds. Host code too: tested on the CPU.
#pragma once

#include <cstdint>

namespace gemm::sm100 {

// CUDA C++ Programming Guide, "Technical Specifications per Compute
// Capability", compute capability 10.0: 228 KB of shared memory per SM, of
// which the system reserves 1 KB per resident CTA.
inline constexpr int kSmemPerSmBytes = 228 * 1024;
inline constexpr int kSmemReservedPerCtaBytes = 1024;
inline constexpr uint32_t kTmemColumnsPerSm = 512;

// The dynamic shared memory to ask for, at least `smem_bytes`, so that no
// more CTAs are resident than TMEM holds allocations of `tmem_columns`.
// A kernel's own __shared__ variables only add to what each CTA takes.
constexpr int TmemBoundSmemBytes(int smem_bytes, uint32_t tmem_columns) {
  const int ctas_tmem_holds = static_cast<int>(kTmemColumnsPerSm / tmem_columns);
  // One CTA more than TMEM holds must not fit: (holds + 1) × per-CTA > SM.
  const int per_cta = kSmemPerSmBytes / (ctas_tmem_holds + 1) + 1;
  const int floor = per_cta - kSmemReservedPerCtaBytes;
  return smem_bytes > floor ? smem_bytes : floor;
}

// CTAs of `dynamic_smem_bytes` (+ static) one SM holds by shared memory.
constexpr int CtasBySmem(int dynamic_smem_bytes, int static_smem_bytes = 0) {
  return kSmemPerSmBytes / (dynamic_smem_bytes + static_smem_bytes + kSmemReservedPerCtaBytes);
}

}  // namespace gemm::sm100
