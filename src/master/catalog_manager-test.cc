// CatalogManager against fake tablet servers (master-test-util.h): real
// messengers and RPCs for CreateTablet / DeleteTablet, heartbeats fed directly,
// the background pass run by the test (the fixture: catalog_manager-test-util.h).
// Configurations and replacements: catalog_manager_replicas-test.cc.
#include "master/catalog_manager.h"

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "common/test_util.h"
#include "master/catalog_manager-test-util.h"
#include "master/master-test-util.h"

DECLARE_int32(master_max_tablet_rpcs_per_ts);

namespace nyala::master {

TEST_F(CatalogManagerTest, PartitionShapesArePlacedAndRun) {
  struct Shape {
    CreateTableRequestPB req;
    int tablets;
  };
  std::vector<Shape> shapes = {
      {MakeCreateTableRequest("hash", 4, false), 4},
      {MakeCreateTableRequest("range", 0, true, {10, 20, 30}), 4},
      {MakeCreateTableRequest("hash_range", 2, true, {0, 100}), 6},
      {MakeCreateTableRequest("bounded", 0, true, {5}, {{0, 10}, {20, 30}}), 3},
      {MakeCreateTableRequest("single", 0, false), 1},
      {MakeCreateTableRequest("hash3", 4, false, {}, {}, 3), 4},
      {MakeCreateTableRequest("range3", 0, true, {10, 20}, {}, 3), 3},
  };
  std::map<std::string, int> tablets_per_server;
  for (auto& shape : shapes) {
    SCOPED_TRACE(shape.req.name());
    const std::string id = CreateTable(shape.req);
    ASSERT_FALSE(id.empty());
    ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
    auto locs = Locations(id);
    ASSERT_FALSE(locs.has_error()) << locs.error().ShortDebugString();
    ASSERT_EQ(shape.tablets, locs.tablet_locations_size());
    EXPECT_EQ(300000u, locs.ttl_millis());
    std::string prev_end;
    for (int i = 0; i < locs.tablet_locations_size(); i++) {
      const auto& loc = locs.tablet_locations(i);
      if (i > 0) {
        EXPECT_LE(prev_end, loc.partition().partition_key_start());  // ordered
      }
      prev_end = loc.partition().partition_key_end();
      ASSERT_EQ(shape.req.num_replicas(), loc.replicas_size());
      std::set<std::string> uuids;
      // Every replica was created with the same peers, the leader (the first peer,
      // which campaigned at once) first.
      const auto peers =
          ServerByUuid(loc.replicas(0).ts_info().permanent_uuid())->PeersOf(loc.tablet_id());
      ASSERT_EQ(size_t(loc.replicas_size()), peers.size());
      for (int r = 0; r < loc.replicas_size(); r++) {
        const auto& rep = loc.replicas(r);
        EXPECT_EQ(r == 0 ? LEADER : FOLLOWER, rep.role());
        uuids.insert(rep.ts_info().permanent_uuid());
        FakeTabletServer* ts = ServerByUuid(rep.ts_info().permanent_uuid());
        ASSERT_NE(nullptr, ts);
        EXPECT_TRUE(ts->HasTablet(loc.tablet_id()));
        EXPECT_EQ(ts->addr().port(), rep.ts_info().rpc_addresses(0).port());
        tablets_per_server[rep.ts_info().permanent_uuid()]++;
        const auto mine = ts->PeersOf(loc.tablet_id());
        ASSERT_EQ(peers.size(), mine.size());
        for (size_t i = 0; i < peers.size(); i++) {
          EXPECT_EQ(peers[i].ShortDebugString(), mine[i].ShortDebugString());
        }
        EXPECT_EQ(rep.ts_info().permanent_uuid(), peers[r].permanent_uuid());
        EXPECT_EQ(ts->addr().port(), peers[r].port());
      }
      EXPECT_EQ(size_t(loc.replicas_size()), uuids.size()) << "two replicas on one server";
    }
  }
  // 18 single replicas over 3 servers: power of two choices keeps them close to 6
  // each; the 7 tablets of 3 replicas put 7 more on each.
  ASSERT_EQ(3u, tablets_per_server.size());
  for (const auto& [uuid, n] : tablets_per_server) {
    EXPECT_GE(n, 4 + 7) << uuid;
    EXPECT_LE(n, 8 + 7) << uuid;
  }
}

TEST_F(CatalogManagerTest, EveryInvalidCreateTableHasItsCode) {
  ASSERT_FALSE(CreateTable(MakeCreateTableRequest("exists", 0, false)).empty());
  struct Case {
    std::string what;
    CreateTableRequestPB req;
    MasterErrorPB::Code code;
    std::string message;
  };
  std::vector<Case> cases;
  auto base = [](const std::string& name) { return MakeCreateTableRequest(name, 0, false); };
  cases.push_back({"empty name", base(""), MasterErrorPB::INVALID_TABLE_NAME, "empty"});
  cases.push_back({"long name", base(std::string(257, 'n')), MasterErrorPB::INVALID_TABLE_NAME,
                   "longer than 256"});
  cases.push_back(
      {"control char", base("a\nb"), MasterErrorPB::INVALID_TABLE_NAME, "control character"});
  cases.push_back(
      {"duplicate name", base("exists"), MasterErrorPB::TABLE_ALREADY_PRESENT, "exists"});
  {
    auto r = base("dupcol");
    *r.mutable_schema()->add_columns() = r.schema().columns(1);
    cases.push_back(
        {"duplicate column", r, MasterErrorPB::INVALID_SCHEMA, "duplicate column name: v"});
  }
  {
    auto r = base("keynotfirst");
    r.mutable_schema()->mutable_columns(0)->set_is_key(false);
    r.mutable_schema()->mutable_columns(1)->set_is_key(true);
    r.mutable_schema()->mutable_columns(1)->set_is_nullable(false);
    cases.push_back({"key not first", r, MasterErrorPB::INVALID_SCHEMA, ": v"});
  }
  {
    auto r = base("nullkey");
    r.mutable_schema()->mutable_columns(0)->set_is_nullable(true);
    cases.push_back({"nullable key", r, MasterErrorPB::INVALID_SCHEMA, "nullable: key"});
  }
  {
    auto r = base("nocols");
    r.mutable_schema()->clear_columns();
    cases.push_back({"no columns", r, MasterErrorPB::INVALID_SCHEMA, "no columns"});
  }
  {
    auto r = base("unknownhash");
    auto* d = r.mutable_partition_schema()->add_hash_dimensions();
    d->add_columns("nope");
    d->set_num_buckets(2);
    cases.push_back({"unknown hash column", r, MasterErrorPB::INVALID_PARTITION_SCHEMA, "nope"});
  }
  {
    auto r = base("hashnonkey");
    auto* d = r.mutable_partition_schema()->add_hash_dimensions();
    d->add_columns("v");
    d->set_num_buckets(2);
    cases.push_back(
        {"hash on non-key", r, MasterErrorPB::INVALID_PARTITION_SCHEMA, "not a key column: v"});
  }
  {
    auto r = base("rangenonkey");
    r.mutable_partition_schema()->mutable_range_schema()->add_columns("v");
    cases.push_back(
        {"range on non-key", r, MasterErrorPB::INVALID_PARTITION_SCHEMA, "not a key column: v"});
  }
  cases.push_back({"one bucket", MakeCreateTableRequest("onebucket", 1, false),
                   MasterErrorPB::INVALID_PARTITION_SCHEMA, "fewer than 2 buckets"});
  cases.push_back({"overlapping ranges",
                   MakeCreateTableRequest("overlap", 0, true, {}, {{0, 20}, {10, 30}}),
                   MasterErrorPB::INVALID_PARTITION_SCHEMA, ""});
  cases.push_back({"splits without range columns",
                   MakeCreateTableRequest("splitnorange", 0, false, {5}),
                   MasterErrorPB::INVALID_PARTITION_SCHEMA, ""});
  {
    auto r = MakeCreateTableRequest("badrows", 0, true, {5});
    r.mutable_split_rows_range_bounds()->set_rows("\x02\x01\x08");  // truncated block
    cases.push_back({"malformed split rows", r, MasterErrorPB::INVALID_PARTITION_SCHEMA,
                     "split_rows_range_bounds"});
  }
  cases.push_back({"even replicas", MakeCreateTableRequest("even", 0, false, {}, {}, 2),
                   MasterErrorPB::ILLEGAL_REPLICATION_FACTOR, "odd"});
  cases.push_back({"negative replicas", MakeCreateTableRequest("neg", 0, false, {}, {}, -1),
                   MasterErrorPB::ILLEGAL_REPLICATION_FACTOR, "-1"});
  cases.push_back({"too many replicas", MakeCreateTableRequest("nine", 0, false, {}, {}, 9),
                   MasterErrorPB::ILLEGAL_REPLICATION_FACTOR, "9"});
  cases.push_back({"more replicas than servers",
                   MakeCreateTableRequest("five", 0, false, {}, {}, 5),
                   MasterErrorPB::REPLICATION_FACTOR_TOO_HIGH,
                   "num_replicas 5 needs 5 live tablet servers, 3 are alive: start more tablet "
                   "servers or create the table with num_replicas 1"});
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    MasterErrorPB err = CreateTableError(c.req);
    EXPECT_EQ(MasterErrorPB::Code_Name(c.code), MasterErrorPB::Code_Name(err.code()))
        << err.status().message();
    EXPECT_NE(std::string::npos, err.status().message().find(c.message)) << err.status().message();
  }
  ListTablesResponsePB list;
  cm_->ListTables(ListTablesRequestPB(), &list);
  EXPECT_EQ(1, list.tables_size());  // nothing but "exists" was created
  // Three and seven are odd and within --max_num_replicas; seven needs seven servers.
  EXPECT_FALSE(CreateTable(MakeCreateTableRequest("three", 3, false, {}, {}, 3)).empty());
  EXPECT_EQ(MasterErrorPB::REPLICATION_FACTOR_TOO_HIGH,
            CreateTableError(MakeCreateTableRequest("seven", 0, false, {}, {}, 7)).code());
}

