// Tests of the striped row locks: writers touching the same keys serialize, in any
// key order, without deadlock.
#include "tserver/row_locks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/test_util.h"

namespace nyala::tserver {
namespace {

TEST(RowLocksTest, StripesAreAPowerOfTwoAndSpreadKeys) {
  RowLocks locks(1000);
  EXPECT_EQ(locks.num_stripes(), 1024u);
  std::vector<int> hits(locks.num_stripes());
  for (int i = 0; i < 100000; i++) hits[locks.StripeOf(std::to_string(i))]++;
  EXPECT_GT(*std::min_element(hits.begin(), hits.end()), 0);
}

TEST(RowLocksTest, SetLocksEachStripeOnceAndReleases) {
  RowLocks locks(16);
  RowLockSet set;
  for (int i = 0; i < 100; i++) set.Add(locks, "key" + std::to_string(i % 5));
  set.Lock(&locks);
  EXPECT_LE(set.num_stripes_held(), 5u);
  set.Release();
  EXPECT_EQ(set.num_stripes_held(), 0u);
  // Lockable again (nothing left held).
  set.Add(locks, "key0");
  set.Lock(&locks);
  set.Release();
}

TEST(RowLocksTest, WritersOfTheSameKeysSerializeWithoutDeadlock) {
  RowLocks locks(64);
  constexpr int kThreads = 4, kIters = 2000, kKeys = 20;
  std::vector<int> counters(kKeys);  // guarded by the key's stripe
  std::atomic<int> expected{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(TestRandomSeed() + t);
      RowLockSet set;
      for (int i = 0; i < kIters; i++) {
        // A few keys in random order (opposite orders in other threads).
        std::vector<int> keys;
        for (int j = 0; j < 4; j++) keys.push_back(static_cast<int>(rng() % kKeys));
        for (int k : keys) set.Add(locks, "k" + std::to_string(k));
        set.Lock(&locks);
        std::sort(keys.begin(), keys.end());
        keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
        expected += static_cast<int>(keys.size());
        for (int k : keys) {
          const int v = counters[k];
          std::this_thread::yield();
          counters[k] = v + 1;
        }
        set.Release();
      }
    });
  }
  for (auto& t : threads) t.join();
  // Every increment survived: no two writers held one key at once.
  int total = 0;
  for (int c : counters) total += c;
  EXPECT_EQ(total, expected.load());
}

}  // namespace
}  // namespace nyala::tserver
