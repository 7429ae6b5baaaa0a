#include "engine/median.h"

#include <gtest/gtest.h>

namespace gemmd {
namespace {

TEST(MedianTest, OddCountIsTheMiddleOfTheSortedTimes) {
  EXPECT_DOUBLE_EQ(Median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(Median({5.0}), 5.0);
}

TEST(MedianTest, EvenCountIsTheMeanOfTheMiddleTwo) { EXPECT_DOUBLE_EQ(Median({4.0, 1.0, 9.0, 2.0}), 3.0); }

TEST(MedianTest, OneSlowRepeatDoesNotMoveIt) { EXPECT_DOUBLE_EQ(Median({1.0, 1.0, 100.0}), 1.0); }

}  // namespace
}  // namespace gemmd
