// The device-resident copies' policy (engine/device_matrix_cache.h), with
// host memory standing in for the device's.
#include "engine/device_matrix_cache.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace gemmd {
namespace {

// Memory that counts what is live, to show nothing leaks or goes twice.
struct CountedMemory {
  std::set<void*> live;
  bool refuse = false;
  DeviceMatrixCache::Memory memory() {
    return {[this](uint64_t bytes) -> void* {
              if (refuse) return nullptr;
              void* p = std::malloc(bytes);
              live.insert(p);
              return p;
            },
            [this](void* p) {
              EXPECT_EQ(live.erase(p), 1u) << "released twice or never allocated";
              std::free(p);
            }};
  }
};

DeviceMatrixCache::Lease Filled(DeviceMatrixCache& cache, const std::string& key, uint64_t bytes) {
  auto lease = cache.Acquire(key, bytes);
  if (lease && !lease.hit()) lease.MarkReady();
  return lease;
}

TEST(DeviceMatrixCache, AReadyCopyIsAHitAndKeepsItsBytes) {
  CountedMemory mem;
  DeviceMatrixCache cache(1000, mem.memory());
  void* first = nullptr;
  {
    auto lease = cache.Acquire("m-a", 400);
    ASSERT_TRUE(lease);
    EXPECT_FALSE(lease.hit());
    first = lease.data();
    static_cast<char*>(first)[0] = 42;
    lease.MarkReady();
  }
  auto again = cache.Acquire("m-a", 400);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again.hit());
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(static_cast<char*>(again.data())[0], 42);
  const DeviceCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.resident_bytes, 400u);
  EXPECT_EQ(s.copies, 1u);
}

TEST(DeviceMatrixCache, TheLeastRecentlyUsedUnusedCopyGoesFirstAndACopyInUseNever) {
  CountedMemory mem;
  DeviceMatrixCache cache(1000, mem.memory());
  auto held = Filled(cache, "m-held", 400);  // in use throughout, and the oldest
  Filled(cache, "m-old", 300);
  Filled(cache, "m-new", 300);
  Filled(cache, "m-old", 300);  // m-old is now more recent than m-new
  auto third = Filled(cache, "m-third", 300);  // needs 300: m-new goes, not m-held nor m-old
  ASSERT_TRUE(third);
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_TRUE(cache.Acquire("m-old", 300).hit());
  EXPECT_TRUE(held.data() != nullptr);
  EXPECT_EQ(cache.stats().resident_bytes, 1000u);
  // Room for 600 more only by evicting copies in use: refused, nothing evicted.
  EXPECT_FALSE(cache.Acquire("m-big", 700));
  EXPECT_EQ(cache.stats().evictions, 2u) << "m-old (unused) went; m-held and m-third are in use";
  EXPECT_EQ(mem.live.size(), 2u);
}

TEST(DeviceMatrixCache, ACopyLargerThanTheBudgetOrWithoutMemoryIsNotKept) {
  CountedMemory mem;
  DeviceMatrixCache cache(1000, mem.memory());
  EXPECT_FALSE(cache.Acquire("m-huge", 1001));
  mem.refuse = true;
  EXPECT_FALSE(cache.Acquire("m-a", 10));
  EXPECT_EQ(cache.stats().resident_bytes, 0u);
  DeviceMatrixCache off(0, mem.memory());  // --device-cache-bytes 0
  EXPECT_FALSE(off.Acquire("m-a", 1));
}

TEST(DeviceMatrixCache, ACopyBeingFilledIsNotSharedAndAnUnfinishedFillIsDropped) {
  CountedMemory mem;
  DeviceMatrixCache cache(1000, mem.memory());
  auto filling = cache.Acquire("m-a", 100);
  ASSERT_TRUE(filling);
  EXPECT_FALSE(cache.Acquire("m-a", 100)) << "another request must copy for itself";
  filling = {};  // released before MarkReady: its bytes are not the matrix
  EXPECT_EQ(cache.stats().resident_bytes, 0u);
  EXPECT_TRUE(mem.live.empty());
  auto fresh = cache.Acquire("m-a", 100);
  ASSERT_TRUE(fresh);
  EXPECT_FALSE(fresh.hit());
}

TEST(DeviceMatrixCache, DeletingAMatrixDropsEveryCopyNamingItOnceNoRequestReadsIt) {
  CountedMemory mem;
  DeviceMatrixCache cache(1000, mem.memory());
  Filled(cache, "m-a", 100);
  Filled(cache, CacheKey({"m-b", "m-a", "m-c"}), 300);  // row blocks that include m-a
  Filled(cache, "m-ab", 100);                            // a handle that only starts like it
  auto reading = cache.Acquire("m-a", 100);
  ASSERT_TRUE(reading.hit());
  cache.Forget("m-a");
  EXPECT_EQ(cache.stats().resident_bytes, 200u) << "the row blocks went; m-a waits for its reader";
  EXPECT_FALSE(cache.Acquire(CacheKey({"m-b", "m-a", "m-c"}), 300).hit());
  EXPECT_EQ(mem.live.count(reading.data()), 1u) << "still allocated while its reader holds it";
  EXPECT_FALSE(cache.Acquire("m-a", 100).hit()) << "a deleted matrix is never a hit, even while still held";
  reading = {};
  EXPECT_TRUE(cache.Acquire("m-ab", 100).hit());
  EXPECT_EQ(mem.live.size(), 1u) << "only m-ab: m-a went with its reader, the refills were never finished";
}

TEST(DeviceMatrixCache, ConcurrentRequestsNeverLeakOrShareAnUnreadyCopy) {
  CountedMemory mem;
  std::mutex mem_mu;
  auto base = mem.memory();
  DeviceMatrixCache cache(4096, {[&](uint64_t b) { std::lock_guard l(mem_mu); return base.allocate(b); },
                                 [&](void* p) { std::lock_guard l(mem_mu); base.release(p); }});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&cache, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::string key = "m-" + std::to_string((i * 7 + t) % 13);
        auto lease = cache.Acquire(key, 512);
        if (!lease) continue;
        char* bytes = static_cast<char*>(lease.data());
        if (lease.hit()) {
          ASSERT_EQ(bytes[0], key.back()) << "a hit saw a copy its filler had not finished";
        } else {
          bytes[0] = key.back();
          if (i % 5 != 0) lease.MarkReady();  // every fifth filler gives up
        }
        if (i % 97 == 0) cache.Forget(key);
      }
    });
  }
  for (auto& t : threads) t.join();
  const DeviceCacheStats s = cache.stats();
  EXPECT_LE(s.resident_bytes, 4096u);
  EXPECT_EQ(s.resident_bytes, s.copies * 512);
  EXPECT_GT(s.hits, 0u);
  std::lock_guard l(mem_mu);
  EXPECT_EQ(mem.live.size(), s.copies);
}

}  // namespace
}  // namespace gemmd
