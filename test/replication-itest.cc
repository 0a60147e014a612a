// Replicated tablets with real daemons: a table of 3 replicas on 3 tablet servers
// keeps taking writes, and loses none it acknowledged, while servers are killed
// (SIGKILL, by PID) and restarted.
#include <glog/logging.h>
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <optional>
#include <set>
#include <thread>

#include "common/status.h"
#include "common/test_util.h"
#include "common/wire_protocol.h"
#include "nyala/client.h"
#include "test/client_itest_util.h"
#include "test/replicated_table_itest_util.h"
#include "tserver/tserver.proxy.h"

namespace nyala::client {
namespace {

using itest::ExpectAcknowledgedRows;
using itest::ScanAll;
using itest::UpsertOf;
using itest::Writer;

class ReplicationITest : public NyalaTest {
 protected:
  void SetUp() override {
    NyalaTest::SetUp();
    // A shorter election timeout than the default: failovers take ~1 s, not ~2 s.
    cluster_ =
        std::make_unique<itest::ClientTestCluster>(test_dir(), NumTservers(), TserverFlags());
    ASSERT_OK(cluster_->Start());
    client_ = cluster_->client();
  }
  virtual int NumTservers() const { return 3; }
  virtual std::vector<std::string> TserverFlags() const {
    return {"--raft_election_timeout_ms=500"};
  }
  void TearDown() override {
    client_.reset();
    if (cluster_) EXPECT_OK(cluster_->Shutdown());
    NyalaTest::TearDown();
  }

  // (key INT64, v INT64) with `tablets` hash buckets, 3 replicas.
  std::shared_ptr<Table> CreateTable(const std::string& name, int tablets) {
    return itest::CreateKeyValueTable(client_.get(), name, tablets, 3);
  }

  // The index of the tablet server the master names leader of the table's first
  // tablet, or -1 while none is known.
  int LeaderIndex(const std::string& table) {
    master::GetTableLocationsRequestPB req;
    req.mutable_table()->set_table_name(table);
    master::GetTableLocationsResponsePB resp;
    auto* cluster = MiniClusterOf();
    if (!cluster->CallMaster(&master::MasterServiceProxy::GetTableLocations, req, &resp).ok() ||
        resp.has_error() || resp.tablet_locations_size() == 0) {
      return -1;
    }
    for (const auto& r : resp.tablet_locations(0).replicas()) {
      if (r.role() != master::LEADER) continue;
      for (int i = 0; i < cluster_->num_tservers(); i++) {
        if (cluster_->tserver(i)->uuid() == r.ts_info().permanent_uuid()) return i;
      }
    }
    return -1;
  }
  test::MiniCluster* MiniClusterOf() { return cluster_->mini_cluster(); }

  // Cuts tablet server `i` off the others' Raft traffic, both ways
  // (--fault_injection_consensus_drop_peers); Heal() undoes it.
  void Partition(int i) {
    std::string others;
    for (int j = 0; j < cluster_->num_tservers(); j++) {
      if (j == i) continue;
      ASSERT_OK(MiniClusterOf()->SetTserverFlag(j, kDropPeers, cluster_->tserver(i)->uuid()));
      others += (others.empty() ? "" : ",") + cluster_->tserver(j)->uuid();
    }
    ASSERT_OK(MiniClusterOf()->SetTserverFlag(i, kDropPeers, others));
  }
  void Heal() {
    for (int j = 0; j < cluster_->num_tservers(); j++) {
      ASSERT_OK(MiniClusterOf()->SetTserverFlag(j, kDropPeers, ""));
    }
  }
  // Waits until the master names a leader of `table` other than server `old`.
  void WaitForNewLeader(const std::string& table, int old) {
    ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] {
      const int leader = LeaderIndex(table);
      ASSERT_GE(leader, 0);
      ASSERT_NE(leader, old);
    });
  }
  // Tablet server `i`'s own consensus state of its only tablet.
  master::ConsensusStatePB ReplicaState(int i) {
    tserver::ListTabletsResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(5));
    CHECK_OK(MiniClusterOf()->tserver_admin_proxy(i).ListTablets({}, &resp, &rpc));
    CHECK_EQ(resp.tablets_size(), 1);
    return resp.tablets(0).consensus();
  }
  static constexpr char kDropPeers[] = "fault_injection_consensus_drop_peers";

  std::unique_ptr<itest::ClientTestCluster> cluster_;
  std::shared_ptr<Client> client_;
};

// Waits until `w` acknowledges `n` more writes than it had.
#define ASSERT_WRITES_GO_ON(w, n, timeout)                                                   \
  do {                                                                                       \
    const int64_t base_ = (w).acked.load();                                                  \
    ASSERT_EVENTUALLY(timeout, [&] { ASSERT_GE((w).acked.load(), base_ + (n)); });           \
  } while (0)

TEST_F(ReplicationITest, KillingTheLeaderLosesNoAcknowledgedWrite) {
  auto t = CreateTable("leader_killed", 1);
  int leader = -1;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] { ASSERT_GE(leader = LeaderIndex("leader_killed"), 0); });
  Writer w;
  w.Start(client_, t, MonoDelta::FromSeconds(20));
  ASSERT_WRITES_GO_ON(w, 200, MonoDelta::FromSeconds(20));
  cluster_->tserver(leader)->Kill(9);
  // Writes resume on a new leader (bench/failover-bench measures how soon).
  ASSERT_WRITES_GO_ON(w, 200, MonoDelta::FromSeconds(20));
  ASSERT_NO_FATAL_FAILURE(WaitForNewLeader("leader_killed", leader));
  // The old leader comes back as a follower and catches up.
  ASSERT_OK(cluster_->tserver(leader)->Restart());
  ASSERT_WRITES_GO_ON(w, 200, MonoDelta::FromSeconds(20));
  w.Stop();
  EXPECT_EQ(w.failures.load(), 0) << w.last_error;
  ExpectAcknowledgedRows(&w, ScanAll(t));
}

