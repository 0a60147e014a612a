// nyala-master with three real nyala-tserver processes (MiniCluster): tables of
// several partition shapes placed and running (each tablet server's ListTablets
// agrees with GetTableLocations), the catalog across master restarts (SIGTERM and
// SIGKILL), a killed tablet server reported dead, bad input, and the operator RPCs of
// replication: the master's ListTablets and the tablet servers' ListTablets and
// LeaderStepDown (with the leadership metrics they move).
#include <glog/logging.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/row_operations.h"
#include "common/test_util.h"
#include "master/master-test-util.h"
#include "nyala/row.h"
#include "nyala/schema.h"
#include "rpc/rpc_controller.h"
#include "test/mini_cluster.h"
#include "tserver/tserver_admin.pb.h"
#include "tserver/tserver_admin.proxy.h"

namespace nyala::test {

using namespace nyala::master;  // NOLINT(build/namespaces)

namespace {

// The shared test-schema request builder.
CreateTableRequestPB MakeRequest(const std::string& name, int hash_buckets, bool range,
                                 const std::vector<int64_t>& splits = {},
                                 const std::vector<std::pair<int64_t, int64_t>>& bounds = {},
                                 int num_replicas = 1) {
  return MakeCreateTableRequest(name, hash_buckets, range, splits, bounds, num_replicas);
}

}  // namespace

class MasterITest : public NyalaTest {
 protected:
  void SetUp() override {
    NyalaTest::SetUp();
    MiniClusterOptions o;
    o.root_dir = test_dir();
    o.num_tservers = 3;
    o.master_flags = {"--tserver_unresponsive_timeout_ms=3000"};
    cluster_ = std::make_unique<MiniCluster>(o);
    ASSERT_OK(cluster_->Start());
  }
  void TearDown() override {
    if (cluster_) EXPECT_OK(cluster_->Shutdown());
    cluster_.reset();
    NyalaTest::TearDown();
  }

  std::string CreateRunningTable(const CreateTableRequestPB& req) {
    std::string id;
    Status s = cluster_->CreateTable(req, &id);
    EXPECT_TRUE(s.ok()) << req.name() << ": " << s.ToString();
    if (!s.ok()) return "";
    s = cluster_->WaitForTableRunning(id, MonoDelta::FromSeconds(60));
    EXPECT_TRUE(s.ok()) << req.name() << ": " << s.ToString();
    return id;
  }
  GetTableLocationsResponsePB Locations(const std::string& table_id) {
    GetTableLocationsRequestPB req;
    req.mutable_table()->set_table_id(table_id);
    GetTableLocationsResponsePB resp;
    EXPECT_OK(cluster_->CallMaster(&master::MasterServiceProxy::GetTableLocations, req, &resp));
    return resp;
  }
  // tablet id -> uuid of each server whose ListTablets lists it.
  std::map<std::string, std::set<std::string>> TabletsOnServers() {
    std::map<std::string, std::set<std::string>> out;
    for (int i = 0; i < cluster_->num_tservers(); i++) {
      if (!cluster_->tserver(i)->IsRunning()) continue;
      tserver::ListTabletsResponsePB resp;
      rpc::RpcController rpc;
      rpc.set_timeout(MonoDelta::FromSeconds(10));
      EXPECT_OK(cluster_->tserver_admin_proxy(i).ListTablets(tserver::ListTabletsRequestPB(), &resp,
                                                             &rpc));
      for (const auto& t : resp.tablets()) {
        if (t.state() != tserver::TABLET_DATA_DELETED) {
          out[t.tablet_id()].insert(cluster_->tserver(i)->uuid());
        }
      }
    }
    return out;
  }
  // A comparable summary of a table's locations: tablet, partition, replica uuids.
  std::string Summary(const GetTableLocationsResponsePB& r) {
    std::string out;
    for (const auto& loc : r.tablet_locations()) {
      out += loc.tablet_id() + " " + loc.partition().ShortDebugString() + " [";
      for (const auto& rep : loc.replicas()) out += rep.ts_info().permanent_uuid() + " ";
      out += "]\n";
    }
    return out;
  }
  ListTabletServersResponsePB Servers() {
    ListTabletServersResponsePB resp;
    EXPECT_OK(cluster_->ListTabletServers(&resp));
    return resp;
  }

