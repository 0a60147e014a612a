#include "common/rate_limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "common/test_util.h"

namespace nyala {
namespace {

TEST(RateLimiterTest, UnlimitedNeverWaits) {
  RateLimiter limiter([] { return int64_t{0}; });
  const MonoTime start = MonoTime::Now();
  for (int i = 0; i < 1000; i++) ASSERT_OK(limiter.Acquire(int64_t{1} << 40));
  EXPECT_LT((MonoTime::Now() - start).ToSeconds(), 5.0);
}

// 5,000 units at 10,000 a second, from a limiter whose bucket holds at most 1,000,
// take at least (5,000 - 1,000 - 100) / 10,000 s = 0.39 s.
TEST(RateLimiterTest, BoundsTheRate) {
  RateLimiter limiter([] { return int64_t{10000}; });
  const MonoTime start = MonoTime::Now();
  for (int i = 0; i < 50; i++) ASSERT_OK(limiter.Acquire(100));
  EXPECT_GE((MonoTime::Now() - start).ToSeconds(), 0.35);
}

// Four threads share one limit: together they take as long as one would alone.
TEST(RateLimiterTest, ThreadsShareTheLimit) {
  RateLimiter limiter([] { return int64_t{20000}; });
  const MonoTime start = MonoTime::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; i++) EXPECT_OK(limiter.Acquire(100));
    });
  }
  for (auto& t : threads) t.join();
  // 10,000 units at 20,000 a second with a bucket of 2,000: at least 0.39 s.
  EXPECT_GE((MonoTime::Now() - start).ToSeconds(), 0.35);
}

// One large Acquire passes at once and puts the bucket in debt; the next caller
// waits for the debt, or gives up at its deadline without waiting it out.
TEST(RateLimiterTest, LargeAcquirePassesAndTheNextWaitsOrTimesOut) {
  RateLimiter limiter([] { return int64_t{1000}; });
  const MonoTime start = MonoTime::Now();
  ASSERT_OK(limiter.Acquire(100000));  // 100 s of debt
  EXPECT_LT((MonoTime::Now() - start).ToSeconds(), 5.0);
  Status s = limiter.Acquire(1, MonoTime::Now() + MonoDelta::FromMilliseconds(100));
  EXPECT_TRUE(s.IsTimedOut()) << s.ToString();
  EXPECT_LT((MonoTime::Now() - start).ToSeconds(), 5.0);
}

// The rate is read again while a caller waits: lifting the limit (a runtime flag set
// to 0) releases it, instead of leaving it to wait out a debt of 1,000 s.
TEST(RateLimiterTest, RateChangeTakesEffectForWaitingCallers) {
  std::atomic<int64_t> rate{100};
  RateLimiter limiter([&] { return rate.load(); });
  ASSERT_OK(limiter.Acquire(100000));
  std::future<Status> waiter = std::async(std::launch::async, [&] { return limiter.Acquire(1); });
  EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  rate = 0;
  ASSERT_EQ(waiter.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  ASSERT_OK(waiter.get());
}

}  // namespace
}  // namespace nyala
