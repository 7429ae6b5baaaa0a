// The shared-memory tile of both families' steps: 128 rows × 64 16-bit (K),
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

// An MN-contiguous operand (A stored k×m, B stored k×n) lands as it lies:
// blocks of 64 rows (M or N) by the k-tile's 64 k, each one TMA box of 64
// k-rows of 128 swizzled bytes (8 KB), the blocks one after the other. The
// tile takes the same 16 KB per 128 rows; the MMA reads it MN-major
// (transposed): k-rows 8-row atoms apart (1024 bytes, the descriptor's
// stride byte offset), 64-row blocks kMnBlockBytes apart (its leading byte
// offset), and K advances by 16 as two atoms (2048 bytes).
inline constexpr int kMnBlockRows = 64;
inline constexpr int kMnBlockBytes = kMnBlockRows * kTileK * 2;
inline constexpr int kMnAtomBytes = 8 * 128;

// Bytes from a tile's start to its K=16 slice `slice` (0-3 of the k-tile).
GEMM_TILE_HD constexpr uint32_t KSliceBytes(bool mn_contiguous, int slice) {
  return mn_contiguous ? slice * 2 * kMnAtomBytes : slice * kMmaK * 2;
}

}  // namespace gemm::common
