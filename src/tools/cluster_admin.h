// What the operator commands about replication (`tablet list`, `tablet
// leader_step_down`, `tablet change_config`, `table set_replication_factor`, `cluster
// ksck`, `cluster rebalance`) and about tablet servers (`tserver list`, `tserver
// unregister`, `tserver state`, `tserver decommission`) ask the cluster, and the
// picture of each tablet's replicas they build from the answers.
//
// These are admin calls the client library does not offer: the master's ListTablets
// (every tablet's replicas with their last reported consensus states),
// ListTabletServers with each server's maintenance state, MasterAdminService, and the
// tablet servers' ListTablets and LeaderStepDown (TabletServerAdminService). So, like
// Kudu's tools, this file talks to the services through their generated proxies; it
// is the only part of the CLI that includes rpc/ and the service protos.
//
// Freshness: a replica's indexes in the master's answer are those of its last report
// (sent when its role, term, leader or configuration changes), so lag is computed
// from what the tablet servers say now; the master's report fills in only for a
// replica whose server could not be asked.
//
// Thread-safety: AdminClient is thread-safe (its calls may run concurrently); the
// views are plain values.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "master/master.pb.h"
#include "nyala/monotime.h"
#include "tserver/tserver_admin.pb.h"

namespace nyala::rpc {
class Messenger;
class RpcController;
class Sockaddr;
}  // namespace nyala::rpc
namespace nyala::master {
class MasterServiceProxy;
class MasterAdminServiceProxy;
}  // namespace nyala::master
namespace nyala::tserver {
class TabletServerAdminServiceProxy;
}  // namespace nyala::tserver

namespace nyala::tools {

class AdminClient {
 public:
  // A client of the masters `masters` (comma-separated host[:port]); every call waits
  // at most `timeout`. NetworkError when no master address resolves.
  static Result<std::unique_ptr<AdminClient>> Create(const std::string& masters, MonoDelta timeout);
  ~AdminClient();
  AdminClient(const AdminClient&) = delete;
  AdminClient& operator=(const AdminClient&) = delete;

  // The master's ListTablets: of table `table` ("" for every table), or only tablet
  // `tablet_id` when it is set. Tries each master in turn while one is unreachable
  // or not the leader; a MasterErrorPB becomes a Status naming its code.
  Result<master::ListTabletsResponsePB> ListTablets(const std::string& table,
                                                    const std::string& tablet_id = "");
  // The master's GetTableStatistics of table `table`, like ListTablets.
  Result<master::GetTableStatisticsResponsePB> GetTableStatistics(const std::string& table);
  // The master's ListTabletServers, like ListTablets.
  Result<master::ListTabletServersResponsePB> ListTabletServers();
  // MasterAdminService.UnregisterTServer / ChangeTServerState of server `uuid`; the
  // master's refusal becomes a Status naming its code (TABLET_SERVER_IS_LIVE...).
  Status UnregisterTServer(const std::string& uuid);
  Status ChangeTServerState(const std::string& uuid,
                            master::ChangeTServerStateRequestPB::Change change);
  // MasterAdminService.MoveReplica, SetReplicationFactor and Rebalance; the master's
  // refusal becomes a Status naming its code.
  Status MoveReplica(const master::MoveReplicaRequestPB& req);
  Result<master::SetReplicationFactorResponsePB> SetReplicationFactor(
      const master::SetReplicationFactorRequestPB& req);
  Result<master::RebalanceResponsePB> Rebalance(const master::RebalanceRequestPB& req);
  // TabletServerAdminService.ChangeConfig at `address` (the tablet's leader). The RPC's
  // status; the response's own error is the caller's to read.
  Status ChangeConfig(const std::string& address, const tserver::ChangeConfigRequestPB& req,
                      tserver::ChangeConfigResponsePB* resp);
  // TabletServerAdminService.ListTablets of the server at `address` ("host:port").
  Result<tserver::ListTabletsResponsePB> ListServerTablets(const std::string& address);
  // TabletServerAdminService.LeaderStepDown at `address`. The RPC's status; the
  // response's own error is the caller's to read.
  Status LeaderStepDown(const std::string& address, const tserver::LeaderStepDownRequestPB& req,
                        tserver::LeaderStepDownResponsePB* resp);

  MonoDelta timeout() const { return timeout_; }

