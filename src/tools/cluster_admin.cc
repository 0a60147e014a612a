#include "tools/cluster_admin.h"
#include "common/result.h"

#include <algorithm>
#include <map>
#include <thread>

#include "common/human_readable.h"
#include "common/wire_protocol.h"
#include "master/master.proxy.h"
#include "rpc/messenger.h"
#include "rpc/rpc_controller.h"
#include "rpc/sockaddr.h"
#include "tserver/tserver_admin.proxy.h"

namespace nyala::tools {

namespace {

constexpr uint16_t kDefaultMasterPort = 7051;
constexpr uint16_t kDefaultTServerPort = 7050;

// Never OK (an error without a status still names its code).
Status MasterError(const master::MasterErrorPB& err) {
  Status s = err.has_status() ? StatusFromPB(err.status()) : Status::OK();
  if (s.ok()) s = Status::RuntimeError("master error");
  return s.CloneAndPrepend(master::MasterErrorPB::Code_Name(err.code()));
}

// Errors after which another master may answer.
bool TryAnotherMaster(const master::MasterErrorPB& err) {
  return err.code() == master::MasterErrorPB::NOT_THE_LEADER ||
         err.code() == master::MasterErrorPB::CATALOG_MANAGER_NOT_INITIALIZED;
}

Result<rpc::Sockaddr> ResolveOne(const std::string& address, uint16_t default_port) {
  ASSIGN_OR_RETURN(rpc::HostPort hp, rpc::HostPort::Parse(address, default_port));
  ASSIGN_OR_RETURN(std::vector<rpc::Sockaddr> addrs, hp.Resolve());
  if (addrs.empty()) return Status::NetworkError("cannot resolve", address);
  return addrs.front();
}

std::string RoleName(master::ReplicaRolePB role) {
  switch (role) {
    case master::LEADER:
      return "LEADER";
    case master::FOLLOWER:
      return "FOLLOWER";
    case master::LEARNER:
      return "LEARNER";
    default:
      return "UNKNOWN";
  }
}

// Term, leader, indexes and voters of `c` (the role is the caller's to choose).
void CopyConsensus(const master::ConsensusStatePB& c, ReplicaView* rv) {
  rv->term = c.term();
  rv->leader_uuid = c.leader_uuid();
  rv->committed_index = c.committed_index();
  rv->applied_index = c.applied_index();
  rv->last_index = c.last_index();
  rv->voter_uuids.assign(c.voter_uuids().begin(), c.voter_uuids().end());
  rv->follower_states.clear();
  for (const auto& f : c.followers()) rv->follower_states[f.uuid()] = FollowerStateWord(f.state());
}

std::string StateName(tserver::TabletDataStatePB state, bool failed) {
  if (failed) return "FAILED";
  switch (state) {
    case tserver::TABLET_DATA_READY:
      return "RUNNING";
    case tserver::TABLET_DATA_DELETED:
      return "DELETED";
    case tserver::TABLET_DATA_COPYING:
      return "COPYING";
    case tserver::TABLET_DATA_TOMBSTONED:
      return "TOMBSTONED";
    default:
      return "UNKNOWN";
  }
}

}  // namespace

// --- AdminClient --------------------------------------------------------------------

AdminClient::AdminClient(std::shared_ptr<rpc::Messenger> messenger,
                         std::vector<rpc::Sockaddr> masters, MonoDelta timeout)
    : messenger_(std::move(messenger)), masters_(std::move(masters)), timeout_(timeout) {}

AdminClient::~AdminClient() { messenger_->Shutdown(); }

Result<std::unique_ptr<AdminClient>> AdminClient::Create(const std::string& masters,
                                                         MonoDelta timeout) {
  ASSIGN_OR_RETURN(std::vector<rpc::HostPort> hps,
                   rpc::HostPort::ParseList(masters, kDefaultMasterPort));
  std::vector<rpc::Sockaddr> addrs;
  for (const rpc::HostPort& hp : hps) {
    auto resolved = hp.Resolve();
    if (resolved.ok() && !resolved->empty()) addrs.push_back(resolved->front());
  }
  if (addrs.empty()) return Status::NetworkError("no master address resolves", masters);
  rpc::MessengerOptions opts;
  opts.name = "nyala-admin";
  opts.num_reactors = 1;
  ASSIGN_OR_RETURN(std::shared_ptr<rpc::Messenger> messenger, rpc::Messenger::Create(opts));
  return std::unique_ptr<AdminClient>(
      new AdminClient(std::move(messenger), std::move(addrs), timeout));
}

template <typename Proxy, typename Resp>
Result<Resp> AdminClient::CallMasters(
    const std::function<Status(Proxy*, Resp*, rpc::RpcController*)>& call) {
  Status last;
  for (const rpc::Sockaddr& addr : masters_) {
    Proxy proxy(messenger_, addr);
    Resp resp;
    rpc::RpcController rpc;
    rpc.set_timeout(timeout_);
    Status s = call(&proxy, &resp, &rpc);
    if (!s.ok()) {
      last = s.CloneAndPrepend("master " + addr.ToString());
      continue;
    }
    if (resp.has_error()) {
      last = MasterError(resp.error());
      if (TryAnotherMaster(resp.error())) continue;
      return last;
    }
    return resp;
  }
  return last;
}

Result<master::ListTabletsResponsePB> AdminClient::ListTablets(const std::string& table,
                                                               const std::string& tablet_id) {
  master::ListTabletsRequestPB req;
  if (!table.empty()) req.mutable_table()->set_table_name(table);
  req.set_tablet_id(tablet_id);
  return CallMasters<master::MasterServiceProxy, master::ListTabletsResponsePB>(
      [&](master::MasterServiceProxy* proxy, master::ListTabletsResponsePB* resp,
          rpc::RpcController* rpc) { return proxy->ListTablets(req, resp, rpc); });
}

Result<master::GetTableStatisticsResponsePB> AdminClient::GetTableStatistics(
    const std::string& table) {
  master::GetTableStatisticsRequestPB req;
  req.mutable_table()->set_table_name(table);
  return CallMasters<master::MasterServiceProxy, master::GetTableStatisticsResponsePB>(
      [&](master::MasterServiceProxy* proxy, master::GetTableStatisticsResponsePB* resp,
          rpc::RpcController* rpc) { return proxy->GetTableStatistics(req, resp, rpc); });
}

Result<master::ListTabletServersResponsePB> AdminClient::ListTabletServers() {
  return CallMasters<master::MasterServiceProxy, master::ListTabletServersResponsePB>(
      [&](master::MasterServiceProxy* proxy, master::ListTabletServersResponsePB* resp,
          rpc::RpcController* rpc) {
        return proxy->ListTabletServers(master::ListTabletServersRequestPB(), resp, rpc);
      });
}

Status AdminClient::UnregisterTServer(const std::string& uuid) {
  master::UnregisterTServerRequestPB req;
  req.set_uuid(uuid);
  return CallMasters<master::MasterAdminServiceProxy, master::UnregisterTServerResponsePB>(
             [&](master::MasterAdminServiceProxy* proxy, master::UnregisterTServerResponsePB* resp,
                 rpc::RpcController* rpc) { return proxy->UnregisterTServer(req, resp, rpc); })
      .status();
}

Status AdminClient::ChangeTServerState(const std::string& uuid,
                                       master::ChangeTServerStateRequestPB::Change change) {
  master::ChangeTServerStateRequestPB req;
  req.set_uuid(uuid);
  req.set_change(change);
  return CallMasters<master::MasterAdminServiceProxy, master::ChangeTServerStateResponsePB>(
             [&](master::MasterAdminServiceProxy* proxy, master::ChangeTServerStateResponsePB* resp,
                 rpc::RpcController* rpc) { return proxy->ChangeTServerState(req, resp, rpc); })
      .status();
}

Status AdminClient::MoveReplica(const master::MoveReplicaRequestPB& req) {
  return CallMasters<master::MasterAdminServiceProxy, master::MoveReplicaResponsePB>(
             [&](master::MasterAdminServiceProxy* proxy, master::MoveReplicaResponsePB* resp,
                 rpc::RpcController* rpc) { return proxy->MoveReplica(req, resp, rpc); })
      .status();
}

Result<master::SetReplicationFactorResponsePB> AdminClient::SetReplicationFactor(
    const master::SetReplicationFactorRequestPB& req) {
  return CallMasters<master::MasterAdminServiceProxy, master::SetReplicationFactorResponsePB>(
      [&](master::MasterAdminServiceProxy* proxy, master::SetReplicationFactorResponsePB* resp,
          rpc::RpcController* rpc) { return proxy->SetReplicationFactor(req, resp, rpc); });
}

Result<master::RebalanceResponsePB> AdminClient::Rebalance(const master::RebalanceRequestPB& req) {
  return CallMasters<master::MasterAdminServiceProxy, master::RebalanceResponsePB>(
      [&](master::MasterAdminServiceProxy* proxy, master::RebalanceResponsePB* resp,
          rpc::RpcController* rpc) { return proxy->Rebalance(req, resp, rpc); });
}

Status AdminClient::CallTServer(const std::string& address,
                                const std::function<Status(tserver::TabletServerAdminServiceProxy*,
                                                           rpc::RpcController*)>& call) {
  ASSIGN_OR_RETURN(rpc::Sockaddr addr, ResolveOne(address, kDefaultTServerPort));
  tserver::TabletServerAdminServiceProxy proxy(messenger_, addr);
  rpc::RpcController rpc;
  rpc.set_timeout(timeout_);
  return call(&proxy, &rpc);
}

Status AdminClient::ChangeConfig(const std::string& address,
                                 const tserver::ChangeConfigRequestPB& req,
                                 tserver::ChangeConfigResponsePB* resp) {
  return CallTServer(address,
                     [&](tserver::TabletServerAdminServiceProxy* p, rpc::RpcController* rpc) {
                       return p->ChangeConfig(req, resp, rpc);
                     });
}

Result<tserver::ListTabletsResponsePB> AdminClient::ListServerTablets(const std::string& address) {
  ASSIGN_OR_RETURN(rpc::Sockaddr addr, ResolveOne(address, kDefaultTServerPort));
  tserver::TabletServerAdminServiceProxy proxy(messenger_, addr);
  tserver::ListTabletsResponsePB resp;
  rpc::RpcController rpc;
  rpc.set_timeout(timeout_);
  RETURN_NOT_OK(proxy.ListTablets(tserver::ListTabletsRequestPB(), &resp, &rpc));
  if (resp.has_error()) {
    Status s = StatusFromPB(resp.error().status());
    if (s.ok()) s = Status::RuntimeError("tablet server error");
    return s.CloneAndPrepend(tserver::TabletServerErrorPB::Code_Name(resp.error().code()));
  }
  return resp;
}

Status AdminClient::LeaderStepDown(const std::string& address,
                                   const tserver::LeaderStepDownRequestPB& req,
                                   tserver::LeaderStepDownResponsePB* resp) {
  return CallTServer(address,
                     [&](tserver::TabletServerAdminServiceProxy* p, rpc::RpcController* rpc) {
                       return p->LeaderStepDown(req, resp, rpc);
                     });
}

// --- Views --------------------------------------------------------------------------

std::string ReplicaView::Health() const {
  if (!asked) return ts_live ? "NOT_ASKED" : "DEAD";
  if (!server_status.ok()) return "UNREACHABLE";
  if (!hosted) return "NOT_HOSTED";
  return state;
}

size_t TabletView::NumVoters() const {
  size_t n = 0;
  for (const ReplicaView& r : replicas) n += r.learner ? 0 : 1;
  return n;
}

const ReplicaView* TabletView::Leader() const {
  uint64_t newest = 0;
  for (const ReplicaView& r : replicas) {
    if (r.running() && r.live_consensus) newest = std::max(newest, r.term);
  }
  for (const ReplicaView& r : replicas) {
    if (r.running() && r.live_consensus && r.role == "LEADER" && r.term == newest) return &r;
  }
  return nullptr;
}

std::optional<int64_t> TabletView::Lag(const ReplicaView& r) const {
  const ReplicaView* leader = Leader();
  if (leader == nullptr || !r.live_consensus) return std::nullopt;
  if (r.applied_index >= leader->committed_index) return 0;
  return int64_t(leader->committed_index - r.applied_index);
}

std::string FollowerStateWord(master::FollowerStatusPB::State state) {
  switch (state) {
    case master::FollowerStatusPB::PROBE:
      return "probing";
    case master::FollowerStatusPB::REPLICATE:
      return "replicating";
    case master::FollowerStatusPB::NEEDS_COPY:
      return "needs a copy";
    case master::FollowerStatusPB::CATCHING_UP_FROM_LOG:
      return "catching up from the log on disk";
    default:
      return "unknown";
  }
}

std::string TabletView::CatchUp(const ReplicaView& r) const {
  if (!r.copy.empty()) return r.copy;
  const ReplicaView* leader = Leader();
  if (leader == nullptr || leader == &r) return "";
  auto it = leader->follower_states.find(r.ts_uuid);
  return it == leader->follower_states.end() ? "" : it->second;
}

Result<std::vector<TabletView>> GatherTablets(AdminClient* admin, const std::string& table,
                                              const std::string& tablet_id, bool ask_servers) {
  ASSIGN_OR_RETURN(master::ListTabletsResponsePB listed, admin->ListTablets(table, tablet_id));
  std::vector<TabletView> out;
  std::map<std::string, bool> servers;  // address -> live
  for (const auto& t : listed.tablets()) {
    TabletView& v = out.emplace_back();
    v.tablet_id = t.tablet_id();
    v.table_name = t.table_name();
    v.master_state = master::TabletStatePB_Name(t.state());
    v.master_leader_uuid = t.leader_uuid();
    v.master_term = t.term();
    v.num_replicas = t.num_replicas();
    if (t.has_replacement()) v.replacement = t.replacement().description();
    for (const auto& r : t.replicas()) {
      ReplicaView& rv = v.replicas.emplace_back();
      rv.ts_uuid = r.ts_uuid();
      if (r.ts_info().rpc_addresses_size() > 0) {
        const auto& hp = r.ts_info().rpc_addresses(0);
        rv.address = rpc::HostPort(hp.host(), uint16_t(hp.port())).ToString();
      }
      rv.ts_live = r.ts_live();
      rv.learner = r.role() == master::LEARNER;
      rv.role = RoleName(r.role());
      if (r.reported()) {
        rv.reported = true;
        CopyConsensus(r.consensus(), &rv);
      }
      if (!rv.address.empty() && rv.ts_live) servers[rv.address] = true;
    }
  }
  if (!ask_servers) return out;

  // Every server at once: unreachable servers cost one timeout, not one each.
  std::vector<std::string> addresses;
  for (const auto& [address, live] : servers) addresses.push_back(address);
  std::vector<Result<tserver::ListTabletsResponsePB>> results(addresses.size(),
                                                              Status::Incomplete("not asked"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < addresses.size(); i++) {
    threads.emplace_back([&, i] { results[i] = admin->ListServerTablets(addresses[i]); });
  }
  for (std::thread& t : threads) t.join();
  std::map<std::string, const Result<tserver::ListTabletsResponsePB>*> by_address;
  for (size_t i = 0; i < addresses.size(); i++) by_address[addresses[i]] = &results[i];
  for (TabletView& v : out) {
    for (ReplicaView& rv : v.replicas) {
      auto it = by_address.find(rv.address);
      if (it == by_address.end()) continue;  // dead or unregistered: not asked
      const Result<tserver::ListTabletsResponsePB>& answer = *it->second;
      rv.asked = true;
      if (!answer.ok()) {
        rv.server_status = answer.status();
        continue;
      }
      for (const auto& t : answer->tablets()) {
        if (t.tablet_id() != v.tablet_id) continue;
        rv.hosted = true;
        rv.state = StateName(t.state(), t.has_failure());
        if (t.has_failure()) rv.failure = StatusFromPB(t.failure()).ToString();
        if (t.has_copy()) {
          rv.copy = "copying from " + t.copy().source_uuid() + ": " +
                    HumanReadableBytes(t.copy().bytes_done()) + " of " +
                    (t.copy().bytes_total() > 0 ? HumanReadableBytes(t.copy().bytes_total())
                                                : std::string("?"));
        }
        if (t.has_consensus()) {
          rv.live_consensus = true;
          rv.role = RoleName(t.consensus().role());
          CopyConsensus(t.consensus(), &rv);
        }
      }
    }
  }
  return out;
}

}  // namespace nyala::tools