  std::unique_ptr<MiniCluster> cluster_;
};

TEST_F(MasterITest, TablesOfEveryShapeArePlacedAndRunning) {
  const std::vector<std::pair<CreateTableRequestPB, int>> shapes = {
      {MakeRequest("hash_only", 6, false), 6},
      {MakeRequest("range_splits", 0, true, {100, 200, 300}), 4},
      {MakeRequest("hash_by_range", 3, true, {0}), 6},
      {MakeRequest("bounded_ranges", 0, true, {15}, {{0, 10}, {10, 20}, {50, 60}}), 4},
  };
  std::map<std::string, std::string> expected;  // tablet -> server, from the master
  for (const auto& [req, tablets] : shapes) {
    const std::string id = CreateRunningTable(req);
    ASSERT_FALSE(id.empty());
    auto locs = Locations(id);
    ASSERT_FALSE(locs.has_error()) << locs.error().ShortDebugString();
    ASSERT_EQ(tablets, locs.tablet_locations_size()) << req.name();
    for (const auto& loc : locs.tablet_locations()) {
      ASSERT_EQ(1, loc.replicas_size());
      EXPECT_EQ(LEADER, loc.replicas(0).role());
      expected[loc.tablet_id()] = loc.replicas(0).ts_info().permanent_uuid();
    }
  }
  // Every server agrees, and holds nothing else.
  auto actual = TabletsOnServers();
  ASSERT_EQ(expected.size(), actual.size());
  std::set<std::string> used;
  for (const auto& [tablet, uuid] : expected) {
    ASSERT_EQ(1u, actual[tablet].size()) << tablet;
    EXPECT_EQ(uuid, *actual[tablet].begin()) << tablet;
    used.insert(uuid);
  }
  EXPECT_EQ(3u, used.size());  // 20 tablets spread over all three servers

  // Deleting a table drops its tablets on the servers.
  DeleteTableRequestPB del;
  del.mutable_table()->set_table_name("hash_only");
  DeleteTableResponsePB del_resp;
  ASSERT_OK(cluster_->CallMaster(&master::MasterServiceProxy::DeleteTable, del, &del_resp));
  ASSERT_FALSE(del_resp.has_error());
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30),
                    [&] { ASSERT_EQ(expected.size() - 6, TabletsOnServers().size()); });
}

TEST_F(MasterITest, MasterRestartsKeepTheCatalog) {
  std::map<std::string, std::string> before;  // table id -> summary
  for (const auto& req : {MakeRequest("a", 4, false), MakeRequest("b", 0, true, {1, 2, 3}),
                          MakeRequest("c", 2, true, {0})}) {
    const std::string id = CreateRunningTable(req);
    ASSERT_FALSE(id.empty());
    before[id] = Summary(Locations(id));
  }
  ListTablesResponsePB tables_before;
  ASSERT_OK(cluster_->CallMaster(&master::MasterServiceProxy::ListTables, ListTablesRequestPB(),
                                 &tables_before));
  for (bool kill : {false, true}) {
    SCOPED_TRACE(kill ? "SIGKILL" : "SIGTERM");
    if (kill) {
      cluster_->master()->Kill(9);
      ASSERT_OK(cluster_->master()->Start());
    } else {
      ASSERT_OK(cluster_->master()->Restart());
    }
    ListTablesResponsePB tables_after;
    ASSERT_OK(cluster_->CallMaster(&master::MasterServiceProxy::ListTables, ListTablesRequestPB(),
                                   &tables_after));
    EXPECT_EQ(tables_before.SerializeAsString(), tables_after.SerializeAsString());
    // Replicas reappear as the tablet servers register again.
    ASSERT_OK(cluster_->WaitForTabletServers(3, MonoDelta::FromSeconds(30)));
    for (const auto& [id, summary] : before) {
      ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30),
                        [&] { ASSERT_EQ(summary, Summary(Locations(id))); });
    }
  }
}

