#include "common/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "common/test_util.h"

namespace nyala {
namespace {

// The exact nearest-rank percentile of `sorted`. The percentiles used below have
// p * n / 100 integral, so rounding decides nothing.
int64_t ExactPercentile(const std::vector<int64_t>& sorted, double p) {
  const auto rank =
      std::max<int64_t>(1, std::llround(p * static_cast<double>(sorted.size()) / 100));
  return sorted[rank - 1];
}

void ExpectWithinOnePercent(int64_t expected, int64_t actual, const std::string& what) {
  EXPECT_LE(std::abs(actual - expected), static_cast<int64_t>(expected * 0.01))
      << what << ": expected " << expected << ", got " << actual;
}

TEST(HistogramTest, EmptyHistogramReportsZeros) {
  Histogram h;
  EXPECT_EQ(0, h.TotalCount());
  EXPECT_EQ(0, h.TotalSum());
  EXPECT_EQ(0, h.MinValue());
  EXPECT_EQ(0, h.MaxValue());
  EXPECT_EQ(0.0, h.MeanValue());
  EXPECT_EQ(0, h.ValueAtPercentile(0));
  EXPECT_EQ(0, h.ValueAtPercentile(50));
  EXPECT_EQ(0, h.ValueAtPercentile(100));
  EXPECT_EQ(h.ToString().rfind("Count: 0\nMean: 0\nPercentiles:\n", 0), 0u) << h.ToString();
}

TEST(HistogramTest, MemoryIsModest) {
  Histogram h;  // 60 s in microseconds
  EXPECT_LE(h.NumBucketsForTests() * sizeof(int64_t), 12u * 1024);
}

TEST(HistogramTest, PercentilesMatchSortedVectorOnRandomData) {
  const uint32_t seed = TestRandomSeed();
  std::mt19937_64 rng(seed);
  constexpr int kN = 100000;
  const double kPercentiles[] = {0, 0.1, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100};

  // Uniform, log-uniform over the whole range, and small values (exact buckets).
  std::uniform_int_distribution<int64_t> uniform(0, 1000 * 1000);
  std::uniform_real_distribution<double> log_uniform(0, std::log(60e6));
  std::uniform_int_distribution<int64_t> small(0, 127);
  for (int dist = 0; dist < 3; ++dist) {
    SCOPED_TRACE("distribution " + std::to_string(dist) + ", seed " + std::to_string(seed));
    Histogram h;
    std::vector<int64_t> values;
    int64_t sum = 0;
    for (int i = 0; i < kN; ++i) {
      int64_t v = dist == 0   ? uniform(rng)
                  : dist == 1 ? static_cast<int64_t>(std::exp(log_uniform(rng)))
                              : small(rng);
      values.push_back(v);
      sum += v;
      h.Increment(v);
    }
    std::sort(values.begin(), values.end());
    EXPECT_EQ(kN, h.TotalCount());
    EXPECT_EQ(sum, h.TotalSum());
    EXPECT_EQ(values.front(), h.MinValue());
    EXPECT_EQ(values.back(), h.MaxValue());
    EXPECT_DOUBLE_EQ(static_cast<double>(sum) / kN, h.MeanValue());
    for (double p : kPercentiles) {
      const int64_t expected = ExactPercentile(values, p);
      ExpectWithinOnePercent(expected, h.ValueAtPercentile(p), "p" + std::to_string(p));
      if (dist == 2) {
        EXPECT_EQ(expected, h.ValueAtPercentile(p)) << "small values are exact";
      }
    }
    EXPECT_EQ(values.front(), h.ValueAtPercentile(0));
    EXPECT_EQ(values.back(), h.ValueAtPercentile(100));
  }
}

// Puts `v` between a smaller and a much larger value so that the median is read
// from v's bucket without being clamped to an exact min or max.
TEST(HistogramTest, EveryBucketIsWithinOnePercent) {
  Histogram h;
  std::vector<int64_t> probes;
  for (int64_t v = 0; v < 5000; ++v) probes.push_back(v);
  for (double v = 5000; v < 60e6; v *= 1.003) probes.push_back(static_cast<int64_t>(v));
  for (int shift = 7; shift < 26; ++shift) {  // both edges of every power of two
    probes.push_back((int64_t{1} << shift) - 1);
    probes.push_back(int64_t{1} << shift);
  }
  probes.push_back(60LL * 1000 * 1000);
  for (int64_t v : probes) {
    h.Reset();
    h.Increment(0);
    h.Increment(v);
    h.Increment(h.max_trackable_value());
    const int64_t got = h.ValueAtPercentile(50);
    ASSERT_LE(std::abs(got - v) * 128, v) << "value " << v << " reported as " << got;
  }
}

TEST(HistogramTest, ValuesAboveMaxClampIntoTopBucketButMinMaxStayExact) {
  Histogram h(1000);
  EXPECT_LT(h.NumBucketsForTests(), 400u);
  h.IncrementBy(10, 100);
  h.IncrementBy(1000LL * 1000 * 1000 * 1000, 10);
  h.IncrementBy(5000LL * 1000 * 1000 * 1000, 10);
  EXPECT_EQ(120, h.TotalCount());
  EXPECT_EQ(100 * 10 + 10 * 1000LL * 1000 * 1000 * 1000 + 10 * 5000LL * 1000 * 1000 * 1000,
            h.TotalSum());
  EXPECT_EQ(10, h.MinValue());
  EXPECT_EQ(5000LL * 1000 * 1000 * 1000, h.MaxValue());
  EXPECT_EQ(10, h.ValueAtPercentile(50));
  EXPECT_EQ(5000LL * 1000 * 1000 * 1000, h.ValueAtPercentile(100));
  ExpectWithinOnePercent(1000, h.ValueAtPercentile(90), "p90 among clamped values");

  // A histogram holding only clamped values reports them exactly at both ends.
  Histogram only_big(1000);
  only_big.Increment(std::numeric_limits<int64_t>::max());
  EXPECT_EQ(std::numeric_limits<int64_t>::max(), only_big.MinValue());
  EXPECT_EQ(std::numeric_limits<int64_t>::max(), only_big.MaxValue());
  EXPECT_EQ(std::numeric_limits<int64_t>::max(), only_big.ValueAtPercentile(50));
}

TEST(HistogramTest, NegativeValuesAndEmptyCounts) {
  Histogram h;
  h.IncrementBy(7, 0);
  h.IncrementBy(7, -3);
  EXPECT_EQ(0, h.TotalCount());
  h.Increment(-5);
  EXPECT_EQ(1, h.TotalCount());
  EXPECT_EQ(0, h.MinValue());
  EXPECT_EQ(0, h.MaxValue());
  EXPECT_EQ(0, h.TotalSum());
}

TEST(HistogramTest, PercentileArgumentIsClamped) {
  Histogram h;
  for (int v = 1; v <= 100; ++v) h.Increment(v);
  EXPECT_EQ(1, h.ValueAtPercentile(-10));
  EXPECT_EQ(100, h.ValueAtPercentile(250));
  EXPECT_EQ(1, h.ValueAtPercentile(std::nan("")));
  EXPECT_EQ(99, h.ValueAtPercentile(99));
}

TEST(HistogramTest, ValuesAtPercentilesMatchesOneAtATime) {
  Histogram h;
  std::mt19937_64 rng(TestRandomSeed());
  std::exponential_distribution<double> exp(1e-4);
  for (int i = 0; i < 10000; ++i) h.Increment(static_cast<int64_t>(exp(rng)));
  const double ps[] = {99, 5, 50, 100, 0, 75};  // deliberately unsorted
  const std::vector<int64_t> got = h.ValuesAtPercentiles(ps);
  ASSERT_EQ(std::size(ps), got.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(h.ValueAtPercentile(ps[i]), got[i]) << ps[i];
}

TEST(HistogramTest, ToStringFormat) {
  Histogram h;
  for (int v = 1; v <= 100; ++v) h.Increment(v);
  EXPECT_EQ(
      "Count: 100\n"
      "Mean: 50.5\n"
      "Percentiles:\n"
      "   0%  (min) = 1\n"
      "  25%        = 25\n"
      "  50%  (med) = 50\n"
      "  75%        = 75\n"
      "  95%        = 95\n"
      "  99%        = 99\n"
      "  99.9%      = 100\n"
      "  99.99%     = 100\n"
      "  100%  (max) = 100\n",
      h.ToString());
}

TEST(HistogramTest, ConcurrentIncrementsAreAllCounted) {
  Histogram h;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < kPerThread; ++i) h.Increment((i % 1000) + t * 1000);
    });
  }
  // Read while writers run: must not crash, and stays within what was recorded.
  for (int i = 0; i < 100; ++i) {
    const int64_t p = h.ValueAtPercentile(50);
    EXPECT_GE(p, 0);
    EXPECT_LE(p, kThreads * 1000);
  }
  for (auto& th : threads) th.join();

  EXPECT_EQ(int64_t{kThreads} * kPerThread, h.TotalCount());
  int64_t expected_sum = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) expected_sum += (i % 1000) + t * 1000;
  }
  EXPECT_EQ(expected_sum, h.TotalSum());
  EXPECT_EQ(0, h.MinValue());
  EXPECT_EQ(kThreads * 1000 - 1, h.MaxValue());
  ExpectWithinOnePercent(1999, h.ValueAtPercentile(50), "p50");
}

TEST(HistogramTest, ResetEmptiesAndAllowsReuse) {
  Histogram h;
  for (int v = 10; v < 20; ++v) h.Increment(v);
  h.Reset();
  EXPECT_EQ(0, h.TotalCount());
  EXPECT_EQ(0, h.TotalSum());
  EXPECT_EQ(0, h.MinValue());
  EXPECT_EQ(0, h.MaxValue());
  EXPECT_EQ(0, h.ValueAtPercentile(99));
  h.Increment(50);
  h.Increment(70);
  h.Increment(90);
  EXPECT_EQ(3, h.TotalCount());
  EXPECT_EQ(210, h.TotalSum());
  EXPECT_EQ(50, h.MinValue());  // not the 10 from before the reset
  EXPECT_EQ(90, h.MaxValue());
  EXPECT_EQ(70, h.ValueAtPercentile(50));
}

}  // namespace
}  // namespace nyala
