// RateLimiter: a token bucket that bounds how many units (bytes, say) pass per
// second, shared by every thread that calls Acquire.
//
// The rate is read from a function at every call, so a limit set by a runtime flag
// takes effect at once, for callers already waiting too (they look again at least
// every kMaxSleep). A rate <= 0 means unlimited: Acquire returns at once.
//
// The bucket holds at most `burst` worth of units at the current rate; a caller
// takes what it asks for as soon as the bucket is not in debt, even more than it
// holds, and the callers after it wait until the debt is paid off. So one large
// Acquire passes at once and the average rate over a few seconds stays at the limit,
// whatever the sizes asked for.
//
// Thread-safety: thread-safe. `rate` is called with the limiter's lock held: it must
// be cheap and take no lock that a caller of Acquire may hold.
#pragma once

#include <cstdint>
#include <functional>

#include "common/mutex.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "nyala/monotime.h"

namespace nyala {

class RateLimiter {
 public:
  // A waiting caller reads the rate again at least this often.
  static constexpr MonoDelta kMaxSleep = MonoDelta::FromMilliseconds(50);

  // `rate` returns the limit in units per second (<= 0: unlimited). `burst`: how
  // long the bucket fills for at most (the units an idle limiter lets through at once).
  explicit RateLimiter(std::function<int64_t()> rate,
                       MonoDelta burst = MonoDelta::FromMilliseconds(100));
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  // Waits until `units` (>= 0) may pass and takes them. TimedOut, nothing taken, when
  // the wait would end after `deadline`.
  Status Acquire(int64_t units, MonoTime deadline = MonoTime::Max()) EXCLUDES(mu_);

 private:
  const std::function<int64_t()> rate_;
  const MonoDelta burst_;

  Mutex mu_;
  // Units available; negative while in debt.
  double tokens_ GUARDED_BY(mu_) = 0;
  MonoTime last_refill_ GUARDED_BY(mu_);
};

}  // namespace nyala
