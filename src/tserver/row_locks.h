// RowLocks: striped locks over storage keys, so that concurrent writes touching the
// same row serialize between their existence check and their commit. A key maps to
// one of a fixed number of stripes by hash; a writer locks every stripe its batch
// touches, in ascending stripe order (so two batches never deadlock), once each.
// Two different keys may share a stripe: that only serializes more than needed.
//
// A stripe is a lock any thread may release, not a mutex: a write locks its rows on the
// service thread that decides it and releases them on the thread that finishes it once
// its entry is applied (the group's worker), which a mutex does not allow. It is a
// futex word (0 free, 1 held, 2 held with waiters), so an uncontended lock and unlock
// are one atomic operation each and make no system call (std::binary_semaphore's
// release wakes the futex every time: a write of 50k rows made 8k system calls).
//
// Thread-safety: RowLocks is thread-safe. A RowLockSet is used by one thread at a
// time (it may move to another with the write) and releases its stripes when
// destroyed or Release()d.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "nyala/slice.h"

namespace nyala::tserver {

class RowLocks {
 public:
  // `num_stripes` is rounded up to a power of two.
  explicit RowLocks(size_t num_stripes = 8192);
  RowLocks(const RowLocks&) = delete;
  RowLocks& operator=(const RowLocks&) = delete;

  size_t num_stripes() const { return mask_ + 1; }
  size_t StripeOf(Slice key) const;

 private:
  friend class RowLockSet;
  struct alignas(64) Stripe {
    std::atomic<uint32_t> state{0};
    void Acquire();
    void Release();
  };
  const size_t mask_;
  std::unique_ptr<Stripe[]> stripes_;
};

// The stripes held by one write. Reusable: Release() keeps the buffer.
class RowLockSet {
 public:
  RowLockSet() = default;
  ~RowLockSet() { Release(); }
  RowLockSet(const RowLockSet&) = delete;
  RowLockSet& operator=(const RowLockSet&) = delete;
  // Takes over `other`'s stripes, held or not (`other` is left empty). REQUIRES: this
  // set holds nothing.
  void TakeFrom(RowLockSet* other);

  // Adds `key` to the set to lock. REQUIRES: not locked.
  void Add(const RowLocks& locks, Slice key) { pending_.push_back(locks.StripeOf(key)); }
  // Locks every stripe added (blocking). REQUIRES: not locked; one RowLocks for all keys.
  void Lock(RowLocks* locks);
  void Release();
  size_t num_stripes_held() const { return locked_ ? pending_.size() : 0; }

 private:
  RowLocks* locks_ = nullptr;
  std::vector<uint32_t> pending_;
  bool locked_ = false;
};

}  // namespace nyala::tserver