TEST_F(CatalogManagerTest, NoLiveServersIsAnError) {
  servers_.clear();
  RestartCatalog();  // no server has registered with this instance
  MasterErrorPB err = CreateTableError(MakeCreateTableRequest("t", 0, false));
  EXPECT_EQ(MasterErrorPB::REPLICATION_FACTOR_TOO_HIGH, err.code());
  EXPECT_NE(std::string::npos, err.status().message().find("1 live tablet servers, 0 are alive"))
      << err.status().message();
}

TEST_F(CatalogManagerTest, ReplicatedTablesAreAcceptedAndThreeIsTheDefault) {
  for (int rf : {0, 3}) {  // 0: --default_num_replicas
    const std::string name = "rf" + std::to_string(rf);
    const std::string id = CreateTable(MakeCreateTableRequest(name, 2, false, {}, {}, rf));
    ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
    GetTableSchemaRequestPB req;
    req.mutable_table()->set_table_id(id);
    GetTableSchemaResponsePB schema;
    cm_->GetTableSchema(req, &schema);
    EXPECT_EQ(3, schema.num_replicas());
    const auto locs = Locations(id);
    for (const auto& loc : locs.tablet_locations()) EXPECT_EQ(3, loc.replicas_size());
  }
  for (auto& s : servers_) EXPECT_EQ(4u, s->NumTablets());

  // With one server left, the default is refused and says what to do.
  servers_.resize(1);
  RestartCatalog();
  HeartbeatAll();
  MasterErrorPB err = CreateTableError(MakeCreateTableRequest("t", 0, false, {}, {}, 0));
  EXPECT_EQ(MasterErrorPB::REPLICATION_FACTOR_TOO_HIGH, err.code());
  EXPECT_EQ(
      "num_replicas 3 needs 3 live tablet servers, 1 is alive: start more tablet servers "
      "or create the table with num_replicas 1",
      err.status().message());
  EXPECT_FALSE(CreateTable(MakeCreateTableRequest("t", 0, false, {}, {}, 1)).empty());
}

TEST_F(CatalogManagerTest, UnknownTableInEveryCall) {
  for (bool by_name : {false, true}) {
    TableIdentifierPB id;
    if (by_name) {
      id.set_table_name("nope");
    } else {
      id.set_table_id("0123456789abcdef0123456789abcdef");
    }
    IsCreateTableDoneRequestPB r1;
    *r1.mutable_table() = id;
    IsCreateTableDoneResponsePB p1;
    cm_->IsCreateTableDone(r1, &p1);
    EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, p1.error().code());
    DeleteTableRequestPB r2;
    *r2.mutable_table() = id;
    DeleteTableResponsePB p2;
    cm_->DeleteTable(r2, &p2);
    EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, p2.error().code());
    GetTableSchemaRequestPB r3;
    *r3.mutable_table() = id;
    GetTableSchemaResponsePB p3;
    cm_->GetTableSchema(r3, &p3);
    EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, p3.error().code());
    GetTableLocationsRequestPB r4;
    *r4.mutable_table() = id;
    EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, Locations(r4).error().code());
  }
  // An empty identifier too.
  EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, Locations(GetTableLocationsRequestPB()).error().code());
}

