// Batched matrices copied between pitches on the GPU
// (kernels/src/common/matrix_repitch.h): every element where it belongs, zeros in
// the rest of the destination, a shared source read for every entry, rows
// longer than a warp's segment, a destination pitch whose gaps stay
// untouched, and sources and destinations that are not 16-byte aligned
// (each row shifted differently) or end mid-vector, in each element size;
// single columns; several copies given in one call.
#include "common/matrix_repitch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
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

const Case kCases[] = {
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
    {1000, 1, 8, 8000, 1000, 1, 3, 2, 0},          // a D of one column, from three entries
    {300, 3, 8, 2400, 300, 3, 1, 2, 1, 5},         // three columns back to a pitch of five
    {61, 129, 136, 0, 64, 136, 5, 4, 0},           // a shared fp32 source of 129 columns, padded to 136
};

// One case on the GPU: its source filled, its destination poisoned inside
// a larger buffer whose bytes around it must stay.
class Staged {
 public:
  explicit Staged(const Case& c) : c_(c) {
    const int64_t from_entries = c.from_stride == 0 ? 1 : c.entries;
    const int64_t from_elems = (from_entries - 1) * c.from_stride + (c.rows - 1) * c.from_ld + c.cols;
    std::vector<uint8_t> from(from_elems * c.bytes);
    for (size_t i = 0; i < from.size(); ++i) from[i] = static_cast<uint8_t>(i * 37 + 11);
    expected_ = Expected(c, from);
    before_ = c.to_offset * c.bytes;
    ok_ = cudaMalloc(&from_, from.size()) == cudaSuccess && cudaMalloc(&to_, size()) == cudaSuccess &&
          cudaMemcpy(from_, from.data(), from.size(), cudaMemcpyHostToDevice) == cudaSuccess &&
          cudaMemset(to_, kPoison, size()) == cudaSuccess;
  }
  ~Staged() {
    cudaFree(from_);
    cudaFree(to_);
  }
  Staged(const Staged&) = delete;
  Staged& operator=(const Staged&) = delete;
  bool ok() const { return ok_; }

  gemm::common::MatrixRepitch Copy() const {
    gemm::common::MatrixRepitch r;
    r.from = from_, r.from_ld = c_.from_ld, r.from_stride = c_.from_stride;
    r.to = static_cast<uint8_t*>(to_) + before_, r.to_rows = c_.to_rows, r.to_cols = c_.to_cols, r.to_ld = c_.to_ld;
    r.rows = c_.rows, r.cols = c_.cols;
    r.entries = c_.entries, r.element_bytes = c_.bytes;
    return r;
  }

  // The destination as Expected says, and the bytes around it untouched.
  void Check() const {
    SCOPED_TRACE(::testing::Message() << c_.rows << "x" << c_.cols << " ld " << c_.from_ld << " stride "
                                      << c_.from_stride << " -> " << c_.to_rows << "x" << c_.to_cols << " x"
                                      << c_.entries << ", " << c_.bytes << " bytes, offset " << c_.to_offset
                                      << ", to_ld " << c_.to_ld);
    std::vector<uint8_t> got(size());
    ASSERT_CUDA(cudaMemcpy(got.data(), to_, got.size(), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < before_; ++i) ASSERT_EQ(got[i], kPoison) << "byte " << i << " before the destination";
    for (size_t i = 0; i < expected_.size(); ++i) ASSERT_EQ(got[before_ + i], expected_[i]) << "byte " << i;
    for (size_t i = 0; i < kGuard; ++i) {
      ASSERT_EQ(got[before_ + expected_.size() + i], kPoison) << "byte " << i << " after";
    }
  }

 private:
  static constexpr size_t kGuard = 64;
  size_t size() const { return before_ + expected_.size() + kGuard; }
  Case c_;
  std::vector<uint8_t> expected_;
  size_t before_ = 0;
  void *from_ = nullptr, *to_ = nullptr;
  bool ok_ = false;
};

TEST(MatrixRepitchGpu, EveryElementLandsAtItsNewPitchWithZerosAround) {
  SKIP_WITHOUT_GPU();
  for (const Case& c : kCases) {
    Staged staged(c);
    ASSERT_TRUE(staged.ok());
    ASSERT_CUDA(gemm::common::CopyRepitched(staged.Copy(), nullptr));
    staged.Check();
    if (HasFatalFailure()) return;
  }
}

// Every case in one call: three element sizes, and more copies of one size
// than a launch takes. Each lands as it does alone.
TEST(MatrixRepitchGpu, CopiesGivenTogetherLandAsEachAlone) {
  SKIP_WITHOUT_GPU();
  std::vector<std::unique_ptr<Staged>> staged;
  std::vector<gemm::common::MatrixRepitch> copies;
  for (const Case& c : kCases) {
    staged.push_back(std::make_unique<Staged>(c));
    ASSERT_TRUE(staged.back()->ok());
    copies.push_back(staged.back()->Copy());
  }
  ASSERT_CUDA(gemm::common::CopyRepitched(copies.data(), static_cast<int>(copies.size()), nullptr));
  for (const auto& s : staged) {
    s->Check();
    if (HasFatalFailure()) return;
  }
}

// An element size the kernel has no copy for is refused before anything
// is written, even after more copies it could make than one launch takes.
TEST(MatrixRepitchGpu, AnElementSizeOtherThanOneTwoOrFourIsRefusedBeforeAnyCopy) {
  SKIP_WITHOUT_GPU();
  std::vector<std::unique_ptr<Staged>> staged;
  std::vector<gemm::common::MatrixRepitch> copies;
  for (int i = 0; i < 5; ++i) {
    staged.push_back(std::make_unique<Staged>(kCases[0]));
    ASSERT_TRUE(staged.back()->ok());
    copies.push_back(staged.back()->Copy());
  }
  copies.back().element_bytes = 8;
  EXPECT_EQ(gemm::common::CopyRepitched(copies.data(), static_cast<int>(copies.size()), nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(gemm::common::CopyRepitched(copies.back(), nullptr), cudaErrorInvalidValue);
  for (size_t i = 0; i + 1 < copies.size(); ++i) {
    std::vector<uint8_t> first(64);
    ASSERT_CUDA(cudaMemcpy(first.data(), copies[i].to, first.size(), cudaMemcpyDeviceToHost));
    for (uint8_t byte : first) ASSERT_EQ(byte, kPoison) << "copy " << i << " was written";
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
