// InFlightList: the calls a messenger is working on right now, for /rpcz. Objects
// that take part derive from InFlightHook; Add() and Remove() cost one uncontended
// lock and four pointer writes, so every call can be tracked. The list is split in
// shards by the CPU that adds the object, so that threads on different CPUs adding
// and removing calls at once rarely meet on one lock or write one cache line (a
// call is mostly removed on the CPU that added it).
//
// Thread-safety: thread-safe. ForEach() holds a shard's lock while it visits that
// shard's objects, so an object being visited cannot be removed (and freed by its
// owner) until the visit returns; the visitor must only read fields that are
// immutable or atomic.
#pragma once

#include <cstdint>
#include <functional>

#include "common/mutex.h"
#include "common/striped.h"

namespace nyala::rpc {

class InFlightHook {
 public:
  InFlightHook() = default;
  InFlightHook(const InFlightHook&) = delete;
  InFlightHook& operator=(const InFlightHook&) = delete;

 private:
  friend class InFlightList;
  InFlightHook* prev_ = nullptr;
  InFlightHook* next_ = nullptr;
  uint32_t shard_ = 0;
};

class InFlightList {
 public:
  InFlightList();
  ~InFlightList();  // REQUIRES: empty
  InFlightList(const InFlightList&) = delete;
  InFlightList& operator=(const InFlightList&) = delete;

  // REQUIRES: `h` is in no list.
  void Add(InFlightHook* h);
  // REQUIRES: `h` was added to this list and not removed since.
  void Remove(InFlightHook* h);
  void ForEach(const std::function<void(const InFlightHook&)>& visit) const;
  size_t size() const;

 private:
  static constexpr uint32_t kShards = kStripes;  // one per ThisCpuStripe()
  struct alignas(64) Shard {
    mutable Mutex mu;
    InFlightHook head GUARDED_BY(mu);  // sentinel of a circular list
  };
  Shard shards_[kShards];
};

}  // namespace nyala::rpc
