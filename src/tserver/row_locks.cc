#include "tserver/row_locks.h"

#include <glog/logging.h>

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

RowLocks::RowLocks(size_t num_stripes)
    : mask_(std::bit_ceil(std::max<size_t>(num_stripes, 1)) - 1), stripes_(new Stripe[mask_ + 1]) {}

size_t RowLocks::StripeOf(Slice key) const { return (HashKey(key) >> 20) & mask_; }

void RowLockSet::Lock(RowLocks* locks) {
  DCHECK(!locked_);
  std::sort(pending_.begin(), pending_.end());
  pending_.erase(std::unique(pending_.begin(), pending_.end()), pending_.end());
  for (uint32_t s : pending_) locks->stripes_[s].held.acquire();
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
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it)
      locks_->stripes_[*it].held.release();
    locked_ = false;
  }
  pending_.clear();
}

}  // namespace nyala::tserver
