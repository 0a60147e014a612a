#include "tserver/row_locks.h"

#include <glog/logging.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <bit>

namespace nyala::tserver {

namespace {
// FNV-1a folded with a multiplicative mix: fast on short keys, spreads sequential
// integers over all stripes.
inline uint64_t HashKey(Slice key) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < key.size(); i++) {
    h ^= key[i];
    h *= 1099511628211ULL;
  }
  return (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ULL;
}
}  // namespace

// 0: free; 1: held; 2: held, and some thread may wait (its release wakes one).
void RowLocks::Stripe::Acquire() {
  uint32_t c = 0;
  if (state.compare_exchange_strong(c, 1, std::memory_order_acquire)) return;
  if (c != 2) c = state.exchange(2, std::memory_order_acquire);
  while (c != 0) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&state), FUTEX_WAIT_PRIVATE, 2, nullptr, nullptr,
            0);
    c = state.exchange(2, std::memory_order_acquire);
  }
}

void RowLocks::Stripe::Release() {
  if (state.exchange(0, std::memory_order_release) == 2) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&state), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr,
            0);
  }
}

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "a stripe is a futex word");

RowLocks::RowLocks(size_t num_stripes)
    : mask_(std::bit_ceil(std::max<size_t>(num_stripes, 1)) - 1), stripes_(new Stripe[mask_ + 1]) {}

size_t RowLocks::StripeOf(Slice key) const { return (HashKey(key) >> 20) & mask_; }

void RowLockSet::Lock(RowLocks* locks) {
  DCHECK(!locked_);
  std::sort(pending_.begin(), pending_.end());
  pending_.erase(std::unique(pending_.begin(), pending_.end()), pending_.end());
  for (uint32_t s : pending_) locks->stripes_[s].Acquire();
  locks_ = locks;
  locked_ = true;
}

void RowLockSet::TakeFrom(RowLockSet* other) {
  DCHECK(!locked_);
  pending_.swap(other->pending_);
  other->pending_.clear();
  locks_ = other->locks_;
  locked_ = other->locked_;
  other->locked_ = false;
}

void RowLockSet::Release() {
  if (locked_) {
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) locks_->stripes_[*it].Release();
    locked_ = false;
  }
  pending_.clear();
}

}  // namespace nyala::tserver
