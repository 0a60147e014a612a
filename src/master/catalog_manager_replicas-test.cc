// The master heals tablets (catalog_manager_replicas.cc) against fake tablet servers
// whose leaders take configuration changes (master-test-util.h): a failed voter is
// replaced learner first (3-4-3), maintenance mode holds it back, copies per server
// are capped, learners that cannot finish are replaced, leftovers are tombstoned,
// the configuration followed survives a restart; the operators' calls about servers.
#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "master/catalog_manager-test-util.h"
#include "rpc/rpc_controller.h"
#include "tserver/tserver_admin.proxy.h"

DECLARE_int32(follower_unavailable_considered_failed_sec);
DECLARE_int32(max_concurrent_tablet_copies);

namespace nyala::master {

class CatalogManagerReplicasTest : public CatalogManagerTest {
 protected:
  void SetUp() override {
    CatalogManagerTest::SetUp();
    FLAGS_follower_unavailable_considered_failed_sec = 1;
    FLAGS_tserver_unresponsive_timeout_ms = 500;
  }

  ListTabletsResponsePB::TabletPB TabletOf(const std::string& tablet_id) {
    ListTabletsRequestPB req;
    req.set_tablet_id(tablet_id);
    ListTabletsResponsePB resp;
    cm_->ListTablets(req, &resp);
    EXPECT_FALSE(resp.has_error()) << resp.error().ShortDebugString();
    return resp.tablets_size() == 1 ? resp.tablets(0) : ListTabletsResponsePB::TabletPB();
  }
  std::vector<std::string> Voters(const std::string& tablet_id) {
    std::vector<std::string> out;
    const auto tablet = TabletOf(tablet_id);
    for (const auto& r : tablet.replicas()) {
      if (r.role() != LEARNER) out.push_back(r.ts_uuid());
    }
    return out;
  }
  std::vector<std::string> Learners(const std::string& tablet_id) {
    std::vector<std::string> out;
    const auto tablet = TabletOf(tablet_id);
    for (const auto& r : tablet.replicas()) {
      if (r.role() == LEARNER) out.push_back(r.ts_uuid());
    }
    return out;
  }
  std::vector<std::string> TabletsOf(const std::string& table_id) {
    ListTabletsRequestPB req;
    req.mutable_table()->set_table_id(table_id);
    ListTabletsResponsePB resp;
    cm_->ListTablets(req, &resp);
    std::vector<std::string> out;
    for (const auto& t : resp.tablets()) out.push_back(t.tablet_id());
    return out;
  }
  int IndexOf(const std::string& uuid) {
    for (int i = 0; i < int(servers_.size()); i++) {
      if (servers_[i]->uuid() == uuid) return i;
    }
    ADD_FAILURE() << "no server " << uuid;
    return -1;
  }
  // The server holding the most replicas of `table_id`'s tablets.
  int MostLoaded(const std::string& table_id) {
    std::map<std::string, int> n;
    for (const auto& t : TabletsOf(table_id)) {
      for (const auto& v : Voters(t)) n[v]++;
    }
    auto best = std::max_element(n.begin(), n.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    return IndexOf(best->first);
  }
  // The tablets of `table_id` with a replica on `uuid`.
  std::vector<std::string> TabletsOn(const std::string& table_id, const std::string& uuid) {
    std::vector<std::string> out;
    for (const auto& t : TabletsOf(table_id)) {
      const auto v = Voters(t);
      if (std::count(v.begin(), v.end(), uuid)) out.push_back(t);
    }
    return out;
  }
  // Another voter of each tablet `uuid` leads wins an election, as the group would
  // once `uuid`'s server stops.
  void ElectAway(const std::string& uuid, const std::vector<std::string>& tablets) {
    for (const auto& t : tablets) {
      const auto info = TabletOf(t);
      if (info.leader_uuid() != uuid) continue;
      for (const auto& v : Voters(t)) {
        if (v == uuid) continue;
        ServerByUuid(v)->SetConsensusForTests(t, LEADER, info.term() + 1, v);
        break;
      }
    }
  }
  // Stops server `i`, as if it died (no more heartbeats, calls to it fail).
  void Kill(int i) {
    servers_[i]->Stop();
    down_.insert(i);
  }
  void SetLearnerMode(FakeTabletServer::LearnerMode mode) {
    for (auto& s : servers_) s->state()->learner_mode = mode;
  }
  // One round: heartbeats (reports), then the background pass.
  void Step() {
    HeartbeatAll(down_);
    cm_->RunBackgroundPassForTests();
  }
  // The changes of `tablet_id` as "TYPE peer", in order.
  std::vector<std::string> ChangeNames(const std::string& tablet_id) {
    std::vector<std::string> out;
    for (const auto& c : cluster_->ChangesOf(tablet_id)) out.push_back(c.ToString());
    return out;
  }
  bool Healed(const std::string& tablet_id, const std::string& failed, size_t rf) {
    const auto v = Voters(tablet_id);
    return v.size() == rf && !std::count(v.begin(), v.end(), failed) &&
           Learners(tablet_id).empty() && !TabletOf(tablet_id).has_replacement();
  }
  MasterErrorPB ChangeState(const std::string& uuid, ChangeTServerStateRequestPB::Change change) {
    ChangeTServerStateRequestPB req;
    req.set_uuid(uuid);
    req.set_change(change);
    ChangeTServerStateResponsePB resp;
    cm_->ChangeTServerState(req, &resp);
    return resp.error();
  }
  // Changes the state and expects no error.
  void SetState(const std::string& uuid, ChangeTServerStateRequestPB::Change change) {
    const MasterErrorPB err = ChangeState(uuid, change);
    ASSERT_EQ(MasterErrorPB::UNKNOWN_ERROR, err.code()) << err.ShortDebugString();
    ASSERT_FALSE(err.has_status()) << err.ShortDebugString();
  }
  TServerStatePB StateOf(const std::string& uuid) {
    ListTabletServersResponsePB list;
    cm_->ListTabletServers(ListTabletServersRequestPB(), &list);
    for (const auto& e : list.servers()) {
      if (e.instance_id().permanent_uuid() == uuid) return e.state();
    }
    ADD_FAILURE() << uuid << " not listed";
    return TSERVER_STATE_NONE;
  }

  gflags::FlagSaver flag_saver_;
};

// A failed voter's replacement: ADD_LEARNER on a server without a replica, then
// PROMOTE_LEARNER once the leader reports it caught up, then REMOVE_PEER of the
// failed voter; the voters never fewer than the replication factor; each step shown
// in ListTablets; counted in the metrics; no learner told to drop its new copy.
TEST_F(CatalogManagerReplicasTest, DeadServersReplicasAreReplacedLearnerFirst) {
  ASSERT_NO_FATAL_FAILURE(AddServer());  // 4 servers, tablets of 3
  const std::string id = CreateTable(MakeCreateTableRequest("t", 4, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  const int victim = MostLoaded(id);
  const std::string dead = servers_[victim]->uuid();
  const std::vector<std::string> affected = TabletsOn(id, dead);
  ASSERT_FALSE(affected.empty());
  std::map<std::string, std::vector<std::string>> before;
  for (const auto& t : affected) before[t] = Voters(t);
  ElectAway(dead, affected);
  Kill(victim);

  std::map<std::string, std::set<std::string>> shown;  // replacement descriptions seen
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    Step();
    for (const auto& t : affected) {
      const auto info = TabletOf(t);
      if (info.has_replacement()) shown[t].insert(info.replacement().description());
    }
    for (const auto& t : affected) ASSERT_TRUE(Healed(t, dead, 3)) << t;
  });
  for (const auto& t : affected) {
    SCOPED_TRACE(t);
    const auto changes = cluster_->ChangesOf(t);
    ASSERT_EQ(3u, changes.size()) << ::testing::PrintToString(ChangeNames(t));
    const std::string added = changes[0].peer;
    EXPECT_EQ(0, std::count(before[t].begin(), before[t].end(), added)) << added;
    EXPECT_EQ((std::vector<std::string>{"ADD_LEARNER " + added, "PROMOTE_LEARNER " + added,
                                        "REMOVE_PEER " + dead}),
              ChangeNames(t));
    for (const auto& c : changes) {
      EXPECT_GE(c.voters.size(), 3u) << "after " << c.ToString();
      EXPECT_NE(dead, c.leader);
    }
    const auto voters = Voters(t);
    EXPECT_EQ(1, std::count(voters.begin(), voters.end(), added));
    EXPECT_EQ(added, voters.back());  // new voters come last
    for (const std::string& step :
         std::vector<std::string>{"adding learner", "promoting", "removing " + dead}) {
      EXPECT_TRUE(shown[t].count("replacing " + dead + " by " + added + ": " + step))
          << step << " not shown; seen: " << ::testing::PrintToString(shown[t]);
    }
  }
  EXPECT_EQ(int64_t(affected.size()), cm_->ReplacementsStartedForTests());
  EXPECT_EQ(int64_t(affected.size()), cm_->ReplacementsCompletedForTests());
  // A learner that reported its copy before its leader reported it was not taken for
  // a leftover.
  for (int i = 0; i < int(servers_.size()); i++) {
    if (i == victim) continue;
    EXPECT_TRUE(servers_[i]->DeleteLog().empty()) << i;
  }
  // The new replicas are in the locations; the failed one is gone from them.
  const auto locs = Locations(id);
  for (const auto& loc : locs.tablet_locations()) {
    ASSERT_EQ(3, loc.replicas_size());
    for (const auto& r : loc.replicas()) EXPECT_NE(dead, r.ts_info().permanent_uuid());
  }
}

// A server in maintenance mode: its replicas are not replaced while it is down, and
// it gets no new replica; out of maintenance, the replacement goes on.
TEST_F(CatalogManagerReplicasTest, MaintenanceHoldsBackReplacementAndNewLearners) {
  ASSERT_NO_FATAL_FAILURE(AddServer());
  ASSERT_NO_FATAL_FAILURE(AddServer());  // 5 servers, one tablet of 3
  const std::string id = CreateTable(MakeCreateTableRequest("t", 0, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  const std::string tablet = TabletsOf(id).at(0);
  const auto voters = Voters(tablet);
  std::vector<std::string> spares;
  for (const auto& s : servers_) {
    if (!std::count(voters.begin(), voters.end(), s->uuid())) spares.push_back(s->uuid());
  }
  ASSERT_EQ(2u, spares.size());
  const std::string dead = voters.back();
  ASSERT_NO_FATAL_FAILURE(SetState(dead, ChangeTServerStateRequestPB::ENTER_MAINTENANCE_MODE));
  EXPECT_EQ(MAINTENANCE_MODE, StateOf(dead));
  ElectAway(dead, {tablet});
  Kill(IndexOf(dead));

  // Failed, but in maintenance: said so, and nothing is asked of the leader.
  const std::string held = "not replacing " + dead + ": its tablet server is in maintenance mode";
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    Step();
    ASSERT_EQ(held, TabletOf(tablet).replacement().description());
  });
  for (int i = 0; i < 5; i++) Step();
  EXPECT_EQ(held, TabletOf(tablet).replacement().description());
  EXPECT_TRUE(cluster_->Changes().empty()) << ::testing::PrintToString(ChangeNames(tablet));

  // Out of maintenance, with both spares in it: nowhere to add a replica.
  for (const auto& s : spares) {
    ASSERT_NO_FATAL_FAILURE(SetState(s, ChangeTServerStateRequestPB::ENTER_MAINTENANCE_MODE));
  }
  ASSERT_NO_FATAL_FAILURE(SetState(dead, ChangeTServerStateRequestPB::EXIT_MAINTENANCE_MODE));
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    Step();
    const auto r = TabletOf(tablet).replacement();
    ASSERT_EQ(ReplacementPB::WAITING, r.step()) << r.description();
    ASSERT_EQ("replacing " + dead +
                  ": no tablet server to add a replica on (every one up and not in maintenance "
                  "mode holds one)",
              r.description());
  });
  for (int i = 0; i < 3; i++) Step();
  EXPECT_TRUE(cluster_->Changes().empty()) << ::testing::PrintToString(ChangeNames(tablet));

