// Healing with real daemons: a tablet server dies for good while a spare runs, and the
// master replaces each of its replicas learner first (ADD_LEARNER on a live server, a
// tablet copy, PROMOTE_LEARNER, REMOVE_PEER: docs/consensus.md, "Replacing and moving
// replicas") while a client keeps writing. A server that comes back after its replicas
// were replaced has them tombstoned.
#include <glog/logging.h>
#include <gtest/gtest.h>

#include <map>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/test_util.h"
#include "nyala/client.h"
#include "test/mini_cluster.h"
#include "test/replicated_table_itest_util.h"

namespace nyala::client {
namespace {

using itest::RunCli;
using itest::ScanAll;
using itest::Writer;

constexpr int kServers = 4;
constexpr int kReplicas = 3;
// A server silent this long is failed and its replicas are replaced (300 s by default).
constexpr int kFailedAfterSec = 5;
// The longest the writer may go without an acknowledgement (see the first test). Below
// the failure timeout, so writes that waited for healing would exceed it.
constexpr MonoDelta kMaxWriteGap = MonoDelta::FromSeconds(4);
static_assert(kMaxWriteGap < MonoDelta::FromSeconds(kFailedAfterSec));
// Healing must be over this long after the kill.
constexpr MonoDelta kHealTimeout = MonoDelta::FromSeconds(120);

class HealingITest : public NyalaTest {
 protected:
  void SetUp() override {
    NyalaTest::SetUp();
    test::MiniClusterOptions o;
    o.root_dir = test_dir();
    o.num_tservers = kServers;
    // The master also calls the killed server dead (ListTabletServers, ksck) by then.
    o.master_flags = {
        "--follower_unavailable_considered_failed_sec=" + std::to_string(kFailedAfterSec),
        "--tserver_unresponsive_timeout_ms=" + std::to_string(kFailedAfterSec * 1000)};
    // Failovers take ~1 s instead of ~2 s.
    o.tserver_flags = {"--raft_election_timeout_ms=500"};
    cluster_ = std::make_unique<test::MiniCluster>(o);
    ASSERT_OK(cluster_->Start());
    auto client = ClientBuilder().add_master_server_addr(cluster_->master_addr()).Build();
    ASSERT_OK(client.status());
    client_ = *client;
  }
  void TearDown() override {
    client_.reset();
    if (cluster_) EXPECT_OK(cluster_->Shutdown());
    NyalaTest::TearDown();
  }

  std::shared_ptr<Table> CreateTable(const std::string& name, int tablets) {
    return itest::CreateKeyValueTable(client_.get(), name, tablets, kReplicas);
  }

  master::ListTabletsResponsePB MasterTablets(const std::string& table) {
    master::ListTabletsRequestPB req;
    req.mutable_table()->set_table_name(table);
    master::ListTabletsResponsePB resp;
    CHECK_OK(cluster_->CallMaster(&master::MasterServiceProxy::ListTablets, req, &resp));
    CHECK(!resp.has_error()) << resp.error().ShortDebugString();
    return resp;
  }

  // Why `table` is not healed ("" once it is): each tablet has a leader and kReplicas
  // voters, none on `dead` and all on live servers, no learner and no replacement under
  // way, as the master follows the leaders' configurations.
  std::string NotHealed(const std::string& table, const std::string& dead) {
    const master::ListTabletsResponsePB listed = MasterTablets(table);
    for (const auto& t : listed.tablets()) {
      const std::string id = "tablet " + t.tablet_id() + ": ";
      if (t.has_replacement()) return id + t.replacement().description();
      if (t.leader_uuid().empty()) return id + "no leader";
      int voters = 0;
      for (const auto& r : t.replicas()) {
        if (r.role() == master::LEARNER) return id + "a learner on " + r.ts_uuid();
        if (r.ts_uuid() == dead || !r.ts_live()) return id + "a voter on dead " + r.ts_uuid();
        voters++;
      }
      if (voters != kReplicas) return id + std::to_string(voters) + " voters";
    }
    return "";
  }

