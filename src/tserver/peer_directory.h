// PeerDirectory: a tablet server's address book of its consensus peers. It maps each
// server's Raft peer id (consensus/peer_id.h, derived from the server's uuid) back to
// the uuid, and keeps each server's RPC address, handing every new or changed address
// to the consensus transport (the AddRoute given at construction; never this server's
// own, which the transport does not need). It is filled from the peers a tablet's
// metadata lists and from the master's heartbeat responses.
//
// Thread-safety: thread-safe. AddRoute is called without the directory's lock held,
// on the thread that reported the address.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "consensus/peer_id.h"
#include "master/master.pb.h"
#include "rpc/sockaddr.h"

namespace nyala::tserver {

class PeerDirectory {
 public:
  // `uuid` names the server in the transport's log lines.
  using AddRoute =
      std::function<void(consensus::PeerId id, const rpc::Sockaddr& addr, const std::string& uuid)>;

  // `self_uuid` is this server's uuid: known from the start, never routed to.
  PeerDirectory(std::string self_uuid, AddRoute add_route);
  PeerDirectory(const PeerDirectory&) = delete;
  PeerDirectory& operator=(const PeerDirectory&) = delete;

  const std::string& self_uuid() const { return self_uuid_; }
  consensus::PeerId self_id() const { return self_id_; }

  // Server `uuid` listens at host:port. A new or changed address is resolved and handed
  // to AddRoute; one that does not resolve is logged and forgotten, so that the next
  // report of it tries again.
  void AddPeer(const std::string& uuid, const std::string& host, uint32_t port) EXCLUDES(mu_);
  // AddPeer for every server in a heartbeat response that has an RPC address.
  void Update(const google::protobuf::RepeatedPtrField<master::TSInfoPB>& servers);
  // The uuid of the server with peer id `id`, or "" when unknown.
  std::string UuidOf(consensus::PeerId id) const EXCLUDES(mu_);
  // The "host:port" server `uuid` listens at, or "" when unknown.
  std::string AddressOf(const std::string& uuid) const EXCLUDES(mu_);

 private:
  // Set in the constructor, never changed.
  const std::string self_uuid_;
  const consensus::PeerId self_id_;
  const AddRoute add_route_;

  mutable Mutex mu_;
  std::unordered_map<consensus::PeerId, std::string> uuids_ GUARDED_BY(mu_);
  std::unordered_map<std::string, std::string> addrs_ GUARDED_BY(mu_);  // uuid -> host:port
};

}  // namespace nyala::tserver