TEST_F(ReplicationITest, KillingAFollowerDoesNotStopWrites) {
  auto t = CreateTable("follower_killed", 1);
  int leader = -1;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] { ASSERT_GE(leader = LeaderIndex("follower_killed"), 0); });
  const int follower = (leader + 1) % 3;
  Writer w;
  w.Start(client_, t, MonoDelta::FromSeconds(20));
  ASSERT_WRITES_GO_ON(w, 200, MonoDelta::FromSeconds(20));
  cluster_->tserver(follower)->Kill(9);
  ASSERT_WRITES_GO_ON(w, 500, MonoDelta::FromSeconds(20));
  EXPECT_EQ(LeaderIndex("follower_killed"), leader);
  ASSERT_OK(cluster_->tserver(follower)->Restart());
  ASSERT_WRITES_GO_ON(w, 200, MonoDelta::FromSeconds(20));
  w.Stop();
  EXPECT_EQ(w.failures.load(), 0) << w.last_error;
  ExpectAcknowledgedRows(&w, ScanAll(t));
}

// The leader's server cut off from both others (Raft traffic only; clients still
// reach it): the leader steps down within an election timeout or two, the other two
// elect a new one, and writes go on there without waiting for the partition to heal.
TEST_F(ReplicationITest, APartitionedLeaderStepsDownAndWritesGoOnWithoutIt) {
  auto t = CreateTable("partitioned", 1);
  int leader = -1;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] { ASSERT_GE(leader = LeaderIndex("partitioned"), 0); });
  Writer w;
  w.Start(client_, t, MonoDelta::FromSeconds(30));
  ASSERT_WRITES_GO_ON(w, 200, MonoDelta::FromSeconds(20));
  const MonoTime cut = MonoTime::Now();
  ASSERT_NO_FATAL_FAILURE(Partition(leader));
  // Writes resume while the partition lasts (election timeout 500 ms: the old leader
  // steps down after 0.5-1 s, a follower campaigns after 0.5-1 s).
  ASSERT_WRITES_GO_ON(w, 100, MonoDelta::FromSeconds(8));
  const MonoDelta resumed = MonoTime::Now() - cut;
  LOG(INFO) << "writes resumed " << resumed.ToMilliseconds() << " ms after the partition";
  ASSERT_NO_FATAL_FAILURE(WaitForNewLeader("partitioned", leader));
  ASSERT_NO_FATAL_FAILURE(Heal());
  ASSERT_WRITES_GO_ON(w, 100, MonoDelta::FromSeconds(20));
  w.Stop();
  EXPECT_LT(resumed.ToSeconds(), 5.0);
  ExpectAcknowledgedRows(&w, ScanAll(t));
}

// The same with the tablet idle when the partition comes (its group quiesced: no
// Raft heartbeats, only the servers' own): a write that then reaches the cut-off
// leader is answered within its timeout, and the next goes to the new leader.
TEST_F(ReplicationITest, AnIdlePartitionedLeaderStepsDown) {
  auto t = CreateTable("idle_partitioned", 1);
  int leader = -1;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] { ASSERT_GE(leader = LeaderIndex("idle_partitioned"), 0); });
  auto session = client_->NewSession();
  ASSERT_OK(session->SetTimeout(MonoDelta::FromSeconds(20)));
  ASSERT_OK(session->Apply(UpsertOf(*t, 1, 1)));
  // Idle: the group quiesces (every replica answered the leader's quiesce heartbeat).
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    for (int i = 0; i < 3; i++) ASSERT_TRUE(ReplicaState(i).quiesced()) << "server " << i;
  });
  const MonoTime cut = MonoTime::Now();
  ASSERT_NO_FATAL_FAILURE(Partition(leader));
  ASSERT_OK(session->Apply(UpsertOf(*t, 2, 2)));
  const MonoDelta first = MonoTime::Now() - cut;
  ASSERT_OK(session->Apply(UpsertOf(*t, 3, 3)));
  LOG(INFO) << "idle partitioned leader: first write " << first.ToMilliseconds() << " ms";
  EXPECT_LT(first.ToSeconds(), 5.0);
  ASSERT_NO_FATAL_FAILURE(WaitForNewLeader("idle_partitioned", leader));
  ASSERT_NO_FATAL_FAILURE(Heal());
  std::map<int64_t, int64_t> rows = ScanAll(t);
  EXPECT_EQ(rows.size(), 3u);
}

// The leader's server stopped (SIGSTOP: its kernel still accepts connections, so
// only a timeout tells): the writer's attempt there times out after 3 s and moves on
// to the replicas that elected a new leader, well within its 30 s session timeout;
// once resumed, the old leader's writes still waiting are answered, none applied twice.
TEST_F(ReplicationITest, WritesMoveOnFromAStoppedLeader) {
  auto t = CreateTable("stopped_leader", 1);
  int leader = -1;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] { ASSERT_GE(leader = LeaderIndex("stopped_leader"), 0); });
  Writer w;
  w.Start(client_, t, MonoDelta::FromSeconds(30));
  ASSERT_WRITES_GO_ON(w, 200, MonoDelta::FromSeconds(20));
  const pid_t pid = cluster_->tserver(leader)->pid();
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  const MonoTime stopped = MonoTime::Now();
  ASSERT_WRITES_GO_ON(w, 100, MonoDelta::FromSeconds(15));
  const MonoDelta resumed = MonoTime::Now() - stopped;
  LOG(INFO) << "writes resumed " << resumed.ToMilliseconds() << " ms after the leader stopped";
  ASSERT_EQ(kill(pid, SIGCONT), 0);
  ASSERT_WRITES_GO_ON(w, 100, MonoDelta::FromSeconds(20));
  w.Stop();
  EXPECT_EQ(w.failures.load(), 0) << w.last_error;
  // 3 s for the attempt at the stopped leader, up to 2 s for an election.
  EXPECT_LT(resumed.ToSeconds(), 8.0);
  ExpectAcknowledgedRows(&w, ScanAll(t));
}

