// HostCopier splits big copies over threads: every byte must land where a
// memcpy would put it, whatever the size, the alignment or the thread count.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "engine/host_copier.h"

namespace gemmd {
namespace {

TEST(HostCopier, CopiesExactlyWhatMemcpyWould) {
  std::mt19937 rng(7);
  for (unsigned threads : {0u, 1u, 3u, 7u}) {
    HostCopier copier(threads);
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{4095}, HostCopier::kMinSplitBytes - 1,
                         HostCopier::kMinSplitBytes, HostCopier::kMinSplitBytes * 3 + 12345}) {
      std::vector<uint8_t> src(bytes + 3), dst(bytes + 3, 0xAB);
      for (auto& b : src) b = static_cast<uint8_t>(rng());
      copier.Copy(dst.data() + 1, src.data() + 2, bytes);  // misaligned on both sides
      EXPECT_EQ(dst[0], 0xAB) << "wrote before the destination";
      EXPECT_TRUE(std::equal(src.begin() + 2, src.begin() + 2 + static_cast<long>(bytes), dst.begin() + 1))
          << threads << " threads, " << bytes << " bytes";
      EXPECT_EQ(dst[bytes + 1], 0xAB) << "wrote past the end";
    }
  }
}

// Each thread takes a 4 KB-aligned part. A copy of parts * 4096 * j + r
// bytes (0 < r < parts) once lost its last r bytes: the part length was
// rounded down before it was rounded up to 4 KB. An inline A of 2226 rows
// of K = 1001 made such a staging chunk on a 16-core host (8 parts).
TEST(HostCopier, UnevenSplitsCopyTheirLastBytes) {
  for (unsigned threads : {1u, 3u, 7u}) {
    HostCopier copier(threads);
    const size_t parts = threads + 1;
    const size_t first_split = (HostCopier::kMinSplitBytes + parts * 4096 - 1) / (parts * 4096);
    for (size_t j : {first_split, first_split + 1}) {
      for (size_t r = 1; r < parts; ++r) {
        const size_t bytes = parts * 4096 * j + r;
        ASSERT_GE(bytes, HostCopier::kMinSplitBytes);
        std::vector<uint8_t> src(bytes, 0x11), dst(bytes + 1, 0xAB);
        src.back() = 0x22;
        copier.Copy(dst.data(), src.data(), bytes);
        EXPECT_EQ(dst[bytes - 1], 0x22) << threads << " threads, " << bytes << " bytes: the last byte";
        EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin())) << threads << " threads, " << bytes << " bytes";
        EXPECT_EQ(dst[bytes], 0xAB) << "wrote past the end";
      }
    }
  }
}

TEST(HostCopier, BackToBackCopiesDoNotMix) {
  HostCopier copier(3);
  const size_t bytes = HostCopier::kMinSplitBytes * 2;
  for (int round = 0; round < 20; ++round) {
    std::vector<uint8_t> src(bytes, static_cast<uint8_t>(round)), dst(bytes, 0xFF);
    copier.Copy(dst.data(), src.data(), bytes);
    ASSERT_EQ(dst, src) << round;
  }
}

// Bytes in pieces (a request's inline operand as gRPC's slices): any range,
// across any number of pieces, comes out as from the pieces joined.
TEST(HostCopier, RangesOfPiecesComeOutAsFromThePiecesJoined) {
  std::mt19937 rng(11);
  const size_t total = HostCopier::kMinSplitBytes * 2 + 777;
  std::vector<uint8_t> joined(total);
  for (auto& b : joined) b = static_cast<uint8_t>(rng());
  // Pieces of 1 byte to 64 KB, each in its own allocation.
  std::vector<std::vector<uint8_t>> storage;
  HostBytes pieces;
  for (size_t at = 0; at < total;) {
    const size_t n = std::min<size_t>(total - at, 1 + rng() % 65536);
    storage.emplace_back(joined.begin() + static_cast<long>(at), joined.begin() + static_cast<long>(at + n));
    pieces.Append(reinterpret_cast<const char*>(storage.back().data()), n);
    at += n;
  }
  ASSERT_EQ(pieces.size(), total);
  EXPECT_EQ(pieces.block(), nullptr);
  for (unsigned threads : {0u, 3u}) {
    HostCopier copier(threads);
    for (auto [offset, bytes] : {std::pair<size_t, size_t>{0, total}, {1, 1}, {65535, 3}, {12345, total - 12345},
                                 {total / 3, HostCopier::kMinSplitBytes + 5}, {total - 1, 1}}) {
      std::vector<uint8_t> dst(bytes + 2, 0xAB);
      copier.Copy(dst.data() + 1, pieces, offset, bytes);
      EXPECT_EQ(dst.front(), 0xAB);
      EXPECT_EQ(dst.back(), 0xAB);
      EXPECT_TRUE(std::equal(dst.begin() + 1, dst.end() - 1, joined.begin() + static_cast<long>(offset)))
          << threads << " threads, [" << offset << ", +" << bytes << ")";
    }
  }
}

}  // namespace
}  // namespace gemmd
