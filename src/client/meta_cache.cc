#include "client/meta_cache.h"

#include <glog/logging.h>
#include <unistd.h>

#include "client/latch.h"
#include "client/master_client.h"
#include "common/result.h"
#include "common/wire_protocol.h"
#include "master/master.pb.h"
#include "tserver/tserver.proxy.h"

namespace nyala::client::internal {

Status MasterErrorToStatus(const master::MasterErrorPB& err) {
  const std::string code = master::MasterErrorPB::Code_Name(err.code());
  if (err.has_status() && err.status().code() != 0) {
    return StatusFromPB(err.status()).CloneAndPrepend(code);
  }
  switch (err.code()) {
    case master::MasterErrorPB::TABLE_NOT_FOUND:
      return Status::NotFound(code);
    case master::MasterErrorPB::TABLE_ALREADY_PRESENT:
      return Status::AlreadyPresent(code);
    case master::MasterErrorPB::NOT_THE_LEADER:
    case master::MasterErrorPB::CATALOG_MANAGER_NOT_INITIALIZED:
    case master::MasterErrorPB::TABLET_NOT_RUNNING:
      return Status::ServiceUnavailable(code);
    default:
      return Status::InvalidArgument(code);
  }
}

namespace {
constexpr char kNoCoveringTablet[] = "no tablet covers the partition key";
}  // namespace

Status NoCoveringTablet() { return Status::NotFound(kNoCoveringTablet); }

bool IsNoCoveringTablet(const Status& s) {
  return s.IsNotFound() && s.message() == kNoCoveringTablet;
}

bool IsRetriableMasterError(const master::MasterErrorPB& err) {
  return err.code() == master::MasterErrorPB::NOT_THE_LEADER ||
         err.code() == master::MasterErrorPB::CATALOG_MANAGER_NOT_INITIALIZED ||
         err.code() == master::MasterErrorPB::TABLET_NOT_RUNNING;
}

namespace {

bool IsLocalHost(const std::string& host) {
  static const std::string* const kNames = [] {
    char name[256] = {};
    if (gethostname(name, sizeof(name) - 1) != 0) name[0] = '\0';
    return new std::string[2]{name, rpc::FirstNonLoopbackAddress()};
  }();
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0 ||
         (!kNames[0].empty() && host == kNames[0]) || host == kNames[1];
}

}  // namespace

RemoteTabletServer::RemoteTabletServer(std::string uuid, std::vector<rpc::HostPort> addrs)
    : uuid_(std::move(uuid)),
      addrs_(std::move(addrs)),
      local_(!addrs_.empty() && IsLocalHost(addrs_.front().host())) {}

std::shared_ptr<RemoteTabletServer> RemoteTablet::ClosestReplica(size_t pick) const {
  size_t local = 0;
  for (const auto& r : replicas) local += r->is_local();
  if (local == 0) return replicas.empty() ? nullptr : replicas[pick % replicas.size()];
  size_t n = pick % local;
  for (const auto& r : replicas) {
    if (r->is_local() && n-- == 0) return r;
  }
  return nullptr;  // not reached
}

Result<std::shared_ptr<tserver::TabletServerServiceProxy>> RemoteTabletServer::GetProxy(
    const std::shared_ptr<rpc::Messenger>& m) {
  {
    MutexLock l(mu_);
    if (proxy_) return proxy_;
  }
  if (addrs_.empty()) return Status::NotFound("tablet server " + uuid_ + " has no RPC address");
  const rpc::HostPort& hp = addrs_.front();
  rpc::Sockaddr addr;
  auto numeric = rpc::Sockaddr::ParseNumeric(hp.ToString());
  if (numeric.ok()) {
    addr = *numeric;
  } else {
    ASSIGN_OR_RETURN(std::vector<rpc::Sockaddr> resolved, hp.Resolve());
    if (resolved.empty()) return Status::NetworkError("cannot resolve " + hp.ToString());
    addr = resolved.front();
  }
  auto proxy = std::make_shared<tserver::TabletServerServiceProxy>(m, addr);
  MutexLock l(mu_);
  if (!proxy_) proxy_ = std::move(proxy);
  return proxy_;
}

std::string RemoteTabletServer::ToString() const {
  return uuid_ + " (" + (addrs_.empty() ? std::string("no address") : addrs_[0].ToString()) + ")";
}

void MetaCache::LookupTablet(const std::string& table_id, Slice partition_key, MonoTime deadline,
                             LookupMode mode, LookupCallback cb) {
  Lookup(table_id, partition_key.ToString(), deadline, mode, std::move(cb), /*may_merge=*/true);
}

Result<TabletPtr> MetaCache::LookupTabletSync(const std::string& table_id, Slice partition_key,
                                              MonoTime deadline, LookupMode mode) {
  CountDownLatch latch(1);
  Result<TabletPtr> result = Status::Incomplete("lookup not done");
  LookupTablet(table_id, partition_key, deadline, mode, [&](Result<TabletPtr> r) {
    result = std::move(r);
    latch.CountDown();
  });
  latch.Wait();
  return result;
}

TabletPtr MetaCache::LookupFast(const std::string& table_id, Slice partition_key) {
  MutexLock l(mu_);
  auto t = tables_.find(table_id);
  if (t == tables_.end()) return nullptr;
  Result<TabletPtr> r = TabletPtr();
  std::string next;
  if (!AnswerFromCacheLocked(t->second, partition_key, LookupMode::kExact, MonoTime::Now(), &r,
                             &next) ||
      !r.ok()) {
    return nullptr;
  }
  return *r;
}

bool MetaCache::AnswerFromCacheLocked(const TableEntries& entries, Slice key, LookupMode mode,
                                      MonoTime now, Result<TabletPtr>* out, std::string* next_key) {
  std::string probe = key.ToString();
  // Each step moves past one non-covered entry, so at most entries.size() steps.
  for (size_t step = 0; step <= entries.size(); step++) {
    auto it = entries.upper_bound(probe);
    if (it == entries.begin()) break;
    --it;
    const Entry& e = it->second;
    const bool covers = e.end.empty() || Slice(probe).compare(Slice(e.end)) < 0;
    if (!covers || e.expiry <= now) break;
    if (e.tablet) {
      *out = e.tablet;
      return true;
    }
    if (mode == LookupMode::kExact) {
      if (now >= e.gap_trusted_until) break;  // ask the master again
      *out = NoCoveringTablet();
      return true;
    }
    if (e.end.empty()) {
      *out = TabletPtr();  // past the last tablet
      return true;
    }
    probe = e.end;
  }
  *next_key = std::move(probe);
  return false;
}

void MetaCache::Lookup(const std::string& table_id, std::string key, MonoTime deadline,
                       LookupMode mode, LookupCallback cb, bool may_merge) {
  std::string ask;
  Result<TabletPtr> answer = TabletPtr();
  bool known = false;
  {
    MutexLock l(mu_);
    auto t = tables_.find(table_id);
    if (t != tables_.end()) {
      known = AnswerFromCacheLocked(t->second, key, mode, MonoTime::Now(), &answer, &ask);
    } else {
      ask = key;
    }
    if (!known) {
      InFlight& in_flight = in_flight_[table_id];
      if (may_merge) {
        auto it = in_flight.upper_bound(ask);
        if (it != in_flight.begin()) {
          --it;  // the in-flight lookup with the greatest start <= ask
          it->second.push_back(Waiter{std::move(key), deadline, mode, std::move(cb)});
          return;
        }
      }
      auto [it, inserted] = in_flight.try_emplace(ask);
      it->second.push_back(Waiter{std::move(key), deadline, mode, std::move(cb)});
      if (!inserted) return;  // the same start is being asked for already
    }
  }
  if (known) {
    cb(std::move(answer));
    return;
  }
  SendMasterLookup(table_id, std::move(ask), deadline);
}

void MetaCache::SendMasterLookup(const std::string& table_id, std::string ask, MonoTime deadline) {
  auto req = std::make_shared<master::GetTableLocationsRequestPB>();
  req->mutable_table()->set_table_id(table_id);
  req->set_partition_key_start(ask);
  req->set_max_returned_locations(kPrefetch);
  req->set_intern_ts_infos_in_response(true);
  auto resp = std::make_shared<master::GetTableLocationsResponsePB>();
  master_lookups_.fetch_add(1, std::memory_order_relaxed);
  master_->AsyncCall<master::GetTableLocationsRequestPB, master::GetTableLocationsResponsePB>(
      &master::MasterServiceProxy::GetTableLocationsAsync, req, resp, deadline,
      [this, table_id, ask, resp](const Status& s) {
        if (s.ok()) OnLocations(table_id, ask, *resp);
        std::vector<Waiter> waiters;
        {
          MutexLock l(mu_);
          InFlight& in_flight = in_flight_[table_id];
          auto it = in_flight.find(ask);
          if (it != in_flight.end()) {
            waiters = std::move(it->second);
            in_flight.erase(it);
          }
        }
        for (Waiter& w : waiters) {
          if (!s.ok()) {
            w.cb(s.CloneAndPrepend("looking up tablet locations"));
            continue;
          }
          // Look again, not merging: a hit now, or this waiter's own master call.
          Lookup(table_id, std::move(w.key), w.deadline, w.mode, std::move(w.cb), false);
        }
      });
}

void MetaCache::OnLocations(const std::string& table_id, const std::string& key,
                            const master::GetTableLocationsResponsePB& resp) {
  const int64_t ttl_ms = resp.ttl_millis() > 0 ? resp.ttl_millis() : kDefaultTtlMs;
  const MonoTime now = MonoTime::Now();
  const MonoTime expiry = now + MonoDelta::FromMilliseconds(ttl_ms);
  const MonoTime gap_trust = now + MonoDelta::FromMilliseconds(kGapTrustMs);
  MutexLock l(mu_);
  TableEntries& entries = tables_[table_id];
  std::string covered_to = key;  // everything in [key, covered_to) is described
  for (const auto& loc : resp.tablet_locations()) {
    auto tablet = std::make_shared<RemoteTablet>();
    tablet->tablet_id = loc.tablet_id();
    tablet->partition = Partition::FromPB(loc.partition());
    const std::string& start = tablet->partition.partition_key_start;
    if (Slice(covered_to).compare(Slice(start)) < 0) {
      InsertLocked(&entries, covered_to, Entry{start, nullptr, expiry, gap_trust});  // a gap
    }
    std::vector<std::shared_ptr<RemoteTabletServer>> followers;
    auto add = [&](const master::TSInfoPB& ts, master::ReplicaRolePB role) REQUIRES(mu_) {
      std::vector<rpc::HostPort> addrs;
      for (const auto& hp : ts.rpc_addresses()) addrs.emplace_back(hp.host(), hp.port());
      auto server = ServerLocked(ts.permanent_uuid(), std::move(addrs));
      (role == master::LEADER ? tablet->replicas : followers).push_back(std::move(server));
    };
    for (const auto& r : loc.interned_replicas()) {
      if (r.ts_info_idx() < static_cast<uint32_t>(resp.ts_infos_size())) {
        add(resp.ts_infos(r.ts_info_idx()), r.role());
      }
    }
    for (const auto& r : loc.replicas()) add(r.ts_info(), r.role());
    for (auto& f : followers) tablet->replicas.push_back(std::move(f));
    std::string end = tablet->partition.partition_key_end;
    InsertLocked(&entries, start, Entry{end, std::move(tablet), expiry, MonoTime()});
    covered_to = end;
    if (end.empty()) break;
  }
  // A short answer reached the end of the table: nothing lies past the last tablet.
  const bool complete = resp.tablet_locations_size() < kPrefetch;
  if (complete && (resp.tablet_locations_size() == 0 || !covered_to.empty())) {
    InsertLocked(&entries, covered_to, Entry{"", nullptr, expiry, gap_trust});
  }
}

void MetaCache::InsertLocked(TableEntries* entries, const std::string& start, Entry e) {
  // Drop what overlaps [start, e.end): entries starting inside it, and one before it
  // reaching into it.
  auto it = entries->lower_bound(start);
  if (it != entries->begin()) {
    auto prev = std::prev(it);
    if (prev->second.end.empty() || Slice(prev->second.end).compare(Slice(start)) > 0) {
      entries->erase(prev);
    }
  }
  while (it != entries->end() && (e.end.empty() || Slice(it->first).compare(Slice(e.end)) < 0)) {
    it = entries->erase(it);
  }
  entries->emplace(start, std::move(e));
}

std::shared_ptr<RemoteTabletServer> MetaCache::ServerLocked(const std::string& uuid,
                                                            std::vector<rpc::HostPort> addrs) {
  auto it = servers_.find(uuid);
  if (it != servers_.end() && it->second->addrs() == addrs) return it->second;
  auto server = std::make_shared<RemoteTabletServer>(uuid, std::move(addrs));
  servers_[uuid] = server;
  return server;
}

void MetaCache::InvalidateTablet(const std::string& table_id, const std::string& tablet_id) {
  MutexLock l(mu_);
  auto t = tables_.find(table_id);
  if (t == tables_.end()) return;
  for (auto it = t->second.begin(); it != t->second.end();) {
    if (it->second.tablet && it->second.tablet->tablet_id == tablet_id) {
      it = t->second.erase(it);
    } else {
      ++it;
    }
  }
}

void MetaCache::InvalidateTable(const std::string& table_id) {
  MutexLock l(mu_);
  tables_.erase(table_id);
}

size_t MetaCache::NumEntriesForTests(const std::string& table_id) const {
  MutexLock l(mu_);
  auto t = tables_.find(table_id);
  return t == tables_.end() ? 0 : t->second.size();
}

}  // namespace nyala::client::internal
