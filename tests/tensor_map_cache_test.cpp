// The per-thread tensor map cache: a key seen lately is not encoded again,
// any change of address, size, pitch, box or element type is a new map, the least
// recently used entry goes first, and an encoding error is not kept.
#include "common/tensor_map_cache.h"

#include <gtest/gtest.h>

namespace gemm::common {
namespace {

struct FakeMap {
  int serial = 0;  // which encode call made it
};

class TensorMapCacheTest : public ::testing::Test {
 protected:
  std::string Get(const TensorMapCache<FakeMap, 4>::Key& key, FakeMap* out, std::string error = "") {
    return cache_.Get(key, out, [&](FakeMap* fresh) {
      ++encodes_;
      fresh->serial = encodes_;
      return error;
    });
  }
  TensorMapCache<FakeMap, 4> cache_;
  int encodes_ = 0;
  const char buf_[64] = {};
};

TEST_F(TensorMapCacheTest, AKeySeenLatelyIsNotEncodedAgain) {
  FakeMap m;
  ASSERT_EQ(Get({buf_, 128, 64, 64, 64, 128}, &m), "");
  EXPECT_EQ(m.serial, 1);
  ASSERT_EQ(Get({buf_, 128, 64, 64, 64, 128}, &m), "");
  EXPECT_EQ(m.serial, 1);
  EXPECT_EQ(encodes_, 1);
  EXPECT_EQ(cache_.hits(), 1u);
  // Address, rows, columns, pitch, box, element type and batch each make another map.
  for (const auto& key : {TensorMapCache<FakeMap, 4>::Key{buf_ + 16, 128, 64, 64, 64, 128},
                          TensorMapCache<FakeMap, 4>::Key{buf_, 129, 64, 64, 64, 128},
                          TensorMapCache<FakeMap, 4>::Key{buf_, 128, 63, 64, 64, 128},
                          TensorMapCache<FakeMap, 4>::Key{buf_, 128, 64, 72, 64, 128},
                          TensorMapCache<FakeMap, 4>::Key{buf_, 128, 64, 64, 64, 64},
                          TensorMapCache<FakeMap, 4>::Key{buf_, 128, 64, 64, 64, 128, /*bf16*/ 1},
                          TensorMapCache<FakeMap, 4>::Key{buf_, 128, 64, 64, 64, 128, 0, /*entries*/ 2, 8192},
                          TensorMapCache<FakeMap, 4>::Key{buf_, 128, 64, 64, 64, 128, 0, 2, /*stride*/ 16384}}) {
    const int before = encodes_;
    ASSERT_EQ(Get(key, &m), "");
    EXPECT_EQ(encodes_, before + 1);
    EXPECT_EQ(m.serial, encodes_);
  }
}

TEST_F(TensorMapCacheTest, TheLeastRecentlyUsedGoesFirst) {
  FakeMap m;
  for (int64_t rows = 1; rows <= 4; ++rows) ASSERT_EQ(Get({buf_, rows, 8, 8, 64, 128}, &m), "");
  ASSERT_EQ(Get({buf_, 1, 8, 8, 64, 128}, &m), "");  // 1 used again: 2 is now the oldest
  ASSERT_EQ(Get({buf_, 5, 8, 8, 64, 128}, &m), "");  // evicts 2
  EXPECT_EQ(encodes_, 5);
  ASSERT_EQ(Get({buf_, 1, 8, 8, 64, 128}, &m), "");
  ASSERT_EQ(Get({buf_, 3, 8, 8, 64, 128}, &m), "");
  EXPECT_EQ(encodes_, 5) << "1 and 3 stayed";
  ASSERT_EQ(Get({buf_, 2, 8, 8, 64, 128}, &m), "");
  EXPECT_EQ(encodes_, 6) << "2 was evicted";
}

TEST_F(TensorMapCacheTest, AnEncodingErrorIsReturnedAndNotKept) {
  FakeMap m;
  EXPECT_EQ(Get({buf_, 7, 8, 8, 64, 128}, &m, "the driver said no"), "the driver said no");
  ASSERT_EQ(Get({buf_, 7, 8, 8, 64, 128}, &m), "");
  EXPECT_EQ(encodes_, 2);
  EXPECT_EQ(m.serial, 2);
}

}  // namespace
}  // namespace gemm::common