TEST_F(MasterITest, KilledTabletServerIsReportedDead) {
  const std::string id = CreateRunningTable(MakeRequest("t", 9, false));
  ASSERT_FALSE(id.empty());
  const std::string victim = cluster_->tserver(1)->uuid();
  cluster_->tserver(1)->Kill(9);
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    auto servers = Servers();
    bool found = false;
    for (const auto& s : servers.servers()) {
      if (s.instance_id().permanent_uuid() != victim) {
        EXPECT_TRUE(s.live());
        continue;
      }
      found = true;
      ASSERT_FALSE(s.live());
      EXPECT_GE(s.millis_since_heartbeat(), 3000);
    }
    ASSERT_TRUE(found);
  });
  const auto locs = Locations(id);
  for (const auto& loc : locs.tablet_locations()) {
    for (const auto& r : loc.replicas()) EXPECT_NE(victim, r.ts_info().permanent_uuid());
  }
  ASSERT_OK(cluster_->tserver(1)->Start());
  ASSERT_OK(cluster_->WaitForTabletServers(3, MonoDelta::FromSeconds(30)));
}

TEST_F(MasterITest, BadInput) {
  // Each invalid CreateTable, with its code.
  const std::vector<std::pair<CreateTableRequestPB, MasterErrorPB::Code>> bad = {
      {MakeRequest("", 0, false), MasterErrorPB::INVALID_TABLE_NAME},
      {MakeRequest(std::string(300, 'x'), 0, false), MasterErrorPB::INVALID_TABLE_NAME},
      {MakeRequest("tab\tname", 0, false), MasterErrorPB::INVALID_TABLE_NAME},
      {MakeRequest("onebucket", 1, false), MasterErrorPB::INVALID_PARTITION_SCHEMA},
      {MakeRequest("overlap", 0, true, {}, {{0, 20}, {10, 30}}),
       MasterErrorPB::INVALID_PARTITION_SCHEMA},
      {MakeRequest("even", 0, false, {}, {}, 2), MasterErrorPB::ILLEGAL_REPLICATION_FACTOR},
      {MakeRequest("nine", 0, false, {}, {}, 9), MasterErrorPB::ILLEGAL_REPLICATION_FACTOR},
      // Five replicas need five live tablet servers; the cluster has three.
      {MakeRequest("five", 0, false, {}, {}, 5), MasterErrorPB::REPLICATION_FACTOR_TOO_HIGH},
  };
  for (const auto& [req, code] : bad) {
    CreateTableResponsePB resp;
    ASSERT_OK(cluster_->CallMaster(&master::MasterServiceProxy::CreateTable, req, &resp));
    EXPECT_EQ(MasterErrorPB::Code_Name(code), MasterErrorPB::Code_Name(resp.error().code()))
        << req.name().substr(0, 20) << ": " << resp.error().status().message();
  }
  {
    auto req = MakeRequest("dupcol", 0, false);
    *req.mutable_schema()->add_columns() = req.schema().columns(1);
    CreateTableResponsePB resp;
    ASSERT_OK(cluster_->CallMaster(&master::MasterServiceProxy::CreateTable, req, &resp));
    EXPECT_EQ(MasterErrorPB::INVALID_SCHEMA, resp.error().code());
    auto req2 = MakeRequest("hashv", 0, false);
    auto* d = req2.mutable_partition_schema()->add_hash_dimensions();
    d->add_columns("v");
    d->set_num_buckets(4);
    ASSERT_OK(cluster_->CallMaster(&master::MasterServiceProxy::CreateTable, req2, &resp));
    EXPECT_EQ(MasterErrorPB::INVALID_PARTITION_SCHEMA, resp.error().code());
  }
  const std::string id = CreateRunningTable(MakeRequest("present", 0, true, {10}));
  ASSERT_FALSE(id.empty());
  {
    CreateTableResponsePB resp;
    ASSERT_OK(cluster_->CallMaster(&master::MasterServiceProxy::CreateTable,
                                   MakeRequest("present", 0, false), &resp));
    EXPECT_EQ(MasterErrorPB::TABLE_ALREADY_PRESENT, resp.error().code());
  }

  // An unknown table in every call.
  TableIdentifierPB unknown;
  unknown.set_table_name("no_such_table");
  {
    IsCreateTableDoneRequestPB req;
    *req.mutable_table() = unknown;
    IsCreateTableDoneResponsePB resp;
    ASSERT_OK(cluster_->CallMaster(&master::MasterServiceProxy::IsCreateTableDone, req, &resp));
    EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, resp.error().code());
  }
  {
    DeleteTableRequestPB req;
    *req.mutable_table() = unknown;
    DeleteTableResponsePB resp;
    ASSERT_OK(cluster_->CallMaster(&master::MasterServiceProxy::DeleteTable, req, &resp));
    EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, resp.error().code());
  }
  {
    GetTableSchemaRequestPB req;
    *req.mutable_table() = unknown;
    GetTableSchemaResponsePB resp;
    ASSERT_OK(cluster_->CallMaster(&master::MasterServiceProxy::GetTableSchema, req, &resp));
    EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, resp.error().code());
  }
  {
    GetTableLocationsRequestPB req;
    *req.mutable_table() = unknown;
    GetTableLocationsResponsePB resp;
    ASSERT_OK(cluster_->CallMaster(&master::MasterServiceProxy::GetTableLocations, req, &resp));
    EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, resp.error().code());
  }
  // A malformed partition key range.
  {
    GetTableLocationsRequestPB req;
    req.mutable_table()->set_table_id(id);
    req.set_partition_key_start("\xff");
    req.set_partition_key_end("\x01");
    GetTableLocationsResponsePB resp;
    ASSERT_OK(cluster_->CallMaster(&master::MasterServiceProxy::GetTableLocations, req, &resp));
    EXPECT_EQ(MasterErrorPB::INVALID_ARGUMENT, resp.error().code());
  }
  // A heartbeat from a server the master never heard of: asked to register.
  {
    TSHeartbeatRequestPB req;
    req.mutable_common()->set_permanent_uuid("ffffffffffffffffffffffffffffffff");
    req.mutable_common()->set_instance_seqno(1);
    req.mutable_tablet_report()->set_is_incremental(true);
    TSHeartbeatResponsePB resp;
    ASSERT_OK(cluster_->CallMaster(&master::MasterServiceProxy::TSHeartbeat, req, &resp));
    EXPECT_FALSE(resp.has_error());
    EXPECT_TRUE(resp.needs_reregister());
  }
  // The master still serves.
  EXPECT_EQ(3, int(Servers().servers_size()));
  PingResponsePB pong;
  EXPECT_OK(cluster_->CallMaster(&master::MasterServiceProxy::Ping, PingRequestPB(), &pong));
}

