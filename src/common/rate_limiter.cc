#include "common/rate_limiter.h"

#include <algorithm>

namespace nyala {

RateLimiter::RateLimiter(std::function<int64_t()> rate, MonoDelta burst)
    : rate_(std::move(rate)), burst_(burst) {}

Status RateLimiter::Acquire(int64_t units, MonoTime deadline) {
  for (;;) {
    MonoDelta wait;
    {
      MutexLock l(mu_);
      const MonoTime now = MonoTime::Now();
      const int64_t rate = rate_();
      if (rate <= 0) {
        tokens_ = 0;
        last_refill_ = now;
        return Status::OK();
      }
      if (last_refill_.Initialized()) {
        const double capacity = double(rate) * burst_.ToSeconds();
        tokens_ = std::min(capacity, tokens_ + (now - last_refill_).ToSeconds() * double(rate));
      }
      last_refill_ = now;
      if (tokens_ >= 0) {
        tokens_ -= double(std::max<int64_t>(units, 0));
        return Status::OK();
      }
      // In debt: it is paid off at `rate`. (Bounded, so that the conversion to
      // nanoseconds cannot overflow.)
      wait = MonoDelta::FromSeconds(std::min(-tokens_ / double(rate), 1e6));
      if (now + wait > deadline) {
        return Status::TimedOut("rate limit: " + std::to_string(units) + " units would wait " +
                                wait.ToString() + ", past the deadline");
      }
    }
    SleepFor(std::min(wait, kMaxSleep));
  }
}

}  // namespace nyala
