#include "tserver/request_tracker.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>

#include "rpc/rpc_context.h"
#include "tserver/tablet_store.h"

DEFINE_int32(write_dedup_ttl_ms, 600000,
             "How long the responses of a silent client's writes are kept to answer its "
             "retries, in ms (in memory, and on disk across restarts).");
DEFINE_validator(write_dedup_ttl_ms, [](const char*, int32_t v) { return v > 0; });

namespace nyala::tserver {

RequestTracker::Outcome RequestTracker::Begin(const rpc::RequestIdPB& id, WriteResponsePB* resp,
                                              rpc::RpcContext* ctx) {
  const MonoTime now = MonoTime::Now();
  MutexLock l(mu_);
  if (now - last_sweep_ > MonoDelta::FromMilliseconds(FLAGS_write_dedup_ttl_ms / 10 + 1)) {
    SweepLocked(now);
  }
  Client& c = clients_[id.client_id()];
  c.last_access = now;
  if (id.has_first_incomplete_seq_no()) {
    AdvanceFirstIncompleteLocked(id.client_id(), &c, id.first_incomplete_seq_no());
  }
  auto it = c.entries.find(id.seq_no());
  if (it == c.entries.end()) {
    if (id.seq_no() < c.first_incomplete) return Outcome::kStale;
    c.entries.emplace(id.seq_no(), Entry());
    return Outcome::kNew;
  }
  if (it->second.done) {
    *resp = it->second.resp;
    return Outcome::kAnswered;
  }
  it->second.waiters.emplace_back(resp, ctx);
  return Outcome::kAttached;
}

void RequestTracker::Finish(const rpc::RequestIdPB& id, const WriteResponsePB& resp, bool remember,
                            RequestRecordLocation stored) {
  std::vector<std::pair<WriteResponsePB*, rpc::RpcContext*>> waiters;
  {
    MutexLock l(mu_);
    auto cit = clients_.find(id.client_id());
    if (cit != clients_.end()) {
      auto it = cit->second.entries.find(id.seq_no());
      if (it != cit->second.entries.end()) {
        waiters.swap(it->second.waiters);
        it->second.stored = stored;
        if (remember && id.seq_no() >= cit->second.first_incomplete) {
          it->second.done = true;
          it->second.resp = resp;
        } else {
          DeleteRecordLocked(id.client_id(), id.seq_no(), it->second);
          cit->second.entries.erase(it);
        }
      }
    }
  }
  for (auto& [wresp, ctx] : waiters) {
    *wresp = resp;
    ctx->RespondSuccess();
  }
}

bool RequestTracker::Restore(std::string_view client_id, int64_t seq_no, int64_t first_incomplete,
                             WriteResponsePB resp, MonoDelta age, RequestRecordLocation stored) {
  Entry e;
  e.done = true;
  e.stored = stored;
  MutexLock l(mu_);
  if (age > MonoDelta::FromMilliseconds(FLAGS_write_dedup_ttl_ms)) {
    DeleteRecordLocked(client_id, seq_no, e);
    return false;
  }
  const std::string id(client_id);
  Client& c = clients_[id];
  const MonoTime written = MonoTime::Now() - std::max(age, MonoDelta());
  if (c.entries.empty() || written > c.last_access) c.last_access = written;
  AdvanceFirstIncompleteLocked(id, &c, first_incomplete);
  if (seq_no < c.first_incomplete || c.entries.contains(seq_no)) {
    DeleteRecordLocked(client_id, seq_no, e);
    return false;
  }
  e.resp = std::move(resp);
  c.entries.emplace(seq_no, std::move(e));
  return true;
}

void RequestTracker::RememberApplied(const rpc::RequestIdPB& id, const WriteResponsePB& resp,
                                     RequestRecordLocation stored) {
  MutexLock l(mu_);
  Client& c = clients_[id.client_id()];
  c.last_access = MonoTime::Now();
  AdvanceFirstIncompleteLocked(id.client_id(), &c, id.first_incomplete_seq_no());
  if (id.seq_no() < c.first_incomplete || c.entries.contains(id.seq_no())) return;
  Entry e;
  e.done = true;
  e.stored = stored;
  e.resp = resp;
  c.entries.emplace(id.seq_no(), std::move(e));
}

void RequestTracker::AdvanceFirstIncompleteLocked(const std::string& client_id, Client* c,
                                                  int64_t first_incomplete) {
  if (first_incomplete <= c->first_incomplete) return;
  c->first_incomplete = first_incomplete;
  // The client has every answer below this: forget them.
  for (auto it = c->entries.begin(); it != c->entries.end() && it->first < first_incomplete;) {
    if (!it->second.done) {
      ++it;
      continue;
    }
    DeleteRecordLocked(client_id, it->first, it->second);
    it = c->entries.erase(it);
  }
}

void RequestTracker::DeleteRecordLocked(std::string_view client_id, int64_t seq_no,
                                        const Entry& e) {
  if (e.stored.store) {
    e.stored.store->QueueRequestRecordDelete(e.stored.tablet_seq, client_id, seq_no);
  }
}

void RequestTracker::SweepLocked(MonoTime now) {
  last_sweep_ = now;
  const MonoDelta ttl = MonoDelta::FromMilliseconds(FLAGS_write_dedup_ttl_ms);
  for (auto it = clients_.begin(); it != clients_.end();) {
    bool running = false;
    for (const auto& [seq, e] : it->second.entries) running |= !e.done;
    if (!running && now - it->second.last_access > ttl) {
      for (const auto& [seq, e] : it->second.entries) DeleteRecordLocked(it->first, seq, e);
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t RequestTracker::NumClientsForTests() const {
  MutexLock l(mu_);
  return clients_.size();
}

size_t RequestTracker::NumResponsesForTests() const {
  MutexLock l(mu_);
  size_t n = 0;
  for (const auto& [id, c] : clients_) n += c.entries.size();
  return n;
}

}  // namespace nyala::tserver
