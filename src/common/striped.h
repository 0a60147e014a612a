// Stripes for counters that many threads bump at once. A shared atomic that two cores
// add to on every RPC moves its cache line between them each time (on this class of
// machine that costs more than the add); giving each thread one of kStripes copies,
// each on a cache line of its own, and summing them on read keeps the adds local.
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace nyala {

inline constexpr size_t kStripes = 4;

// This thread's stripe in [0, kStripes): threads are dealt stripes round-robin in the
// order they first ask, so a daemon's few busy threads (reactors, service threads)
// land on distinct ones.
size_t ThisThreadStripe();

// An int64 counter split in kStripes cache lines. Add() is one relaxed atomic add on
// this thread's line; Load() sums the lines (not a snapshot while adders run).
class StripedInt64 {
 public:
  void Add(int64_t n) { lines_[ThisThreadStripe()].v.fetch_add(n, std::memory_order_relaxed); }
  int64_t Load() const {
    int64_t sum = 0;
    for (const Line& l : lines_) sum += l.v.load(std::memory_order_relaxed);
    return sum;
  }
  void Store(int64_t n) {
    for (Line& l : lines_) l.v.store(0, std::memory_order_relaxed);
    lines_[0].v.store(n, std::memory_order_relaxed);
  }

 private:
  struct alignas(64) Line {
    std::atomic<int64_t> v{0};
  };
  Line lines_[kStripes];
};

}  // namespace nyala
