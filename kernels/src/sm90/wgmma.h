// wgmma (Hopper's warpgroup MMA) through inline PTX: CCCL's <cuda/ptx> has
// no wrapper for it. Operands come from shared memory through descriptors;
// accumulators stay in the warpgroup's registers.
//
// asm takes only a literal string, so each MMA's statement is written once
// as a macro of its operands' PTX type (f16 or bf16) and transpose bits,
// and a template on the step's form picks one: the same instruction
// otherwise.
#pragma once

#include <cstdint>

#include "common/tile_layout.h"
#include "gemm/element_type.h"
#include "gemm/form.h"
#include "planted_fault.h"

namespace gemm::sm90 {

// Descriptor of an operand tile in shared memory, laid out as TMA's
// SWIZZLE_128B writes it (common/tile_layout.h); the tile must start on a
// 1024-byte boundary. K-major: rows of 64 16-bit elements (128 bytes),
// 8-row atoms of 1024 bytes (the stride byte offset); the leading byte
// offset is unused; K advances by 16 as 32 bytes inside the swizzled row.
// MN-major (the operand stored MN-contiguous): k-rows of 64 M or N
// elements, 8-k atoms of 1024 bytes (the stride byte offset), 64-row blocks
// kMnBlockBytes apart (the leading byte offset); K advances by 16 as two
// atoms. These are the PTX ISA's canonical 128-byte-swizzle layouts of
// "Shared Memory Matrix Layout" for wgmma, K-major and MN-major.
template <Layout kLayout = Layout::kKContiguous>
__device__ inline uint64_t SmemDescriptor(const void* smem_tile) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_tile));
  uint64_t desc = (addr & 0x3FFFF) >> 4;    // start address, 16-byte units
  if constexpr (kLayout == Layout::kKContiguous) {
    desc |= uint64_t{1} << 16;               // leading byte offset: unused when swizzled
  } else {
    desc |= uint64_t{common::kMnBlockBytes >> 4} << 16;  // leading byte offset: the next 64 rows
  }
  desc |= uint64_t{1024 >> 4} << 32;       // stride byte offset: one 8-row atom
  desc |= uint64_t{1} << 62;               // 128-byte swizzle
  return desc;
}

// The descriptor of the tile `bytes` further on. The start address is the
// descriptor's low 14 bits, in 16-byte units, and shared memory (under
// 256 KB) never carries out of them, so moving is one add: computing the
// base descriptor once per k-tile keeps the address arithmetic out of the
// path from "stage full" to the first wgmma.
__device__ inline uint64_t AdvanceDescriptor(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }

// Orders this warpgroup's register and shared-memory accesses before the
// wgmma that follow.
__device__ inline void WgmmaFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void WgmmaCommit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ inline void WgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// Keeps the compiler from moving accumulator reads/writes across an
// asynchronous wgmma that owns those registers.
template <int kCount>
__device__ inline void FenceAccumulators(float (&d)[kCount]) {
#pragma unroll
  for (int i = 0; i < kCount; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The wgmma of `MACRO`'s shape for Form's operand type and layouts: the
// transpose bits (imm-trans-a, imm-trans-b) are 1 for an operand the MMA
// reads MN-major.
#define GEMM_WGMMA_LAYOUTS(MACRO, TYPE)                                                           \
  constexpr bool kTransA = Form::kALayout == Layout::kMnContiguous;                             \
  constexpr bool kTransB = Form::kBLayout == Layout::kMnContiguous;                             \
  if constexpr (!kTransA && !kTransB) {                                                         \
    MACRO(TYPE, "0", "0");                                                                      \
  } else if constexpr (!kTransA) {                                                              \
    MACRO(TYPE, "0", "1");                                                                      \
  } else if constexpr (!kTransB) {                                                              \
    MACRO(TYPE, "1", "0");                                                                      \
  } else {                                                                                      \
    MACRO(TYPE, "1", "1");                                                                      \
  }
#define GEMM_WGMMA_OF_FORM(MACRO)                                                                 \
  if constexpr (Form::kOperands == ElementType::kBF16) {                                        \
    GEMM_WGMMA_LAYOUTS(MACRO, "bf16")                                                           \
  } else {                                                                                      \
    GEMM_WGMMA_LAYOUTS(MACRO, "f16")                                                            \
  }

// d(64x128, f32) = A(64x16)·B(128x16)ᵀ + (accumulate ? d : 0); A and B are
// Form::kOperands (fp16 or bf16), in shared memory as Form's layouts say.
// Issued by all 128 threads of a warpgroup.
// Register i of thread t holds row 16·warp + lane/4 + 8·((i/2)%2), column
// 8·(i/4) + 2·(lane%4) + i%2 (the epilogues' row goes through
// PlantedQuadRow, planted_fault.h).
#define GEMM_WGMMA_M64N128K16(TYPE, TA, TB) \
  asm volatile( \
      "{\n" \
      ".reg .pred p;\n" \
      "setp.ne.b32 p, %66, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " " \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, " TA ", " TB ";\n" \
      "}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
      : "l"(a_desc), "l"(b_desc), "r"(accumulate))
template <typename Form>
__device__ inline void WgmmaM64N128K16(float (&d)[64], uint64_t a_desc, uint64_t b_desc, int accumulate) {
  GEMM_WGMMA_OF_FORM(GEMM_WGMMA_M64N128K16);
}

// d(64x256, f32) = A(64x16)·B(256x16)ᵀ + (accumulate ? d : 0): the widest
// wgmma. Per MAC it reads less shared memory than m64n128 (A is fetched once
// for 256 columns), which is what the fastest steps need. Same register
// layout as WgmmaM64N128K16, with i running to 127 and columns to 255.
#define GEMM_WGMMA_M64N256K16(TYPE, TA, TB) \
  asm volatile( \
      "{\n" \
      ".reg .pred p;\n" \
      "setp.ne.b32 p, %130, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " " \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, " TA ", " TB ";\n" \
      "}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
      : "l"(a_desc), "l"(b_desc), "r"(accumulate))
template <typename Form>
__device__ inline void WgmmaM64N256K16(float (&d)[128], uint64_t a_desc, uint64_t b_desc, int accumulate) {
  GEMM_WGMMA_OF_FORM(GEMM_WGMMA_M64N256K16);
}

// d(64x192, f32) = A(64x16)·B(192x16)ᵀ + (accumulate ? d : 0): step 10's
// three-quarter tile, for problems whose count of 256-column tiles leaves
// SMs idle. Same register layout, with i running to 95 and columns to 191.
#define GEMM_WGMMA_M64N192K16(TYPE, TA, TB) \
  asm volatile( \
      "{\n" \
      ".reg .pred p;\n" \
      "setp.ne.b32 p, %98, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n192k16.f32." TYPE "." TYPE " " \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, " TA ", " TB ";\n" \
      "}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]) \
      : "l"(a_desc), "l"(b_desc), "r"(accumulate))
template <typename Form>
__device__ inline void WgmmaM64N192K16(float (&d)[96], uint64_t a_desc, uint64_t b_desc, int accumulate) {
  GEMM_WGMMA_OF_FORM(GEMM_WGMMA_M64N192K16);
}