// A tablet of three replicas runs once a leader is reported, not before: created
// replicas are not enough.
TEST_F(CatalogManagerTest, ReplicatedTabletRunsWhenItsLeaderIsReported) {
  const std::string id = CreateTable(MakeCreateTableRequest("t", 0, false, {}, {}, 3));
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    cm_->RunBackgroundPassForTests();
    for (auto& s : servers_) ASSERT_EQ(1u, s->NumTablets());
  });
  cm_->RunBackgroundPassForTests();  // the CreateTablet successes are applied
  EXPECT_EQ(MasterErrorPB::TABLET_NOT_RUNNING, Locations(id).error().code());
  // The first peer campaigns; until it reports, the followers' reports are not enough.
  std::string tablet_id;
  {
    MutexLock l(servers_[0]->state()->mu);
    tablet_id = servers_[0]->state()->tablets.begin()->first;
  }
  const std::string first = servers_[0]->PeersOf(tablet_id)[0].permanent_uuid();
  for (auto& s : servers_) {
    if (s->uuid() != first) Heartbeat(*s, false, false);
  }
  cm_->RunBackgroundPassForTests();
  EXPECT_EQ(MasterErrorPB::TABLET_NOT_RUNNING, Locations(id).error().code());
  Heartbeat(*ServerByUuid(first), false, false);
  const auto loc = TabletLocations(id, tablet_id);
  ASSERT_EQ(3, loc.replicas_size());
  EXPECT_EQ(first, loc.replicas(0).ts_info().permanent_uuid());
  EXPECT_EQ(LEADER, loc.replicas(0).role());
  EXPECT_EQ(FOLLOWER, loc.replicas(1).role());
  EXPECT_EQ(FOLLOWER, loc.replicas(2).role());
  cm_->RunBackgroundPassForTests();
  EXPECT_EQ(0u, cm_->NumPendingTabletsForTests());  // every replica confirmed
}

// The table-locations cache never serves a deposed leader: every change of leader,
// term or role that the replicas report purges the table's answers.
TEST_F(CatalogManagerTest, LeaderChangesAreNeverServedStaleFromTheCache) {
  const std::string id = CreateTable(MakeCreateTableRequest("t", 2, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  const auto before = Locations(id);
  ASSERT_EQ(2, before.tablet_locations_size());
  const std::string tablet_id = before.tablet_locations(0).tablet_id();
  const std::string old_leader = before.tablet_locations(0).replicas(0).ts_info().permanent_uuid();
  const std::string other_tablet_leader =
      before.tablet_locations(1).replicas(0).ts_info().permanent_uuid();
  std::string next_leader = before.tablet_locations(0).replicas(2).ts_info().permanent_uuid();
  const int64_t hits = cm_->locations_cache()->hits();
  EXPECT_EQ(before.SerializeAsString(), Locations(id).SerializeAsString());
  EXPECT_EQ(hits + 1, cm_->locations_cache()->hits());  // cached

  // The new leader's election: it reports a newer term as follower first (a
  // candidate): no leader is known, the old claim is superseded.
  ServerByUuid(next_leader)->SetConsensusForTests(tablet_id, FOLLOWER, 2);
  HeartbeatAll();
  auto loc = TabletLocations(id, tablet_id);
  ASSERT_EQ(3, loc.replicas_size());
  for (const auto& r : loc.replicas())
    EXPECT_EQ(FOLLOWER, r.role()) << r.ts_info().permanent_uuid();
  EXPECT_EQ(loc.SerializeAsString(), TabletLocations(id, tablet_id, false).SerializeAsString());

  // It wins: named first, as LEADER, by cached and fresh answers alike.
  ServerByUuid(next_leader)->SetConsensusForTests(tablet_id, LEADER, 2, next_leader);
  HeartbeatAll();
  for (bool use_cache : {true, true, false}) {
    loc = TabletLocations(id, tablet_id, use_cache);
    ASSERT_EQ(3, loc.replicas_size());
    EXPECT_EQ(next_leader, loc.replicas(0).ts_info().permanent_uuid());
    EXPECT_EQ(LEADER, loc.replicas(0).role());
    for (int i = 1; i < 3; i++) {
      EXPECT_EQ(FOLLOWER, loc.replicas(i).role());
      EXPECT_NE(next_leader, loc.replicas(i).ts_info().permanent_uuid());
    }
  }
  // The old leader has not heard yet: its claim (term 1) is older and changes nothing.
  EXPECT_EQ(LEADER, [&] {
    ServerByUuid(old_leader)->SetConsensusForTests(tablet_id, LEADER, 1, old_leader);
    HeartbeatAll();
    return TabletLocations(id, tablet_id).replicas(0).role();
  }());
  EXPECT_EQ(next_leader, TabletLocations(id, tablet_id).replicas(0).ts_info().permanent_uuid());
  // The other tablet's leader is untouched.
  EXPECT_EQ(other_tablet_leader,
            Locations(id).tablet_locations(1).replicas(0).ts_info().permanent_uuid());

  // Interned answers agree.
  GetTableLocationsRequestPB req;
  req.mutable_table()->set_table_id(id);
  req.set_intern_ts_infos_in_response(true);
  const auto interned = Locations(req);
  ASSERT_FALSE(interned.has_error());
  const auto& first = interned.tablet_locations(0).interned_replicas(0);
  EXPECT_EQ(LEADER, first.role());
  EXPECT_EQ(next_leader, interned.ts_infos(first.ts_info_idx()).permanent_uuid());
  EXPECT_EQ(interned.SerializeAsString(), Locations(req, false).SerializeAsString());

  // The web page names the leader.
  const auto snapshots = cm_->GetTableSnapshots();
  ASSERT_EQ(1u, snapshots.size());
  for (const auto& t : snapshots[0].tablets) {
    if (t.id != tablet_id) continue;
    EXPECT_EQ(next_leader, t.leader_uuid);
    EXPECT_EQ(2u, t.term);
    EXPECT_EQ(LEADER, t.roles.at(next_leader));
    EXPECT_EQ(FOLLOWER, t.roles.at(old_leader));
  }
}

// After a restart no leader is known until the replicas report: the locations list
// every live replica with UNKNOWN_ROLE.
TEST_F(CatalogManagerTest, RolesAreUnknownAfterRestartUntilReported) {
  const std::string id = CreateTable(MakeCreateTableRequest("t", 0, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  const auto before = Locations(id);
  ASSERT_NO_FATAL_FAILURE(RestartCatalog());
  for (auto& s : servers_) Heartbeat(*s, true, false);  // registered, no report yet
  auto loc = Locations(id);
  ASSERT_FALSE(loc.has_error()) << loc.error().ShortDebugString();
  ASSERT_EQ(3, loc.tablet_locations(0).replicas_size());
  for (const auto& r : loc.tablet_locations(0).replicas()) EXPECT_EQ(UNKNOWN_ROLE, r.role());
  HeartbeatAll();  // asked for full reports
  EXPECT_EQ(before.SerializeAsString(), Locations(id).SerializeAsString());
}

// ListTablets: every current tablet by table name and partition, each replica with
// its server, liveness, role and reported state; filtered by table or tablet; after a
// restart the replicas are listed unreported until they report; a dead server's
// replicas stay listed, not live.
TEST_F(CatalogManagerTest, ListTabletsShowsEveryReplicasReportedState) {
  FLAGS_tserver_unresponsive_timeout_ms = 300;
  const std::string b = CreateTable(MakeCreateTableRequest("b", 2, false, {}, {}, 3));
  const std::string a = CreateTable(MakeCreateTableRequest("a", 0, false, {}, {}, 1));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(b));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(a));
  auto list = [&](const std::string& table, const std::string& tablet) {
    ListTabletsRequestPB req;
    if (!table.empty()) req.mutable_table()->set_table_name(table);
    req.set_tablet_id(tablet);
    ListTabletsResponsePB resp;
    cm_->ListTablets(req, &resp);
    return resp;
  };
  ListTabletsResponsePB all = list("", "");
  ASSERT_FALSE(all.has_error());
  ASSERT_EQ(3, all.tablets_size());
  EXPECT_EQ("a", all.tablets(0).table_name());
  EXPECT_EQ(a, all.tablets(0).table_id());
  EXPECT_EQ(1, all.tablets(0).replicas_size());
  EXPECT_EQ(1, all.tablets(0).num_replicas());
  const auto locs = Locations(b);
  for (int i = 1; i < 3; i++) {
    const auto& t = all.tablets(i);
    const auto& loc = locs.tablet_locations(i - 1);  // the same order: by partition
    EXPECT_EQ("b", t.table_name());
    EXPECT_EQ(loc.tablet_id(), t.tablet_id());
    EXPECT_EQ(loc.partition().SerializeAsString(), t.partition().SerializeAsString());
    EXPECT_EQ(TABLET_RUNNING, t.state());
    EXPECT_EQ(3, t.num_replicas());
    EXPECT_EQ(1u, t.term());
    EXPECT_EQ(loc.replicas(0).ts_info().permanent_uuid(), t.leader_uuid());
    ASSERT_EQ(3, t.replicas_size());
    for (const auto& r : t.replicas()) {
      FakeTabletServer* ts = ServerByUuid(r.ts_uuid());
      ASSERT_NE(nullptr, ts);
      EXPECT_TRUE(r.ts_live());
      EXPECT_EQ(r.ts_uuid(), r.ts_info().permanent_uuid());
      ASSERT_EQ(1, r.ts_info().rpc_addresses_size());
      EXPECT_EQ(ts->addr().port(), r.ts_info().rpc_addresses(0).port());
      EXPECT_TRUE(r.reported());
      EXPECT_EQ(r.ts_uuid() == t.leader_uuid() ? LEADER : FOLLOWER, r.role());
      EXPECT_EQ(r.role(), r.consensus().role());
      EXPECT_EQ(3, r.consensus().voter_uuids_size());
    }
  }
  const std::string tablet_id = all.tablets(2).tablet_id();
  ListTabletsResponsePB one = list("", tablet_id);
  ASSERT_EQ(1, one.tablets_size());
  EXPECT_EQ(all.tablets(2).SerializeAsString(), one.tablets(0).SerializeAsString());
  EXPECT_EQ(2, list("b", "").tablets_size());
  EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, list("c", "").error().code());
  EXPECT_EQ(MasterErrorPB::TABLET_NOT_FOUND, list("", "nope").error().code());

  // A new leader in a newer term shows at once.
  const std::string old_leader = one.tablets(0).leader_uuid();
  std::string next;
  for (const auto& r : one.tablets(0).replicas()) {
    if (r.ts_uuid() != old_leader) next = r.ts_uuid();
  }
  ServerByUuid(next)->SetConsensusForTests(tablet_id, LEADER, 2, next);
  HeartbeatAll();
  one = list("", tablet_id);
  EXPECT_EQ(next, one.tablets(0).leader_uuid());
  EXPECT_EQ(2u, one.tablets(0).term());
  for (const auto& r : one.tablets(0).replicas()) {
    if (r.ts_uuid() == old_leader) {
      EXPECT_EQ(FOLLOWER, r.role());  // a stale claim
    } else if (r.ts_uuid() == next) {
      EXPECT_EQ(LEADER, r.role());
    }
  }

  // After a restart: listed, registered, not reported.
  ASSERT_NO_FATAL_FAILURE(RestartCatalog());
  for (auto& s : servers_) Heartbeat(*s, true, false);
  one = list("", tablet_id);
  ASSERT_EQ(1, one.tablets_size());
  EXPECT_EQ("", one.tablets(0).leader_uuid());
  for (const auto& r : one.tablets(0).replicas()) {
    EXPECT_FALSE(r.reported());
    EXPECT_EQ(UNKNOWN_ROLE, r.role());
    EXPECT_TRUE(r.ts_live());
  }
  HeartbeatAll();  // full reports
  EXPECT_EQ(next, list("", tablet_id).tablets(0).leader_uuid());

  // A dead server's replicas are listed, not live.
  int victim = -1;
  for (int i = 0; i < int(servers_.size()); i++) {
    if (servers_[i]->uuid() == next) victim = i;
  }
  ASSERT_GE(victim, 0);
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] {
    HeartbeatAll({victim});
    cm_->RunBackgroundPassForTests();
    ASSERT_FALSE(ts_manager_->IsLive(next));
  });
  one = list("", tablet_id);
  ASSERT_EQ(3, one.tablets(0).replicas_size());
  for (const auto& r : one.tablets(0).replicas()) EXPECT_EQ(r.ts_uuid() != next, r.ts_live());
}