  // One spare leaves maintenance: it, never the other, takes the new replica.
  ASSERT_NO_FATAL_FAILURE(SetState(spares[1], ChangeTServerStateRequestPB::EXIT_MAINTENANCE_MODE));
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    Step();
    ASSERT_TRUE(Healed(tablet, dead, 3));
  });
  EXPECT_EQ((std::vector<std::string>{"ADD_LEARNER " + spares[1], "PROMOTE_LEARNER " + spares[1],
                                      "REMOVE_PEER " + dead}),
            ChangeNames(tablet));
  EXPECT_FALSE(ServerByUuid(spares[0])->HasTablet(tablet));
}

// At most --max_concurrent_tablet_copies learners are being added on one server at
// any time; the replacements waiting for a server say so.
TEST_F(CatalogManagerReplicasTest, AtMostMaxConcurrentTabletCopiesPerTargetServer) {
  FLAGS_max_concurrent_tablet_copies = 1;
  ASSERT_NO_FATAL_FAILURE(AddServer());  // 4 servers: each tablet's only spare is the fourth
  const std::string id = CreateTable(MakeCreateTableRequest("t", 8, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  const int victim = MostLoaded(id);
  const std::string dead = servers_[victim]->uuid();
  const std::vector<std::string> affected = TabletsOn(id, dead);
  // 24 replicas on 4 servers: the most loaded holds at least 6, so some spare (one of
  // three) is the only target of two tablets or more.
  ASSERT_GE(affected.size(), 4u);
  SetLearnerMode(FakeTabletServer::kProgressing);  // learners progress, never finish
  ElectAway(dead, affected);
  Kill(victim);

  // The log of changes, replayed: learners being added per server at any time.
  auto most_copies = [&] {
    std::map<std::pair<std::string, std::string>, bool> learning;  // (tablet, server)
    std::map<std::string, int> per_server;
    int most = 0;
    for (const auto& c : cluster_->Changes()) {
      const auto key = std::make_pair(c.tablet_id, c.peer);
      if (c.type == tserver::ADD_LEARNER) {
        learning[key] = true;
        most = std::max(most, ++per_server[c.peer]);
      } else if (learning[key]) {
        learning[key] = false;
        per_server[c.peer]--;
      }
    }
    return most;
  };
  bool capped = false;  // some replacement waited for the cap
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    Step();
    int waiting = 0;
    int learners = 0;
    for (const auto& t : affected) {
      const auto r = TabletOf(t).replacement();
      if (r.description().find("--max_concurrent_tablet_copies") != std::string::npos) waiting++;
      learners += int(Learners(t).size());
    }
    capped |= waiting > 0;
    ASSERT_LE(most_copies(), 1);
    // Every spare copies one tablet; the other replacements wait.
    ASSERT_GT(waiting, 0);
    ASSERT_EQ(int(affected.size()) - waiting, learners);
  });
  EXPECT_TRUE(capped);
  // The learners catch up: the next ones go, one per spare at a time.
  SetLearnerMode(FakeTabletServer::kCatchUpAtOnce);
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    for (auto& s : servers_) s->CatchUpLearnersForTests();
    Step();
    ASSERT_LE(most_copies(), 1);
    for (const auto& t : affected) ASSERT_TRUE(Healed(t, dead, 3)) << t;
  });
  EXPECT_EQ(1, most_copies());
}

