// What to do after a call to a tablet server: the retry policy shared by writes,
// Gets and scans.
//
//   server too busy, tablet not running, throttled, call timed out  -> retry later
//   server unreachable, tablet not found, wrong server              -> forget the
//                                          location, look it up again, retry later
//   anything else                                                   -> fail
// and, for a call to one replica of a tablet (ClassifyReplicaRpc):
//   not the leader, naming a replica      -> retry there
//   not the leader, naming nobody         -> retry on the next replica
//   not the leader, naming another server -> look it up again, retry
//   server unreachable (several replicas) -> retry on the next replica
// A timed-out call may have run: only idempotent calls and writes carrying a request
// id (all of ours) may be retried after it.
//
// Stateless; thread-safe.
#pragma once

#include "common/status.h"
#include "common/wire_protocol.h"
#include "client/meta_cache.h"
#include "rpc/rpc_controller.h"
#include "tserver/tserver.pb.h"

namespace nyala::client::internal {

enum class TabletRpcAction { kSuccess, kRetry, kRelookup, kFail };

struct TabletRpcVerdict {
  TabletRpcAction action;
  Status status;  // why, when not kSuccess
  // kRetry on another replica: the tablet's leader hint moved. The retry need not back
  // off long (a leader is being looked for, not a server waited out).
  bool next_replica = false;
};

// The longest backoff between attempts that look for a tablet's leader: an election
// takes a few hundred milliseconds, and the client should notice its end soon.
inline MonoDelta LeaderSearchMaxBackoff() { return MonoDelta::FromMilliseconds(100); }

inline Status TabletServerErrorToStatus(const tserver::TabletServerErrorPB& err) {
  const std::string code = tserver::TabletServerErrorPB::Code_Name(err.code());
  Status s = err.has_status() && err.status().code() != 0
                 ? StatusFromPB(err.status())
                 : Status::RemoteError("tablet server error");
  return s.CloneAndPrepend(code);
}

// `err` is the response's error field when the call itself succeeded (nullptr if unset).
inline TabletRpcVerdict ClassifyTabletRpc(const rpc::RpcController& rpc,
                                          const tserver::TabletServerErrorPB* err) {
  const Status& s = rpc.status();
  if (!s.ok()) {
    if (rpc.server_too_busy() || s.IsTimedOut()) return {TabletRpcAction::kRetry, s};
    if (s.IsNetworkError() || s.IsServiceUnavailable()) return {TabletRpcAction::kRelookup, s};
    return {TabletRpcAction::kFail, s};
  }
  if (err == nullptr) return {TabletRpcAction::kSuccess, Status::OK()};
  Status es = TabletServerErrorToStatus(*err);
  switch (err->code()) {
    case tserver::TabletServerErrorPB::TABLET_NOT_FOUND:
    case tserver::TabletServerErrorPB::WRONG_SERVER_UUID:
      return {TabletRpcAction::kRelookup, es};
    case tserver::TabletServerErrorPB::TABLET_NOT_RUNNING:
    case tserver::TabletServerErrorPB::THROTTLED:
    case tserver::TabletServerErrorPB::NOT_THE_LEADER:
      return {TabletRpcAction::kRetry, es};
    default:
      return {TabletRpcAction::kFail, es};
  }
}

// ClassifyTabletRpc for a call to `server`, one replica of `tablet`: also moves the
// tablet's leader hint (RemoteTablet::leader) after a not-the-leader answer or an
// unreachable server, so the retry goes to the replica most likely to lead.
inline TabletRpcVerdict ClassifyReplicaRpc(const RemoteTablet& tablet,
                                           const RemoteTabletServer* server,
                                           const rpc::RpcController& rpc,
                                           const tserver::TabletServerErrorPB* err) {
  TabletRpcVerdict v = ClassifyTabletRpc(rpc, err);
  if (err != nullptr && rpc.status().ok() &&
      err->code() == tserver::TabletServerErrorPB::NOT_THE_LEADER) {
    const std::string& leader = err->leader_uuid();
    if (leader.empty()) {
      tablet.MarkFollower(server);
    } else if (!tablet.MarkLeader(leader)) {
      v.action = TabletRpcAction::kRelookup;  // a replica the cached locations lack
    }
    v.next_replica = true;
    return v;
  }
  if (v.action == TabletRpcAction::kRelookup && !rpc.status().ok() && tablet.replicas.size() > 1) {
    // The others may lead now; they say so, or name the leader.
    tablet.MarkFollower(server);
    v.action = TabletRpcAction::kRetry;
    v.next_replica = true;
  }
  return v;
}

}  // namespace nyala::client::internal
