// Retry helpers: which failures are worth retrying and how long to wait before the
// next attempt. The policy (how many attempts, until which deadline) is the caller's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>

#include "common/status.h"
#include "nyala/monotime.h"
#include "rpc/rpc_controller.h"

namespace nyala::rpc {

// True when the same call may succeed later against the same server: it was too busy,
// unreachable, or shutting down. A call that timed out may have run and is not
// retriable here: only idempotent callers (or ones with a request id) may resend it.
inline bool IsRetriableRpcError(const RpcController& rpc) {
  if (rpc.server_too_busy()) return true;
  const Status& s = rpc.status();
  return s.IsNetworkError() || s.IsServiceUnavailable();
}

// Exponential backoff with full jitter: a random delay in [base, min(max, base * 2^attempt)].
inline MonoDelta ComputeBackoff(int attempt, MonoDelta base = MonoDelta::FromMilliseconds(10),
                                MonoDelta max = MonoDelta::FromSeconds(2)) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  const int64_t base_us = std::max<int64_t>(1, base.ToMicroseconds());
  const int shift = std::min(attempt, 20);
  const int64_t cap_us = std::min<int64_t>(max.ToMicroseconds(), base_us << shift);
  std::uniform_int_distribution<int64_t> dist(base_us, std::max(base_us, cap_us));
  return MonoDelta::FromMicroseconds(dist(rng));
}

// Sleeps before retry `attempt` unless that would pass `deadline`; returns false (no
// sleep) when there is no time left for another attempt.
inline bool BackoffBeforeRetry(int attempt, MonoTime deadline,
                               MonoDelta max = MonoDelta::FromSeconds(2)) {
  MonoDelta d = ComputeBackoff(attempt, MonoDelta::FromMilliseconds(10), max);
  if (MonoTime::Now() + d >= deadline) return false;
  SleepFor(d);
  return true;
}

}  // namespace nyala::rpc