 private:
  AdminClient(std::shared_ptr<rpc::Messenger> messenger, std::vector<rpc::Sockaddr> masters,
              MonoDelta timeout);
  // Runs `call` against each master in turn while one is unreachable or not the
  // leader; a MasterErrorPB in the response becomes a Status naming its code.
  template <typename Proxy, typename Resp>
  Result<Resp> CallMasters(const std::function<Status(Proxy*, Resp*, rpc::RpcController*)>& call);
  // Runs `call` against the tablet server at `address` with this client's timeout.
  Status CallTServer(const std::string& address,
                     const std::function<Status(tserver::TabletServerAdminServiceProxy*,
                                                rpc::RpcController*)>& call);

  const std::shared_ptr<rpc::Messenger> messenger_;
  const std::vector<rpc::Sockaddr> masters_;
  const MonoDelta timeout_;
};

// One replica of a tablet, as the master places it and as its server sees it.
struct ReplicaView {
  std::string ts_uuid;
  std::string address;   // "host:port"; "" when the server never registered
  bool ts_live = false;  // the master hears its heartbeats
  bool learner = false;  // a learner of the configuration the master holds (no vote)

  // What its tablet server said (when `asked`): `server_status` not OK when the
  // server could not be reached; else whether it holds the tablet and in what state.
  bool asked = false;
  Status server_status;
  bool hosted = false;
  std::string state;    // RUNNING, FAILED, DELETED, ...; "" unless hosted
  std::string failure;  // why a FAILED replica stopped
  // A copy its server is fetching: "copying from <uuid>: <done> of <total>"; "" if none.
  std::string copy;

  // The replica's consensus state: the server's own now (`live_consensus`), else the
  // master's last report (`reported`), else unknown.
  bool live_consensus = false;
  bool reported = false;
  std::string role = "UNKNOWN";  // LEADER, FOLLOWER, LEARNER or UNKNOWN
  uint64_t term = 0;
  std::string leader_uuid;
  uint64_t committed_index = 0;
  uint64_t applied_index = 0;
  uint64_t last_index = 0;
  std::vector<std::string> voter_uuids;
  // On a leader: how it replicates to each other member, by uuid (the words of
  // FollowerStateWord).
  std::map<std::string, std::string> follower_states;

  // Reachable, holding the tablet and running it, with a state of its own.
  bool running() const { return asked && server_status.ok() && hosted && state == "RUNNING"; }
  // A short word for tables: RUNNING, FAILED, NOT_HOSTED, UNREACHABLE, DEAD, NOT_ASKED...
  std::string Health() const;
};

struct TabletView {
  std::string tablet_id;
  std::string table_name;
  std::string master_state;        // TABLET_RUNNING, TABLET_CREATING, ...
  std::string master_leader_uuid;  // who the master believes leads ("" none)
  uint64_t master_term = 0;        // the newest term the master heard of
  int num_replicas = 0;
  std::vector<ReplicaView> replicas;  // voters in placement order, then learners
  // A replacement of a failed replica in progress, as the master describes it
  // ("replacing <failed> by <new>: adding learner"); "" when none.
  std::string replacement;

  size_t NumVoters() const;

  // The replica that leads now: a running replica whose own state says LEADER in the
  // newest term any running replica is in. Null when none (also when the servers were
  // not asked).
  const ReplicaView* Leader() const;
  // Entries `r` has yet to apply of what its leader committed (leader's committed
  // index − r's applied index, at least 0); unknown without a leader or without a
  // state of `r`'s own.
  std::optional<int64_t> Lag(const ReplicaView& r) const;
  // How `r` catches up: the copy its server is fetching (ReplicaView::copy), else how
  // the leader replicates to it: "replicating", "probing", "catching up from the log
  // on disk" or "needs a copy"; "" for the leader itself or when unknown.
  std::string CatchUp(const ReplicaView& r) const;
};

// The word `nyala tablet list` and ksck use for a follower's state on its leader.
std::string FollowerStateWord(master::FollowerStatusPB::State state);

// Every tablet of `table` ("" all tables; only `tablet_id` when set) with its
// replicas. With `ask_servers`, asks every tablet server holding one of them that the
// master does not report dead (all at once) for its replicas' states now.
Result<std::vector<TabletView>> GatherTablets(AdminClient* admin, const std::string& table,
                                              const std::string& tablet_id, bool ask_servers);

}  // namespace nyala::tools
