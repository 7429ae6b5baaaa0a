// Batched matrices copied between pitches on the GPU
// (kernels/src/common/matrix_repitch.h): every element where it belongs, zeros in
// the rest of the destination, a shared source read for every entry, rows
// longer than a warp's segment, a destination pitch whose gaps stay
// untouched, and sources and destinations that are not 16-byte aligned
// (each row shifted differently) or end mid-vector, in each element size.
#include "common/matrix_repitch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gpu_test_util.h"

namespace gemmd::testing {
namespace {

#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

struct Case {
  int64_t rows, cols;  // copied
  int64_t from_ld, from_stride, to_rows, to_cols, entries;
  uint32_t bytes;
  int64_t to_offset;  // elements past a 256-byte boundary
  int64_t to_ld = 0;  // 0: to_cols
  int64_t ld() const { return to_ld != 0 ? to_ld : to_cols; }
};

constexpr uint8_t kPoison = 0xA5;

// The destination as the copy should leave it, built on the host.
// Zeros in to_rows x to_cols of each entry, the poison in a pitch's gaps.
std::vector<uint8_t> Expected(const Case& c, const std::vector<uint8_t>& from) {
  std::vector<uint8_t> to(c.entries * c.to_rows * c.ld() * c.bytes, kPoison);
  for (int64_t row = 0; row < c.entries * c.to_rows; ++row) {
    std::memset(&to[row * c.ld() * c.bytes], 0, c.to_cols * c.bytes);
  }
  for (int64_t e = 0; e < c.entries; ++e)
    for (int64_t r = 0; r < c.rows; ++r)
      for (int64_t col = 0; col < c.cols; ++col) {
        const int64_t src = e * c.from_stride + r * c.from_ld + col;
        const int64_t dst = (e * c.to_rows + r) * c.ld() + col;
        std::memcpy(&to[dst * c.bytes], &from[src * c.bytes], c.bytes);
      }
  return to;
}

TEST(MatrixRepitchGpu, EveryElementLandsAtItsNewPitchWithZerosAround) {
  SKIP_WITHOUT_GPU();
  const Case cases[] = {
      {67, 45, 45, 67 * 45, 72, 48, 3, 2, 0},        // bf16 A at 8-element rows, three entries
      {67, 45, 45, 0, 67, 48, 4, 2, 0},              // a shared operand: one entry read four times
      {130, 33, 40, 130 * 40 + 7, 136, 40, 2, 4, 0}, // fp32 from a pitched, gapped source
      {31, 17, 17, 31 * 17, 32, 32, 2, 1, 0},        // fp8
      {67, 45, 48, 72 * 48, 67, 45, 3, 2, 0},        // D out of its padding: rows and columns dropped
      {67, 45, 48, 72 * 48, 67, 45, 1, 2, 3},        // ... to a destination 6 bytes past alignment
      {9, 5, 7, 70, 9, 5, 5, 4, 1},                  // 225 fp32: no whole 16-byte vector at the end
      {3, 5001, 5003, 3 * 5003, 3, 5056, 2, 2, 0},   // rows of ten warp segments, the last ragged
      {67, 45, 48, 72 * 48, 67, 45, 2, 2, 0, 47},    // D back to a caller's pitch: its gaps left alone
      {5, 300, 301, 5 * 301, 5, 304, 2, 1, 0},       // fp8 rows starting at every odd byte of a word
      {7, 1000, 1003, 7 * 1003, 8, 1008, 1, 2, 0},   // bf16 rows of many words, each shifted differently
      {6, 260, 261, 0, 6, 264, 2, 4, 1},             // fp32, shifted source rows to destination rows 4 bytes in
      {9, 77, 80, 9 * 80, 9, 77, 1, 1, 5, 83},       // fp8 D back to an odd pitch 5 bytes in
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.rows << "x" << c.cols << " ld " << c.from_ld << " stride "
                                      << c.from_stride << " -> " << c.to_rows << "x" << c.to_cols << " x"
                                      << c.entries << ", " << c.bytes << " bytes, offset " << c.to_offset
                                      << ", to_ld " << c.to_ld);
    const int64_t from_entries = c.from_stride == 0 ? 1 : c.entries;
    const int64_t from_elems = (from_entries - 1) * c.from_stride + (c.rows - 1) * c.from_ld + c.cols;
    std::vector<uint8_t> from(from_elems * c.bytes);
    for (size_t i = 0; i < from.size(); ++i) from[i] = static_cast<uint8_t>(i * 37 + 11);
    const std::vector<uint8_t> expected = Expected(c, from);
    void *d_from = nullptr, *d_to = nullptr;
    ASSERT_CUDA(cudaMalloc(&d_from, from.size()));
    // The destination, poisoned, inside a larger buffer whose bytes around it must stay.
    const size_t before = c.to_offset * c.bytes, guard = 64;
    ASSERT_CUDA(cudaMalloc(&d_to, before + expected.size() + guard));
    ASSERT_CUDA(cudaMemcpy(d_from, from.data(), from.size(), cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemset(d_to, kPoison, before + expected.size() + guard));
    gemm::common::MatrixRepitch r;
    r.from = d_from, r.from_ld = c.from_ld, r.from_stride = c.from_stride;
    r.to = static_cast<uint8_t*>(d_to) + before, r.to_rows = c.to_rows, r.to_cols = c.to_cols, r.to_ld = c.to_ld;
    r.rows = c.rows, r.cols = c.cols;
    r.entries = c.entries, r.element_bytes = c.bytes;
    ASSERT_CUDA(gemm::common::CopyRepitched(r, nullptr));
    std::vector<uint8_t> got(before + expected.size() + guard);
    ASSERT_CUDA(cudaMemcpy(got.data(), d_to, got.size(), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < before; ++i) ASSERT_EQ(got[i], kPoison) << "byte " << i << " before the destination";
    for (size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(got[before + i], expected[i]) << "byte " << i;
    for (size_t i = 0; i < guard; ++i) {
      ASSERT_EQ(got[before + expected.size() + i], kPoison) << "byte " << i << " after";
    }
    cudaFree(d_from);
    cudaFree(d_to);
  }
}

// Past 2^31 elements the kernel indexes in 64 bits: one fp8 row of that
// many, padded, lands as the small ones do.
TEST(MatrixRepitchGpu, ARowPastTwoToThe31ElementsTakesTheWideIndex) {
  SKIP_WITHOUT_GPU();
  constexpr int64_t kCols = (int64_t{1} << 31) + 500, kToCols = kCols + 524;
  std::vector<uint8_t> from(kCols);
  for (int64_t i = 0; i < kCols; ++i) from[i] = static_cast<uint8_t>(i * 37 + 11);
  void *d_from = nullptr, *d_to = nullptr;
  ASSERT_CUDA(cudaMalloc(&d_from, kCols));
  ASSERT_CUDA(cudaMalloc(&d_to, kToCols));
  ASSERT_CUDA(cudaMemcpy(d_from, from.data(), kCols, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemset(d_to, kPoison, kToCols));
  gemm::common::MatrixRepitch r;
  r.from = d_from, r.from_ld = kCols;
  r.to = d_to, r.to_rows = 1, r.to_cols = kToCols;
  r.rows = 1, r.cols = kCols, r.element_bytes = 1;
  ASSERT_CUDA(gemm::common::CopyRepitched(r, nullptr));
  std::vector<uint8_t> got(kToCols);
  ASSERT_CUDA(cudaMemcpy(got.data(), d_to, kToCols, cudaMemcpyDeviceToHost));
  cudaFree(d_from);
  cudaFree(d_to);
  const auto wrong = std::mismatch(from.begin(), from.end(), got.begin());
  EXPECT_EQ(wrong.first, from.end()) << "first wrong byte " << (wrong.first - from.begin());
  for (int64_t i = kCols; i < kToCols; ++i) ASSERT_EQ(got[i], 0) << "padding byte " << i - kCols;
}

}  // namespace
}  // namespace gemmd::testing