// d(64x64, f32) = A(64x16)·B(64x16)ᵀ + (accumulate ? d : 0): step 10's
// narrow tile (tiny problems), where a wider wgmma would multiply mostly
// padding. Same register layout, with i running to 31 and columns to 63.
#define GEMM_WGMMA_M64N64K16(TYPE, TA, TB) \
  asm volatile( \
      "{\n" \
      ".reg .pred p;\n" \
      "setp.ne.b32 p, %34, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE " " \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, " TA ", " TB ";\n" \
      "}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) \
      : "l"(a_desc), "l"(b_desc), "r"(accumulate))
template <typename Form>
__device__ inline void WgmmaM64N64K16(float (&d)[32], uint64_t a_desc, uint64_t b_desc, int accumulate) {
  GEMM_WGMMA_OF_FORM(GEMM_WGMMA_M64N64K16);
}

// One 128×128 output tile times one 64-wide k-tile: both 64-row halves of A
// against B, four k16 steps each, as one committed wgmma group. The first
// k16 step adds to `acc` only if `accumulate` (false at the start of a
// tile); the rest always add. Returns at once: WaitForTileMma to finish.
// Tiles are in the tile_layout.h layout (128 rows of 128 swizzled bytes).
// Form (common/step_form.h) gives the operand type and how each tile lies:
// MN-major for an operand stored MN-contiguous and loaded as it lies.
template <typename Form>
__device__ inline void IssueTileMma(float (&acc)[2][64], const char* a_tile, const char* b_tile, bool accumulate) {
  constexpr bool kAMn = Form::kALayout == Layout::kMnContiguous, kBMn = Form::kBLayout == Layout::kMnContiguous;
  const uint64_t a_desc = PlantedADescriptor(SmemDescriptor<Form::kALayout>(a_tile));
  const uint64_t b_desc = SmemDescriptor<Form::kBLayout>(b_tile);
  WgmmaFence();
#pragma unroll
  for (int mb = 0; mb < 2; ++mb) {  // 64 rows on: 8 KB in both layouts
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      WgmmaM64N128K16<Form>(acc[mb], AdvanceDescriptor(a_desc, mb * 64 * 128 + PlantedASliceBytes<kAMn>(kk)),
                            AdvanceDescriptor(b_desc, common::KSliceBytes(kBMn, kk)),
                            PlantedAccumulate(accumulate) || kk > 0);
    }
  }
  WgmmaCommit();
}

// A warpgroup's 64×256 slice of a tile (64×192 with acc[96], 64×128 with
// acc[64], 64×64 with acc[32]) times one 64-wide k-tile: its 64 rows of A
// (`a_rows`) against 256 (192, 128, 64) rows of B, four k16 steps as one
// committed group. Returns at once: WaitForMma to finish.
template <typename Form, int kRegs>
__device__ inline void IssueWideTileMma(float (&acc)[kRegs], const char* a_rows, const char* b_rows, bool accumulate) {
  static_assert(kRegs == 128 || kRegs == 96 || kRegs == 64 || kRegs == 32, "m64n256, m64n192, m64n128 or m64n64");
  constexpr bool kAMn = Form::kALayout == Layout::kMnContiguous, kBMn = Form::kBLayout == Layout::kMnContiguous;
  const uint64_t a_desc = PlantedADescriptor(SmemDescriptor<Form::kALayout>(a_rows));
  const uint64_t b_desc = SmemDescriptor<Form::kBLayout>(b_rows);
  WgmmaFence();
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    const uint64_t a = AdvanceDescriptor(a_desc, PlantedASliceBytes<kAMn>(kk));
    const uint64_t b = AdvanceDescriptor(b_desc, common::KSliceBytes(kBMn, kk));
    if constexpr (kRegs == 128) {
      WgmmaM64N256K16<Form>(acc, a, b, PlantedAccumulate(accumulate) || kk > 0);
    } else if constexpr (kRegs == 96) {
      WgmmaM64N192K16<Form>(acc, a, b, PlantedAccumulate(accumulate) || kk > 0);
    } else if constexpr (kRegs == 64) {
      WgmmaM64N128K16<Form>(acc, a, b, PlantedAccumulate(accumulate) || kk > 0);
    } else {
      WgmmaM64N64K16<Form>(acc, a, b, PlantedAccumulate(accumulate) || kk > 0);
    }
  }
  WgmmaCommit();
}

// Waits until at most kPending committed wgmma groups are still running;
// with kPending = 1 the next k-tile's group can be issued before this one
// is waited for, so the tensor cores never drain between k-tiles.
template <int kPending, int kRegs>
__device__ inline void WaitForMma(float (&acc)[kRegs]) {
  WgmmaWait<kPending>();
  FenceAccumulators(acc);
}

// Waits until at most kPending of the issued wgmma groups still run; with
// kPending = 0 the accumulators are readable after.
template <int kPending = 0>
__device__ inline void WaitForTileMma(float (&acc)[2][64]) {
  WgmmaWait<kPending>();
  FenceAccumulators(acc[0]);
  FenceAccumulators(acc[1]);
}

}  // namespace gemm::sm90