// A learner whose server fails is removed and the replacement goes to another server.
TEST_F(CatalogManagerReplicasTest, LearnerWhoseServerFailsIsRemovedAndAnotherChosen) {
  ASSERT_NO_FATAL_FAILURE(AddServer());
  ASSERT_NO_FATAL_FAILURE(AddServer());  // 5 servers, one tablet of 3: two spares
  const std::string id = CreateTable(MakeCreateTableRequest("t", 0, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  const std::string tablet = TabletsOf(id).at(0);
  const std::string dead = Voters(tablet).back();
  SetLearnerMode(FakeTabletServer::kProgressing);  // not stalled: only the server fails
  ElectAway(dead, {tablet});
  Kill(IndexOf(dead));
  std::string first;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    Step();
    ASSERT_EQ(1u, Learners(tablet).size());
    first = Learners(tablet)[0];
  });
  Kill(IndexOf(first));
  std::string second;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    Step();
    const auto l = Learners(tablet);
    ASSERT_EQ(1u, l.size());
    ASSERT_NE(first, l[0]);
    second = l[0];
  });
  SetLearnerMode(FakeTabletServer::kCatchUpAtOnce);
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    for (auto& s : servers_) s->CatchUpLearnersForTests();
    Step();
    ASSERT_TRUE(Healed(tablet, dead, 3));
  });
  EXPECT_EQ((std::vector<std::string>{"ADD_LEARNER " + first, "REMOVE_PEER " + first,
                                      "ADD_LEARNER " + second, "PROMOTE_LEARNER " + second,
                                      "REMOVE_PEER " + dead}),
            ChangeNames(tablet));
  EXPECT_EQ(1, cm_->ReplacementsStartedForTests());  // one replacement, two learners
  EXPECT_EQ(1, cm_->ReplacementsCompletedForTests());
}

