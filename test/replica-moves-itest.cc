// Operators moving replicas on a real cluster, through the CLI as a user runs it,
// while a writer keeps writing: a table's replication factor 1 -> 3 -> 5 -> 3; a
// replica moved off its leader; a replica removed by hand and put back by the master;
// a server decommissioned; a new server filled by a rebalance. After each, every
// acknowledged row is there and every replica agrees (ksck --checksum_scan).
#include <glog/logging.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/status.h"
#include "common/test_util.h"
#include "test/client_itest_util.h"
#include "test/replicated_table_itest_util.h"

namespace nyala::client {
namespace {

using itest::RunCli;
using itest::Writer;

class ReplicaMovesITest : public NyalaTest {
 protected:
  void StartCluster(int tservers) {
    // Leaders' reports are asked for every 2 s (a tenth of the failure timeout), so
    // each step of a move is seen quickly.
    cluster_ = std::make_unique<itest::ClientTestCluster>(
        test_dir(), tservers, std::vector<std::string>{"--raft_election_timeout_ms=500"},
        std::vector<std::string>{"--follower_unavailable_considered_failed_sec=20"});
    ASSERT_OK(cluster_->Start());
    client_ = cluster_->client();
  }
  void TearDown() override {
    client_.reset();
    if (cluster_) EXPECT_OK(cluster_->Shutdown());
    NyalaTest::TearDown();
  }
  std::string Master() { return cluster_->master_addr(); }

  // Runs `nyala <args>` and expects exit 0; its output.
  std::string Cli(const std::string& args) {
    std::string out;
    const int rc = RunCli(args + " --wait_timeout_sec=120", &out);
    EXPECT_EQ(0, rc) << "nyala " << args << ":\n" << out;
    return out;
  }

  master::ListTabletsResponsePB Tablets(const std::string& table) {
    master::ListTabletsRequestPB req;
    req.mutable_table()->set_table_name(table);
    master::ListTabletsResponsePB resp;
    CHECK_OK(
        cluster_->mini_cluster()->CallMaster(&master::MasterServiceProxy::ListTablets, req, &resp));
    CHECK(!resp.has_error()) << resp.error().ShortDebugString();
    return resp;
  }
  // Voters of each tablet of `table`, by tablet id.
  std::map<std::string, std::vector<std::string>> Voters(const std::string& table) {
    std::map<std::string, std::vector<std::string>> out;
    const master::ListTabletsResponsePB listed = Tablets(table);
    for (const auto& t : listed.tablets()) {
      for (const auto& r : t.replicas()) {
        if (r.role() != master::LEARNER) out[t.tablet_id()].push_back(r.ts_uuid());
      }
    }
    return out;
  }
  int ReplicasOn(const std::string& table, const std::string& uuid) {
    int n = 0;
    for (const auto& [id, voters] : Voters(table))
      n += int(std::count(voters.begin(), voters.end(), uuid));
    return n;
  }

  // Every replica agrees, and the writer's acknowledged rows are all there.
  void ExpectConsistent(Writer* w, const std::shared_ptr<Table>& t) {
    w->Stop();
    std::string out;
    ASSERT_EQ(0, RunCli("cluster ksck " + Master() + " --checksum_scan", &out)) << out;
    ASSERT_NO_FATAL_FAILURE(itest::ExpectAcknowledgedRows(w, itest::ScanAll(t)));
    EXPECT_GT(w->acked.load(), 0);
  }

  std::unique_ptr<itest::ClientTestCluster> cluster_;
  std::shared_ptr<Client> client_;
};

// Waits until `w` acknowledges `n` more writes than it had.
#define ASSERT_WRITES_GO_ON(w, n)                                         \
  do {                                                                    \
    const int64_t base_ = (w).acked.load();                               \
    ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30),                         \
                      [&] { ASSERT_GE((w).acked.load(), base_ + (n)); }); \
  } while (0)

TEST_F(ReplicaMovesITest, ReplicationFactorOneThreeFiveThreeUnderWrites) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(5));
  auto t = itest::CreateKeyValueTable(client_.get(), "rf", 3, 1);
  Writer w;
  w.Start(client_, t, MonoDelta::FromSeconds(30));
  ASSERT_WRITES_GO_ON(w, 200);
  for (int rf : {3, 5, 3}) {
    SCOPED_TRACE("replication factor " + std::to_string(rf));
    const std::string out = Cli("table set_replication_factor " + Master() + " rf " +
                                std::to_string(rf) + " --format=json");
    EXPECT_NE(std::string::npos, out.find("\"replication_factor\":" + std::to_string(rf))) << out;
    for (const auto& [id, voters] : Voters("rf")) {
      EXPECT_EQ(size_t(rf), voters.size()) << id;
      EXPECT_EQ(size_t(rf), std::set<std::string>(voters.begin(), voters.end()).size());
    }
    ASSERT_WRITES_GO_ON(w, 200);
  }
  // Bad input: an even factor, a factor above the servers, an unknown table.
  std::string out;
  EXPECT_NE(0, RunCli("table set_replication_factor " + Master() + " rf 2", &out));
  EXPECT_NE(std::string::npos, out.find("must be odd")) << out;
  out.clear();
  EXPECT_NE(0, RunCli("table set_replication_factor " + Master() + " rf 7", &out));
  EXPECT_NE(std::string::npos, out.find("REPLICATION_FACTOR_TOO_HIGH")) << out;
  out.clear();
  EXPECT_NE(0, RunCli("table set_replication_factor " + Master() + " nosuch 3", &out));
  EXPECT_NE(std::string::npos, out.find("TABLE_NOT_FOUND")) << out;
  ASSERT_NO_FATAL_FAILURE(ExpectConsistent(&w, t));
}