// Two of three replicas down: no majority. Writes fail within the session timeout,
// with an error that says so; once a server is back, the tablet serves again, and a
// write batch is in the table whole or not at all.
TEST_F(ReplicationITest, WithoutAMajorityWritesFailAndResumeAfterRestart) {
  auto t = CreateTable("no_majority", 1);
  int leader = -1;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] { ASSERT_GE(leader = LeaderIndex("no_majority"), 0); });
  auto session = client_->NewSession();
  ASSERT_OK(session->SetTimeout(MonoDelta::FromSeconds(5)));
  ASSERT_OK(session->Apply(UpsertOf(*t, 1, 1)));
  const int a = (leader + 1) % 3, b = (leader + 2) % 3;
  cluster_->tserver(a)->Kill(9);
  cluster_->tserver(b)->Kill(9);
  // A batch of 50 rows: it cannot commit.
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kManualFlush));
  for (int k = 100; k < 150; k++) ASSERT_OK(session->Apply(UpsertOf(*t, k, k)));
  const MonoTime start = MonoTime::Now();
  Status s = session->Flush();
  const MonoDelta took = MonoTime::Now() - start;
  ASSERT_FALSE(s.ok());
  std::vector<std::unique_ptr<WriteError>> errors;
  bool overflowed = false;
  session->GetPendingErrors(&errors, &overflowed);
  ASSERT_EQ(errors.size(), 50u);
  LOG(INFO) << "write without a majority: " << errors[0]->status().ToString() << " after "
            << took.ToMilliseconds() << " ms";
  EXPECT_TRUE(errors[0]->status().IsTimedOut()) << errors[0]->status().ToString();
  EXPECT_LT(took.ToSeconds(), 15.0);
  // The error says why: the leader could not reach a majority, or none is elected.
  EXPECT_NE(errors[0]->status().ToString().find("majority"), std::string::npos)
      << errors[0]->status().ToString();
  ASSERT_OK(cluster_->tserver(a)->Restart());
  ASSERT_OK(cluster_->tserver(b)->Restart());
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kAutoFlushSync));
  ASSERT_OK(session->SetTimeout(MonoDelta::FromSeconds(20)));
  ASSERT_OK(session->Apply(UpsertOf(*t, 2, 2)));
  std::map<int64_t, int64_t> rows = ScanAll(t);
  EXPECT_EQ(rows.count(1), 1u);
  EXPECT_EQ(rows.count(2), 1u);
  int batch_rows = 0;
  for (int k = 100; k < 150; k++) batch_rows += int(rows.count(k));
  EXPECT_TRUE(batch_rows == 0 || batch_rows == 50) << batch_rows << " of the batch's 50 rows";
}

// Reads any replica may answer (ReplicaSelection::kClosestReplica) go on where
// linearizable ones cannot: with the leader's and another server killed, the last
// replica has no leader, so a leader-only Get times out, while a closest-replica Get, MultiGet and
// scan answer from the rows it applied (here: every acknowledged write, applied on all
// three before the kill).
TEST_F(ReplicationITest, ClosestReplicaReadsAnswerWithoutALeader) {
  auto t = CreateTable("follower_reads", 1);
  auto session = client_->NewSession();
  ASSERT_OK(session->SetTimeout(MonoDelta::FromSeconds(20)));
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kManualFlush));
  constexpr int kRows = 100;
  for (int k = 0; k < kRows; k++) ASSERT_OK(session->Apply(UpsertOf(*t, k, k * 10)));
  ASSERT_OK(session->Flush());
  // Every replica has applied as far as any (the leader's no-op and the writes).
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    std::set<uint64_t> applied;
    for (int i = 0; i < 3; i++) applied.insert(ReplicaState(i).applied_index());
    ASSERT_EQ(applied.size(), 1u);
    ASSERT_GT(*applied.begin(), 1u);
  });
  // A follower's replica is the one left (a leader would still serve linearizable
  // reads under its lease for a moment).
  int leader = -1;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] { ASSERT_GE(leader = LeaderIndex("follower_reads"), 0); });
  cluster_->tserver(leader)->Kill(9);
  cluster_->tserver((leader + 1) % 3)->Kill(9);

  auto c = ClientBuilder()
               .add_master_server_addr(cluster_->master_addr())
               .default_rpc_timeout(MonoDelta::FromSeconds(3))
               .Build();
  ASSERT_OK(c.status());
  auto t2 = (*c)->OpenTable("follower_reads");
  ASSERT_OK(t2.status());
  Row key = (*t2)->NewRow();
  ASSERT_OK(key.Set("key", Cell::Int64(7)));
  auto leader_only = (*t2)->Get(key);
  ASSERT_FALSE(leader_only.ok()) << "a linearizable read without a leader";
  EXPECT_TRUE(leader_only.status().IsTimedOut()) << leader_only.status().ToString();

  auto closest = (*t2)->Get(key, {}, ReplicaSelection::kClosestReplica);
  ASSERT_OK(closest.status());
  ASSERT_TRUE(closest->found(0));
  EXPECT_EQ(*closest->row(0)->GetInt64("v"), 70);
  std::vector<Row> keys;
  for (int k = 0; k < kRows + 5; k++) {
    keys.push_back((*t2)->NewRow());
    ASSERT_OK(keys.back().Set("key", Cell::Int64(k)));
  }
  auto many = (*t2)->MultiGet(keys, {"v"}, ReplicaSelection::kClosestReplica);
  ASSERT_OK(many.status());
  for (int k = 0; k < kRows + 5; k++) {
    ASSERT_EQ(many->found(k), k < kRows) << k;
    if (k < kRows) {
      EXPECT_EQ(*many->row(k)->GetInt64("v"), k * 10);
    }
  }
  Scanner scanner(*t2);
  ASSERT_OK(scanner.SetSelection(ReplicaSelection::kClosestReplica));
  ASSERT_OK(scanner.SetTimeout(MonoDelta::FromSeconds(10)));
  ASSERT_OK(scanner.Open());
  int64_t rows = 0, sum = 0;
  for (int n = 0; scanner.HasMoreRows() && n < 1000; n++) {
    ScanBatch batch;
    ASSERT_OK(scanner.NextBatch(&batch));
    for (int r = 0; r < batch.num_rows(); r++) {
      rows++;
      sum += *batch.row(r).GetInt64("v");
    }
  }
  EXPECT_EQ(rows, kRows);
  EXPECT_EQ(sum, 10 * kRows * (kRows - 1) / 2);
  // A leader-only scan has nobody to read at.
  Scanner linearizable(*t2);
  ASSERT_OK(linearizable.SetTimeout(MonoDelta::FromSeconds(3)));
  Status s = linearizable.Open();
  if (s.ok() && linearizable.HasMoreRows()) {
    ScanBatch batch;
    s = linearizable.NextBatch(&batch);
  }
  EXPECT_FALSE(s.ok()) << "a linearizable scan without a leader";
}

