// The sm_100a encodings, checked on the CPU. Each expected value is worked
// out by hand from the PTX ISA (9.7.16.4, "Tensorcore 5th Generation":
// Table 40, the shared memory descriptor; Table 42, the instruction
// descriptor for .kind::f16) and cross-checked with CUTLASS's bitfields
// (include/cute/arch/mma_sm100_desc.hpp: UMMA::SmemDescriptor,
// UMMA::InstrDescriptor, make_instr_desc). No B200 has run them.
#include <gtest/gtest.h>

#include "common/tile_layout.h"
#include "sm100/umma_descriptors.h"

namespace gemm::sm100 {
namespace {

uint64_t Field(uint64_t value, int lo, int bits) { return (value >> lo) & ((uint64_t{1} << bits) - 1); }

// Table 42, .kind::f16 column, for M = 128, N = 128 (steps 1-8's tile):
// D type F32 = 1 at bits 4-5 -> 0x10; A, B types F16 = 0; K-major (no
// transpose) = 0; N >> 3 = 16 at bits 17-22 -> 0x200000; M >> 4 = 8 at
// bits 24-28 -> 0x8000000. Sum 0x08200010.
TEST(UmmaInstrDesc, F16InputsF32AccumulatorM128N128) {
  constexpr uint32_t d = InstrDescF16(128, 128);
  static_assert(d == 0x08200010u);
  EXPECT_EQ(Field(d, 4, 2), 1u);   // dtype F32
  EXPECT_EQ(Field(d, 7, 3), 0u);   // atype F16
  EXPECT_EQ(Field(d, 10, 3), 0u);  // btype F16
  EXPECT_EQ(Field(d, 15, 2), 0u);  // A and B K-major
  EXPECT_EQ(Field(d, 17, 6), 16u);
  EXPECT_EQ(Field(d, 23, 1), 0u);  // reserved: M starts at bit 24, not 23
  EXPECT_EQ(Field(d, 24, 5), 8u);
  EXPECT_EQ(Field(d, 0, 4), 0u);   // dense, no saturate
  EXPECT_EQ(Field(d, 13, 2), 0u);  // no negation
  EXPECT_EQ(Field(d, 29, 3), 0u);  // reserved, no max shift
}

// The same descriptor for bf16 A and B: Table 42's atype and btype for
// .kind::f16 give BF16 = 1 (CUTLASS: UMMA::F16F32Format::BF16 = 1, in
// a_format_ at bits 7-9 and b_format_ at bits 10-12): 1 << 7 = 0x80 and
// 1 << 10 = 0x400 on top of 0x08200010. D stays F32 (the accumulator; the
// epilogue rounds it to D's type). 0x08200490.
TEST(UmmaInstrDesc, Bf16InputsF32AccumulatorM128N128) {
  constexpr uint32_t d = InstrDescF16(128, 128, ElementType::kBF16);
  static_assert(d == 0x08200490u);
  EXPECT_EQ(Field(d, 4, 2), 1u);   // dtype F32
  EXPECT_EQ(Field(d, 7, 3), 1u);   // atype BF16
  EXPECT_EQ(Field(d, 10, 3), 1u);  // btype BF16
  EXPECT_EQ(Field(d, 15, 2), 0u);  // still K-major
  EXPECT_EQ(d & ~((7u << 7) | (7u << 10)), InstrDescF16(128, 128)) << "only the operand types differ from fp16's";
  // The pair MMA of step 10 (M 256, N 256) in bf16: 0x10400010 + 0x480.
  static_assert(InstrDescF16(256, 256, ElementType::kBF16) == 0x10400490u);
}

// An operand stored MN-contiguous is read MN-major: Table 42's "Transpose
// A" (bit 15) and "Transpose B" (bit 16), 1 for MN-major (CUTLASS:
// a_major_ and b_major_, UMMA::Major::MN = 1). On 0x08200010: B MN-major
// adds 1 << 16 = 0x10000, A MN-major 1 << 15 = 0x8000.
TEST(UmmaInstrDesc, MnMajorOperandsSetTheirMajorBits) {
  constexpr Layout kK = Layout::kKContiguous, kMn = Layout::kMnContiguous;
  static_assert(InstrDescF16(128, 128, ElementType::kF16, kK, kMn) == 0x08210010u);
  static_assert(InstrDescF16(128, 128, ElementType::kF16, kMn, kK) == 0x08208010u);
  static_assert(InstrDescF16(128, 128, ElementType::kBF16, kMn, kMn) == 0x08218490u);
  EXPECT_EQ(Field(InstrDescF16(256, 256, ElementType::kBF16, kK, kMn), 15, 2), 2u);  // B alone
}

// The pair MMA (steps 9-10) names the pair's M: 256 -> M >> 4 = 16 at bit
// 24 -> 0x10000000; N = 256 -> 32 at bit 17 -> 0x400000. 0x10400010.
TEST(UmmaInstrDesc, PairMmaM256N256) {
  static_assert(InstrDescF16(256, 256) == 0x10400010u);
  EXPECT_EQ(Field(InstrDescF16(256, 256), 17, 6), 32u);  // the field's largest value, N = 256
  EXPECT_EQ(Field(InstrDescF16(64, 8), 17, 6), 1u);      // its smallest, N = 8
  EXPECT_EQ(Field(InstrDescF16(64, 8), 24, 5), 4u);      // M = 64
}

// Table 40 for a 128-byte-swizzled K-major fp16 tile at shared address
// 0x400 (a 1024-byte boundary, so base offset 0): start 0x400 >> 4 = 0x40;
// leading byte offset 16 >> 4 = 1 at bit 16 (unused when swizzled); stride
// byte offset 1024 >> 4 = 0x40 at bit 32; the fixed 0b001 at bits 46-48
// -> 1 << 46; swizzle 128B = 2 at bits 61-63 -> 0x4000000000000000.
// Total 0x4000404000010040.
TEST(UmmaSmemDesc, Swizzle128KMajorAtA1024ByteBoundary) {
  constexpr uint64_t d = SmemDescSw128KMajor(0x400);
  static_assert(d == 0x4000404000010040ull);
  EXPECT_EQ(Field(d, 0, 14), 0x40u);
  EXPECT_EQ(Field(d, 14, 2), 0u);
  EXPECT_EQ(Field(d, 16, 14), 1u);
  EXPECT_EQ(Field(d, 32, 14), 1024u >> 4);
  EXPECT_EQ(Field(d, 46, 3), 1u);  // the version the Hopper recipe lacks
  EXPECT_EQ(Field(d, 49, 3), 0u);  // base offset: the stage is 1024-aligned
  EXPECT_EQ(Field(d, 52, 1), 0u);  // leading offset relative
  EXPECT_EQ(Field(d, 53, 8), 0u);
  EXPECT_EQ(Field(d, 61, 3), 2u);  // 128-byte swizzle on sm_100 (Hopper: 1 at bits 62-63)
}

// The trap the notes name: Hopper's descriptor for the same tile sets bit
// 62 (its 128B code 1 in a 2-bit field at 62-63) and no version bit.
// Read with Table 40, that is swizzle code 2 only by accident of the bit
// position, and bit 46 is missing: the two must differ.
TEST(UmmaSmemDesc, DiffersFromTheHopperRecipe) {
  const uint64_t hopper = (0x400 >> 4) | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) | (uint64_t{1} << 62);
  EXPECT_NE(SmemDescSw128KMajor(0x400), hopper);
  EXPECT_EQ(SmemDescSw128KMajor(0x400) ^ hopper, uint64_t{1} << 46);
}

// Each K = 16 slice of a 64-element k-tile starts 16 fp16 = 32 bytes
// further along the swizzled row: +2 in the 16-byte start field. A stage
// of 128 rows x 128 bytes (16 KB) further on: +0x400.
TEST(UmmaSmemDesc, AdvancingMovesOnlyTheStartAddress) {
  constexpr uint64_t base = SmemDescSw128KMajor(0x8000);
  static_assert(AdvanceSmemDesc(base, 32) == base + 2);
  static_assert(AdvanceSmemDesc(base, 96) == SmemDescSw128KMajor(0x8000 + 96));
  static_assert(AdvanceSmemDesc(base, 16384) == SmemDescSw128KMajor(0x8000 + 16384));
  EXPECT_EQ(Field(AdvanceSmemDesc(base, 96), 0, 14), (0x8000u + 96) >> 4);
  // The highest shared address of a 228 KB CTA still fits the 14-bit field.
  EXPECT_EQ(Field(SmemDescSw128KMajor(228 * 1024 - 1024), 0, 14), (228u * 1024 - 1024) >> 4);
}

// How the tensor core reads a K-major operand in the 128-byte swizzle
// through an sm_100 shared-memory descriptor, as the PTX ISA lays it out
// (9.7.16.3, the canonical K-major layouts; Table 40 for the fields):
// element (i, j) of an M×16 fp16 slice, row i and k j, lies at
// start + (i / 8)·SBO + (i % 8)·128 + 2j, and the swizzle XORs address
// bits 4-6 with bits 7-9 (its pattern repeats every 1024 bytes, hence the
// 1024-byte-aligned stage and base offset 0).
uint32_t TensorCoreReadAddress(uint64_t desc, int i, int j) {
  const uint32_t start = static_cast<uint32_t>(Field(desc, 0, 14) << 4);
  const uint32_t sbo = static_cast<uint32_t>(Field(desc, 32, 14) << 4);
  const uint32_t logical = start + (i / 8) * sbo + (i % 8) * 128 + 2 * j;
  return logical ^ (((logical >> 7) & 7) << 4);
}

// The descriptors of a stage's four K=16 slices address every element of
// the 128×64 tile exactly where LoadTileSync (and TMA's SWIZZLE_128B) put it:
// chunk c of row r at chunk c ^ (r % 8) (common/tile_layout.h). A wrong
// stride byte offset or K step would read other elements.
TEST(UmmaSmemDesc, EachKSliceReadsTheTileWhereTheLoaderWroteIt) {
  constexpr uint32_t kStage = 0x2000;  // a stage on a 1024-byte boundary
  auto written = [](int r, int k) { return kStage + common::SwizzledChunkOffset(r, k / 8) + (k % 8) * 2; };
  for (int s = 0; s < common::kTileK / common::kMmaK; ++s) {
    const uint64_t desc = AdvanceSmemDesc(SmemDescSw128KMajor(kStage), s * common::kMmaK * 2);
    ASSERT_EQ(Field(desc, 61, 3), kSwizzle128B);  // the model above is that swizzle's
    ASSERT_EQ(Field(desc, 49, 3), 0u);
    for (int i = 0; i < common::kTileRows; ++i) {
      for (int j = 0; j < common::kMmaK; ++j) {
        ASSERT_EQ(TensorCoreReadAddress(desc, i, j), written(i, s * common::kMmaK + j))
            << "k-slice " << s << ", row " << i << ", k " << j;
      }
    }
  }
  // The check can fail: a stride of 512 bytes, or a K step of 16 bytes, reads elsewhere.
  const uint64_t bad_stride = (SmemDescSw128KMajor(kStage) & ~(uint64_t{0x3FFF} << 32)) | (EncodeOffset(512) << 32);
  EXPECT_NE(TensorCoreReadAddress(bad_stride, 8, 0), written(8, 0));
  EXPECT_NE(TensorCoreReadAddress(AdvanceSmemDesc(SmemDescSw128KMajor(kStage), 16), 0, 0), written(0, 16));
}

// Table 40 for an MN-major tile (an operand stored MN-contiguous, loaded
// as 64-row blocks of 64 k-rows: common/tile_layout.h) at 0x400: start
// 0x40; leading byte offset 8192 (the next 64-row block) >> 4 = 0x200 at
// bit 16 -> 0x2000000; stride byte offset 1024 (the next 8 k) >> 4 = 0x40
// at bit 32; version 1 at bit 46; swizzle 128B = 2 at 61. The two offsets'
// roles are CUTLASS's canonical MN-major SW128 layout,
// ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)) (cute/arch/mma_sm100_desc.hpp,
// make_umma_desc<Major::MN>). Total 0x4000404002000040.
TEST(UmmaSmemDesc, Swizzle128MnMajorAtA1024ByteBoundary) {
  constexpr uint64_t d = SmemDescSw128MnMajor(0x400);
  static_assert(d == 0x4000404002000040ull);
  EXPECT_EQ(Field(d, 16, 14), 8192u >> 4);
  EXPECT_EQ(Field(d, 32, 14), 1024u >> 4);
  EXPECT_EQ(d & ~(uint64_t{0x3FFF} << 16), SmemDescSw128KMajor(0x400) & ~(uint64_t{0x3FFF} << 16))
      << "only the leading byte offset differs from the K-major tile's";
}

// How the tensor core reads an MN-major operand in the 128-byte swizzle,
// as the canonical layout above lays it out: element (i, j) of a 16-deep
// slice, M or N index i and k j, at start + (i / 64)·LBO + 2·(i % 64) +
// (j / 8)·SBO + (j % 8)·128, then the same XOR of address bits 4-6 with
// bits 7-9.
uint32_t TensorCoreReadAddressMnMajor(uint64_t desc, int i, int j) {
  const uint32_t start = static_cast<uint32_t>(Field(desc, 0, 14) << 4);
  const uint32_t lbo = static_cast<uint32_t>(Field(desc, 16, 14) << 4);
  const uint32_t sbo = static_cast<uint32_t>(Field(desc, 32, 14) << 4);
  const uint32_t logical = start + (i / 64) * lbo + 2 * (i % 64) + (j / 8) * sbo + (j % 8) * 128;
  return logical ^ (((logical >> 7) & 7) << 4);
}

// Each K=16 slice's descriptor (advanced by KSliceBytes: two atoms) reads
// every element of a 128 (or 256) by 64 tile where TMA put it: the box of
// 64-row block b is 64 k-rows of 128 bytes at b·8 KB, row k holding the
// block's 64 elements in the swizzle, element i's 16-byte chunk at chunk
// (i % 64) / 8 of that row. A stride or leading offset swapped reads
// elsewhere.
TEST(UmmaSmemDesc, EachKSliceOfAnMnMajorTileReadsWhereTmaWroteIt) {
  constexpr uint32_t kStage = 0x4000;
  auto written = [](int i, int k) {
    return kStage + (i / common::kMnBlockRows) * common::kMnBlockBytes +
           common::SwizzledChunkOffset(k, (i % common::kMnBlockRows) / 8) + (i % 8) * 2;
  };
  for (int s = 0; s < common::kTileK / common::kMmaK; ++s) {
    const uint64_t desc = AdvanceSmemDesc(SmemDescSw128MnMajor(kStage), common::KSliceBytes(true, s));
    for (int i = 0; i < 256; ++i) {
      for (int j = 0; j < common::kMmaK; ++j) {
        ASSERT_EQ(TensorCoreReadAddressMnMajor(desc, i, j), written(i, s * common::kMmaK + j))
            << "k-slice " << s << ", row " << i << ", k " << j;
      }
    }
  }
  const uint64_t good = SmemDescSw128MnMajor(kStage);
  const uint64_t swapped = (good & ~(uint64_t{0x3FFF} << 16) & ~(uint64_t{0x3FFF} << 32)) |
                           (EncodeOffset(1024) << 16) | (EncodeOffset(common::kMnBlockBytes) << 32);
  EXPECT_NE(TensorCoreReadAddressMnMajor(swapped, 64, 0), written(64, 0));
  EXPECT_NE(TensorCoreReadAddressMnMajor(AdvanceSmemDesc(good, 32), 0, 0), written(0, 16)) << "K-major's K step";
}

// PTX ISA, Tensor Memory addressing: lane in the upper 16 bits, column in
// the lower 16. Warp 2 of the epilogue warpgroup reads from lane 64.
TEST(TmemAddress, LaneHighColumnLow) {
  static_assert(TmemAddress(0, 0, 0) == 0);
  static_assert(TmemAddress(0, 64, 0) == 0x00400000u);
  static_assert(TmemAddress(0, 96, 32) == 0x00600020u);
  static_assert(TmemAddress(0x00000100, 32, 8) == 0x00200108u);  // an allocation that starts at column 256
}

// tcgen05.alloc: a power of two number of columns, 32 to 512.
TEST(TmemAddress, AllocationSizes) {
  for (uint32_t c : {32u, 64u, 128u, 256u, 512u}) EXPECT_TRUE(ValidTmemColumns(c)) << c;
  for (uint32_t c : {0u, 16u, 48u, 96u, 1024u}) EXPECT_FALSE(ValidTmemColumns(c)) << c;
}

// A pair's TMA loads count their bytes on the leader's barrier: clearing
// bit 24 (CUTLASS's Sm100MmaPeerBitMask, 0xFEFFFFFF) turns the odd CTA's
// shared address into the even CTA's and leaves the leader's own unchanged.
TEST(PairLeaderAddress, ClearsOnlyThePeerBit) {
  static_assert(kPairLeaderAddressMask == 0xFEFFFFFFu);
  EXPECT_EQ(PairLeaderAddress(0x01000408u), 0x00000408u);  // rank 1's barrier at offset 0x408
  EXPECT_EQ(PairLeaderAddress(0x00000408u), 0x00000408u);  // the leader's own
  EXPECT_EQ(PairLeaderAddress(0x03000010u), 0x02000010u);  // a second pair: rank 3 -> rank 2
}

}  // namespace
}  // namespace gemm::sm100