// 4 servers, RF 3: a replica moved off its leader to the spare; a follower removed by
// hand, which the master puts back; a server decommissioned (it holds nothing after);
// then a fifth server, empty, filled by a rebalance. Writes go on throughout.
TEST_F(ReplicaMovesITest, MoveDecommissionAndRebalanceUnderWrites) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(4));
  auto t = itest::CreateKeyValueTable(client_.get(), "moves", 6, 3);
  Writer w;
  w.Start(client_, t, MonoDelta::FromSeconds(30));
  ASSERT_WRITES_GO_ON(w, 200);
  std::vector<std::string> uuids;
  for (int i = 0; i < 4; i++) uuids.push_back(cluster_->tserver(i)->uuid());

  // The leader's replica of one tablet moves to that tablet's spare server.
  {
    const auto tablet = Tablets("moves").tablets(0);
    const std::string leader = tablet.leader_uuid();
    ASSERT_FALSE(leader.empty());
    std::string spare;
    for (const auto& u : uuids) {
      bool member = false;
      for (const auto& r : tablet.replicas()) member |= r.ts_uuid() == u;
      if (!member) spare = u;
    }
    Cli("tablet change_config move_replica " + Master() + " " + tablet.tablet_id() + " " + leader +
        " " + spare);
    const auto voters = Voters("moves").at(tablet.tablet_id());
    EXPECT_EQ(3u, voters.size());
    EXPECT_EQ(0, std::count(voters.begin(), voters.end(), leader));
    EXPECT_EQ(1, std::count(voters.begin(), voters.end(), spare));
    ASSERT_WRITES_GO_ON(w, 200);
  }
  // A follower removed by hand: the master adds a replica back.
  {
    const auto tablet = Tablets("moves").tablets(1);
    std::string follower;
    for (const auto& r : tablet.replicas()) {
      if (r.ts_uuid() != tablet.leader_uuid()) follower = r.ts_uuid();
    }
    const std::string out = Cli("tablet change_config remove_replica " + Master() + " " +
                                tablet.tablet_id() + " " + follower);
    EXPECT_NE(std::string::npos, out.find("brings the tablet back")) << out;
    ASSERT_EVENTUALLY(MonoDelta::FromSeconds(60), [&] {
      const auto listed = Tablets("moves");
      for (const auto& tb : listed.tablets()) {
        if (tb.tablet_id() != tablet.tablet_id()) continue;
        int voters = 0;
        for (const auto& r : tb.replicas()) voters += r.role() != master::LEARNER ? 1 : 0;
        ASSERT_EQ(3, voters);
        ASSERT_EQ(3, tb.replicas_size());
      }
    });
    ASSERT_WRITES_GO_ON(w, 200);
  }
  // Decommission: every replica leaves the server, and writes go on.
  {
    const std::string gone = uuids[0];
    ASSERT_GT(ReplicasOn("moves", gone), 0);
    const std::string out = Cli("tserver decommission " + Master() + " " + gone);
    EXPECT_NE(std::string::npos, out.find("holds no replicas: it can be stopped")) << out;
    EXPECT_EQ(0, ReplicasOn("moves", gone));
    for (const auto& [id, voters] : Voters("moves")) EXPECT_EQ(3u, voters.size()) << id;
    std::string listed = Cli("tserver list " + Master());
    EXPECT_NE(std::string::npos, listed.find("DECOMMISSIONING")) << listed;
    ASSERT_WRITES_GO_ON(w, 200);
  }
  // A new, empty server: a dry run plans moves to it and moves nothing; the rebalance
  // gives it its share (18 replicas on 4 servers that can hold them: 4 or 5 each).
  {
    ASSERT_OK(cluster_->mini_cluster()->AddTabletServer());
    const std::string fresh = cluster_->tserver(4)->uuid();
    const std::string plan = Cli("cluster rebalance " + Master() + " --dry_run");
    EXPECT_NE(std::string::npos, plan.find(fresh)) << plan;
    EXPECT_EQ(0, ReplicasOn("moves", fresh));
    Cli("cluster rebalance " + Master());
    const int on_fresh = ReplicasOn("moves", fresh);
    EXPECT_GE(on_fresh, 4);
    EXPECT_LE(on_fresh, 5);
    EXPECT_EQ(0, ReplicasOn("moves", uuids[0]));
    for (const auto& [id, voters] : Voters("moves")) EXPECT_EQ(3u, voters.size()) << id;
    ASSERT_WRITES_GO_ON(w, 200);
  }
  ASSERT_NO_FATAL_FAILURE(ExpectConsistent(&w, t));
}

}  // namespace
}  // namespace nyala::client
