#include "common/histogram.h"

#include <glog/logging.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

namespace nyala {
namespace {

// Values in [0, 2^kLinearBits) get a bucket each; above that each power-of-two
// range is split into 2^kSubBucketBits buckets.
constexpr int kSubBucketBits = 6;
constexpr int kLinearBits = kSubBucketBits + 1;
constexpr int64_t kEmptyMin = std::numeric_limits<int64_t>::max();
constexpr int64_t kEmptyMax = -1;

size_t BucketIndex(uint64_t value) {
  // shift is 0 below 2^kLinearBits, so the index is the value itself there.
  const int shift = std::max(0, static_cast<int>(std::bit_width(value)) - kLinearBits);
  return (static_cast<size_t>(shift) << kSubBucketBits) + static_cast<size_t>(value >> shift);
}

// The value reported for bucket `index`: the middle of its range.
int64_t BucketMidpoint(size_t index) {
  if (index < (size_t{1} << kLinearBits)) return static_cast<int64_t>(index);
  const int shift = static_cast<int>(index >> kSubBucketBits) - 1;
  const uint64_t sub = index - (static_cast<uint64_t>(shift) << kSubBucketBits);
  const uint64_t low = sub << shift;
  const uint64_t width = uint64_t{1} << shift;
  return static_cast<int64_t>(low + (width - 1) / 2);
}

// The largest value bucket `index` holds.
int64_t BucketHighest(size_t index) {
  if (index < (size_t{1} << kLinearBits)) return static_cast<int64_t>(index);
  const int shift = static_cast<int>(index >> kSubBucketBits) - 1;
  const uint64_t sub = index - (static_cast<uint64_t>(shift) << kSubBucketBits);
  return static_cast<int64_t>((sub << shift) + (uint64_t{1} << shift) - 1);
}

size_t NumBuckets(int64_t max_trackable_value) {
  CHECK_GT(max_trackable_value, 0);
  return BucketIndex(static_cast<uint64_t>(max_trackable_value)) + 1;
}

// Nearest rank (1-based) of `percentile` among `total` sorted values. The small
// slack keeps e.g. 99% of 100 at rank 99 despite rounding in the product.
int64_t PercentileRank(double percentile, int64_t total) {
  if (!(percentile > 0)) percentile = 0;  // also maps NaN to 0
  if (percentile > 100) percentile = 100;
  const double x = percentile * static_cast<double>(total) / 100.0;
  const auto rank = static_cast<int64_t>(std::ceil(x - 1e-9 * std::max(1.0, x)));
  return std::clamp<int64_t>(rank, 1, total);
}

// "45.6": fixed point, at most two decimals, trailing zeros dropped.
std::string FormatMean(double v) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.2f", v);
  std::string s(buf);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

}  // namespace

Histogram::Histogram(int64_t max_trackable_value)
    : max_trackable_value_(max_trackable_value),
      num_buckets_(NumBuckets(max_trackable_value)),
      buckets_(new std::atomic<int64_t>[num_buckets_ * kStripes]),
      min_(kEmptyMin),
      max_(kEmptyMax) {
  for (size_t i = 0; i < num_buckets_ * kStripes; ++i) {
    buckets_[i].store(0, std::memory_order_relaxed);
  }
}

int64_t Histogram::BucketCount(size_t i) const {
  int64_t n = 0;
  for (size_t s = 0; s < kStripes; ++s) {
    n += buckets_[s * num_buckets_ + i].load(std::memory_order_relaxed);
  }
  return n;
}

void Histogram::IncrementBy(int64_t value, int64_t count) {
  if (count <= 0) return;
  if (value < 0) value = 0;
  // min/max first, so that a reader who sees the bucket count usually sees them
  // too; relaxed order promises nothing, and percentiles read in that window are
  // clamped to a stale [min, max].
  int64_t cur = min_.load(std::memory_order_relaxed);
  while (value < cur && !min_.compare_exchange_weak(cur, value, std::memory_order_relaxed)) {
  }
  cur = max_.load(std::memory_order_relaxed);
  while (value > cur && !max_.compare_exchange_weak(cur, value, std::memory_order_relaxed)) {
  }
  const size_t index = BucketIndex(static_cast<uint64_t>(std::min(value, max_trackable_value_)));
  DCHECK_LT(index, num_buckets_);
  const size_t stripe = ThisCpuStripe();
  buckets_[stripe * num_buckets_ + index].fetch_add(count, std::memory_order_relaxed);
  count_.AddToStripe(stripe, count);
  // Unsigned so that an absurd sum wraps instead of being undefined.
  sum_.AddToStripe(stripe, static_cast<int64_t>(static_cast<uint64_t>(value) *
                                                static_cast<uint64_t>(count)));
}

int64_t Histogram::MinValue() const {
  const int64_t m = min_.load(std::memory_order_relaxed);
  // kEmptyMin is also a legitimate value; it is the minimum only if it is the max too.
  if (m == kEmptyMin && max_.load(std::memory_order_relaxed) != kEmptyMin) return 0;
  return m;
}

int64_t Histogram::MaxValue() const {
  return std::max<int64_t>(0, max_.load(std::memory_order_relaxed));
}

double Histogram::MeanValue() const {
  const int64_t count = TotalCount();
  if (count == 0) return 0;
  return static_cast<double>(TotalSum()) / static_cast<double>(count);
}

int64_t Histogram::ValueAtPercentile(double percentile) const {
  return ValuesAtPercentiles(std::span<const double>(&percentile, 1))[0];
}

std::vector<int64_t> Histogram::ValuesAtPercentiles(std::span<const double> percentiles) const {
  std::vector<int64_t> out(percentiles.size(), 0);
  // The total comes from the buckets themselves, not count_, so that every rank
  // is reached in the second pass (buckets only grow, barring Reset()).
  int64_t total = 0;
  for (size_t i = 0; i < num_buckets_; ++i) total += BucketCount(i);
  if (total == 0) return out;

  std::vector<int64_t> ranks(percentiles.size());
  std::vector<size_t> order(percentiles.size());
  for (size_t i = 0; i < percentiles.size(); ++i) ranks[i] = PercentileRank(percentiles[i], total);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranks[a] < ranks[b]; });

  const int64_t min = MinValue();
  const int64_t max = MaxValue();
  size_t next = 0;
  int64_t seen = 0;
  for (size_t i = 0; i < num_buckets_ && next < order.size(); ++i) {
    seen += BucketCount(i);
    while (next < order.size() && ranks[order[next]] <= seen) {
      // The first and last ranks are the exact min and max.
      const int64_t rank = ranks[order[next]];
      out[order[next++]] = rank == 1       ? min
                           : rank == total ? max
                                           : std::clamp(BucketMidpoint(i), min, std::max(min, max));
    }
  }
  // Only reachable if Reset() ran between the two passes.
  for (; next < order.size(); ++next) out[order[next]] = max;
  return out;
}

