// Tests of the striped row locks: writers touching the same keys serialize, in any
// key order, without deadlock.
#include "tserver/row_locks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
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

// A write's locks travel with it: taken on one thread, released on another, which
// wakes a writer waiting for the same key; and the same again many times, with
// contention, so that a wake-up lost between a release and a wait would hang the test.
TEST(RowLocksTest, LocksTakenOnOneThreadAreReleasedOnAnother) {
  RowLocks locks(16);
  constexpr int kRounds = 2000;
  std::atomic<int> in_section{0};
  std::atomic<int> violations{0};
  std::atomic<int> done{0};
  auto writer = [&](int seed) {
    std::mt19937 rng(TestRandomSeed() + seed);
    for (int i = 0; i < kRounds; i++) {
      auto set = std::make_unique<RowLockSet>();
      set->Add(locks, "same-key");
      set->Lock(&locks);
      if (in_section.fetch_add(1) != 0) violations++;
      // Handed to another thread, which leaves the section and releases.
      RowLockSet moved;
      moved.TakeFrom(set.get());
      std::thread releaser([&] {
        if (rng() % 2) std::this_thread::yield();
        in_section.fetch_sub(1);
        moved.Release();
      });
      releaser.join();
      EXPECT_EQ(set->num_stripes_held(), 0u);
    }
    done++;
  };
  std::thread a(writer, 1), b(writer, 2);
  a.join();
  b.join();
  EXPECT_EQ(done.load(), 2);
  EXPECT_EQ(violations.load(), 0);
}

}  // namespace
}  // namespace nyala::tserver
