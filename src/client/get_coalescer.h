// GetCoalescer: one-key Gets that a client's threads make at the same time to the
// same tablet share one Get RPC.
//
// The first caller for a tablet sends its key at once: it leads. Callers that arrive
// while that RPC is out wait in the tablet's queue. When the RPC returns, the leader
// hands the answers to the callers it carried and makes the first waiting caller the
// next leader, which sends every key then queued (up to kMaxKeys) in one RPC. A lone
// caller pays two uncontended mutex sections more than a plain call; a hundred
// threads reading one tablet cost a handful of RPCs instead of a hundred, which saves
// a thread wakeup and a request on both sides for most of them.
//
// Only the first attempt is shared: a caller whose shared RPC failed retries on its
// own (GetCall's ordinary path), so errors, retries and re-lookups behave exactly as
// for an unshared Get.
//
// Thread-safe. Used by internal::GetCall (get.cc), which defines Waiter.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/mutex.h"

namespace nyala::client::internal {

class GetCoalescer {
 public:
  // Keys in one shared RPC: what the tablet server answers on its reactor thread.
  static constexpr int kMaxKeys = 32;

  struct Waiter;  // a caller in a queue (get.cc)
  // One tablet's queue.
  struct Queue {
    Mutex mu;
    bool busy GUARDED_BY(mu) = false;  // a leader's RPC is out
    std::deque<Waiter*> waiting GUARDED_BY(mu);
  };

  // The queue of `tablet_id`, made on first use and kept for the client's life.
  Queue* QueueFor(const std::string& tablet_id) {
    Shard& s = shards_[std::hash<std::string>()(tablet_id) % kShards];
    MutexLock l(s.mu);
    std::unique_ptr<Queue>& q = s.queues[tablet_id];
    if (!q) q = std::make_unique<Queue>();
    return q.get();
  }

  // Gets served through a queue, and the RPCs they took: the difference is what
  // sharing saved.
  void Count(int64_t gets) {
    gets_.fetch_add(gets, std::memory_order_relaxed);
    rpcs_.fetch_add(1, std::memory_order_relaxed);
  }
  int64_t gets() const { return gets_.load(std::memory_order_relaxed); }
  int64_t rpcs() const { return rpcs_.load(std::memory_order_relaxed); }

 private:
  static constexpr int kShards = 16;
  struct Shard {
    Mutex mu;
    std::unordered_map<std::string, std::unique_ptr<Queue>> queues GUARDED_BY(mu);
  };
  Shard shards_[kShards];
  std::atomic<int64_t> gets_{0};
  std::atomic<int64_t> rpcs_{0};
};

}  // namespace nyala::client::internal