// Every replica replays its log after a restart of the whole cluster and holds the
// same rows: each serves them in turn as the leader.
TEST_F(ReplicationITest, EveryReplicaAgreesAfterTheClusterRestarts) {
  auto t = CreateTable("restarted", 2);
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kManualFlush));
  ASSERT_OK(session->SetTimeout(MonoDelta::FromSeconds(20)));
  std::map<int64_t, int64_t> written;
  for (int64_t k = 0; k < 3000; k++) {
    ASSERT_OK(session->Apply(UpsertOf(*t, k, k * 3)));
    written[k] = k * 3;
    if (k % 500 == 499) ASSERT_OK(session->Flush());
  }
  ASSERT_OK(session->Flush());
  session.reset();
  for (int i = 0; i < 3; i++) ASSERT_OK(cluster_->tserver(i)->Shutdown());
  for (int i = 0; i < 3; i++) ASSERT_OK(cluster_->tserver(i)->Restart());
  EXPECT_EQ(ScanAll(t), written);
  // Stop each server in turn, so that each of the others leads at some point.
  for (int i = 0; i < 3; i++) {
    ASSERT_OK(cluster_->tserver(i)->Shutdown());
    EXPECT_EQ(ScanAll(t), written) << "with server " << i << " down";
    ASSERT_OK(cluster_->tserver(i)->Restart());
  }
}

// A scan whose leader's server dies between batches resumes on the new leader from
// the key after the last row it returned: every row once, in key order.
TEST_F(ReplicationITest, AScanResumesOnTheNewLeaderAfterTheLastKeyReturned) {
  auto t = CreateTable("scanned", 1);
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kManualFlush));
  ASSERT_OK(session->SetTimeout(MonoDelta::FromSeconds(20)));
  constexpr int64_t kRows = 5000;
  for (int64_t k = 0; k < kRows; k++) ASSERT_OK(session->Apply(UpsertOf(*t, k, k)));
  ASSERT_OK(session->Flush());
  int leader = -1;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] { ASSERT_GE(leader = LeaderIndex("scanned"), 0); });
  Scanner scanner(t);
  ASSERT_OK(scanner.SetBatchSizeBytes(4096));  // many batches
  ASSERT_OK(scanner.SetTimeout(MonoDelta::FromSeconds(20)));
  ASSERT_OK(scanner.Open());
  std::vector<int64_t> keys;
  bool killed = false;
  for (int n = 0; scanner.HasMoreRows() && n < 100000; n++) {
    ScanBatch batch;
    ASSERT_OK(scanner.NextBatch(&batch));
    for (int r = 0; r < batch.num_rows(); r++) keys.push_back(*batch.row(r).GetInt64("key"));
    if (!killed && keys.size() > kRows / 3) {
      cluster_->tserver(leader)->Kill(9);
      killed = true;
    }
  }
  ASSERT_TRUE(killed);
  ASSERT_EQ(int64_t(keys.size()), kRows);
  for (int64_t k = 0; k < kRows; k++) ASSERT_EQ(keys[size_t(k)], k);
  ASSERT_OK(cluster_->tserver(leader)->Restart());
}

}  // namespace
}  // namespace nyala::client

namespace nyala::client {
namespace {

// Leaders keep only 100 entries in memory below what their state machine made durable
// (reported every 100 ms), so a follower down for a few thousand writes needs more
// than memory holds.
class CatchUpITest : public ReplicationITest {
 protected:
  std::vector<std::string> TserverFlags() const override {
    return {"--raft_election_timeout_ms=500", "--raft_retained_entries=100",
            "--tablet_durable_report_interval_ms=100"};
  }
  // Starts `w` writing to `table` (one tablet), kills a follower's server once writes
  // flow, and waits for `missed` more writes without it. Returns (leader, follower).
  std::pair<int, int> WriteWhileAFollowerIsDown(Writer* w, const std::shared_ptr<Table>& t,
                                                const std::string& table, int missed) {
    int leader = -1;
    AssertEventually(MonoDelta::FromSeconds(10),
                     [&] { ASSERT_GE(leader = LeaderIndex(table), 0); });
    if (leader < 0) return {-1, -1};
    const int down = (leader + 1) % 3;
    w->Start(client_, t, MonoDelta::FromSeconds(20));
    WaitForWrites(w, 200, MonoDelta::FromSeconds(20));
    cluster_->tserver(down)->Kill(9);
    WaitForWrites(w, missed, MonoDelta::FromSeconds(120));
    return {leader, down};
  }
  static void WaitForWrites(Writer* w, int n, MonoDelta timeout) {
    const int64_t base = w->acked.load();
    AssertEventually(timeout, [&] { ASSERT_GE(w->acked.load(), base + n); });
  }
};

// A follower killed while its tablet takes many times more entries than the leader
// keeps in memory comes back, catches up from the leader's log on disk, and then
// counts toward a majority: the table takes writes with either other server down.
TEST_F(CatchUpITest, AFollowerThatMissedMoreThanMemoryHoldsCatchesUpFromTheLog) {
  auto t = CreateTable("catch_up", 1);
  Writer w;
  auto [leader, down] = WriteWhileAFollowerIsDown(&w, t, "catch_up", 3000);
  ASSERT_FALSE(HasFailure());
  const int other = (leader + 2) % 3;
  const uint64_t missed_to = ReplicaState(leader).committed_index();
  ASSERT_OK(cluster_->tserver(down)->Restart());
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30),
                    [&] { ASSERT_GE(ReplicaState(down).applied_index(), missed_to); });
  // With the other follower down, every write needs the one that came back.
  ASSERT_OK(cluster_->tserver(other)->Shutdown());
  ASSERT_WRITES_GO_ON(w, 300, MonoDelta::FromSeconds(20));
  ASSERT_OK(cluster_->tserver(other)->Restart());
  w.Stop();
  EXPECT_EQ(w.failures.load(), 0) << w.last_error;
  ExpectAcknowledgedRows(&w, ScanAll(t));
}

