#include "common/semaphore.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <new>
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

// A waiter's semaphore lives on its stack and is destroyed, its memory reused, as soon
// as Acquire() returns, possibly while the Release() that woke it is still running.
// Release() must not touch the semaphore after the increment (ThreadSanitizer reports
// a race with the reuse below if it does), and a late wake call must not disturb the
// next round's semaphore at the same address.
TEST(SemaphoreTest, MayBeDestroyedAsSoonAsAcquireReturns) {
  constexpr int kRounds = 20000;
  alignas(Semaphore) unsigned char storage[sizeof(Semaphore)];
  std::atomic<Semaphore*> published{nullptr};
  std::thread releaser([&] {
    for (int i = 0; i < kRounds; i++) {
      Semaphore* s;
      while ((s = published.exchange(nullptr, std::memory_order_acq_rel)) == nullptr) {
        std::this_thread::yield();
      }
      s->Release();
    }
  });
  for (int i = 0; i < kRounds; i++) {
    auto* s = new (storage) Semaphore();
    published.store(s, std::memory_order_release);
    s->Acquire();
    EXPECT_FALSE(s->TryAcquire()) << "round " << i << ": woken by an earlier round's release";
    s->~Semaphore();
    memset(storage, 0xff, sizeof(storage));  // the memory goes to something else
  }
  releaser.join();
}

}  // namespace
}  // namespace nyala
