// GatherPieces joins a reply's slices into one block on several threads,
// each taking its own range: whatever the pieces' sizes and the thread
// count, the block must be the pieces joined, and nothing past it written.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gemm_client.h"

namespace gemmc {
namespace {

TEST(GatherPieces, JoinsThePiecesOnAnyNumberOfThreads) {
  std::mt19937 rng(9);
  for (size_t total : {size_t{0}, size_t{1}, size_t{4095}, size_t{3 << 20}}) {
    std::string joined(total, '\0');
    for (auto& c : joined) c = static_cast<char>(rng());
    // Pieces of 0 to 70 KB, as gRPC's slices come.
    std::vector<std::pair<const char*, size_t>> pieces;
    for (size_t at = 0; at < total;) {
      const size_t n = std::min<size_t>(total - at, rng() % 70000);
      pieces.emplace_back(joined.data() + at, n);
      at += n;
    }
    for (unsigned threads : {0u, 1u, 2u, 3u, 8u}) {
      std::string dst(total + 1, '\x5A');
      GatherPieces(pieces, dst.data(), threads);
      EXPECT_EQ(dst.substr(0, total), joined) << total << " bytes, " << threads << " threads";
      EXPECT_EQ(dst.back(), '\x5A') << "wrote past the end";
    }
  }
}

}  // namespace
}  // namespace gemmc