// Without retention on disk (and with 1 MiB log segments, so that checkpoints drop
// durable entries soon), a follower down for long enough falls behind everything its
// leader holds: it needs a copy of the tablet.
class NoRetentionITest : public CatchUpITest {
 protected:
  std::vector<std::string> TserverFlags() const override {
    return {"--raft_election_timeout_ms=500", "--raft_retained_entries=100",
            "--tablet_durable_report_interval_ms=100", "--log_min_seconds_to_retain=0",
            "--log_segment_size_mb=1"};
  }
  // The rows of the table's one tablet as replica `i` holds them: a scan any replica
  // may answer, sent to that server (REPLICA_TOO_STALE until it heard from its leader).
  Result<size_t> CountRowsOn(int i) {
    tserver::ListTabletsResponsePB listed;
    rpc::RpcController lrpc;
    lrpc.set_timeout(MonoDelta::FromSeconds(5));
    RETURN_NOT_OK(MiniClusterOf()->tserver_admin_proxy(i).ListTablets({}, &listed, &lrpc));
    if (listed.tablets_size() != 1) {
      return Status::IllegalState("server " + std::to_string(i) + " lists " +
                                  std::to_string(listed.tablets_size()) + " tablets");
    }
    tserver::TabletServerServiceProxy proxy(MiniClusterOf()->messenger(),
                                            cluster_->tserver(i)->rpc_addr());
    tserver::ScanRequestPB req;
    req.mutable_new_scan_request()->set_tablet_id(listed.tablets(0).tablet_id());
    req.mutable_new_scan_request()->set_replica_selection(tserver::ANY_REPLICA);
    req.set_batch_size_bytes(1 << 20);
    size_t n = 0;
    for (int batch = 0; batch < 100000; batch++) {
      tserver::ScanResponsePB resp;
      rpc::RpcController rpc;
      rpc.set_timeout(MonoDelta::FromSeconds(10));
      RETURN_NOT_OK(proxy.Scan(req, &resp, &rpc));
      if (resp.has_error()) {
        return Status::RuntimeError("server " + std::to_string(i), resp.error().ShortDebugString());
      }
      n += size_t(resp.data().num_rows());
      if (!resp.has_more_results()) return n;
      req.Clear();
      req.set_scanner_id(resp.scanner_id());
      req.set_call_seq_id(uint32_t(batch + 1));
      req.set_batch_size_bytes(1 << 20);
    }
    return Status::IllegalState("the scan of server " + std::to_string(i) + " did not end");
  }
  // The checksum of replica `i`'s rows right after it applied entry `index`.
  Result<tserver::ChecksumTabletResponsePB> ChecksumOn(int i, uint64_t index) {
    tserver::ListTabletsResponsePB listed;
    rpc::RpcController lrpc;
    lrpc.set_timeout(MonoDelta::FromSeconds(5));
    RETURN_NOT_OK(MiniClusterOf()->tserver_admin_proxy(i).ListTablets({}, &listed, &lrpc));
    if (listed.tablets_size() != 1) return Status::IllegalState("not one tablet");
    tserver::ChecksumTabletRequestPB req;
    req.set_tablet_id(listed.tablets(0).tablet_id());
    req.set_at_index(index);
    req.set_timeout_ms(20000);
    tserver::ChecksumTabletResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(30));
    RETURN_NOT_OK(MiniClusterOf()->tserver_admin_proxy(i).ChecksumTablet(req, &resp, &rpc));
    if (resp.has_error()) return StatusFromPB(resp.error().status());
    return resp;
  }
  // Every replica of `servers`, checksummed at the leader's committed index (writes
  // stopped), holds the same rows.
  void ExpectSameChecksums(int leader, const std::vector<int>& servers) {
    const uint64_t index = ReplicaState(leader).committed_index();
    std::optional<tserver::ChecksumTabletResponsePB> first;
    for (int i : servers) {
      Result<tserver::ChecksumTabletResponsePB> c = ChecksumOn(i, index);
      ASSERT_TRUE(c.ok()) << "server " << i << ": " << c.status().ToString();
      EXPECT_EQ(c->applied_index(), index) << "server " << i;
      if (!first) {
        first = *c;
        continue;
      }
      EXPECT_EQ(c->rows(), first->rows()) << "server " << i;
      EXPECT_EQ(c->checksum(), first->checksum()) << "server " << i;
    }
  }
  // Waits until replica `i` answers a scan with `rows` rows.
  void ExpectRowsOn(int i, size_t rows) {
    ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
      Result<size_t> n = CountRowsOn(i);
      ASSERT_OK(n.status());
      ASSERT_EQ(*n, rows) << "server " << i;
    });
  }
};

