// The GPU generator's eight-at-a-time path (RandomValuesIn8) against the
// generator every engine and client shares (RandomValueIn), value for value:
// server-generated matrices must not depend on which path made them.
#include "common/random_eight.h"

#include <gtest/gtest.h>

#include <random>

namespace gemm {
namespace {

void ExpectEightAsRandomValueIn(uint64_t stream, uint64_t first) {
  float got[8];
  RandomValuesIn8(stream, first, got);
  for (int j = 0; j < 8; ++j) {
    ASSERT_EQ(element_detail::FloatBits(got[j]), element_detail::FloatBits(RandomValueIn(stream, first + j)))
        << "stream " << stream << ", element " << first + j;
  }
}

TEST(RandomFill, EightAtATimeAreRandomValueInsOwnValues) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t stream = rng(), first = rng() >> (rng() % 64);
    ExpectEightAsRandomValueIn(stream, first & ~uint64_t{7});
    ExpectEightAsRandomValueIn(stream, first);
  }
}

TEST(RandomFill, EightAtATimeFromTheStreamsOfTheSeedsClientsUse) {
  for (uint64_t seed : {0ull, 1ull, 2ull, 42ull, 1000ull, ~0ull}) {
    for (OperandId id : {OperandId::kA, OperandId::kB, OperandId::kC}) {
      const uint64_t stream = RandomStream(seed, id);
      for (uint64_t first = 0; first < (1u << 16); first += 8) ExpectEightAsRandomValueIn(stream, first);
    }
  }
}

// Where stream + first carries out of its low 32 bits within the eight, and
// at every offset around it (the path that works the high half once must
// not be taken there).
TEST(RandomFill, EightAtATimeAcrossTheLowHalfsCarry) {
  std::mt19937_64 rng(12);
  for (int i = 0; i < 2000; ++i) {
    const uint64_t stream = rng();
    const uint64_t carry_at = ((stream >> 32) + 1 + rng() % 1000) << 32;  // stream + first == carry_at
    for (uint64_t back = 0; back <= 16; ++back) ExpectEightAsRandomValueIn(stream, carry_at - back - stream);
  }
  ExpectEightAsRandomValueIn(~0ull - 3, 0);  // the whole sum wraps
  ExpectEightAsRandomValueIn(0, ~0ull - 3);
}

// Every value the generator can give (j/1024, j in [-1024, 1023]) comes out
// of the float construction exactly: sweep the top 11 bits through streams.
TEST(RandomFill, EveryValueOfTheRangeIsReached) {
  std::vector<bool> seen(2048);
  const uint64_t stream = RandomStream(3, OperandId::kA);
  int distinct = 0;
  float got[8];
  for (uint64_t first = 0; distinct < 2048 && first < (1u << 22); first += 8) {
    RandomValuesIn8(stream, first, got);
    for (float v : got) {
      const int j = static_cast<int>(v * 1024.0f) + 1024;
      ASSERT_GE(j, 0);
      ASSERT_LT(j, 2048);
      ASSERT_EQ(static_cast<float>(j - 1024) / 1024.0f, v);
      if (!seen[j]) {
        seen[j] = true;
        ++distinct;
      }
    }
  }
  EXPECT_EQ(distinct, 2048);
}

}  // namespace
}  // namespace gemm
