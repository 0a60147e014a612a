#include "rpc/in_flight.h"

#include <glog/logging.h>

namespace nyala::rpc {

InFlightList::InFlightList() {
  for (auto& s : shards_) s.head.prev_ = s.head.next_ = &s.head;
}

InFlightList::~InFlightList() {
  for (auto& s : shards_) DCHECK(s.head.next_ == &s.head) << "calls still in flight";
}

void InFlightList::Add(InFlightHook* h) {
  DCHECK(h->next_ == nullptr);
  h->shard_ = uint32_t(ThisCpuStripe());
  Shard& s = shards_[h->shard_];
  MutexLock l(s.mu);
  h->next_ = &s.head;
  h->prev_ = s.head.prev_;
  s.head.prev_->next_ = h;
  s.head.prev_ = h;
}

void InFlightList::Remove(InFlightHook* h) {
  Shard& s = shards_[h->shard_];
  MutexLock l(s.mu);
  DCHECK(h->next_ != nullptr);
  h->prev_->next_ = h->next_;
  h->next_->prev_ = h->prev_;
  h->prev_ = h->next_ = nullptr;
}

void InFlightList::ForEach(const std::function<void(const InFlightHook&)>& visit) const {
  for (const auto& s : shards_) {
    MutexLock l(s.mu);
    for (const InFlightHook* h = s.head.next_; h != &s.head; h = h->next_) visit(*h);
  }
}

size_t InFlightList::size() const {
  size_t n = 0;
  ForEach([&](const InFlightHook&) { n++; });
  return n;
}

}  // namespace nyala::rpc