TEST_F(CatalogManagerTest, HeartbeatResponsesListEveryServer) {
  TSHeartbeatResponsePB resp = Heartbeat(*servers_[1], false, false);
  ASSERT_FALSE(resp.has_error());
  ASSERT_EQ(3, resp.tablet_servers_size());
  std::set<std::string> uuids;
  for (const auto& info : resp.tablet_servers()) {
    uuids.insert(info.permanent_uuid());
    FakeTabletServer* ts = ServerByUuid(info.permanent_uuid());
    ASSERT_NE(nullptr, ts);
    ASSERT_EQ(1, info.rpc_addresses_size());
    EXPECT_EQ(ts->addr().port(), info.rpc_addresses(0).port());
  }
  EXPECT_EQ(3u, uuids.size());
}

TEST_F(CatalogManagerTest, ServerWithAnotherServersRaftPeerIdIsRefused) {
  FakeTabletServer a("0123456789abcdef0000000000000000");
  FakeTabletServer b("0123456789abcdef1111111111111111");
  ASSERT_OK(a.Start());
  ASSERT_OK(b.Start());
  EXPECT_FALSE(Heartbeat(a, true, true).has_error());
  const TSHeartbeatResponsePB resp = Heartbeat(b, true, true);
  EXPECT_EQ(MasterErrorPB::INVALID_ARGUMENT, resp.error().code());
  EXPECT_NE(std::string::npos, resp.error().status().message().find(a.uuid()))
      << resp.error().status().message();
  EXPECT_EQ(4, ts_manager_->NumLiveServers());
  EXPECT_FALSE(ts_manager_->Lookup(b.uuid()).has_value());
}