// A follower beyond the leader's log on disk gets a copy of the tablet from the leader
// (its rows family's files and request records, then the log after the copy): it holds
// what the leader committed, every replica holds the same rows, and it then counts
// toward a majority: the table takes writes with the other follower down.
TEST_F(NoRetentionITest, AFollowerBeyondTheLogOnDiskGetsACopyAndCountsTowardAMajority) {
  auto t = CreateTable("copied", 1);
  Writer w;
  auto [leader, down] = WriteWhileAFollowerIsDown(&w, t, "copied", 15000);
  ASSERT_FALSE(HasFailure());
  const int other = 3 - leader - down;
  const uint64_t missed_to = ReplicaState(leader).committed_index();
  ASSERT_OK(cluster_->tserver(down)->Restart());
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(60),
                    [&] { ASSERT_GE(ReplicaState(down).applied_index(), missed_to); });
  const std::string down_uuid = cluster_->tserver(down)->uuid();
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    bool replicating = false;
    const master::ConsensusStatePB state = ReplicaState(leader);
    for (const auto& f : state.followers()) {
      if (f.uuid() == down_uuid) replicating = f.state() == master::FollowerStatusPB::REPLICATE;
    }
    ASSERT_TRUE(replicating);
  });
  ASSERT_OK(cluster_->tserver(other)->Shutdown());
  ASSERT_WRITES_GO_ON(w, 300, MonoDelta::FromSeconds(20));
  ASSERT_OK(cluster_->tserver(other)->Restart());
  w.Stop();
  EXPECT_EQ(w.failures.load(), 0) << w.last_error;
  const std::map<int64_t, int64_t> rows = ScanAll(t);
  ExpectAcknowledgedRows(&w, rows);
  // Every replica, the copied one included, holds the same rows once it applied
  // everything committed.
  const uint64_t committed = ReplicaState(leader).committed_index();
  for (int i = 0; i < 3; i++) {
    ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30),
                      [&] { ASSERT_GE(ReplicaState(i).applied_index(), committed); });
    ExpectRowsOn(i, rows.size());
  }
  ExpectSameChecksums(leader, {0, 1, 2});
}

// Copies slowed to 2 MiB/s (and rows left uncompressed, so a tablet of a few hundred
// thousand rows takes seconds to copy), to interrupt them.
class InterruptedCopyITest : public NoRetentionITest {
 protected:
  std::vector<std::string> TserverFlags() const override {
    std::vector<std::string> flags = NoRetentionITest::TserverFlags();
    flags.push_back("--tablet_copy_rate_limit_mb=2");
    // The load is over when the follower comes back: every follower behind memory
    // needs a copy, whatever the log on disk still holds.
    flags.push_back("--unlock_unsafe_flags");
    flags.push_back("--fault_injection_no_catch_up_from_log");
    flags.push_back("--rocksdb_compression=none");
    // A session its receiver abandoned (it died) frees its files soon.
    flags.push_back("--tablet_copy_idle_timeout_sec=3");
    return flags;
  }
  // Kills a follower's server, then loads `rows` rows in batches of 1,000. Returns
  // (leader, follower).
  std::pair<int, int> LoadWhileAFollowerIsDown(const std::shared_ptr<Table>& t,
                                               const std::string& table, int64_t rows) {
    // The leader as the replicas say (the master learns it with their reports).
    int leader = -1;
    AssertEventually(MonoDelta::FromSeconds(10), [&] {
      leader = -1;
      for (int i = 0; i < 3; i++) {
        if (ReplicaState(i).role() == master::LEADER) leader = i;
      }
      ASSERT_GE(leader, 0);
    });
    if (leader < 0) return {-1, -1};
    const int down = (leader + 1) % 3;
    cluster_->tserver(down)->Kill(9);
    auto session = client_->NewSession();
    CHECK_OK(session->SetFlushMode(Session::FlushMode::kManualFlush));
    CHECK_OK(session->SetTimeout(MonoDelta::FromSeconds(30)));
    for (int64_t k = 0; k < rows; k++) {
      // Values that do not repeat, so the rows take their room on disk.
      CHECK_OK(session->Apply(UpsertOf(*t, k, int64_t(uint64_t(k) * 0x9e3779b97f4a7c15ULL))));
      if (k % 1000 == 999) CHECK_OK(session->Flush());
    }
    CHECK_OK(session->Flush());
    return {leader, down};
  }
  // Waits until server `i` reports a copy it fetches with some bytes done.
  void WaitForACopyUnderWay(int i) {
    ASSERT_EVENTUALLY(MonoDelta::FromSeconds(60), [&] {
      tserver::ListTabletsResponsePB listed;
      rpc::RpcController rpc;
      rpc.set_timeout(MonoDelta::FromSeconds(5));
      ASSERT_OK(MiniClusterOf()->tserver_admin_proxy(i).ListTablets({}, &listed, &rpc));
      ASSERT_EQ(listed.tablets_size(), 1);
      ASSERT_TRUE(listed.tablets(0).has_copy());
      ASSERT_GT(listed.tablets(0).copy().bytes_done(), 0);
      ASSERT_LT(listed.tablets(0).copy().bytes_done(), listed.tablets(0).copy().bytes_total());
    });
  }
  static size_t FilesUnder(const std::string& dir) {
    std::error_code ec;
    size_t n = 0;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      n += it->is_regular_file();
    }
    return n;
  }
  // Every replica applied what the leader committed and holds `rows` rows; nothing is
  // left of the copies in progress or of the sessions that served them (an abandoned
  // one expires).
  void ExpectHealed(int leader, size_t rows) {
    const uint64_t committed = ReplicaState(leader).committed_index();
    for (int i = 0; i < 3; i++) {
      ASSERT_EVENTUALLY(MonoDelta::FromSeconds(60),
                        [&] { ASSERT_GE(ReplicaState(i).applied_index(), committed); });
      ExpectRowsOn(i, rows);
      const std::string data = cluster_->tserver(i)->data_dir();
      // A leader that changed may have asked for one more copy meanwhile: it ends too.
      ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30),
                        [&] { ASSERT_EQ(FilesUnder(data + "/copies-in-progress"), 0u) << i; });
      ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30),
                        [&] { ASSERT_EQ(FilesUnder(data + "/copy-sessions"), 0u) << i; });
    }
    ExpectSameChecksums(leader, {0, 1, 2});
  }
};

