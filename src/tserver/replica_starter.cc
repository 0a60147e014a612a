#include "tserver/replica_starter.h"
#include "common/status.h"

#include <glog/logging.h>

#include <utility>

#include "consensus/peer_id.h"
#include "consensus/raft_group.h"
#include "consensus/runtime.h"
#include "tserver/peer_directory.h"
#include "tserver/request_tracker.h"
#include "tserver/tablet.h"

namespace nyala::tserver {

Status ReplicaStarter::Start(Tablet* tablet, bool campaign, std::function<void()> changed) const {
  const std::string& id = tablet->tablet_id();
  TabletReplicaHooks hooks;
  PeerDirectory* peers = peers_;
  hooks.uuid_of = [peers](consensus::PeerId peer) { return peers->UuidOf(peer); };
  hooks.applied_request = [tracker = tracker_,
                           stored = RequestRecordLocation{tablet->store(), tablet->seq()}](
                              const rpc::RequestIdPB& rid, const WriteResponsePB& resp) {
    tracker->RememberApplied(rid, resp, stored);
  };
  hooks.consensus_changed = std::move(changed);
  if (copy_needed_) {
    hooks.copy_needed = [peers, fn = copy_needed_, id](consensus::PeerId peer, uint64_t index) {
      fn(id, peers->UuidOf(peer), index);
    };
  }
  consensus::GroupOptions o;
  o.group_id = consensus::GroupIdFromTabletId(id);
  o.name = "tablet " + id;
  const TabletMetadataPB meta = tablet->metadata();
  for (const RaftPeerPB& p : meta.peers()) {
    o.voters.push_back(consensus::PeerIdFromUuid(p.permanent_uuid()));
    peers_->AddPeer(p.permanent_uuid(), p.host(), p.port());
  }
  if (o.voters.empty()) o.voters.push_back(peers_->self_id());
  Status s = tablet->replica().Start(runtime_, std::move(o), std::move(hooks), campaign);
  if (!s.ok()) {
    LOG(ERROR) << "tablet " << id << ": its Raft group does not start: " << s.ToString();
    return s.CloneAndPrepend("starting its Raft group");
  }
  return Status::OK();
}

void ReplicaStarter::ForgetLog(const std::string& tablet_id) const {
  WARN_NOT_OK(runtime_->log()->RemoveGroup(consensus::GroupIdFromTabletId(tablet_id)),
              "tablet " + tablet_id + ": removing its consensus records");
}

bool ReplicaStarter::CampaignsAtCreation(const TabletMetadataPB& meta) const {
  return meta.peers_size() == 0 || meta.peers(0).permanent_uuid() == peers_->self_uuid();
}

}  // namespace nyala::tserver