// A learner that makes no progress for the failure timeout is removed, another server
// chosen, and the removed learner's copy tombstoned.
TEST_F(CatalogManagerReplicasTest, LearnerWithoutProgressIsRemovedAndItsCopyTombstoned) {
  ASSERT_NO_FATAL_FAILURE(AddServer());
  ASSERT_NO_FATAL_FAILURE(AddServer());
  const std::string id = CreateTable(MakeCreateTableRequest("t", 0, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  const std::string tablet = TabletsOf(id).at(0);
  const std::string dead = Voters(tablet).back();
  SetLearnerMode(FakeTabletServer::kStuck);
  ElectAway(dead, {tablet});
  Kill(IndexOf(dead));
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    Step();
    const auto names = ChangeNames(tablet);
    ASSERT_GE(names.size(), 3u) << ::testing::PrintToString(names);
  });
  const auto changes = cluster_->ChangesOf(tablet);
  const std::string stuck = changes[0].peer;
  EXPECT_EQ("ADD_LEARNER " + stuck, changes[0].ToString());
  EXPECT_EQ("REMOVE_PEER " + stuck, changes[1].ToString());
  EXPECT_EQ(tserver::ADD_LEARNER, changes[2].type);
  EXPECT_NE(stuck, changes[2].peer);  // its server still holds the stale copy
  SetLearnerMode(FakeTabletServer::kCatchUpAtOnce);
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    for (auto& s : servers_) s->CatchUpLearnersForTests();
    Step();
    ASSERT_TRUE(Healed(tablet, dead, 3));
    const auto log = ServerByUuid(stuck)->DeleteLog();
    ASSERT_FALSE(log.empty());
    EXPECT_EQ(tablet, log[0].first);
    EXPECT_EQ(tserver::TABLET_DATA_TOMBSTONED, log[0].second);
  });
}

// A server that comes back after its replicas were replaced has them tombstoned, once
// per report; its stale leadership claims change nothing.
TEST_F(CatalogManagerReplicasTest, ReturningServersLeftoverReplicasAreTombstoned) {
  ASSERT_NO_FATAL_FAILURE(AddServer());
  const std::string id = CreateTable(MakeCreateTableRequest("t", 2, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  const int victim = MostLoaded(id);
  const std::string dead = servers_[victim]->uuid();
  const std::vector<std::string> affected = TabletsOn(id, dead);
  ElectAway(dead, affected);
  Kill(victim);
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    Step();
    for (const auto& t : affected) ASSERT_TRUE(Healed(t, dead, 3)) << t;
  });
  std::map<std::string, std::string> leaders;
  for (const auto& t : affected) leaders[t] = TabletOf(t).leader_uuid();
  for (const auto& t : affected) ASSERT_TRUE(servers_[victim]->HasTablet(t));
  ASSERT_TRUE(servers_[victim]->DeleteLog().empty());

  // It returns (a new instance at a new address) and reports its old replicas.
  servers_[victim]->set_seqno(2);
  ASSERT_OK(servers_[victim]->Start());
  down_.erase(victim);
  Heartbeat(*servers_[victim], true, true);
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    Step();
    for (const auto& t : affected) ASSERT_FALSE(servers_[victim]->HasTablet(t)) << t;
  });
  for (int i = 0; i < 5; i++) Step();
  const auto log = servers_[victim]->DeleteLog();
  ASSERT_EQ(affected.size(), log.size()) << "one DeleteTablet per leftover replica";
  for (const auto& [tablet, type] : log) {
    EXPECT_TRUE(std::count(affected.begin(), affected.end(), tablet)) << tablet;
    EXPECT_EQ(tserver::TABLET_DATA_TOMBSTONED, type);
  }
  for (const auto& t : affected) {
    EXPECT_EQ(leaders[t], TabletOf(t).leader_uuid());
    EXPECT_TRUE(Healed(t, dead, 3));
  }
}