TEST_F(CatalogManagerTest, TabletIdsWithATakenRaftGroupIdAreRegenerated) {
  // Ids sharing their first 16 hex digits share a Raft group id.
  std::vector<std::string> ids = {
      "aaaaaaaaaaaaaaaa0000000000000000", "aaaaaaaaaaaaaaaa1111111111111111",  // same batch
      "bbbbbbbbbbbbbbbb0000000000000000", "aaaaaaaaaaaaaaaa2222222222222222",  // taken
      "bbbbbbbbbbbbbbbb3333333333333333", "cccccccccccccccc0000000000000000"};
  size_t next = 0;
  cm_->SetTabletIdGeneratorForTests([&] { return ids.at(next++); });
  const std::string t1 = CreateTable(MakeCreateTableRequest("t1", 2, false));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(t1));
  const std::string t2 = CreateTable(MakeCreateTableRequest("t2", 0, false));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(t2));
  EXPECT_EQ(ids.size(), next);
  std::set<std::string> got;
  for (const auto& id : {t1, t2}) {
    const auto locs = Locations(id);
    for (const auto& loc : locs.tablet_locations()) got.insert(loc.tablet_id());
  }
  EXPECT_EQ((std::set<std::string>{ids[0], ids[2], ids[5]}), got);
  // A generator that only collides fails the creation cleanly.
  cm_->SetTabletIdGeneratorForTests([] { return std::string("aaaaaaaaaaaaaaaa9999999999999999"); });
  EXPECT_EQ(MasterErrorPB::UNKNOWN_ERROR,
            CreateTableError(MakeCreateTableRequest("t3", 0, false)).code());
  cm_->SetTabletIdGeneratorForTests([] { return server::GenerateUuid(); });
}

TEST_F(CatalogManagerTest, InitialLeadersAreSpreadOverTheServers) {
  const std::string id = CreateTable(MakeCreateTableRequest("t", 6, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  std::map<std::string, int> leaders;
  const auto locs = Locations(id);
  for (const auto& loc : locs.tablet_locations()) {
    ASSERT_EQ(LEADER, loc.replicas(0).role());
    leaders[loc.replicas(0).ts_info().permanent_uuid()]++;
  }
  ASSERT_EQ(3u, leaders.size());
  for (const auto& [uuid, n] : leaders) EXPECT_EQ(2, n) << uuid;
  // Across tables too: three more tablets give each server one more.
  const std::string id2 = CreateTable(MakeCreateTableRequest("t2", 3, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id2));
  const auto locs2 = Locations(id2);
  for (const auto& loc : locs2.tablet_locations()) {
    leaders[loc.replicas(0).ts_info().permanent_uuid()]++;
  }
  for (const auto& [uuid, n] : leaders) EXPECT_EQ(3, n) << uuid;
}

TEST_F(CatalogManagerTest, ListTablesAndSchema) {
  const std::string a = CreateTable(MakeCreateTableRequest("apple", 2, false));
  const std::string b = CreateTable(MakeCreateTableRequest("apricot", 0, true, {1}));
  CreateTable(MakeCreateTableRequest("banana", 0, false));
  ListTablesRequestPB req;
  req.set_name_filter("ap");
  ListTablesResponsePB list;
  cm_->ListTables(req, &list);
  ASSERT_EQ(2, list.tables_size());
  EXPECT_EQ("apple", list.tables(0).name());
  EXPECT_EQ(a, list.tables(0).id());
  EXPECT_EQ(2, list.tables(0).num_tablets());
  EXPECT_EQ("apricot", list.tables(1).name());
  ListTablesResponsePB all;
  cm_->ListTables(ListTablesRequestPB(), &all);
  EXPECT_EQ(3, all.tables_size());

  GetTableSchemaRequestPB sreq;
  sreq.mutable_table()->set_table_name("apricot");
  GetTableSchemaResponsePB schema;
  cm_->GetTableSchema(sreq, &schema);
  ASSERT_FALSE(schema.has_error());
  EXPECT_EQ(b, schema.table_id());
  EXPECT_EQ("apricot", schema.table_name());
  ASSERT_EQ(2, schema.schema().columns_size());
  EXPECT_EQ("key", schema.schema().columns(0).name());
  EXPECT_EQ(0, schema.schema().columns(0).id());
  EXPECT_EQ(1, schema.schema().columns(1).id());
  EXPECT_EQ("key", schema.partition_schema().range_schema().columns(0));
  EXPECT_EQ(1, schema.num_replicas());
  EXPECT_FALSE(schema.create_table_done());
  ASSERT_NO_FATAL_FAILURE(WaitRunning(b));
  cm_->GetTableSchema(sreq, &schema);
  EXPECT_TRUE(schema.create_table_done());
}

TEST_F(CatalogManagerTest, DeleteTableDropsTabletsOnServersAndFreesTheName) {
  const std::string id = CreateTable(MakeCreateTableRequest("t", 6, false));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  size_t total = 0;
  for (auto& s : servers_) total += s->NumTablets();
  ASSERT_EQ(6u, total);
  DeleteTableRequestPB req;
  req.mutable_table()->set_table_name("t");
  DeleteTableResponsePB resp;
  cm_->DeleteTable(req, &resp);
  ASSERT_FALSE(resp.has_error());
  EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, Locations(id).error().code());
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    cm_->RunBackgroundPassForTests();
    for (auto& s : servers_) ASSERT_EQ(0u, s->NumTablets());
    ASSERT_EQ(0u, cm_->NumPendingTabletsForTests());
  });
  cm_->RunBackgroundPassForTests();
  EXPECT_EQ(0u, cm_->NumRpcTasksForTests());  // no leftover task state
  cm_->DeleteTable(req, &resp);
  EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, resp.error().code());
  EXPECT_NE(id, CreateTable(MakeCreateTableRequest("t", 0, false)));
}

TEST_F(CatalogManagerTest, CatalogSurvivesRestart) {
  const std::string kept = CreateTable(MakeCreateTableRequest("kept", 0, true, {10, 20}));
  const std::string gone = CreateTable(MakeCreateTableRequest("gone", 2, false));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(kept));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(gone));
  const auto before = Locations(kept);
  DeleteTableRequestPB del;
  del.mutable_table()->set_table_id(gone);
  DeleteTableResponsePB del_resp;
  cm_->DeleteTable(del, &del_resp);
  ASSERT_FALSE(del_resp.has_error());

  ASSERT_NO_FATAL_FAILURE(RestartCatalog());
  ListTablesResponsePB list;
  cm_->ListTables(ListTablesRequestPB(), &list);
  ASSERT_EQ(1, list.tables_size());
  EXPECT_EQ(kept, list.tables(0).id());
  EXPECT_EQ(TABLE_RUNNING, list.tables(0).state());
  // The servers are unknown to the new instance until they register again.
  auto resp = Heartbeat(*servers_[0], false, false);
  EXPECT_TRUE(resp.needs_reregister());
  EXPECT_FALSE(resp.has_error());
  HeartbeatAll();
  const auto after = Locations(kept);
  EXPECT_EQ(before.SerializeAsString(), after.SerializeAsString());
  // The deleted table's tablets are dropped after the restart too.
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    cm_->RunBackgroundPassForTests();
    size_t total = 0;
    for (auto& s : servers_) total += s->NumTablets();
    ASSERT_EQ(3u, total);
  });
}

