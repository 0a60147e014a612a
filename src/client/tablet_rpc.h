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
//   server unreachable or attempt timed out (several replicas)
//                                         -> retry on the next replica
//   a closest-replica read at a replica too stale -> retry on the next replica
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

// The longest one attempt at a replica of a replicated tablet may take. A leader whose
// server stopped (SIGSTOP, a hung disk) still accepts connections, so only a timeout
// tells; the other replicas have elected a successor within two election timeouts (2 s
// by default), so the call moves on to them after this long rather than waiting out
// its whole deadline there. An attempt that was only slow at a live leader loses
// nothing: the other replicas name that leader, and the retry, carrying the same
// request id, joins the write still running there (RequestTracker) or reads again.
inline MonoDelta ReplicaAttemptTimeout() { return MonoDelta::FromSeconds(3); }

// The timeout of the next attempt at a replica of `tablet`: the time left before
// `deadline`, at most the client's `rpc_timeout`, and at most ReplicaAttemptTimeout()
// when the tablet has other replicas to try. Never zero, which would mean no timeout:
// at least a millisecond once the deadline is near or gone.
inline MonoDelta AttemptTimeout(const RemoteTablet& tablet, MonoDelta rpc_timeout,
                                MonoTime deadline) {
  MonoDelta t = std::min(rpc_timeout, deadline - MonoTime::Now());
  if (tablet.replicas.size() > 1) t = std::min(t, ReplicaAttemptTimeout());
  return std::max(t, MonoDelta::FromMilliseconds(1));
}

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
    // Until the server restarts; meanwhile another replica may serve, and an earlier
    // attempt at this one may have applied: retried, never reported as not applied.
    case tserver::TabletServerErrorPB::TABLET_FAILED:
    case tserver::TabletServerErrorPB::THROTTLED:
    case tserver::TabletServerErrorPB::NOT_THE_LEADER:
    // An alteration the tablet has not applied yet (the client's schema is newer).
    case tserver::TabletServerErrorPB::TABLET_SCHEMA_BEHIND:
      return {TabletRpcAction::kRetry, es};
    // A closest-replica read at a replica too far behind: another replica answers.
    case tserver::TabletServerErrorPB::REPLICA_TOO_STALE:
      return {TabletRpcAction::kRetry, es, /*next_replica=*/true};
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
  const bool lost = (!rpc.status().ok() && (v.action == TabletRpcAction::kRelookup ||
                                             rpc.status().IsTimedOut())) ||
                    (err != nullptr && err->code() == tserver::TabletServerErrorPB::TABLET_FAILED);
  if (lost && tablet.replicas.size() > 1) {
    // The others may lead now; they say so, or name the leader.
    tablet.MarkFollower(server);
    v.action = TabletRpcAction::kRetry;
    v.next_replica = true;
  }
  return v;
}

}  // namespace nyala::client::internal
