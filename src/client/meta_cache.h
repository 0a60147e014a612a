// MetaCache: where each tablet of each table lives, as the master last said.
//
// Per table, entries ordered by partition-key start, each covering [start, end) and
// holding the tablet there (with its replicas) or nothing (a range no tablet covers;
// trusted for exact lookups for kGapTrustMs only, so that a key in a range partition
// added since reaches the master, which knows it).
// Entries expire after the master's ttl_millis and are dropped by InvalidateTablet
// (TABLET_NOT_FOUND, an unreachable server). A miss asks the master for the tablet
// holding the key and the following ones (kPrefetch locations); a lookup that
// misses while another lookup of the same table for a key at or before it is in
// flight waits for that one and looks again, so concurrent lookups of one range
// become one master call.
//
// Thread-safety: thread-safe. Lookup callbacks run on the calling thread (hit) or
// on a reactor/timer thread (miss) and must not block; never under the cache's lock.
// RemoteTablet and RemoteTabletServer objects are immutable and shared.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "nyala/monotime.h"
#include "nyala/partition.h"
#include "nyala/slice.h"
#include "rpc/sockaddr.h"

namespace nyala::rpc {
class Messenger;
}  // namespace nyala::rpc

namespace nyala::master {
class GetTableLocationsResponsePB;
}  // namespace nyala::master

namespace nyala::tserver {
class TabletServerServiceProxy;
}  // namespace nyala::tserver

namespace nyala::client::internal {

class MasterClient;

class RemoteTabletServer {
 public:
  RemoteTabletServer(std::string uuid, std::vector<rpc::HostPort> addrs);

  const std::string& uuid() const { return uuid_; }
  const std::vector<rpc::HostPort>& addrs() const { return addrs_; }
  // Its first address is on this host: loopback, "localhost", this host's name or
  // its first non-loopback address.
  bool is_local() const { return local_; }
  // The tablet-server service at the first address (resolved on first use; a
  // numeric address needs no DNS).
  Result<std::shared_ptr<tserver::TabletServerServiceProxy>> GetProxy(
      const std::shared_ptr<rpc::Messenger>& m);
  // "uuid (host:port)".
  std::string ToString() const;

 private:
  const std::string uuid_;
  const std::vector<rpc::HostPort> addrs_;
  const bool local_;
  Mutex mu_;
  std::shared_ptr<tserver::TabletServerServiceProxy> proxy_ GUARDED_BY(mu_);
};

struct RemoteTablet {
  std::string tablet_id;
  Partition partition;
  // As the master listed them: its leader first when one is known.
  std::vector<std::shared_ptr<RemoteTabletServer>> replicas;

  // The replica believed to lead, to send writes and reads to; nullptr when there is
  // none. Starts at the master's leader and moves as replicas answer (below), for
  // every call that shares this tablet.
  std::shared_ptr<RemoteTabletServer> leader() const {
    return replicas.empty() ? nullptr : replicas[leader_hint.load(std::memory_order_relaxed) %
                                                 replicas.size()];
  }
  // A replica named the leader: false if it is not among `replicas` (look it up again).
  bool MarkLeader(const std::string& uuid) const {
    for (size_t i = 0; i < replicas.size(); i++) {
      if (replicas[i]->uuid() == uuid) {
        leader_hint.store(i, std::memory_order_relaxed);
        return true;
      }
    }
    return false;
  }
  // `server` does not lead (or does not answer): the next replica is tried, unless
  // another call moved the hint already.
  void MarkFollower(const RemoteTabletServer* server) const {
    size_t cur = leader_hint.load(std::memory_order_relaxed);
    if (!replicas.empty() && replicas[cur % replicas.size()].get() == server) {
      leader_hint.compare_exchange_strong(cur, (cur + 1) % replicas.size());
    }
  }

  // For reads any replica may answer (ReplicaSelection::kClosestReplica): the
  // replicas on this host when there are any, else all of them; `pick` chooses one
  // (a number fixed per client, so its reads keep to one replica, plus one per
  // failed attempt, so a retry tries the next). nullptr when there is no replica.
  std::shared_ptr<RemoteTabletServer> ClosestReplica(size_t pick) const;