TEST_F(CatalogManagerTest, HeartbeatFromUnknownOrAnonymousServer) {
  TSHeartbeatRequestPB req;
  req.mutable_common()->set_permanent_uuid("never-registered");
  req.mutable_common()->set_instance_seqno(7);
  req.mutable_tablet_report()->set_is_incremental(true);
  TSHeartbeatResponsePB resp;
  cm_->TSHeartbeat(req, &resp);
  EXPECT_FALSE(resp.has_error());
  EXPECT_TRUE(resp.needs_reregister());
  EXPECT_TRUE(resp.needs_full_tablet_report());

  TSHeartbeatRequestPB anon;
  TSHeartbeatResponsePB anon_resp;
  cm_->TSHeartbeat(anon, &anon_resp);
  EXPECT_EQ(MasterErrorPB::INVALID_ARGUMENT, anon_resp.error().code());
}

TEST_F(CatalogManagerTest, ServersAreToldToDropTabletsTheyShouldNotHave) {
  servers_[0]->AddTabletForTests("unknown-tablet");
  auto resp = Heartbeat(*servers_[0], false, true);
  EXPECT_FALSE(resp.has_error());
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    cm_->RunBackgroundPassForTests();
    ASSERT_FALSE(servers_[0]->HasTablet("unknown-tablet"));
  });

  // A server that is down while its table is deleted drops the tablets when it
  // comes back (at a new address).
  const std::string id = CreateTable(MakeCreateTableRequest("t", 6, false));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  FakeTabletServer& down = *servers_[1];
  ASSERT_GT(down.NumTablets(), 0u);
  down.Stop();
  DeleteTableRequestPB del;
  del.mutable_table()->set_table_id(id);
  DeleteTableResponsePB del_resp;
  cm_->DeleteTable(del, &del_resp);
  ASSERT_FALSE(del_resp.has_error());
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    cm_->RunBackgroundPassForTests();
    ASSERT_EQ(0u, servers_[0]->NumTablets());
    ASSERT_EQ(0u, servers_[2]->NumTablets());
  });
  EXPECT_GT(down.NumTablets(), 0u);
  ASSERT_OK(down.Start());
  Heartbeat(down, true, true);
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    cm_->RunBackgroundPassForTests();
    ASSERT_EQ(0u, down.NumTablets());
  });
}

TEST_F(CatalogManagerTest, TabletNotCreatedInTimeIsReplacedElsewhere) {
  FLAGS_tablet_creation_timeout_ms = 300;
  FakeTabletServer& bad = *servers_[0];
  bad.state()->fail_creates = true;
  const std::string id = CreateTable(MakeCreateTableRequest("t", 8, false));
  // Placement put some of the 8 tablets on the failing server (2 choices among 3).
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  EXPECT_GT(bad.state()->creates.load(), 0);
  auto locs = Locations(id);
  ASSERT_EQ(8, locs.tablet_locations_size());
  for (const auto& loc : locs.tablet_locations()) {
    ASSERT_EQ(1, loc.replicas_size());
    EXPECT_NE(bad.uuid(), loc.replicas(0).ts_info().permanent_uuid());
  }
  // The replacements survive a restart.
  ASSERT_NO_FATAL_FAILURE(RestartCatalog());
  HeartbeatAll();
  EXPECT_EQ(locs.SerializeAsString(), Locations(id).SerializeAsString());
}

TEST_F(CatalogManagerTest, TabletRpcsInFlightPerServerAreCapped) {
  // A table of many tablets is not sent to a server all at once (it would overflow the
  // server's admin queue, and the calls turned away would back off for seconds).
  gflags::FlagSaver saver;
  FLAGS_master_max_tablet_rpcs_per_ts = 3;
  for (auto& s : servers_) s->state()->create_delay_ms = 5;
  const std::string id = CreateTable(MakeCreateTableRequest("t", 60, false));
  size_t most = 0;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    cm_->RunBackgroundPassForTests();
    most = std::max(most, cm_->NumRpcsInFlightForTests());
    HeartbeatAll();
    IsCreateTableDoneRequestPB req;
    req.mutable_table()->set_table_id(id);
    IsCreateTableDoneResponsePB resp;
    cm_->IsCreateTableDone(req, &resp);
    ASSERT_TRUE(resp.done()) << resp.tablets_running() << "/" << resp.tablets_total();
  });
  EXPECT_GT(most, 0u);
  EXPECT_LE(most, 3 * servers_.size());
  for (auto& s : servers_) EXPECT_GT(s->NumTablets(), 0u);
}

TEST_F(CatalogManagerTest, LocationRanges) {
  const std::string id = CreateTable(MakeCreateTableRequest("t", 0, true, {10, 20, 30}));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  const auto all = Locations(id);
  ASSERT_EQ(4, all.tablet_locations_size());
  const std::string k10 = all.tablet_locations(1).partition().partition_key_start();
  const std::string k20 = all.tablet_locations(2).partition().partition_key_start();
  ASSERT_FALSE(k10.empty());

  GetTableLocationsRequestPB req;
  req.mutable_table()->set_table_name("t");
  req.set_partition_key_start(k20);
  req.set_partition_key_end(k10);
  EXPECT_EQ(MasterErrorPB::INVALID_ARGUMENT, Locations(req).error().code());

  // The tablet holding the start key comes first, however the key falls in it.
  req.set_partition_key_end("");
  req.set_partition_key_start(k10 + std::string("\x05", 1));
  auto r = Locations(req);
  ASSERT_EQ(3, r.tablet_locations_size());
  EXPECT_EQ(all.tablet_locations(1).tablet_id(), r.tablet_locations(0).tablet_id());
  const int64_t hits = cm_->locations_cache()->hits();
  req.set_partition_key_start(k10);  // same first tablet: same cache entry
  EXPECT_EQ(r.SerializeAsString(), Locations(req).SerializeAsString());
  EXPECT_EQ(hits + 1, cm_->locations_cache()->hits());

  // [k10, k20) is exactly tablet 1; max_returned_locations caps the answer.
  req.set_partition_key_end(k20);
  r = Locations(req);
  ASSERT_EQ(1, r.tablet_locations_size());
  req.clear_partition_key_end();
  req.set_max_returned_locations(2);
  EXPECT_EQ(2, Locations(req).tablet_locations_size());
  req.set_max_returned_locations(0);
  r = Locations(req);
  EXPECT_FALSE(r.has_error());
  EXPECT_EQ(0, r.tablet_locations_size());

  // Interned: one ts_info per server, replicas by index.
  req.clear_max_returned_locations();
  req.clear_partition_key_start();
  req.set_intern_ts_infos_in_response(true);
  r = Locations(req);
  ASSERT_EQ(4, r.tablet_locations_size());
  std::set<std::string> uuids;
  for (const auto& loc : all.tablet_locations())
    uuids.insert(loc.replicas(0).ts_info().permanent_uuid());
  EXPECT_EQ(int(uuids.size()), r.ts_infos_size());
  for (int i = 0; i < 4; i++) {
    const auto& loc = r.tablet_locations(i);
    EXPECT_EQ(0, loc.replicas_size());
    ASSERT_EQ(1, loc.interned_replicas_size());
    EXPECT_EQ(LEADER, loc.interned_replicas(0).role());
    EXPECT_EQ(all.tablet_locations(i).replicas(0).ts_info().permanent_uuid(),
              r.ts_infos(loc.interned_replicas(0).ts_info_idx()).permanent_uuid());
  }
}