// The receiver dies in the middle of a copy: its restart throws the half-downloaded
// files away, and the leader's next request starts the copy over.
TEST_F(InterruptedCopyITest, AReceiverKilledMidCopyStartsOverAfterItsRestart) {
  auto t = CreateTable("receiver_killed", 1);
  auto [leader, down] = LoadWhileAFollowerIsDown(t, "receiver_killed", 300000);
  ASSERT_GE(leader, 0);
  ASSERT_OK(cluster_->tserver(down)->Restart());
  ASSERT_NO_FATAL_FAILURE(WaitForACopyUnderWay(down));
  EXPECT_GT(FilesUnder(cluster_->tserver(down)->data_dir() + "/copies-in-progress"), 0u);
  cluster_->tserver(down)->Kill(9);
  ASSERT_OK(cluster_->tserver(down)->Restart());
  ExpectHealed(leader, 300000);
}

// The source (the leader) dies in the middle of a copy: the new leader asks for a copy
// from itself, the receiver gives up the old one and fetches the new.
TEST_F(InterruptedCopyITest, ASourceKilledMidCopyIsReplacedByTheNewLeader) {
  auto t = CreateTable("source_killed", 1);
  auto [leader, down] = LoadWhileAFollowerIsDown(t, "source_killed", 300000);
  ASSERT_GE(leader, 0);
  ASSERT_OK(cluster_->tserver(down)->Restart());
  ASSERT_NO_FATAL_FAILURE(WaitForACopyUnderWay(down));
  cluster_->tserver(leader)->Kill(9);
  int new_leader = -1;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    ASSERT_GE(new_leader = LeaderIndex("source_killed"), 0);
    ASSERT_NE(new_leader, leader);
  });
  const uint64_t committed = ReplicaState(new_leader).committed_index();
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(90),
                    [&] { ASSERT_GE(ReplicaState(down).applied_index(), committed); });
  ASSERT_OK(cluster_->tserver(leader)->Restart());
  ExpectHealed(new_leader, 300000);
}

// With copies refused (the follower's server takes none at once), the follower stays
// behind: the leader reports it as needing a copy, and writes go on.
class NoCopyITest : public NoRetentionITest {
 protected:
  std::vector<std::string> TserverFlags() const override {
    std::vector<std::string> flags = NoRetentionITest::TserverFlags();
    flags.push_back("--num_tablets_to_copy_simultaneously=0");
    return flags;
  }
};

TEST_F(NoCopyITest, AFollowerThatGetsNoCopyIsReportedAsNeedingOne) {
  auto t = CreateTable("needs_copy", 1);
  Writer w;
  // Enough entries to roll a few 1 MiB segments.
  auto [leader, down] = WriteWhileAFollowerIsDown(&w, t, "needs_copy", 15000);
  ASSERT_FALSE(HasFailure());
  ASSERT_OK(cluster_->tserver(down)->Restart());
  const std::string down_uuid = cluster_->tserver(down)->uuid();
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] {
    bool needs_copy = false;
    const master::ConsensusStatePB state = ReplicaState(leader);
    for (const auto& f : state.followers()) {
      if (f.uuid() == down_uuid) needs_copy = f.state() == master::FollowerStatusPB::NEEDS_COPY;
    }
    ASSERT_TRUE(needs_copy);
  });
  ASSERT_WRITES_GO_ON(w, 200, MonoDelta::FromSeconds(20));
  w.Stop();
  EXPECT_EQ(w.failures.load(), 0) << w.last_error;

  // A read any replica may answer is refused by the replica that needs a copy...
  tserver::ListTabletsResponsePB listed;
  {
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(5));
    ASSERT_OK(MiniClusterOf()->tserver_admin_proxy(down).ListTablets({}, &listed, &rpc));
    ASSERT_EQ(listed.tablets_size(), 1);
  }
  tserver::ScanRequestPB req;
  req.mutable_new_scan_request()->set_tablet_id(listed.tablets(0).tablet_id());
  req.mutable_new_scan_request()->set_replica_selection(tserver::ANY_REPLICA);
  tserver::ScanResponsePB resp;
  rpc::RpcController rpc;
  rpc.set_timeout(MonoDelta::FromSeconds(5));
  tserver::TabletServerServiceProxy stale(MiniClusterOf()->messenger(),
                                          cluster_->tserver(down)->rpc_addr());
  ASSERT_OK(stale.Scan(req, &resp, &rpc));
  ASSERT_TRUE(resp.has_error());
  EXPECT_EQ(resp.error().code(), tserver::TabletServerErrorPB::REPLICA_TOO_STALE)
      << resp.error().ShortDebugString();
  // ... so closest-replica reads, whichever replica a client prefers, see every row
  // once the healthy follower applied what the leader committed (it learns the last
  // commit index with the next heartbeat).
  const size_t rows = ScanAll(t).size();
  const int healthy = 3 - leader - down;
  const uint64_t committed = ReplicaState(leader).committed_index();
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10),
                    [&] { ASSERT_GE(ReplicaState(healthy).applied_index(), committed); });
  for (int c = 0; c < 6; c++) {
    auto client = ClientBuilder().add_master_server_addr(cluster_->master_addr()).Build();
    ASSERT_OK(client.status());
    auto table = (*client)->OpenTable("needs_copy");
    ASSERT_OK(table.status());
    Scanner scanner(*table);
    ASSERT_OK(scanner.SetSelection(ReplicaSelection::kClosestReplica));
    ASSERT_OK(scanner.SetTimeout(MonoDelta::FromSeconds(20)));
    ASSERT_OK(scanner.Open());
    size_t n = 0;
    for (int b = 0; scanner.HasMoreRows() && b < 10000; b++) {
      ScanBatch batch;
      ASSERT_OK(scanner.NextBatch(&batch));
      n += size_t(batch.num_rows());
    }
    EXPECT_EQ(n, rows) << "client " << c;
  }
}

