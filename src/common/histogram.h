// Histogram: a latency histogram cheap enough to record on every RPC from many
// threads at once (values are non-negative int64, typically microseconds).
//
// Layout is log-linear, HdrHistogram-style: values below 128 each get a bucket of
// their own; above that every power-of-two range [2^k, 2^(k+1)) is split into 64
// equal buckets. A percentile reports the middle of its bucket, so its relative
// error is at most 1/128 (< 1%). With the default 60 s range (in microseconds)
// that is 1331 buckets, about 10.5 KB per histogram.
//
// Thread-safety: every method may be called from any thread. Recording is
// lock-free: relaxed atomic adds on the bucket, the count and the sum of this
// CPU's stripe (common/striped.h: kStripes copies of the buckets, so that threads
// recording at once on different CPUs do not share cache lines; about 42 KB per
// histogram), plus a CAS on min/max only when the value is a new extreme. Readers see each counter
// atomically but not a consistent snapshot across counters while writers run.
// Reset() racing with recording may keep or lose the racing values.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/striped.h"

namespace nyala {

class Histogram {
 public:
  // Tracks values in [0, max_trackable_value] with <= 1% relative error. Larger
  // values are counted in the top bucket (percentiles among them report about
  // max_trackable_value) but MinValue()/MaxValue()/TotalSum() stay exact.
  // Negative values are recorded as 0.
  explicit Histogram(int64_t max_trackable_value = 60LL * 1000 * 1000);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void Increment(int64_t value) { IncrementBy(value, 1); }
  // Records `value` `count` times; a `count` <= 0 records nothing.
  void IncrementBy(int64_t value, int64_t count);

  int64_t TotalCount() const { return count_.Load(); }
  int64_t TotalSum() const { return sum_.Load(); }
  int64_t MinValue() const;  // 0 when empty
  int64_t MaxValue() const;  // 0 when empty
  double MeanValue() const;  // 0 when empty

  // Nearest-rank percentile: the value at rank ceil(percentile / 100 * count)
  // (at least 1) of the sorted recorded values, to within 1%, clamped to
  // [MinValue(), MaxValue()] (so 0 and 100 are exact). `percentile` is clamped to
  // [0, 100]. 0 when empty. O(buckets).
  int64_t ValueAtPercentile(double percentile) const;
  // Same as calling ValueAtPercentile() for each of `percentiles`, in one pass,
  // so the answers are consistent with one another under concurrent recording.
  std::vector<int64_t> ValuesAtPercentiles(std::span<const double> percentiles) const;

  // For each of `bounds` (ascending), the count of recorded values in buckets that
  // lie wholly at or below it, then the total count as the last element (so the
  // result has bounds.size() + 1 entries, non-decreasing). One pass, so the counts
  // are consistent with one another under concurrent recording. Values within a
  // bucket's width (< 1%) below a bound may be counted above it; below 128 every
  // value has a bucket of its own and the counts are exact.
  std::vector<int64_t> CumulativeCounts(std::span<const int64_t> bounds) const;

  void Reset();

  int64_t max_trackable_value() const { return max_trackable_value_; }
  size_t NumBucketsForTests() const { return num_buckets_; }

  // Kudu-style text, one item per line:
  //   Count: 123
  //   Mean: 45.6
  //   Percentiles:
  //      0%  (min) = 1
  //     25%        = 2
  //     50%  (med) = 3
  //     75%        = 4
  //     95%        = 5
  //     99%        = 6
  //     99.9%      = 7
  //     99.99%     = 8
  //     100%  (max) = 9
  std::string ToString() const;

 private:
  // Set in the constructor, never changed.
  const int64_t max_trackable_value_;
  const size_t num_buckets_;
  // kStripes runs of num_buckets_ counters; stripe s holds [s * num_buckets_, ...).
  const std::unique_ptr<std::atomic<int64_t>[]> buckets_;

  // The count of values in bucket `i`, over every stripe.
  int64_t BucketCount(size_t i) const;

  StripedInt64 count_;
  StripedInt64 sum_;
  std::atomic<int64_t> min_;  // INT64_MAX while empty
  std::atomic<int64_t> max_;  // -1 while empty
};

}  // namespace nyala