// A learner someone else added (an operator moving a replica by hand) whose copy
// reports before its leader reports the change is not taken for a leftover, however
// many earlier reports of the leader lack it; once the leader reports it, the master
// follows it, and neither promotes nor removes it while every voter is up.
TEST_F(CatalogManagerReplicasTest, ALearnerReportedBeforeItsLeaderIsNotTombstoned) {
  ASSERT_NO_FATAL_FAILURE(AddServer());  // 4 servers, one tablet of 3: one spare
  const std::string id = CreateTable(MakeCreateTableRequest("t", 0, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  const std::string tablet = TabletsOf(id).at(0);
  const auto voters = Voters(tablet);
  const std::string leader = TabletOf(tablet).leader_uuid();
  std::string spare;
  for (const auto& s : servers_) {
    if (!std::count(voters.begin(), voters.end(), s->uuid())) spare = s->uuid();
  }
  // Reports of the leader without the spare (its size changes).
  for (int i = 1; i <= 3; i++) {
    ServerByUuid(leader)->SetStatsForTests(tablet, 1000 * i, i);
    HeartbeatAll();
  }
  tserver::ChangeConfigRequestPB req;
  req.set_dest_uuid(leader);
  req.set_tablet_id(tablet);
  req.set_type(tserver::ADD_LEARNER);
  req.mutable_peer()->set_permanent_uuid(spare);
  req.mutable_peer()->set_host(ServerByUuid(spare)->addr().host());
  req.mutable_peer()->set_port(ServerByUuid(spare)->addr().port());
  tserver::ChangeConfigResponsePB resp;
  rpc::RpcController rpc;
  rpc.set_timeout(MonoDelta::FromSeconds(10));
  ASSERT_OK(tserver::TabletServerAdminServiceProxy(messenger_, ServerByUuid(leader)->addr())
                .ChangeConfig(req, &resp, &rpc));
  ASSERT_FALSE(resp.has_error()) << resp.error().ShortDebugString();
  // The learner's copy reports; the leader has not yet.
  FakeTabletServer& learner = *ServerByUuid(spare);
  ASSERT_TRUE(learner.HasTablet(tablet));
  Heartbeat(learner, false, false);
  for (int i = 0; i < 5; i++) cm_->RunBackgroundPassForTests();
  EXPECT_TRUE(learner.DeleteLog().empty());
  ASSERT_TRUE(learner.HasTablet(tablet));
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    Step();
    ASSERT_EQ(std::vector<std::string>{spare}, Learners(tablet));
  });
  for (int i = 0; i < 5; i++) Step();
  EXPECT_EQ(std::vector<std::string>{spare}, Learners(tablet));
  EXPECT_EQ(voters, Voters(tablet));
  EXPECT_EQ(1u, cluster_->Changes().size());  // the operator's only
  EXPECT_TRUE(learner.DeleteLog().empty());
  EXPECT_FALSE(TabletOf(tablet).has_replacement());
}

// The configuration the master follows is in the sys catalog: after a restart (before
// any report) ListTablets has the learner being added, and the replacement goes on
// from there. A learner never gets CreateTablet.
TEST_F(CatalogManagerReplicasTest, FollowedConfigurationSurvivesRestart) {
  ASSERT_NO_FATAL_FAILURE(AddServer());
  const std::string id = CreateTable(MakeCreateTableRequest("t", 0, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  const std::string tablet = TabletsOf(id).at(0);
  const std::string dead = Voters(tablet).back();
  SetLearnerMode(FakeTabletServer::kProgressing);
  ElectAway(dead, {tablet});
  Kill(IndexOf(dead));
  std::string learner;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    Step();
    ASSERT_EQ(1u, Learners(tablet).size());
    learner = Learners(tablet)[0];
  });
  // In the locations too, last and as LEARNER.
  const auto loc = TabletLocations(id, tablet, false);
  ASSERT_EQ(3, loc.replicas_size());  // the dead voter is not offered
  EXPECT_EQ(learner, loc.replicas(2).ts_info().permanent_uuid());
  EXPECT_EQ(LEARNER, loc.replicas(2).role());
  const auto voters = Voters(tablet);
  // And on the /tables page: the learner's role, the replacement in progress.
  const auto snapshots = cm_->GetTableSnapshots();
  ASSERT_EQ(1u, snapshots.size());
  const TabletSnapshot& snap = snapshots[0].tablets.at(0);
  EXPECT_EQ(LEARNER, snap.roles.at(learner));
  EXPECT_EQ(ReplacementPB::ADDING_LEARNER, snap.replacement.step());
  EXPECT_EQ(0u, snap.replacement.description().find("replacing " + dead + " by " + learner +
                                                    ": adding learner ("))
      << snap.replacement.description();

  ASSERT_NO_FATAL_FAILURE(RestartCatalog());
  EXPECT_EQ(voters, Voters(tablet));
  EXPECT_EQ(std::vector<std::string>{learner}, Learners(tablet));
  for (auto& s : servers_) {
    if (s->uuid() != dead) Heartbeat(*s, true, false);  // registered, no reports yet
  }
  const auto after = TabletLocations(id, tablet, false);
  ASSERT_EQ(3, after.replicas_size());
  EXPECT_EQ(LEARNER, after.replicas(2).role());

  SetLearnerMode(FakeTabletServer::kCatchUpAtOnce);
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    for (auto& s : servers_) s->CatchUpLearnersForTests();
    Step();
    ASSERT_TRUE(Healed(tablet, dead, 3));
  });
  EXPECT_EQ(0, ServerByUuid(learner)->state()->creates.load());
  const auto healed = Voters(tablet);
  ASSERT_NO_FATAL_FAILURE(RestartCatalog());
  EXPECT_EQ(healed, Voters(tablet));
  EXPECT_TRUE(Learners(tablet).empty());
}