// Four servers, tablets of three replicas: one server is spare.
class MembershipITest : public NoRetentionITest {
 protected:
  int NumTservers() const override { return 4; }
  // The servers holding a replica of the table's one tablet, by ListTablets.
  std::set<int> Holders() {
    std::set<int> out;
    for (int i = 0; i < 4; i++) {
      tserver::ListTabletsResponsePB listed;
      rpc::RpcController rpc;
      rpc.set_timeout(MonoDelta::FromSeconds(5));
      if (!MiniClusterOf()->tserver_admin_proxy(i).ListTablets({}, &listed, &rpc).ok()) continue;
      if (listed.tablets_size() == 1 && listed.tablets(0).state() == tserver::TABLET_DATA_READY) {
        out.insert(i);
      }
    }
    return out;
  }
  std::string TabletIdOn(int i) {
    tserver::ListTabletsResponsePB listed;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(5));
    CHECK_OK(MiniClusterOf()->tserver_admin_proxy(i).ListTablets({}, &listed, &rpc));
    CHECK_EQ(listed.tablets_size(), 1);
    return listed.tablets(0).tablet_id();
  }
  // Sends one membership change of `peer` to the leader `leader`.
  Status ChangeConfig(int leader, const std::string& tablet_id, tserver::ChangeConfigTypePB type,
                      int peer) {
    tserver::ChangeConfigRequestPB req;
    req.set_tablet_id(tablet_id);
    req.set_type(type);
    req.mutable_peer()->set_permanent_uuid(cluster_->tserver(peer)->uuid());
    req.mutable_peer()->set_host("127.0.0.1");
    req.mutable_peer()->set_port(cluster_->tserver(peer)->rpc_addr().port());
    tserver::ChangeConfigResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(10));
    RETURN_NOT_OK(MiniClusterOf()->tserver_admin_proxy(leader).ChangeConfig(req, &resp, &rpc));
    if (resp.has_error()) return StatusFromPB(resp.error().status());
    return Status::OK();
  }
};

// A replica moves by hand, in Kudu's 3-4-3 order: the spare server is added as a
// learner (it gets a copy of the tablet, then the log), promoted, and a follower is
// removed and tombstoned. The table then takes writes with the other original
// follower down (the moved replica counts toward the majority), and every replica
// holds the same rows; the tombstone stays one across a restart.
TEST_F(MembershipITest, AReplicaMovesToASpareServerThroughALearner) {
  auto t = CreateTable("moved", 1);
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kManualFlush));
  for (int64_t k = 0; k < 5000; k++) ASSERT_OK(session->Apply(UpsertOf(*t, k, k)));
  ASSERT_OK(session->Flush());
  int leader = -1;
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10),
                    [&] { ASSERT_GE(leader = LeaderIndex("moved"), 0); });
  const std::set<int> holders = Holders();
  ASSERT_EQ(holders.size(), 3u);
  int spare = -1;
  for (int i = 0; i < 4; i++) {
    if (!holders.count(i)) spare = i;
  }
  int removed = -1, other = -1;
  for (int i : holders) {
    if (i == leader) continue;
    (removed < 0 ? removed : other) = i;
  }
  const std::string tablet_id = TabletIdOn(leader);
  ASSERT_OK(ChangeConfig(leader, tablet_id, tserver::ADD_LEARNER, spare));
  // A second change waits for nothing: one at a time is Raft's rule, so promoting
  // succeeds once the learner holds everything committed.
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(60), [&] {
    ASSERT_OK(ChangeConfig(leader, tablet_id, tserver::PROMOTE_LEARNER, spare));
  });
  ASSERT_EQ(ReplicaState(leader).voter_uuids_size(), 4);
  ASSERT_OK(ChangeConfig(leader, tablet_id, tserver::REMOVE_PEER, removed));
  {
    tserver::DeleteTabletRequestPB req;
    req.set_tablet_id(tablet_id);
    req.set_delete_type(tserver::TABLET_DATA_TOMBSTONED);
    req.set_reason("moved to another server");
    tserver::DeleteTabletResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(10));
    ASSERT_OK(MiniClusterOf()->tserver_admin_proxy(removed).DeleteTablet(req, &resp, &rpc));
    ASSERT_FALSE(resp.has_error()) << resp.error().ShortDebugString();
  }
  EXPECT_EQ(Holders(), (std::set<int>{leader, other, spare}));
  // With the other original follower down, every write needs the moved replica.
  ASSERT_OK(cluster_->tserver(other)->Shutdown());
  for (int64_t k = 5000; k < 6000; k++) ASSERT_OK(session->Apply(UpsertOf(*t, k, k)));
  ASSERT_OK(session->Flush());
  ASSERT_OK(cluster_->tserver(other)->Restart());
  const uint64_t committed = ReplicaState(leader).committed_index();
  for (int i : {leader, other, spare}) {
    ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30),
                      [&] { ASSERT_GE(ReplicaState(i).applied_index(), committed); });
    ExpectRowsOn(i, 6000);
  }
  // The tombstone stays one after a restart, and serves nothing.
  ASSERT_OK(cluster_->tserver(removed)->Restart());
  tserver::ListTabletsResponsePB listed;
  rpc::RpcController rpc;
  rpc.set_timeout(MonoDelta::FromSeconds(5));
  ASSERT_OK(MiniClusterOf()->tserver_admin_proxy(removed).ListTablets({}, &listed, &rpc));
  ASSERT_EQ(listed.tablets_size(), 1);
  EXPECT_EQ(listed.tablets(0).state(), tserver::TABLET_DATA_TOMBSTONED);
  EXPECT_FALSE(CountRowsOn(removed).ok());
}

}  // namespace
}  // namespace nyala::client