  // Waits until every tablet of `table` has a leader; then the index of the server
  // holding the most replicas (of those, one leading the most tablets), or with
  // `by_leaders` the one leading the most tablets (of those, holding the most
  // replicas), and the tablets there.
  int MostLoadedServer(const std::string& table, std::vector<std::string>* tablets,
                       bool by_leaders = false) {
    master::ListTabletsResponsePB listed;
    AssertEventually(MonoDelta::FromSeconds(20), [&] {
      listed = MasterTablets(table);
      for (const auto& t : listed.tablets()) ASSERT_FALSE(t.leader_uuid().empty());
    });
    if (HasFailure()) return -1;
    std::map<std::string, std::pair<int, int>> load;  // uuid -> (replicas, leaderships)
    for (const auto& t : listed.tablets()) {
      for (const auto& r : t.replicas())
        (by_leaders ? load[r.ts_uuid()].second : load[r.ts_uuid()].first)++;
      (by_leaders ? load[t.leader_uuid()].first : load[t.leader_uuid()].second)++;
    }
    int best = -1;
    for (int i = 0; i < kServers; i++) {
      const auto l = load[cluster_->tserver(i)->uuid()];
      if (best < 0 || l > load[cluster_->tserver(best)->uuid()]) best = i;
    }
    for (const auto& t : listed.tablets()) {
      for (const auto& r : t.replicas()) {
        if (r.ts_uuid() == cluster_->tserver(best)->uuid()) tablets->push_back(t.tablet_id());
      }
    }
    return best;
  }

  // Polls the master until `table` is healed or kHealTimeout passed since `killed`;
  // when the master was first seen replacing a replica, and when it was healed.
  void WaitHealed(const std::string& table, const std::string& dead, MonoTime killed,
                  MonoTime* first_replacement, MonoTime* healed) {
    std::string why = "not polled";
    for (int i = 0; i < 10000 && MonoTime::Now() - killed < kHealTimeout; i++) {
      why = NotHealed(table, dead);
      if (why.empty()) break;
      if (!first_replacement->Initialized() && why.find("replacing") != std::string::npos) {
        *first_replacement = MonoTime::Now();
      }
      SleepFor(MonoDelta::FromMilliseconds(100));  // polling the master
    }
    ASSERT_EQ(why, "") << "not healed " << kHealTimeout.ToSeconds() << " s after the kill";
    *healed = MonoTime::Now();
  }

  std::unique_ptr<test::MiniCluster> cluster_;
  std::shared_ptr<Client> client_;
};

double SecondsBetween(MonoTime from, MonoTime to) { return (to - from).ToSeconds(); }

// Four servers, six tablets of three replicas: the server with the most replicas (one
// of them a leader) is killed with SIGKILL for good while a writer runs. The master
// replaces its replicas on the other three; writes go on throughout, and afterwards
// ksck finds every tablet healthy, every replica agreeing with the others, and every
// acknowledged row is there.
TEST_F(HealingITest, ADeadServersReplicasAreReplacedWhileWritesGoOn) {
  auto t = CreateTable("healed", 6);
  std::vector<std::string> held;
  const int victim = MostLoadedServer("healed", &held);
  ASSERT_GE(victim, 0);
  const std::string dead = cluster_->tserver(victim)->uuid();
  Writer w;
  w.Start(client_, t, MonoDelta::FromSeconds(30));
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] { ASSERT_GE(w.acked.load(), 200); });