std::vector<int64_t> Histogram::CumulativeCounts(std::span<const int64_t> bounds) const {
  std::vector<int64_t> out(bounds.size() + 1, 0);
  size_t b = 0;
  int64_t seen = 0;
  for (size_t i = 0; i < num_buckets_; ++i) {
    const int64_t n = BucketCount(i);
    // Bounds below this bucket's highest value are complete.
    while (b < bounds.size() && BucketHighest(i) > bounds[b]) out[b++] = seen;
    seen += n;
  }
  for (; b < bounds.size(); ++b) out[b] = seen;
  out.back() = seen;
  return out;
}

void Histogram::Reset() {
  for (size_t i = 0; i < num_buckets_ * kStripes; ++i) {
    buckets_[i].store(0, std::memory_order_relaxed);
  }
  count_.Store(0);
  sum_.Store(0);
  min_.store(kEmptyMin, std::memory_order_relaxed);
  max_.store(kEmptyMax, std::memory_order_relaxed);
}

std::string Histogram::ToString() const {
  static constexpr double kPercentiles[] = {0, 25, 50, 75, 95, 99, 99.9, 99.99, 100};
  static constexpr const char* kLabels[] = {
      "   0%  (min) = ", "  25%        = ", "  50%  (med) = ", "  75%        = ", "  95%        = ",
      "  99%        = ", "  99.9%      = ", "  99.99%     = ", "  100%  (max) = "};
  static_assert(std::size(kPercentiles) == std::size(kLabels));
  const std::vector<int64_t> values = ValuesAtPercentiles(kPercentiles);
  std::string s = "Count: " + std::to_string(TotalCount()) + "\n";
  s += "Mean: " + FormatMean(MeanValue()) + "\n";
  s += "Percentiles:\n";
  for (size_t i = 0; i < values.size(); ++i) {
    s += kLabels[i] + std::to_string(values[i]) + "\n";
  }
  return s;
}

}  // namespace nyala