// A leader that answers NOT_THE_LEADER is not asked again until a leader reports.
TEST_F(CatalogManagerReplicasTest, NotTheLeaderWaitsForTheNextReport) {
  ASSERT_NO_FATAL_FAILURE(AddServer());
  const std::string id = CreateTable(MakeCreateTableRequest("t", 0, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  const std::string tablet = TabletsOf(id).at(0);
  const auto voters = Voters(tablet);
  const std::string leader = TabletOf(tablet).leader_uuid();
  std::vector<std::string> others;
  for (const auto& v : voters) {
    if (v != leader) others.push_back(v);
  }
  ASSERT_EQ(2u, others.size());
  const std::string dead = others[0];
  const std::string next = others[1];
  // The leader steps down without the master hearing of it: its reports leave the
  // tablet out.
  FakeTabletServer& old = *ServerByUuid(leader);
  {
    MutexLock l(old.state()->mu);
    old.state()->consensus[tablet].set_role(FOLLOWER);
  }
  Kill(IndexOf(dead));
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    Step();
    ASSERT_EQ("replacing " + dead + ": " + leader +
                  " answered NOT_THE_LEADER: waiting for the leader's report",
              TabletOf(tablet).replacement().description());
  });
  const int refused = old.state()->change_configs.load();
  EXPECT_EQ(1, refused);
  for (int i = 0; i < 10; i++) Step();
  EXPECT_EQ(refused, old.state()->change_configs.load());
  EXPECT_TRUE(cluster_->Changes().empty());
  EXPECT_EQ(leader, TabletOf(tablet).leader_uuid());  // as far as the master knows
  // A new leader reports: the replacement goes on with it.
  ServerByUuid(next)->SetConsensusForTests(tablet, LEADER, 2, next);
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    Step();
    ASSERT_TRUE(Healed(tablet, dead, 3));
  });
  for (const auto& c : cluster_->Changes()) EXPECT_EQ(next, c.leader);
  EXPECT_EQ(refused, old.state()->change_configs.load());
}

// Unregistering: a live server is refused, a dead one forgotten with its maintenance
// state, and it registers anew should it come back. Maintenance mode survives a
// restart. Bad input gets errors that say what is wrong.
TEST_F(CatalogManagerReplicasTest, UnregisterAndMaintenanceStates) {
  auto unregister = [&](const std::string& uuid) {
    UnregisterTServerRequestPB req;
    req.set_uuid(uuid);
    UnregisterTServerResponsePB resp;
    cm_->UnregisterTServer(req, &resp);
    return resp.error();
  };
  FakeTabletServer& ts = *servers_[2];
  MasterErrorPB err = unregister(ts.uuid());
  EXPECT_EQ(MasterErrorPB::TABLET_SERVER_IS_LIVE, err.code());
  EXPECT_NE(std::string::npos,
            err.status().message().find("tablet server " + ts.uuid() + " is live"))
      << err.status().message();
  err = unregister("no-such-server");
  EXPECT_EQ(MasterErrorPB::UNKNOWN_TABLET_SERVER, err.code());
  EXPECT_NE(std::string::npos, err.status().message().find("no-such-server"));
  EXPECT_EQ(MasterErrorPB::INVALID_ARGUMENT, unregister("").code());
  EXPECT_EQ(
      MasterErrorPB::UNKNOWN_TABLET_SERVER,
      ChangeState("no-such-server", ChangeTServerStateRequestPB::ENTER_MAINTENANCE_MODE).code());
  EXPECT_EQ(
      MasterErrorPB::UNKNOWN_TABLET_SERVER,
      ChangeState("no-such-server", ChangeTServerStateRequestPB::EXIT_MAINTENANCE_MODE).code());
  err = ChangeState(ts.uuid(), ChangeTServerStateRequestPB::UNKNOWN_CHANGE);
  EXPECT_EQ(MasterErrorPB::INVALID_ARGUMENT, err.code());
  EXPECT_NE(std::string::npos, err.status().message().find("unknown tablet server state change"));

  // Maintenance mode, persisted.
  EXPECT_EQ(TSERVER_STATE_NONE, StateOf(ts.uuid()));
  ASSERT_NO_FATAL_FAILURE(SetState(ts.uuid(), ChangeTServerStateRequestPB::ENTER_MAINTENANCE_MODE));
  ASSERT_NO_FATAL_FAILURE(SetState(ts.uuid(), ChangeTServerStateRequestPB::ENTER_MAINTENANCE_MODE));
  EXPECT_EQ(MAINTENANCE_MODE, StateOf(ts.uuid()));
  ASSERT_NO_FATAL_FAILURE(RestartCatalog());
  HeartbeatAll();
  EXPECT_EQ(MAINTENANCE_MODE, StateOf(ts.uuid()));
  ASSERT_NO_FATAL_FAILURE(SetState(ts.uuid(), ChangeTServerStateRequestPB::EXIT_MAINTENANCE_MODE));
  ASSERT_NO_FATAL_FAILURE(RestartCatalog());
  HeartbeatAll();
  EXPECT_EQ(TSERVER_STATE_NONE, StateOf(ts.uuid()));

  // Dead, in maintenance: forgotten with its state.
  ASSERT_NO_FATAL_FAILURE(SetState(ts.uuid(), ChangeTServerStateRequestPB::ENTER_MAINTENANCE_MODE));
  ts.Stop();
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] {
    HeartbeatAll({2});
    cm_->RunBackgroundPassForTests();
    ASSERT_FALSE(ts_manager_->IsLive(ts.uuid()));
  });
  err = unregister(ts.uuid());
  ASSERT_FALSE(err.has_status()) << err.ShortDebugString();
  ListTabletServersResponsePB list;
  cm_->ListTabletServers(ListTabletServersRequestPB(), &list);
  EXPECT_EQ(2, list.servers_size());
  EXPECT_TRUE(cm_->TServerStates().empty());
  ASSERT_NO_FATAL_FAILURE(RestartCatalog());
  EXPECT_TRUE(cm_->TServerStates().empty());
  // Back: registered anew.
  ASSERT_OK(ts.Start());
  HeartbeatAll();
  EXPECT_TRUE(ts_manager_->IsLive(ts.uuid()));
  EXPECT_EQ(TSERVER_STATE_NONE, StateOf(ts.uuid()));
}

