// RequestIdAllocator: the client's write request ids (the tablet server's
// tserver::RequestTracker remembers their outcomes). Every Write RPC gets a sequence
// number under the client's random id and keeps it across retries, so the tablet
// server can recognise a retried write and apply it once. first_incomplete() tells
// the server which results it may forget.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "common/mutex.h"

namespace nyala::client::internal {

class RequestIdAllocator {
 public:
  explicit RequestIdAllocator(std::string client_id) : client_id_(std::move(client_id)) {}

  const std::string& client_id() const { return client_id_; }

  // A new sequence number, incomplete until Complete(seq).
  int64_t NewSeqNo() {
    MutexLock l(mu_);
    int64_t seq = next_seq_++;
    incomplete_.insert(seq);
    return seq;
  }
  // The lowest sequence number still incomplete (the next one when none is).
  int64_t first_incomplete() const {
    MutexLock l(mu_);
    return incomplete_.empty() ? next_seq_ : *incomplete_.begin();
  }
  void Complete(int64_t seq) {
    MutexLock l(mu_);
    incomplete_.erase(seq);
  }

 private:
  const std::string client_id_;
  mutable Mutex mu_;
  int64_t next_seq_ GUARDED_BY(mu_) = 0;
  std::set<int64_t> incomplete_ GUARDED_BY(mu_);
};

}  // namespace nyala::client::internal
