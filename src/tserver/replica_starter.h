// ReplicaStarter: group start-up for a tablet server's tablets. It starts a tablet's
// replica (TabletReplica::Start) on the server's consensus runtime with:
//  - the group id derived from the tablet id, and the first configuration from the
//    peers the tablet's metadata lists (every one a voter; this server alone when the
//    list is empty), whose addresses go into the PeerDirectory;
//  - the hooks that tie the replica to the server: peer uuids from the directory, the
//    writes it applies to the RequestTracker (as records of the tablet's store), and
//    its consensus changes to the caller's callback.
// It decides too which replicas campaign at once (CampaignsAtCreation/AtRestart).
//
// Thread-safety: thread-safe; it holds nothing but the borrowed pointers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"
#include "tserver/tablet_metadata.pb.h"

namespace nyala::consensus {
class ConsensusRuntime;
}

namespace nyala::tserver {

class PeerDirectory;
class RequestTracker;
class Tablet;

class ReplicaStarter {
 public:
  // A replica this server leads needs a copy sent to the replica on server
  // `peer_uuid`, at least as new as `index` (on the group's worker: must not block).
  using CopyNeeded = std::function<void(const std::string& tablet_id, const std::string& peer_uuid,
                                        uint64_t index)>;
  // The three must outlive the starter and every replica it starts. `copy_needed` may
  // be null (no copies are sent).
  ReplicaStarter(consensus::ConsensusRuntime* runtime, RequestTracker* tracker,
                 PeerDirectory* peers, CopyNeeded copy_needed = nullptr)
      : runtime_(runtime), tracker_(tracker), peers_(peers), copy_needed_(std::move(copy_needed)) {}

  // Starts `tablet`'s replica, campaigning at once when `campaign`. `changed` runs on
  // the group's worker thread (it must not block) whenever the replica's role, term or
  // leader changes, or the tablet fails. Fails, logged, as TabletReplica::Start does;
  // the tablet is then without a group.
  Status Start(Tablet* tablet, bool campaign, std::function<void()> changed) const;

  // Removes the records of tablet `tablet_id`'s group from the log (a tombstone being
  // deleted: no group runs to do it).
  void ForgetLog(const std::string& tablet_id) const;
  // Whether a new replica campaigns at once: when this server is the first peer the
  // master listed (the master spreads the first places, so the first leaders are
  // spread), or no peer is listed. The others wait for it.
  bool CampaignsAtCreation(const TabletMetadataPB& meta) const;
  // Whether a replica campaigns at once when the server restarts: a group of one, which
  // elects itself; the others wait for their election timeouts.
  static bool CampaignsAtRestart(const TabletMetadataPB& meta) { return meta.peers_size() <= 1; }

 private:
  consensus::ConsensusRuntime* const runtime_;
  RequestTracker* const tracker_;
  PeerDirectory* const peers_;
  const CopyNeeded copy_needed_;
};

}  // namespace nyala::tserver