  mutable std::atomic<size_t> leader_hint{0};
};
using TabletPtr = std::shared_ptr<const RemoteTablet>;

enum class LookupMode {
  kExact,   // the tablet holding the key; NoCoveringTablet() in a range no tablet covers
  kOrNext,  // that, or the first tablet after the key; nullptr past the last
};

// What a kExact lookup answers for a key in a range no tablet covers (a gap between
// range partitions): the key has no tablet, which is not a failure of the lookup. Any
// other error, NotFound included (the master no longer knows the table), is one.
Status NoCoveringTablet();
bool IsNoCoveringTablet(const Status& s);

using LookupCallback = std::function<void(Result<TabletPtr>)>;

class MetaCache {
 public:
  // Locations asked for on a miss: the tablet of the key and those after it.
  static constexpr int kPrefetch = 10;
  // How long a gap (no tablet covers a range) answers exact lookups from the cache.
  static constexpr int64_t kGapTrustMs = 100;
  // Used when the master sends no ttl_millis.
  static constexpr int64_t kDefaultTtlMs = 300000;

  // `master` must outlive the cache.
  explicit MetaCache(MasterClient* master) : master_(master) {}

  void LookupTablet(const std::string& table_id, Slice partition_key, MonoTime deadline,
                    LookupMode mode, LookupCallback cb);
  // Blocks; not on a reactor thread.
  Result<TabletPtr> LookupTabletSync(const std::string& table_id, Slice partition_key,
                                     MonoTime deadline, LookupMode mode);
  // A fresh cached tablet holding the key, or nullptr (no master call).
  TabletPtr LookupFast(const std::string& table_id, Slice partition_key);

  // Forgets the entries of `tablet_id` so the next lookup asks the master.
  void InvalidateTablet(const std::string& table_id, const std::string& tablet_id);
  // Forgets everything about a table (dropped, re-created).
  void InvalidateTable(const std::string& table_id);

  int64_t NumMasterLookupsForTests() const { return master_lookups_.load(); }
  size_t NumEntriesForTests(const std::string& table_id) const;

 private:
  struct Entry {
    std::string end;   // "" = unbounded
    TabletPtr tablet;  // nullptr: no tablet covers [start, end)
    MonoTime expiry;
    // A gap answers an exact lookup ("no tablet covers the key") only until then, a
    // short while after the master said so: a range partition added since is found
    // by the next lookup of a key in it, not after the TTL.
    MonoTime gap_trusted_until;
  };
  using TableEntries = std::map<std::string, Entry, std::less<>>;
  struct Waiter {
    std::string key;
    MonoTime deadline;
    LookupMode mode;
    LookupCallback cb;
  };
  // In-flight master lookups of one table, by requested start key.
  using InFlight = std::map<std::string, std::vector<Waiter>, std::less<>>;

  void Lookup(const std::string& table_id, std::string key, MonoTime deadline, LookupMode mode,
              LookupCallback cb, bool may_merge);
  void SendMasterLookup(const std::string& table_id, std::string ask, MonoTime deadline);
  // The answer the entries give for `key`; false when they don't know.
  bool AnswerFromCacheLocked(const TableEntries& entries, Slice key, LookupMode mode, MonoTime now,
                             Result<TabletPtr>* out, std::string* next_key) REQUIRES(mu_);
  void OnLocations(const std::string& table_id, const std::string& key,
                   const master::GetTableLocationsResponsePB& resp);
  void InsertLocked(TableEntries* entries, const std::string& start, Entry e) REQUIRES(mu_);
  std::shared_ptr<RemoteTabletServer> ServerLocked(const std::string& uuid,
                                                   std::vector<rpc::HostPort> addrs) REQUIRES(mu_);

  MasterClient* const master_;
  std::atomic<int64_t> master_lookups_{0};

  mutable Mutex mu_;
  std::unordered_map<std::string, TableEntries> tables_ GUARDED_BY(mu_);
  std::unordered_map<std::string, InFlight> in_flight_ GUARDED_BY(mu_);
  std::unordered_map<std::string, std::shared_ptr<RemoteTabletServer>> servers_ GUARDED_BY(mu_);
};

}  // namespace nyala::client::internal
