// Stripes for counters that many threads bump at once. A shared atomic that two cores
// add to on every RPC moves its cache line between them each time (on this class of
// machine that costs more than the add); giving each CPU one of kStripes copies, each
// on a cache line of its own, and summing them on read keeps the adds local.
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace nyala {

inline constexpr size_t kStripes = 4;

// The stripe in [0, kStripes) of the CPU this thread runs on: threads on one CPU
// share a line, which stays in that CPU's cache; threads on different CPUs use
// different lines on machines of up to kStripes CPUs. (Stripes dealt to threads in
// the order they first ask let two busy threads on different CPUs share one as soon
// as more threads than stripes record.) One read of the CPU number glibc keeps for
// the thread (rseq), about 3 ns here.
size_t ThisCpuStripe();

// An int64 counter split in kStripes cache lines. Add() is one relaxed atomic add on
// this CPU's line; Load() sums the lines (not a snapshot while adders run).
class StripedInt64 {
 public:
  void Add(int64_t n) { AddToStripe(ThisCpuStripe(), n); }
  // Add() with the stripe already known (a caller adding to several counters at once).
  void AddToStripe(size_t stripe, int64_t n) {
    lines_[stripe].v.fetch_add(n, std::memory_order_relaxed);
  }
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
