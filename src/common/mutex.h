// Mutex and MutexLock: std::mutex with clang thread-safety annotations, so state
// marked GUARDED_BY(mu_) is checked at compile time under clang -Wthread-safety.
// CondVar: a condition variable for Mutex. Use it rather than
// std::condition_variable_any, whose notify holds an internal mutex that the woken
// thread then blocks on: an extra futex round trip and context switch per wakeup.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/thread_annotations.h"

namespace nyala {

class CAPABILITY("mutex") Mutex {
 public:
  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // For std::unique_lock and CondVar.
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  std::mutex& native() { return mu_; }

 private:
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

// Waits take the std::unique_lock<Mutex> the caller holds, like the std:: ones.
class CondVar {
 public:
  void notify_one() { cv_.notify_one(); }
  void notify_all() { cv_.notify_all(); }

  void wait(std::unique_lock<Mutex>& l) {
    std::unique_lock<std::mutex> native(l.mutex()->native(), std::adopt_lock);
    cv_.wait(native);
    native.release();
  }
  template <typename Pred>
  void wait(std::unique_lock<Mutex>& l, Pred pred) {
    while (!pred()) wait(l);
  }
  template <typename Rep, typename Period>
  std::cv_status wait_for(std::unique_lock<Mutex>& l, const std::chrono::duration<Rep, Period>& d) {
    std::unique_lock<std::mutex> native(l.mutex()->native(), std::adopt_lock);
    std::cv_status st = cv_.wait_for(native, d);
    native.release();
    return st;
  }
  template <typename Rep, typename Period, typename Pred>
  bool wait_for(std::unique_lock<Mutex>& l, const std::chrono::duration<Rep, Period>& d,
                Pred pred) {
    std::unique_lock<std::mutex> native(l.mutex()->native(), std::adopt_lock);
    bool r = cv_.wait_for(native, d, std::move(pred));
    native.release();
    return r;
  }

 private:
  std::condition_variable cv_;
};

}  // namespace nyala
