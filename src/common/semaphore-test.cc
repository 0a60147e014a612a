#include "common/semaphore.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace nyala {
namespace {

TEST(SemaphoreTest, CountsUnits) {
  Semaphore s(2);
  EXPECT_TRUE(s.TryAcquire());
  EXPECT_TRUE(s.TryAcquire());
  EXPECT_FALSE(s.TryAcquire());
  s.Release();
  s.Release();
  s.Release();
  s.Acquire();  // does not block: 3 units there
  EXPECT_TRUE(s.TryAcquire());
  EXPECT_TRUE(s.TryAcquire());
  EXPECT_FALSE(s.TryAcquire());
}

TEST(SemaphoreTest, AcquireWaitsForRelease) {
  Semaphore s;
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    s.Acquire();
    acquired = true;
  });
  // The waiter cannot get past Acquire() until the unit exists.
  EXPECT_FALSE(acquired.load());
  s.Release();
  waiter.join();
  EXPECT_TRUE(acquired.load());
  EXPECT_FALSE(s.TryAcquire());
}

// Two threads hand a token back and forth: a lost wakeup hangs the test.
TEST(SemaphoreTest, PingPongLosesNoWakeup) {
  constexpr int kRounds = 20000;
  Semaphore ping, pong;
  int64_t seen = 0;
  std::thread other([&] {
    for (int i = 0; i < kRounds; i++) {
      ping.Acquire();
      seen++;
      pong.Release();
    }
  });
  for (int i = 0; i < kRounds; i++) {
    ping.Release();
    pong.Acquire();
  }
  other.join();
  EXPECT_EQ(seen, kRounds);
}

// Several producers and consumers: every unit released is acquired exactly once.
TEST(SemaphoreTest, ManyProducersAndConsumers) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  Semaphore s;
  std::atomic<int64_t> taken{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; i++) {
        s.Acquire();
        taken++;
      }
    });
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; i++) s.Release();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(taken.load(), int64_t{kThreads} * kPerThread);
  EXPECT_FALSE(s.TryAcquire());
}

}  // namespace
}  // namespace nyala