namespace {

int64_t SeriesValue(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + series.size() + 2));
}

}  // namespace

// Leaders of a new replicated table are spread as placement chose: the first
// replica of each tablet is created once the others can vote for it, and wins its
// first campaign, so 6 tablets of 3 replicas on 3 servers have 2 leaders on each
// (an election lost to a slow server may move one: each leads 1 to 3).
TEST_F(MasterITest, LeadersOfANewTableAreSpreadOverTheServers) {
  for (int round = 0; round < 2; round++) {
    const std::string name = "spread" + std::to_string(round);
    const std::string id = CreateRunningTable(MakeRequest(name, 6, false, {}, {}, 3));
    ASSERT_FALSE(id.empty());
    std::map<std::string, int> leads;
    ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
      leads.clear();
      auto locs = Locations(id);
      ASSERT_FALSE(locs.has_error()) << locs.error().ShortDebugString();
      ASSERT_EQ(6, locs.tablet_locations_size());
      for (const auto& loc : locs.tablet_locations()) {
        ASSERT_EQ(3, loc.replicas_size());
        ASSERT_EQ(LEADER, loc.replicas(0).role()) << loc.tablet_id();
        leads[loc.replicas(0).ts_info().permanent_uuid()]++;
      }
    });
    std::string spread;
    for (const auto& [uuid, n] : leads) spread += " " + std::to_string(n);
    LOG(INFO) << name << ": leaders per server:" << spread;
    ASSERT_EQ(3u, leads.size()) << spread;
    for (const auto& [uuid, n] : leads) {
      EXPECT_GE(n, 1) << spread;
      EXPECT_LE(n, 3) << spread;
    }
  }
}

