// Semaphore: a counting semaphore whose Acquire() sleeps in the kernel (a Linux futex)
// as soon as the count is zero.
//
// Use it instead of std::counting_semaphore / std::binary_semaphore for hand-offs
// between threads. libstdc++ 12 makes those spin before they sleep, 12 rounds of
// `pause` and then 4 sched_yield() system calls, on every wait that does not succeed
// at once. Where the thread that will release is on the same CPU (a reactor handing
// a call to a service thread on a 2-vCPU machine), the spin and the yields only burn
// the time that thread needs: rpc-bench's sync mode made ~4 needless sched_yield calls
// per request.
//
// Release() makes a system call only when a thread may be sleeping.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace nyala {

class Semaphore {
 public:
  explicit Semaphore(int32_t initial = 0) : count_(initial) {}
  Semaphore(const Semaphore&) = delete;
  Semaphore& operator=(const Semaphore&) = delete;

  // Takes one unit, sleeping until one is there.
  void Acquire() {
    int32_t c = count_.load(std::memory_order_relaxed);
    for (;;) {
      if (c > 0) {
        if (count_.compare_exchange_weak(c, c - 1, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
          return;
        }
        continue;
      }
      waiters_.fetch_add(1, std::memory_order_seq_cst);
      // Sleeps only if the count is still 0; a Release() in between changes it and
      // the futex call returns at once (EAGAIN).
      if (count_.load(std::memory_order_seq_cst) <= 0) {
        syscall(SYS_futex, reinterpret_cast<int32_t*>(&count_), FUTEX_WAIT_PRIVATE, 0, nullptr,
                nullptr, 0);
      }
      waiters_.fetch_sub(1, std::memory_order_relaxed);
      c = count_.load(std::memory_order_relaxed);
    }
  }

  // Takes one unit if one is there, without waiting.
  bool TryAcquire() {
    int32_t c = count_.load(std::memory_order_relaxed);
    while (c > 0) {
      if (count_.compare_exchange_weak(c, c - 1, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  // Adds one unit and wakes one sleeper, if any.
  void Release() {
    count_.fetch_add(1, std::memory_order_seq_cst);
    if (waiters_.load(std::memory_order_seq_cst) > 0) {
      syscall(SYS_futex, reinterpret_cast<int32_t*>(&count_), FUTEX_WAKE_PRIVATE, 1, nullptr,
              nullptr, 0);
    }
  }

 private:
  static_assert(sizeof(std::atomic<int32_t>) == sizeof(int32_t));
  std::atomic<int32_t> count_;
  std::atomic<int32_t> waiters_{0};
};

}  // namespace nyala
