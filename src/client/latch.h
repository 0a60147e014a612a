// CountDownLatch: a waiter blocks until the count reaches zero. Used to turn the
// client's async calls into sync ones. Thread-safe.
#pragma once

#include <condition_variable>

#include "common/mutex.h"
#include "nyala/monotime.h"

namespace nyala::client::internal {

class CountDownLatch {
 public:
  explicit CountDownLatch(int count) : count_(count) {}

  void CountDown() {
    MutexLock l(mu_);
    if (count_ > 0 && --count_ == 0) cv_.notify_all();
  }
  void Wait() {
    UniqueLock l(mu_);
    cv_.wait(l, [this]() REQUIRES(mu_) { return count_ == 0; });
  }

 private:
  Mutex mu_;
  CondVar cv_;
  int count_ GUARDED_BY(mu_);
};

}  // namespace nyala::client::internal