// The master's ListTablets lists every replica with its server, liveness, role and
// reported state, filtered by table or tablet; a follower refuses LeaderStepDown
// naming the leader; the leader hands leadership to the voter asked for (or one of
// its choosing) and the master reports the new leader; the servers count it.
TEST_F(MasterITest, ListTabletsAndLeaderStepDown) {
  const std::string id = CreateRunningTable(MakeRequest("rf3", 2, false, {}, {}, 3));
  ASSERT_FALSE(id.empty());
  ASSERT_FALSE(CreateRunningTable(MakeRequest("rf1", 0, false)).empty());
  std::map<std::string, int> index_of;  // server uuid -> tserver index
  for (int i = 0; i < cluster_->num_tservers(); i++) index_of[cluster_->tserver(i)->uuid()] = i;

  auto list = [&](const std::string& table, const std::string& tablet) {
    ListTabletsRequestPB req;
    if (!table.empty()) req.mutable_table()->set_table_name(table);
    req.set_tablet_id(tablet);
    ListTabletsResponsePB resp;
    EXPECT_OK(cluster_->CallMaster(&master::MasterServiceProxy::ListTablets, req, &resp));
    return resp;
  };
  ListTabletsResponsePB all = list("", "");
  ASSERT_FALSE(all.has_error()) << all.error().ShortDebugString();
  ASSERT_EQ(3, all.tablets_size());  // rf1's one tablet, then rf3's two (by table name)
  EXPECT_EQ("rf1", all.tablets(0).table_name());
  EXPECT_EQ(1, all.tablets(0).replicas_size());
  ListTabletsResponsePB rf3;
  // Every replica reports once it knows its leader (the reports follow heartbeats).
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    rf3 = list("rf3", "");
    ASSERT_EQ(2, rf3.tablets_size());
    for (const auto& t : rf3.tablets()) {
      EXPECT_EQ("rf3", t.table_name());
      EXPECT_EQ(id, t.table_id());
      EXPECT_EQ(TABLET_RUNNING, t.state());
      EXPECT_EQ(3, t.num_replicas());
      ASSERT_EQ(3, t.replicas_size());
      int leaders = 0;
      for (const auto& r : t.replicas()) {
        EXPECT_TRUE(r.ts_live());
        ASSERT_EQ(1, r.ts_info().rpc_addresses_size());
        EXPECT_EQ(cluster_->tserver(index_of.at(r.ts_uuid()))->rpc_addr().port(),
                  r.ts_info().rpc_addresses(0).port());
        ASSERT_TRUE(r.reported());
        ASSERT_EQ(t.leader_uuid(), r.consensus().leader_uuid());
        EXPECT_EQ(3, r.consensus().voter_uuids_size());
        if (r.role() == LEADER) {
          leaders++;
          EXPECT_EQ(t.leader_uuid(), r.ts_uuid());
          EXPECT_EQ(t.term(), r.consensus().term());
        } else {
          EXPECT_EQ(FOLLOWER, r.role());
        }
      }
      EXPECT_EQ(1, leaders);
    }
  });
  const auto& tablet = rf3.tablets(0);
  const std::string tablet_id = tablet.tablet_id();
  ListTabletsResponsePB one = list("", tablet_id);
  ASSERT_EQ(1, one.tablets_size());
  EXPECT_EQ(tablet_id, one.tablets(0).tablet_id());
  EXPECT_EQ(MasterErrorPB::TABLET_NOT_FOUND, list("", "no-such-tablet").error().code());
  EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, list("no-such-table", "").error().code());

  // The tablet servers' ListTablets: each replica's state now.
  const std::string leader = tablet.leader_uuid();
  std::string follower;
  for (const auto& r : tablet.replicas()) {
    if (r.ts_uuid() != leader && follower.empty()) follower = r.ts_uuid();
  }
  auto admin = [&](const std::string& uuid) {
    return cluster_->tserver_admin_proxy(index_of.at(uuid));
  };
  auto server_state = [&](const std::string& uuid) {
    tserver::ListTabletsResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(10));
    EXPECT_OK(admin(uuid).ListTablets(tserver::ListTabletsRequestPB(), &resp, &rpc));
    for (const auto& t : resp.tablets()) {
      if (t.tablet_id() == tablet_id) return t.consensus();
    }
    ADD_FAILURE() << uuid << " does not list " << tablet_id;
    return master::ConsensusStatePB();
  };
  const master::ConsensusStatePB lc = server_state(leader);
  EXPECT_EQ(master::LEADER, lc.role());
  EXPECT_EQ(leader, lc.leader_uuid());
  EXPECT_GE(lc.committed_index(), 1u);  // the leader's no-op
  EXPECT_EQ(3, lc.voter_uuids_size());
  EXPECT_EQ(master::FOLLOWER, server_state(follower).role());

  auto step_down = [&](const std::string& to_uuid, const std::string& at_uuid,
                       const std::string& target) {
    tserver::LeaderStepDownRequestPB req;
    req.set_dest_uuid(to_uuid);
    req.set_tablet_id(tablet_id);
    req.set_new_leader_uuid(target);
    tserver::LeaderStepDownResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(10));
    EXPECT_OK(admin(at_uuid).LeaderStepDown(req, &resp, &rpc));
    return resp;
  };
  // A follower refuses, naming the leader; a wrong server or tablet is refused too.
  auto resp = step_down(follower, follower, "");
  EXPECT_EQ(tserver::TabletServerErrorPB::NOT_THE_LEADER, resp.error().code());
  EXPECT_EQ(leader, resp.error().leader_uuid());
  EXPECT_EQ(tserver::TabletServerErrorPB::WRONG_SERVER_UUID,
            step_down(follower, leader, "").error().code());
  {
    tserver::LeaderStepDownRequestPB req;
    req.set_tablet_id("no-such-tablet");
    tserver::LeaderStepDownResponsePB r;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(10));
    ASSERT_OK(admin(leader).LeaderStepDown(req, &r, &rpc));
    EXPECT_EQ(tserver::TabletServerErrorPB::TABLET_NOT_FOUND, r.error().code());
  }
  // Only another voter may be the target.
  EXPECT_EQ(tserver::TabletServerErrorPB::INVALID_CONFIG,
            step_down(leader, leader, leader).error().code());
  EXPECT_EQ(tserver::TabletServerErrorPB::INVALID_CONFIG,
            step_down(leader, leader, "0123456789abcdef0123456789abcdef").error().code());

  // To the follower asked for: the master reports it leading, in a newer term.
  resp = step_down(leader, leader, follower);
  ASSERT_FALSE(resp.has_error()) << resp.error().ShortDebugString();
  EXPECT_EQ(follower, resp.new_leader_uuid());
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    auto t = list("", tablet_id);
    ASSERT_EQ(1, t.tablets_size());
    ASSERT_EQ(follower, t.tablets(0).leader_uuid());
    EXPECT_GT(t.tablets(0).term(), tablet.term());
  });
  EXPECT_EQ(master::LEADER, server_state(follower).role());
  EXPECT_EQ(master::FOLLOWER, server_state(leader).role());
  // Without a target: one of the others (the first of the configuration it knows).
  resp = step_down(follower, follower, "");
  ASSERT_FALSE(resp.has_error()) << resp.error().ShortDebugString();
  const std::string third = resp.new_leader_uuid();
  EXPECT_NE(follower, third);
  ASSERT_EQ(1, index_of.count(third));
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    ASSERT_EQ(third, list("", tablet_id).tablets(0).leader_uuid());
  });

  // The leadership metrics: the old leader handed over once and lost the lead; the
  // follower won it by the transfer and handed it on; every replica saw new leaders.
  auto metrics = [&](const std::string& uuid) {
    return HttpGet(cluster_->tserver(index_of.at(uuid))->http_port(), "/metrics_prometheus");
  };
  const std::string old_leader = metrics(leader);
  EXPECT_EQ(1, SeriesValue(old_leader, "tserver_leader_step_downs_total")) << old_leader;
  EXPECT_GE(SeriesValue(old_leader, "tserver_raft_leaderships_lost_total"), 1);
  const std::string middle = metrics(follower);
  EXPECT_EQ(1, SeriesValue(middle, "tserver_leader_step_downs_total"));
  EXPECT_GE(SeriesValue(middle, "tserver_raft_leaderships_won_total"), 1);
  EXPECT_GE(SeriesValue(middle, "tserver_raft_leaderships_lost_total"), 1);
  for (const auto& [uuid, i] : index_of) {
    const std::string text = metrics(uuid);
    // rf3's two tablets each had a first leader and this one two more: 4 leaders and
    // 4 terms seen by every server (all three hold both tablets), or 3 if a replica's
    // first change came before its tablet attached the group (not counted).
    EXPECT_GE(SeriesValue(text, "tserver_raft_leader_changes_total"), 3) << uuid;
    EXPECT_GE(SeriesValue(text, "tserver_raft_term_changes_total"), 3) << uuid;
  }
}

}  // namespace nyala::test
