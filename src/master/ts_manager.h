// TSManager: the tablet servers the master knows, by permanent uuid: their current
// instance (seqno), registration (addresses), last heartbeat, liveness and the
// tablets they last reported running.
//
// A server is live from its registration until --tserver_unresponsive_timeout_ms
// pass without a heartbeat; MarkDeadIfExpired() makes that transition (the
// catalog manager calls it from its background thread, holding its state lock
// exclusively so the table-locations cache is purged first). Its next heartbeat
// makes it live again. Unregister() forgets a dead server (an operator's call); a
// heartbeat from it afterwards asks it to register anew.
//
// Changes a GetTableLocations answer can see (a new server, changed addresses,
// dead -> live) are "visible": Heartbeat() makes them only when the caller says it
// holds the catalog state lock exclusively (allow_visible_change), and otherwise
// reports that it needs to be called again that way.
//
// Raft peer ids (consensus/peer_id.h) are derived from uuids; a registration whose
// peer id equals that of another registered server (a different uuid) is refused,
// since the two servers' replicas could not be told apart in one Raft group.
//
// Thread-safety: thread-safe; mu_ is a leaf lock (nothing is called while holding it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "master/master.pb.h"
#include "nyala/monotime.h"

namespace nyala::master {

// A copy of what the master knows about one tablet server.
struct TSDescriptor {
  std::string uuid;
  int64_t instance_seqno = 0;
  TSRegistrationPB registration;
  MonoTime last_heartbeat;
  bool live = false;
  bool has_full_report = false;           // a full tablet report arrived from this instance
  std::set<std::string> running_tablets;  // as last reported

  // The first advertised RPC address, "" when none was registered.
  std::string RpcAddressString() const;
};

class TSManager {
 public:
  struct HeartbeatOutcome {
    bool needs_reregister = false;
    bool needs_full_report = false;
    // The heartbeat's tablet report may be applied (the sender is registered and current).
    bool process_report = false;
    // Nothing was changed: call again with allow_visible_change (see the file comment).
    bool needs_exclusive = false;
    // A visible change was made (only with allow_visible_change).
    bool visible_change = false;
    // The registration was refused (nothing was changed): the reason.
    Status error;
  };

  TSManager() = default;
  TSManager(const TSManager&) = delete;
  TSManager& operator=(const TSManager&) = delete;

  // The server part of a heartbeat: registration, instance check, liveness, and the
  // running-tablet set from its report (when process_report).
  HeartbeatOutcome Heartbeat(const TSHeartbeatRequestPB& req, MonoTime now,
                             bool allow_visible_change) EXCLUDES(mu_);

  // Live servers whose last heartbeat is older than the timeout.
  std::vector<std::string> ExpiredLiveServers(MonoTime now) const EXCLUDES(mu_);
  // Marks `uuid` dead if it is still live and expired; true if it did.
  bool MarkDeadIfExpired(const std::string& uuid, MonoTime now) EXCLUDES(mu_);

  std::optional<TSDescriptor> Lookup(const std::string& uuid) const EXCLUDES(mu_);
  bool IsLive(const std::string& uuid) const EXCLUDES(mu_);
  // The first advertised RPC address of a live server; nullopt if dead or unknown.
  std::optional<TSInfoPB> LiveTSInfo(const std::string& uuid) const EXCLUDES(mu_);
  std::vector<TSDescriptor> GetAll() const EXCLUDES(mu_);
  // Every registered server (live or not) with its RPC addresses, by uuid.
  std::vector<TSInfoPB> AllTSInfos() const EXCLUDES(mu_);
  std::vector<std::string> LiveServerUuids() const EXCLUDES(mu_);
  int NumLiveServers() const EXCLUDES(mu_);

  // What the replacement of failed replicas needs of each registered server: cheaper
  // than GetAll() (no tablet sets).
  struct Liveness {
    bool live = false;
    MonoTime last_heartbeat;
    std::string rpc_address;  // TSDescriptor::RpcAddressString()
  };
  std::map<std::string, Liveness> LivenessOfAll() const EXCLUDES(mu_);

  // Forgets `uuid`, which must be dead. NotFound when unknown; IllegalState (saying how
  // long ago it last heartbeated) when it is live.
  Status Unregister(const std::string& uuid, MonoTime now) EXCLUDES(mu_);

  // The unresponsive timeout now in force (--tserver_unresponsive_timeout_ms).
  static MonoDelta UnresponsiveTimeout();

 private:
  void ApplyReport(const TabletReportPB& report, TSDescriptor* ts) REQUIRES(mu_);

  mutable Mutex mu_;
  std::map<std::string, TSDescriptor> servers_ GUARDED_BY(mu_);
};

}  // namespace nyala::master
