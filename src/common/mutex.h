// Mutex, MutexLock and UniqueLock: std::mutex with clang thread-safety annotations, so
// state marked GUARDED_BY(mu_) is checked at compile time under clang -Wthread-safety
// (scripts/check.sh). Use MutexLock for a lock held to the end of a scope, UniqueLock
// where the scope unlocks and relocks or waits on a CondVar; not std::unique_lock or
// std::lock_guard, which the analysis cannot follow.
// CondVar: a condition variable for Mutex. Use it rather than
// std::condition_variable_any, whose notify holds an internal mutex that the woken
// thread then blocks on: an extra futex round trip and context switch per wakeup.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/thread_annotations.h"

namespace nyala {

class CondVar;

class CAPABILITY("mutex") Mutex {
 public:
  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds the lock (where it cannot see that, e.g. in
  // a callback documented to run under it). Checks nothing at run time.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() RELEASE() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// Locks `mu` on construction; Unlock() and Lock() release and retake it within the
// scope, and the destructor releases it if held. Not movable: one scope owns it.
class SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~UniqueLock() RELEASE() {
    if (locked_) mu_.Unlock();
  }
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;

  void Lock() ACQUIRE() {
    mu_.Lock();
    locked_ = true;
  }
  void Unlock() RELEASE() {
    locked_ = false;
    mu_.Unlock();
  }
  bool owns_lock() const { return locked_; }
  Mutex* mutex() const { return &mu_; }

 private:
  Mutex& mu_;
  bool locked_ = true;
};

// Waits take the UniqueLock the caller holds; they return with it held. A predicate
// runs with the lock held: annotate the lambda REQUIRES(mu) (the analysis cannot see
// into the wait loop, so the predicated waits themselves are not analysed).
class CondVar {
 public:
  void notify_one() { cv_.notify_one(); }
  void notify_all() { cv_.notify_all(); }

  void wait(UniqueLock& l) {
    std::unique_lock<std::mutex> native(l.mutex()->mu_, std::adopt_lock);
    cv_.wait(native);
    native.release();
  }
  template <typename Pred>
  void wait(UniqueLock& l, Pred pred) NO_THREAD_SAFETY_ANALYSIS {
    while (!pred()) wait(l);
  }
  template <typename Rep, typename Period>
  std::cv_status wait_for(UniqueLock& l, const std::chrono::duration<Rep, Period>& d) {
    std::unique_lock<std::mutex> native(l.mutex()->mu_, std::adopt_lock);
    std::cv_status st = cv_.wait_for(native, d);
    native.release();
    return st;
  }
  template <typename Rep, typename Period, typename Pred>
  bool wait_for(UniqueLock& l, const std::chrono::duration<Rep, Period>& d,
                Pred pred) NO_THREAD_SAFETY_ANALYSIS {
    std::unique_lock<std::mutex> native(l.mutex()->mu_, std::adopt_lock);
    bool r = cv_.wait_for(native, d, std::move(pred));
    native.release();
    return r;
  }

 private:
  std::condition_variable cv_;
};

}  // namespace nyala