// An operator's move: a learner on the target, promoted, then the source removed;
// a leader that is moved hands leadership away first. Bad moves are refused with what
// is wrong, and a second move waits for the first.
TEST_F(CatalogManagerReplicasTest, MoveReplicaThroughALearnerAndOffTheLeader) {
  ASSERT_NO_FATAL_FAILURE(AddServer());  // 4 servers, one tablet of 3
  const std::string id = CreateTable(MakeCreateTableRequest("t", 0, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  const std::string tablet = TabletsOf(id).at(0);
  auto voters = Voters(tablet);
  std::string spare;
  for (const auto& s : servers_) {
    if (!std::count(voters.begin(), voters.end(), s->uuid())) spare = s->uuid();
  }
  const std::string leader = TabletOf(tablet).leader_uuid();
  ASSERT_FALSE(leader.empty());
  std::string follower;
  for (const auto& v : voters) {
    if (v != leader) follower = v;
  }
  auto move = [&](const std::string& from, const std::string& to) {
    MoveReplicaRequestPB req;
    req.set_tablet_id(tablet);
    req.set_from_uuid(from);
    req.set_to_uuid(to);
    MoveReplicaResponsePB resp;
    cm_->MoveReplica(req, &resp);
    return resp.error();
  };
  EXPECT_EQ(MasterErrorPB::INVALID_ARGUMENT, move(spare, follower).code());   // not a voter
  EXPECT_EQ(MasterErrorPB::INVALID_ARGUMENT, move(follower, leader).code());  // a member
  EXPECT_EQ(MasterErrorPB::UNKNOWN_TABLET_SERVER, move(follower, "no-such-server").code());
  {
    MoveReplicaRequestPB req;
    req.set_tablet_id("no-such-tablet");
    MoveReplicaResponsePB resp;
    cm_->MoveReplica(req, &resp);
    EXPECT_EQ(MasterErrorPB::TABLET_NOT_FOUND, resp.error().code());
  }
  MasterErrorPB err = move(follower, spare);
  ASSERT_FALSE(err.has_status()) << err.ShortDebugString();
  EXPECT_EQ(MasterErrorPB::CONFIG_CHANGE_IN_PROGRESS, move(leader, "").code());
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    Step();
    ASSERT_TRUE(Healed(tablet, follower, 3));
  });
  EXPECT_EQ((std::vector<std::string>{"ADD_LEARNER " + spare, "PROMOTE_LEARNER " + spare,
                                      "REMOVE_PEER " + follower}),
            ChangeNames(tablet));

  // The leader moves to the server just emptied, the master handing leadership away
  // first: the removal is asked of another leader.
  err = move(leader, follower);
  ASSERT_FALSE(err.has_status()) << err.ShortDebugString();
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    Step();
    ASSERT_TRUE(Healed(tablet, leader, 3));
  });
  const auto changes = cluster_->ChangesOf(tablet);
  ASSERT_EQ(6u, changes.size());
  EXPECT_EQ("REMOVE_PEER " + leader, changes.back().ToString());
  EXPECT_NE(leader, changes.back().leader);
  EXPECT_NE(leader, TabletOf(tablet).leader_uuid());
}

// A decommissioned server is emptied (each replica moved elsewhere), shows 0 replicas
// and its state, and gets no replica of a new table; cancelling ends the state.
TEST_F(CatalogManagerReplicasTest, DecommissionEmptiesAServer) {
  ASSERT_NO_FATAL_FAILURE(AddServer());  // 4 servers, tablets of 3
  const std::string id = CreateTable(MakeCreateTableRequest("t", 4, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  const int victim = MostLoaded(id);
  const std::string gone = servers_[victim]->uuid();
  const auto affected = TabletsOn(id, gone);
  ASSERT_FALSE(affected.empty());
  ASSERT_NO_FATAL_FAILURE(SetState(gone, ChangeTServerStateRequestPB::START_DECOMMISSION));
  EXPECT_EQ(DECOMMISSIONING, StateOf(gone));
  auto replicas_on = [&](const std::string& uuid) {
    ListTabletServersResponsePB list;
    cm_->ListTabletServers(ListTabletServersRequestPB(), &list);
    for (const auto& e : list.servers()) {
      if (e.instance_id().permanent_uuid() == uuid) return e.num_replicas();
    }
    return -1;
  };
  EXPECT_EQ(int(affected.size()), replicas_on(gone));
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    Step();
    for (const auto& t : affected) ASSERT_TRUE(Healed(t, gone, 3)) << t;
  });
  EXPECT_EQ(0, replicas_on(gone));
  // A new table's replicas go to the other three.
  const std::string id2 = CreateTable(MakeCreateTableRequest("t2", 3, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id2));
  EXPECT_TRUE(TabletsOn(id2, gone).empty());
  EXPECT_EQ(0, replicas_on(gone));
  // Maintenance mode does not end a decommission; cancelling does.
  ASSERT_NO_FATAL_FAILURE(SetState(gone, ChangeTServerStateRequestPB::EXIT_MAINTENANCE_MODE));
  EXPECT_EQ(DECOMMISSIONING, StateOf(gone));
  ASSERT_NO_FATAL_FAILURE(RestartCatalog());
  HeartbeatAll();
  EXPECT_EQ(DECOMMISSIONING, StateOf(gone));
  ASSERT_NO_FATAL_FAILURE(SetState(gone, ChangeTServerStateRequestPB::CANCEL_DECOMMISSION));
  EXPECT_EQ(TSERVER_STATE_NONE, StateOf(gone));
}

