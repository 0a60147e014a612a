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
// A semaphore may be destroyed as soon as Acquire() returns, even while the Release()
// that woke it is still running (a waiter's semaphore on its own stack, which is how
// hand-offs use it). So Release() touches the semaphore with one atomic operation
// only: the count and the number of sleepers share one 64-bit word, and after the
// increment comes at most a FUTEX_WAKE system call on its address, which is harmless
// on memory that is gone (EFAULT) or reused (a spurious wakeup, which Acquire()
// tolerates).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cstdint>

namespace nyala {

class Semaphore {
 public:
  explicit Semaphore(int32_t initial = 0) : state_(uint32_t(initial)) {}
  Semaphore(const Semaphore&) = delete;
  Semaphore& operator=(const Semaphore&) = delete;

  // Takes one unit, sleeping until one is there.
  void Acquire() {
    uint64_t s = state_.load(std::memory_order_relaxed);
    for (;;) {
      if (Count(s) > 0) {
        if (state_.compare_exchange_weak(s, s - 1, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
          return;
        }
        continue;
      }
      // Counted as a sleeper first, so a Release() from here on makes the wake call.
      // The futex call sleeps only if the count is still 0; a Release() in between
      // changes it and the call returns at once (EAGAIN).
      s = state_.fetch_add(kOneSleeper, std::memory_order_seq_cst) + kOneSleeper;
      if (Count(s) == 0) {
        syscall(SYS_futex, CountWord(), FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
      }
      s = state_.fetch_sub(kOneSleeper, std::memory_order_relaxed) - kOneSleeper;
    }
  }

  // Takes one unit if one is there, without waiting.
  bool TryAcquire() {
    uint64_t s = state_.load(std::memory_order_relaxed);
    while (Count(s) > 0) {
      if (state_.compare_exchange_weak(s, s - 1, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  // Adds one unit and wakes one sleeper, if any. After the increment the semaphore
  // may already be gone (see above): only the system call may follow.
  void Release() {
    const uint64_t before = state_.fetch_add(1, std::memory_order_seq_cst);
    if (Sleepers(before) > 0) {
      syscall(SYS_futex, CountWord(), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    }
  }

 private:
  // The low 32 bits are the count (the futex word), the high 32 the sleepers.
  static constexpr uint64_t kOneSleeper = uint64_t{1} << 32;
  static uint32_t Count(uint64_t s) { return uint32_t(s); }
  static uint32_t Sleepers(uint64_t s) { return uint32_t(s >> 32); }
  void* CountWord() { return &state_; }  // the low half comes first (little-endian)

  static_assert(std::endian::native == std::endian::little,
                "the futex word is the low half of state_");
  static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t) &&
                std::atomic<uint64_t>::is_always_lock_free);
  std::atomic<uint64_t> state_;
};

}  // namespace nyala