  const MonoTime killed = MonoTime::Now();
  cluster_->tserver(victim)->Kill(9);
  MonoTime replacing, healed;
  ASSERT_NO_FATAL_FAILURE(WaitHealed("healed", dead, killed, &replacing, &healed));
  // Writes go on after healing too.
  const int64_t at_heal = w.acked.load();
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] { ASSERT_GE(w.acked.load(), at_heal + 100); });
  w.Stop();
  MutexLock l(w.mu);
  LOG(INFO) << "killed ts" << victim << " (" << held.size() << " replicas); replacing seen "
            << (replacing.Initialized() ? SecondsBetween(killed, replacing) : -1.0)
            << " s after the kill, healed after " << SecondsBetween(killed, healed) << " s";

  // Writes never stopped: the longest time without an acknowledgement, from the last
  // one before the kill to the first after healing. Expected: one failover (the writer
  // finds the killed leader's port closed and the other replicas elect a leader within
  // one or two 500 ms election timeouts: 0.5-1 s measured on 2 vCPUs). Writes that
  // waited for healing would wait at least the failure timeout (5 s: no replacement
  // starts earlier) plus the copies, promotions and removals (~1 s). kMaxWriteGap (4 s)
  // leaves room for a slow election and still fails then.
  MonoDelta longest;
  MonoTime longest_from;
  const auto& acks = w.acks;
  for (size_t i = 1; i < acks.size(); i++) {
    if (acks[i].second < killed) continue;
    if (acks[i - 1].second > healed) break;
    if (acks[i].second - acks[i - 1].second > longest) {
      longest = acks[i].second - acks[i - 1].second;
      longest_from = acks[i - 1].second;
    }
  }
  LOG(INFO) << acks.size() << " writes acknowledged; longest gap " << longest.ToMilliseconds()
            << " ms, from " << SecondsBetween(killed, longest_from) << " s after the kill";
  EXPECT_LT(longest.ToMilliseconds(), kMaxWriteGap.ToMilliseconds())
      << "writes stopped from " << SecondsBetween(killed, longest_from) << " s after the kill";
  for (const auto& f : w.failed) {
    ADD_FAILURE() << "write of key " << f.key << " failed " << SecondsBetween(killed, f.at)
                  << " s after the kill: " << f.error;
  }

  // Every acknowledged row is there.
  const std::map<int64_t, int64_t> rows = ScanAll(t);
  for (const auto& [k, at] : acks) {
    auto it = rows.find(k);
    ASSERT_TRUE(it != rows.end()) << "acknowledged row " << k << " lost";
    ASSERT_EQ(it->second, k);
  }

  // The operator's view: once the dead server is forgotten, ksck finds the cluster
  // healthy and every tablet's replicas agree.
  std::string out;
  ASSERT_EQ(RunCli("tserver unregister " + cluster_->master_addr() + " " + dead, &out), 0) << out;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    out.clear();
    ASSERT_EQ(RunCli("cluster ksck " + cluster_->master_addr() + " --checksum_scan", &out), 0)
        << out;
  });
  EXPECT_NE(out.find("Tablets: 6 (6 healthy"), std::string::npos) << out;
  EXPECT_NE(out.find("6 tablet(s) checksummed, 0 with replicas that disagree"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("problem(s)"), std::string::npos) << out;
}

// The killed server comes back once its replicas were replaced: the master tombstones
// each of them (the data goes, the Raft state stays), and they stay out of the
// tablets' configurations. A client whose cache still names the returned server as a
// leader is told the tablet is not there and looks it up again, rather than retrying
// that server until its timeout.
TEST_F(HealingITest, AServerBackAfterItsReplicasWereReplacedHasThemTombstoned) {
  auto t = CreateTable("returned", 3);
  {
    auto session = client_->NewSession();
    ASSERT_OK(session->SetFlushMode(Session::FlushMode::kManualFlush));
    for (int64_t k = 0; k < 3000; k++) ASSERT_OK(session->Apply(itest::UpsertOf(*t, k, k)));
    ASSERT_OK(session->Flush());
  }
  std::vector<std::string> held;
  const int victim = MostLoadedServer("returned", &held, /*by_leaders=*/true);
  ASSERT_GE(victim, 0);
  const std::string dead = cluster_->tserver(victim)->uuid();
  const MonoTime killed = MonoTime::Now();
  cluster_->tserver(victim)->Kill(9);
  MonoTime replacing, healed;
  ASSERT_NO_FATAL_FAILURE(WaitHealed("returned", dead, killed, &replacing, &healed));

  ASSERT_OK(cluster_->tserver(victim)->Restart());
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    tserver::ListTabletsResponsePB listed;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(5));
    ASSERT_OK(cluster_->tserver_admin_proxy(victim).ListTablets({}, &listed, &rpc));
    ASSERT_EQ(listed.tablets_size(), int(held.size()));
    for (const auto& tablet : listed.tablets()) {
      EXPECT_EQ(tablet.state(), tserver::TABLET_DATA_TOMBSTONED) << tablet.tablet_id();
    }
  });
  // Back and live, it is not a member again, and the rows are all there.
  ASSERT_OK(cluster_->WaitForTabletServers(kServers, MonoDelta::FromSeconds(10)));
  EXPECT_EQ(NotHealed("returned", dead), "");
  // `t` belongs to client_, whose cache (5 min TTL) still has the victim leading a
  // tablet. Well under the 30 s scan timeout ScanAll sets.
  const MonoTime scan_start = MonoTime::Now();
  EXPECT_EQ(ScanAll(t).size(), 3000u);
  EXPECT_LT(MonoTime::Now() - scan_start, MonoDelta::FromSeconds(8))
      << "the scan retried the returned server instead of looking the tablet up again";
}

}  // namespace
}  // namespace nyala::client
