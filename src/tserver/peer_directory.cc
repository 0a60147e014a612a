#include "tserver/peer_directory.h"

#include <glog/logging.h>

#include <utility>
#include <vector>

#include "common/result.h"

namespace nyala::tserver {

PeerDirectory::PeerDirectory(std::string self_uuid, AddRoute add_route)
    : self_uuid_(std::move(self_uuid)),
      self_id_(consensus::PeerIdFromUuid(self_uuid_)),
      add_route_(std::move(add_route)) {
  MutexLock l(mu_);  // this server is a peer of its groups before any heartbeat
  uuids_[self_id_] = self_uuid_;
}

void PeerDirectory::AddPeer(const std::string& uuid, const std::string& host, uint32_t port) {
  const std::string addr = host + ":" + std::to_string(port);
  const consensus::PeerId id = consensus::PeerIdFromUuid(uuid);
  {
    MutexLock l(mu_);
    uuids_[id] = uuid;
    auto it = addrs_.find(uuid);
    if (it != addrs_.end() && it->second == addr) return;
    addrs_[uuid] = addr;
  }
  if (uuid == self_uuid_) return;  // this server: the transport needs no route to itself
  Result<rpc::HostPort> hp = rpc::HostPort::Parse(addr, uint16_t(port));
  Result<std::vector<rpc::Sockaddr>> resolved =
      hp.ok() ? hp->Resolve() : Result<std::vector<rpc::Sockaddr>>(hp.status());
  if (!resolved.ok() || resolved->empty()) {
    LOG(WARNING) << "tablet server " << uuid << " at " << addr << " does not resolve: "
                 << (resolved.ok() ? "no address" : resolved.status().ToString());
    MutexLock l(mu_);
    addrs_.erase(uuid);  // try again with the next report
    return;
  }
  LOG(INFO) << "consensus peer " << uuid << " (Raft id " << id << ") at " << addr;
  add_route_(id, resolved->front(), uuid);
}

void PeerDirectory::Update(const google::protobuf::RepeatedPtrField<master::TSInfoPB>& servers) {
  for (const master::TSInfoPB& ts : servers) {
    if (ts.rpc_addresses_size() == 0) continue;
    AddPeer(ts.permanent_uuid(), ts.rpc_addresses(0).host(), ts.rpc_addresses(0).port());
  }
}

std::string PeerDirectory::AddressOf(const std::string& uuid) const {
  MutexLock l(mu_);
  auto it = addrs_.find(uuid);
  return it == addrs_.end() ? std::string() : it->second;
}

std::string PeerDirectory::UuidOf(consensus::PeerId id) const {
  MutexLock l(mu_);
  auto it = uuids_.find(id);
  return it == uuids_.end() ? std::string() : it->second;
}

}  // namespace nyala::tserver
