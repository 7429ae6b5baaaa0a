// The three encodings a Blackwell (sm_100a) tcgen05 MMA is built from, as
// constexpr functions that compile for the host too: a wrong bit here makes
// a B200 compute garbage or hang, and a CPU test (tests/umma_descriptors_
// test.cpp) is the one place it can be caught without one. Every field
// comes from the PTX ISA's tcgen05 chapter (Table 40, shared memory
// descriptor; Table 42, instruction descriptor; "Tensor Memory" addressing).
#pragma once

#include <cstdint>

#include "common/tile_layout.h"
#include "gemm/element_type.h"
#include "gemm/form.h"

#if defined(__CUDACC__)
#define GEMM_SM100_HD __host__ __device__
#else
#define GEMM_SM100_HD
#endif

namespace gemm::sm100 {

// --- instruction descriptor (32 bits), .kind::f16 -------------------------
// bits 4-5 D type (F32 = 1); 7-9 A type and 10-12 B type (F16 = 0,
// BF16 = 1); 15/16 A/B major-ness (0: K-major, 1: MN-major); 17-22 N >> 3;
// 23 reserved; 24-28 M >> 4. Everything else (sparsity, saturate, negate,
// max shift) stays 0.
inline constexpr uint32_t kDTypeF32 = 1;
inline constexpr uint32_t kABTypeF16 = 0;
inline constexpr uint32_t kABTypeBF16 = 1;

GEMM_SM100_HD constexpr uint32_t ABTypeOf(ElementType operands) {
  return operands == ElementType::kBF16 ? kABTypeBF16 : kABTypeF16;
}

// A and B of `operands` (fp16 or bf16), each K-major or MN-major as its
// layout says (an MN-contiguous operand is read as it lies), fp32
// accumulators in TMEM; M x N per MMA. Valid for cta_group::1: M 64 or
// 128, N a multiple of 8 (M = 64) or 16 (M = 128) up to 256. For
// cta_group::2, M is the pair's (128 or 256).
GEMM_SM100_HD constexpr uint32_t InstrDescF16(uint32_t m, uint32_t n, ElementType operands = ElementType::kF16,
                                              Layout a_layout = Layout::kKContiguous,
                                              Layout b_layout = Layout::kKContiguous) {
  const uint32_t ab = ABTypeOf(operands);
  const uint32_t a_mn = a_layout == Layout::kMnContiguous ? 1 : 0, b_mn = b_layout == Layout::kMnContiguous ? 1 : 0;
  return (kDTypeF32 << 4) | (ab << 7) | (ab << 10) | (a_mn << 15) | (b_mn << 16) | ((n >> 3) << 17) |
         ((m >> 4) << 24);
}

// --- shared memory descriptor (64 bits) -----------------------------------
// bits 0-13 start address >> 4; 16-29 leading byte offset >> 4; 32-45
// stride byte offset >> 4; 46-48 the fixed constant 0b001 (Hopper has no
// such field); 49-51 base offset; 52 leading-offset mode; 61-63 swizzle
// (2 = 128-byte; Hopper's 2-bit field at 62-63 used 1 for the same mode).
inline constexpr uint64_t kSwizzle128B = 2;
inline constexpr uint64_t kDescriptorVersion = 1;

GEMM_SM100_HD constexpr uint64_t EncodeOffset(uint32_t bytes) { return (bytes & 0x3FFFF) >> 4; }

// A K-major fp16 tile as TMA's SWIZZLE_128B writes it: rows of 64 fp16
// (128 bytes), 8-row atoms of 1024 bytes (the stride byte offset). The
// leading byte offset is not used by swizzled K-major layouts (the ISA
// assumes 1), and the tile must start on a 1024-byte boundary so that the
// base offset is 0. `smem_address` is the shared-window address.
GEMM_SM100_HD constexpr uint64_t SmemDescSw128KMajor(uint32_t smem_address) {
  return EncodeOffset(smem_address) | (uint64_t{1} << 16) | (EncodeOffset(1024) << 32) |
         (kDescriptorVersion << 46) | (kSwizzle128B << 61);
}

// An MN-major tile as TMA's SWIZZLE_128B writes an MN-contiguous operand
// (common/tile_layout.h): k-rows of 64 M or N elements, 8-k atoms of 1024
// bytes (the stride byte offset), 64-row blocks 8 KB apart (the leading
// byte offset): the PTX ISA's canonical MN-major 128-byte-swizzle layout,
// CUTLASS's ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)) (make_umma_desc<MN>).
// K advances by 16 as two atoms (2048 bytes).
GEMM_SM100_HD constexpr uint64_t SmemDescSw128MnMajor(uint32_t smem_address) {
  return EncodeOffset(smem_address) | (EncodeOffset(common::kMnBlockBytes) << 16) | (EncodeOffset(1024) << 32) |
         (kDescriptorVersion << 46) | (kSwizzle128B << 61);
}

// The descriptor of a tile laid out as `layout` says.
template <Layout kLayout>
GEMM_SM100_HD constexpr uint64_t SmemDescSw128(uint32_t smem_address) {
  if constexpr (kLayout == Layout::kMnContiguous) return SmemDescSw128MnMajor(smem_address);
  return SmemDescSw128KMajor(smem_address);
}

// The same tile `bytes` further on: each K=16 slice of a 64-wide k-tile
// is 32 bytes along the swizzled row. One add, since the start address is
// the low field and shared memory (228 KB) never carries out of it.
GEMM_SM100_HD constexpr uint64_t AdvanceSmemDesc(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }

// --- Tensor Memory address (32 bits) --------------------------------------
// Lane (row) in bits 16-31, column in bits 0-15. tcgen05.alloc writes the
// base (lane 0, first column) to shared memory; a warp of the warpgroup
// reads lanes 32·(warp % 4) .. +31.
GEMM_SM100_HD constexpr uint32_t TmemAddress(uint32_t base, uint32_t lane, uint32_t column) {
  return base + (lane << 16) + column;
}

// tcgen05.alloc takes a power of two of at least 32 columns (of 512).
GEMM_SM100_HD constexpr bool ValidTmemColumns(uint32_t columns) {
  return columns >= 32 && columns <= 512 && (columns & (columns - 1)) == 0;
}

// --- the leader of a CTA pair (cta_group::2) ---------------------------------
// Bit 24 of a shared-memory address in a cluster names the CTA of an
// even/odd pair; cleared, the address is the leader's (even rank's) copy of
// the same object. The mask is CUTLASS's Sm100MmaPeerBitMask
// (cute/arch/copy_sm100_tma.hpp), which its 2-SM TMA loads apply the same
// way to count both CTAs' bytes on the leader's barrier.
inline constexpr uint32_t kPairLeaderAddressMask = 0xFEFFFFFFu;

GEMM_SM100_HD constexpr uint32_t PairLeaderAddress(uint32_t shared_address) {
  return shared_address & kPairLeaderAddressMask;
}

}  // namespace gemm::sm100