TEST_F(CatalogManagerTest, TabletNotRunningIsReported) {
  for (auto& s : servers_) s->state()->fail_creates = true;
  const std::string id = CreateTable(MakeCreateTableRequest("t", 0, true, {10}));
  cm_->RunBackgroundPassForTests();
  auto r = Locations(id);
  EXPECT_EQ(MasterErrorPB::TABLET_NOT_RUNNING, r.error().code());
  EXPECT_EQ(0u, cm_->locations_cache()->num_entries());  // errors are not cached
}

TEST_F(CatalogManagerTest, DeadServerLeavesTheAnswersAndComesBack) {
  FLAGS_tserver_unresponsive_timeout_ms = 300;
  const std::string id = CreateTable(MakeCreateTableRequest("t", 6, false));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  auto count_replicas_on = [&](const std::string& uuid) {
    int n = 0;
    const auto locs = Locations(id);
    for (const auto& loc : locs.tablet_locations()) {
      for (const auto& r : loc.replicas()) n += r.ts_info().permanent_uuid() == uuid;
    }
    return n;
  };
  // The victim: the server of the first tablet (placement is random, so a fixed
  // server may host none of the six).
  const std::string victim =
      Locations(id).tablet_locations(0).replicas(0).ts_info().permanent_uuid();
  int victim_index = -1;
  for (int i = 0; i < int(servers_.size()); i++) {
    if (servers_[i]->uuid() == victim) victim_index = i;
  }
  ASSERT_GE(victim_index, 0);
  const int on_victim = count_replicas_on(victim);  // now cached
  ASSERT_GT(on_victim, 0);
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] {
    HeartbeatAll({victim_index});
    cm_->RunBackgroundPassForTests();
    ASSERT_FALSE(ts_manager_->IsLive(victim));
  });
  EXPECT_EQ(0, count_replicas_on(victim));
  ListTabletServersResponsePB list;
  cm_->ListTabletServers(ListTabletServersRequestPB(), &list);
  int dead = 0;
  for (const auto& e : list.servers()) dead += !e.live();
  EXPECT_EQ(1, dead);
  HeartbeatAll();
  EXPECT_EQ(on_victim, count_replicas_on(victim));
}

// Interleaves location requests with creations, deletions, server deaths, returns
// and address changes, comparing every cached answer with a fresh computation.
TEST_F(CatalogManagerTest, CachedAnswersAreNeverStale) {
  FLAGS_tserver_unresponsive_timeout_ms = 300;
  const uint32_t seed = TestRandomSeed();
  std::mt19937 rng(seed);
  auto uniform = [&](int n) { return int(std::uniform_int_distribution<int>(0, n - 1)(rng)); };
  std::vector<std::pair<std::string, std::string>> tables;  // id, name; deleted ones too
  std::set<int> down;                                       // servers not heartbeating
  int comparisons = 0;
  auto check_some = [&](int n) {
    for (int i = 0; i < n && !tables.empty(); i++) {
      GetTableLocationsRequestPB req;
      const auto& [id, name] = tables[uniform(int(tables.size()))];
      if (uniform(2)) {
        req.mutable_table()->set_table_id(id);
      } else {
        req.mutable_table()->set_table_name(name);
      }
      // Starts and ends drawn from the table's real bounds, plus nearby keys.
      auto fresh = Locations(req, false);
      std::vector<std::string> keys = {""};
      for (const auto& loc : fresh.tablet_locations()) {
        keys.push_back(loc.partition().partition_key_start());
        keys.push_back(loc.partition().partition_key_start() + "\x01");
      }
      req.set_partition_key_start(keys[uniform(int(keys.size()))]);
      if (uniform(2)) req.set_partition_key_end(keys[uniform(int(keys.size()))]);
      switch (uniform(4)) {
        case 0:
          break;
        case 1:
          req.set_max_returned_locations(0);
          break;
        case 2:
          req.set_max_returned_locations(1);
          break;
        case 3:
          req.set_max_returned_locations(1000);
          break;
      }
      req.set_intern_ts_infos_in_response(uniform(2));
      for (int rep = 0; rep < 2; rep++) {  // the second one is usually a hit
        const std::string cached = *cm_->GetTableLocations(req, true);
        const std::string uncached = *cm_->GetTableLocations(req, false);
        ASSERT_EQ(uncached, cached) << "seed " << seed << " request " << req.ShortDebugString();
        comparisons++;
      }
    }
  };
  for (int step = 0; step < 60; step++) {
    SCOPED_TRACE("step " + std::to_string(step) + " seed " + std::to_string(seed));
    HeartbeatAll(down);
    cm_->RunBackgroundPassForTests();
    ASSERT_NO_FATAL_FAILURE(check_some(5));
    switch (uniform(9)) {
      case 6:
      case 7: {  // a replica reports another role or term (elections, step-downs)
        FakeTabletServer& ts = *servers_[uniform(3)];
        std::vector<std::pair<std::string, uint64_t>> held;  // tablet, term
        {
          MutexLock l(ts.state()->mu);
          for (const auto& [id, c] : ts.state()->consensus) held.emplace_back(id, c.term());
        }
        if (held.empty()) break;
        const auto& [tablet_id, term] = held[uniform(int(held.size()))];
        const ReplicaRolePB roles[] = {LEADER, FOLLOWER, LEARNER};
        ts.SetConsensusForTests(tablet_id, roles[uniform(3)], term + uniform(2));
        break;
      }
      case 0:
      case 1:
      case 8: {  // create
        const std::string name = "tmp" + std::to_string(step);
        CreateTableResponsePB resp;
        cm_->CreateTable(MakeCreateTableRequest(name, uniform(3) + 1, uniform(2), {0, 50}, {},
                                                down.empty() && uniform(2) ? 3 : 1),
                         &resp);
        if (resp.has_error()) break;  // e.g. every server down
        tables.emplace_back(resp.table_id(), name);
        break;
      }
      case 2: {  // delete
        if (tables.empty()) break;
        DeleteTableRequestPB req;
        req.mutable_table()->set_table_id(tables[uniform(int(tables.size()))].first);
        DeleteTableResponsePB resp;
        cm_->DeleteTable(req, &resp);
        break;
      }
      case 3: {  // a server dies (stops heartbeating until it is declared dead)
        if (down.size() >= 2) break;
        const int victim = uniform(3);
        if (down.count(victim)) break;
        down.insert(victim);
        ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] {
          HeartbeatAll(down);
          ASSERT_NO_FATAL_FAILURE(check_some(1));
          cm_->RunBackgroundPassForTests();
          ASSERT_FALSE(ts_manager_->IsLive(servers_[victim]->uuid()));
        });
        break;
      }
      case 4: {  // a server returns
        if (down.empty()) break;
        down.erase(down.begin());
        break;
      }
      case 5: {  // a server moves to another port
        const int i = uniform(3);
        if (down.count(i)) break;
        servers_[i]->Stop();
        ASSERT_OK(servers_[i]->Start());
        Heartbeat(*servers_[i], true, false);
        break;
      }
    }
    ASSERT_NO_FATAL_FAILURE(check_some(5));
  }
  EXPECT_GT(comparisons, 300);
  LOG(INFO) << comparisons << " comparisons, " << cm_->locations_cache()->hits() << " hits";

  // The cache must have been in use for the comparisons to mean something. How many
  // answers above came from it depends on the seed and on timing: on a loaded machine
  // servers miss the 300 ms liveness window, their tablets stop running, and errors
  // are not cached (CI once saw 4 hits). So, with nothing changing any more, every
  // table's repeated request must be a hit.
  FLAGS_tserver_unresponsive_timeout_ms = 60000;
  down.clear();
  HeartbeatAll(down);
  const std::string final_id = CreateTable(MakeCreateTableRequest("final", 2, false));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(final_id));
  tables.emplace_back(final_id, "final");
  const int64_t hits_before = cm_->locations_cache()->hits();
  int answered = 0;
  for (const auto& [id, name] : tables) {
    if (Locations(id).has_error()) continue;  // deleted, or a tablet not running
    const GetTableLocationsResponsePB again = Locations(id);
    EXPECT_FALSE(again.has_error());
    answered++;
  }
  EXPECT_GT(answered, 0);
  EXPECT_GE(cm_->locations_cache()->hits() - hits_before, answered);
}