// A table's replication factor goes up (learners added at once, promoted) and down
// (voters removed one at a time), persisted; an even or too high one is refused.
TEST_F(CatalogManagerReplicasTest, SetReplicationFactorUpAndDown) {
  ASSERT_NO_FATAL_FAILURE(AddServer());
  ASSERT_NO_FATAL_FAILURE(AddServer());  // 5 servers
  const std::string id = CreateTable(MakeCreateTableRequest("t", 2, false, {}, {}, 1));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  auto set_rf = [&](int rf) {
    SetReplicationFactorRequestPB req;
    req.mutable_table()->set_table_name("t");
    req.set_num_replicas(rf);
    SetReplicationFactorResponsePB resp;
    cm_->SetReplicationFactor(req, &resp);
    return resp.error();
  };
  EXPECT_EQ(MasterErrorPB::ILLEGAL_REPLICATION_FACTOR, set_rf(2).code());
  EXPECT_EQ(MasterErrorPB::ILLEGAL_REPLICATION_FACTOR, set_rf(0).code());
  EXPECT_EQ(MasterErrorPB::REPLICATION_FACTOR_TOO_HIGH, set_rf(7).code());
  {
    SetReplicationFactorRequestPB req;
    req.mutable_table()->set_table_name("no-such-table");
    req.set_num_replicas(3);
    SetReplicationFactorResponsePB resp;
    cm_->SetReplicationFactor(req, &resp);
    EXPECT_EQ(MasterErrorPB::TABLE_NOT_FOUND, resp.error().code());
  }
  const auto tablets = TabletsOf(id);
  // Raised from 1, both new replicas copy at once.
  SetLearnerMode(FakeTabletServer::kProgressing);
  MasterErrorPB err = set_rf(3);
  ASSERT_FALSE(err.has_status()) << err.ShortDebugString();
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    Step();
    for (const auto& t : tablets) ASSERT_EQ(2u, Learners(t).size()) << t;
  });
  SetLearnerMode(FakeTabletServer::kCatchUpAtOnce);
  for (int rf : {3, 5, 3, 1}) {
    SCOPED_TRACE("replication factor " + std::to_string(rf));
    err = set_rf(rf);
    ASSERT_FALSE(err.has_status()) << err.ShortDebugString();
    ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
      for (auto& s : servers_) s->CatchUpLearnersForTests();
      Step();
      for (const auto& t : tablets) {
        ASSERT_EQ(size_t(rf), Voters(t).size()) << t;
        ASSERT_TRUE(Learners(t).empty()) << t;
        ASSERT_EQ(rf, TabletOf(t).num_replicas());
      }
    });
  }
  // Never more voters than the largest factor asked for.
  for (const auto& c : cluster_->Changes()) EXPECT_LE(c.voters.size(), 5u) << c.ToString();
  ASSERT_NO_FATAL_FAILURE(RestartCatalog());
  HeartbeatAll();
  EXPECT_EQ(1, TabletOf(tablets[0]).num_replicas());
}

// A server added to a full cluster gets its share of replicas by rebalancing moves, a
// bounded number at a time; a dry run plans without moving anything.
TEST_F(CatalogManagerReplicasTest, RebalanceFillsANewServer) {
  const std::string id = CreateTable(MakeCreateTableRequest("t", 8, false, {}, {}, 3));
  ASSERT_NO_FATAL_FAILURE(WaitRunning(id));
  ASSERT_NO_FATAL_FAILURE(AddServer());  // empty
  const std::string fresh = servers_.back()->uuid();
  Step();
  auto rebalance = [&](bool dry_run) {
    RebalanceRequestPB req;
    req.set_dry_run(dry_run);
    req.set_max_moves(2);
    RebalanceResponsePB resp;
    cm_->Rebalance(req, &resp);
    EXPECT_FALSE(resp.has_error()) << resp.error().ShortDebugString();
    return resp;
  };
  RebalanceResponsePB plan = rebalance(true);
  EXPECT_EQ(2, plan.moves_size());
  EXPECT_FALSE(plan.balanced());
  for (int i = 0; i < 3; i++) Step();
  EXPECT_TRUE(cluster_->Changes().empty()) << "a dry run moves nothing";
  EXPECT_TRUE(TabletsOn(id, fresh).empty());

  int rounds = 0;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(60), [&] {
    Step();
    const RebalanceResponsePB r = rebalance(false);
    rounds++;
    EXPECT_LE(r.moves_in_progress() + r.moves_size(), 2);
    ASSERT_TRUE(r.balanced());
  });
  // 24 replicas on 4 servers: 6 each.
  EXPECT_EQ(6u, TabletsOn(id, fresh).size());
  for (const auto& s : servers_) EXPECT_EQ(6u, TabletsOn(id, s->uuid()).size()) << s->uuid();
  for (const auto& t : TabletsOf(id)) {
    EXPECT_EQ(3u, Voters(t).size());
    EXPECT_TRUE(Learners(t).empty());
  }
  EXPECT_GT(rounds, 1);
}

}  // namespace nyala::master
