// The shared-memory tile of both families' steps: 128 rows × 64 fp16 (K),
// 16 KB, in the 128-byte swizzle that TMA writes and wgmma and tcgen05.mma
// read (the same SWIZZLE_128B on sm_90a and sm_100a): 16-byte
// chunk c of row r sits at chunk c ^ (r % 8), so the eight rows of an atom
// hit different banks.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GEMM_TILE_HD __host__ __device__
#else
#define GEMM_TILE_HD
#endif

namespace gemm::common {

inline constexpr int kTileRows = 128;  // BLK_M and BLK_N
inline constexpr int kTileK = 64;      // BLK_K: one 128-byte swizzled row
inline constexpr int kTileBytes = kTileRows * kTileK * 2;
inline constexpr int kMmaK = 16;       // K of one wgmma or tcgen05.mma (fp16)

// Whether 16-byte accesses to a row-major fp16 matrix whose rows lie `ld`
// elements apart are aligned at every multiple of 8 columns: what TMA needs
// to use it in place, and the sync loads and stores to move 8 at a time.
GEMM_TILE_HD inline bool Vectorizable(const void* base, int64_t ld) {
  return ld % 8 == 0 && reinterpret_cast<uintptr_t>(base) % 16 == 0;
}

// Host too: the CPU test of the sm_100 descriptors reads the tile through it.
GEMM_TILE_HD constexpr uint32_t SwizzledChunkOffset(int row, int chunk) {
  return row * 128 + ((chunk ^ (row & 7)) << 4);
}

}  // namespace gemm::common