// GetTableStatistics: nothing until the replicas report their sizes; then each tablet
// counts its leader's figures (not the followers', not every replica's), every
// replica's own figures are listed, and a change of figures alone (no change of role
// or term) is taken from an incremental report. An unknown table: TABLE_NOT_FOUND.
TEST_F(CatalogManagerTest, TableStatisticsCountEachTabletsLeaderReport) {
  const std::string id = CreateTable(MakeCreateTableRequest("stats", 2, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  auto stats = [&](const std::string& name) {
    GetTableStatisticsRequestPB req;
    req.mutable_table()->set_table_name(name);
    GetTableStatisticsResponsePB resp;
    cm_->GetTableStatistics(req, &resp);
    return resp;
  };
  auto before = stats("stats");
  ASSERT_FALSE(before.has_error()) << before.error().ShortDebugString();
  EXPECT_EQ(id, before.table_id());
  EXPECT_EQ(0, before.on_disk_size());
  EXPECT_EQ(0, before.live_row_count());
  EXPECT_EQ(2, before.tablets_without_stats());
  ASSERT_EQ(2, before.tablets_size());
  for (const auto& t : before.tablets()) {
    EXPECT_FALSE(t.has_stats());
    ASSERT_EQ(3, t.replicas_size());
    for (const auto& r : t.replicas()) EXPECT_FALSE(r.has_stats());
  }

  // Replica sizes: the leader of tablet k reports 1000 * (k + 1) bytes and
  // 10 * (k + 1) rows, each follower a little less.
  int64_t want_size = 0, want_rows = 0;
  std::map<std::pair<std::string, std::string>, int64_t> reported;  // (tablet, uuid)
  for (int k = 0; k < before.tablets_size(); k++) {
    const std::string& tablet = before.tablets(k).tablet_id();
    const auto loc = TabletLocations(id, tablet);
    for (const auto& r : loc.replicas()) {
      const std::string& uuid = r.ts_info().permanent_uuid();
      const bool leader = r.role() == LEADER;
      const int64_t size = 1000 * (k + 1) - (leader ? 0 : 7);
      ServerByUuid(uuid)->SetStatsForTests(tablet, size, 10 * (k + 1) - (leader ? 0 : 1));
      reported[{tablet, uuid}] = size;
      if (leader) {
        want_size += size;
        want_rows += 10 * (k + 1);
      }
    }
  }
  ASSERT_GT(want_size, 0);  // every tablet has a leader
  HeartbeatAll();
  auto after = stats("stats");
  ASSERT_FALSE(after.has_error());
  EXPECT_EQ(want_size, after.on_disk_size());
  EXPECT_EQ(want_rows, after.live_row_count());
  EXPECT_EQ(0, after.tablets_without_stats());
  for (const auto& t : after.tablets()) {
    EXPECT_TRUE(t.has_stats());
    for (const auto& r : t.replicas()) {
      EXPECT_TRUE(r.has_stats()) << r.ts_uuid();
      EXPECT_EQ(reported[std::make_pair(t.tablet_id(), r.ts_uuid())], r.on_disk_size());
      EXPECT_TRUE(r.ts_live());
      EXPECT_EQ(1, r.ts_info().rpc_addresses_size());
      if (r.role() == LEADER) {
        EXPECT_EQ(t.on_disk_size(), r.on_disk_size());
      }
    }
  }

  // A leader's figures change, nothing else: the incremental report carries them.
  const std::string tablet0 = after.tablets(0).tablet_id();
  std::string leader0;
  for (const auto& r : after.tablets(0).replicas()) {
    if (r.role() == LEADER) leader0 = r.ts_uuid();
  }
  ASSERT_FALSE(leader0.empty());
  ServerByUuid(leader0)->SetStatsForTests(tablet0, 5000000, 123456);
  HeartbeatAll();
  auto changed = stats("stats");
  EXPECT_EQ(5000000, changed.tablets(0).on_disk_size());
  EXPECT_EQ(123456, changed.tablets(0).live_row_count());
  EXPECT_EQ(5000000 + after.tablets(1).on_disk_size(), changed.on_disk_size());

  EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, stats("no-such-table").error().code());
}

// Without a known leader a tablet counts its largest replica.
TEST(TabletStatsOfTest, LeaderElseLargest) {
  std::map<std::string, ReportedTabletStatsPB> m;
  ReportedTabletStatsPB out;
  EXPECT_FALSE(TabletStatsOf("a", m, &out));
  m["a"].set_on_disk_size(10);
  m["b"].set_on_disk_size(30);
  m["b"].set_live_row_count(3);
  m["c"].set_on_disk_size(20);
  ASSERT_TRUE(TabletStatsOf("a", m, &out));
  EXPECT_EQ(10, out.on_disk_size());
  ASSERT_TRUE(TabletStatsOf("", m, &out));
  EXPECT_EQ(30, out.on_disk_size());
  EXPECT_EQ(3, out.live_row_count());
  ASSERT_TRUE(TabletStatsOf("d", m, &out));  // a leader that has not reported figures
  EXPECT_EQ(30, out.on_disk_size());
}

}  // namespace nyala::master
