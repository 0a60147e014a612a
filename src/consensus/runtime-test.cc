// The multi-group runtime (consensus/runtime.h) over real loopback RPC and real
// shared logs with fdatasync: three servers in one process, each with its own
// messenger, log directory and runtime.
#include "consensus/runtime.h"

#include <gflags/gflags.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/test_util.h"
#include "consensus/consensus.proxy.h"
#include "consensus/raft_test_util.h"
#include "nyala/monotime.h"
#include "rpc/messenger.h"
#include "rpc/rpc_controller.h"

DECLARE_bool(consensus_run_on_reactor);
DECLARE_bool(rpc_reactor_methods);
DECLARE_int32(log_max_old_segments);
DECLARE_int32(raft_retained_entries);
DECLARE_int32(log_min_seconds_to_retain);
DECLARE_int32(log_max_segments_to_retain);

namespace nyala::consensus {
namespace {

constexpr MonoDelta kWait = MonoDelta::FromSeconds(30);

// Catches two threads applying for groups of one worker at once: the worker's part
// runs on one thread at a time (its own, or a reactor that borrowed it).
struct OverlapProbe {
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
};

// Records every entry it applies.
class RecordingStateMachine : public StateMachine {
 public:
  void Apply(const EntryPB& e) override {
    if (probe) {
      if (probe->inside.fetch_add(1) != 0) probe->overlaps++;
      // Long enough for another thread to come in, were it let in.
      const int64_t until = GetMonoTimeMicros() + 20;
      while (GetMonoTimeMicros() < until) {
      }
      probe->inside.fetch_sub(1);
    }
    MutexLock l(mu_);
    EXPECT_EQ(e.index(), last_index_ + 1) << "applied out of order";
    last_index_ = e.index();
    if (e.type() == ENTRY_NORMAL) data_.push_back(e.data());
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    apply_threads_.insert(name);
  }
  // The names of the threads that applied entries since the last call.
  std::set<std::string> TakeApplyThreads() {
    MutexLock l(mu_);
    return std::exchange(apply_threads_, {});
  }
  // Counts the requests; with flush_when_asked, reports everything applied durable.
  void FlushRequested() override {
    flush_requests++;
    if (!flush_when_asked) return;
    uint64_t index;
    {
      MutexLock l(mu_);
      index = last_index_;
    }
    reported = index;
    if (auto g = group.lock()) g->ReportDurable(index);
  }
  std::vector<std::string> data() const {
    MutexLock l(mu_);
    return data_;
  }
  // A state machine restored at `index` (its state was durable there).
  void SkipTo(uint64_t index) {
    MutexLock l(mu_);
    last_index_ = index;
  }

  void CopyNeeded(PeerId peer, uint64_t index) override {
    copy_peer = peer;
    copy_index = index;
    copies_needed++;
  }

  void LeadershipChanged() override { changes++; }

  std::atomic<int> changes{0};  // LeadershipChanged calls: role, term, leader, configuration
  std::atomic<int> copies_needed{0};
  std::atomic<PeerId> copy_peer{kNoPeer};
  std::atomic<uint64_t> copy_index{0};
  std::atomic<int> flush_requests{0};
  std::atomic<bool> flush_when_asked{false};
  std::atomic<uint64_t> reported{0};  // the index last reported durable
  std::weak_ptr<RaftGroup> group;
  std::shared_ptr<OverlapProbe> probe;  // set before the group is created

 private:
  mutable Mutex mu_;
  uint64_t last_index_ GUARDED_BY(mu_) = 0;
  std::vector<std::string> data_ GUARDED_BY(mu_);
  std::set<std::string> apply_threads_ GUARDED_BY(mu_);
};

class RuntimeTest : public NyalaTest {
 protected:
  struct Server {
    PeerId id = kNoPeer;
    std::string dir;
    std::shared_ptr<rpc::Messenger> messenger;
    std::unique_ptr<ConsensusRuntime> runtime;
    rpc::Sockaddr addr;
    std::map<uint64_t, std::unique_ptr<RecordingStateMachine>> sms;
    std::map<uint64_t, std::shared_ptr<RaftGroup>> groups;
  };

  void SetUp() override {
    NyalaTest::SetUp();
    for (PeerId id : {1, 2, 3}) {
      servers_[id].id = id;
      servers_[id].dir = test_dir() + "/wal-" + std::to_string(id);
      ASSERT_NO_FATAL_FAILURE(StartServer(id));
    }
    Connect();
  }
  void TearDown() override {
    for (auto& [id, s] : servers_) StopServer(id);
    NyalaTest::TearDown();
  }

  void StartServer(PeerId id) {
    Server& s = servers_[id];
    rpc::MessengerOptions mo;
    mo.name = "server-" + std::to_string(id);
    mo.num_reactors = 1;
    auto m = rpc::Messenger::Create(mo);
    ASSERT_OK(m.status());
    s.messenger = *m;
    ASSERT_OK(s.messenger->AddListener(rpc::Sockaddr::Loopback(0), &s.addr));
    RuntimeOptions ro;
    ro.server_id = id;
    ro.messenger = s.messenger;
    ro.log.dir = s.dir;
    ro.log.segment_size_bytes = segment_size_;
    ro.num_threads = 2;
    ro.heartbeat_interval_us = 40'000;
    ro.election_timeout_min_us = 400'000;
    auto rt = ConsensusRuntime::Start(ro);
    ASSERT_OK(rt.status());
    s.runtime = std::move(*rt);
  }
  void StopServer(PeerId id) {
    Server& s = servers_[id];
    if (s.runtime) s.runtime->Shutdown();
    if (s.messenger) s.messenger->Shutdown();
    s.groups.clear();
    s.runtime.reset();
    s.messenger.reset();
  }
  // Every server learns every other's address.
  void Connect() {
    for (auto& [id, s] : servers_) {
      if (!s.runtime) continue;
      for (auto& [other, o] : servers_) {
        if (other != id && o.runtime) s.runtime->AddPeer(other, o.addr);
      }
    }
  }
  void CreateGroup(uint64_t group, std::vector<PeerId> on = {1, 2, 3}) {
    for (PeerId id : on) {
      Server& s = servers_[id];
      auto& sm = s.sms[group];
      if (!sm) sm = std::make_unique<RecordingStateMachine>();
      GroupOptions g;
      g.group_id = group;
      g.voters = {1, 2, 3};
      g.state_machine = sm.get();
      auto r = s.runtime->CreateGroup(g);
      ASSERT_OK(r.status());
      s.groups[group] = *r;
      sm->group = *r;
    }
  }
  // Waits until the live servers agree on one leader of `group` and it holds its
  // lease (it committed an entry of its term).
  PeerId WaitForLeader(uint64_t group) {
    PeerId leader = kNoPeer;
    AssertEventually(kWait, [&] {
      leader = kNoPeer;
      for (auto& [id, s] : servers_) {
        if (!s.runtime) continue;
        GroupInfo info = s.groups.at(group)->info();
        if (info.role == RaftRole::kLeader) {
          ASSERT_EQ(leader, kNoPeer) << "two leaders";
          leader = id;
        }
      }
      ASSERT_NE(leader, kNoPeer);
      GroupInfo li = servers_[leader].groups.at(group)->info();
      ASSERT_GT(li.applied_index, 0u);
      for (auto& [id, s] : servers_) {
        if (s.runtime) {
          ASSERT_EQ(s.groups.at(group)->info().leader, leader);
        }
      }
    });
    return leader;
  }
  // Proposes `data` on `leader` and waits for its outcome.
  Status ProposeAndWait(PeerId leader, uint64_t group, std::string data) {
    Mutex mu;
    CondVar cv;
    bool done = false;
    Status result;
    servers_[leader].groups.at(group)->Propose(std::move(data), [&](const Status& s, uint64_t) {
      MutexLock l(mu);
      result = s;
      done = true;
      cv.notify_all();
    });
    UniqueLock l(mu);
    bool finished = cv.wait_for(l, std::chrono::seconds(30), [&]() NO_THREAD_SAFETY_ANALYSIS {
      return done;
    });
    if (!finished) return Status::TimedOut("no outcome within 30 s");
    return result;
  }
  // Proposes `n` entries at once on the leader, waiting for all outcomes.
  void ProposeMany(PeerId leader, uint64_t group, int n, const std::string& prefix) {
    std::atomic<int> ok{0}, failed{0};
    for (int i = 0; i < n; i++) {
      servers_[leader].groups.at(group)->Propose(prefix + std::to_string(i),
                                                 [&](const Status& s, uint64_t) {
                                                   (s.ok() ? ok : failed)++;
                                                 });
    }
    AssertEventually(kWait, [&] { ASSERT_EQ(ok + failed, n); });
    ASSERT_EQ(failed.load(), 0);
  }
  void WaitForSameData(uint64_t group, size_t n) {
    AssertEventually(kWait, [&] {
      std::vector<std::string> first;
      bool have_first = false;
      for (auto& [id, s] : servers_) {
        if (!s.runtime) continue;
        auto d = s.sms.at(group)->data();
        ASSERT_EQ(d.size(), n) << "server " << id;
        if (!have_first) {
          first = d;
          have_first = true;
        }
        ASSERT_EQ(d, first) << "server " << id << " applied other entries";
      }
    });
  }

  std::map<PeerId, Server> servers_;
  uint64_t segment_size_ = uint64_t{64} << 20;
};

TEST_F(RuntimeTest, ReplicatesAndAppliesInOrderOnEveryServer) {
  ASSERT_NO_FATAL_FAILURE(CreateGroup(7));
  PeerId leader = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(7));
  ASSERT_OK(ProposeAndWait(leader, 7, "first"));
  ASSERT_NO_FATAL_FAILURE(ProposeMany(leader, 7, 200, "e"));
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(7, 201));
  EXPECT_EQ(servers_[leader].sms.at(7)->data().front(), "first");
  // Durable: every server's log holds the entries.
  for (auto& [id, s] : servers_) {
    EXPECT_GE(s.runtime->log()->GetGroupState(7).last_index, 202u) << "server " << id;
  }
}

// One proposal at a time: with --consensus_run_on_reactor the servers' reactors do the
// workers' part (a follower steps, writes its log and applies there, and so does the
// leader with the acknowledgements); without it, or with MultiUpdate's handler off the
// reactor, the workers do. Either way every server applies the same entries in order.
TEST_F(RuntimeTest, TheWorkersPartRunsOnTheReactorWhenTheWorkerSleeps) {
  ASSERT_NO_FATAL_FAILURE(CreateGroup(4));
  PeerId leader = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(4));
  size_t applied = 0;
  // The last round: MultiUpdate itself off the reactor (--rpc_reactor_methods=false
  // sends it to a service thread), where there is no read to follow and the messages
  // go to the workers.
  for (int round = 0; round < 4; round++) {
    const bool on_reactor = round != 1 && round != 3;
    FLAGS_consensus_run_on_reactor = round != 1;
    FLAGS_rpc_reactor_methods = round != 3;
    std::map<PeerId, uint64_t> inline_runs;
    for (auto& [id, s] : servers_) {
      inline_runs[id] = s.runtime->Stats().inline_runs;
      s.sms.at(4)->TakeApplyThreads();
    }
    for (int i = 0; i < 30; i++) {
      ASSERT_OK(ProposeAndWait(leader, 4, "p" + std::to_string(applied++)));
    }
    ASSERT_NO_FATAL_FAILURE(WaitForSameData(4, applied));
    for (auto& [id, s] : servers_) {
      const uint64_t runs = s.runtime->Stats().inline_runs - inline_runs[id];
      const std::set<std::string> threads = s.sms.at(4)->TakeApplyThreads();
      bool on_reactor_thread = false, on_worker = false;
      for (const std::string& t : threads) {
        if (t.rfind("server-", 0) == 0) on_reactor_thread = true;
        if (t.rfind("raft-worker-", 0) == 0) on_worker = true;
      }
      if (on_reactor) {
        // Most of them: a worker that happens to be awake (a tick) takes the odd one.
        EXPECT_GT(runs, 15u) << "server " << id;
        EXPECT_TRUE(on_reactor_thread) << "server " << id;
      } else {
        EXPECT_EQ(runs, 0u) << "server " << id;
        EXPECT_FALSE(on_reactor_thread) << "server " << id;
        EXPECT_TRUE(on_worker) << "server " << id;
      }
    }
  }
  FLAGS_consensus_run_on_reactor = true;
  FLAGS_rpc_reactor_methods = true;
}

// Proposals from several threads keep a worker's thread busy while answers and
// appends for its other groups arrive: a reactor may take the worker's part only
// while the thread sleeps, and the thread waits while a reactor has it. Every group
// here belongs to worker 0 (even ids, two workers).
TEST_F(RuntimeTest, AWorkersPartNeverRunsOnTwoThreadsAtOnce) {
  constexpr int kGroups = 8;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 150;
  std::map<PeerId, std::shared_ptr<OverlapProbe>> probes;
  for (auto& [id, s] : servers_) {
    probes[id] = std::make_shared<OverlapProbe>();
    for (int g = 0; g < kGroups; g++) {
      auto& sm = s.sms[2 * g + 2];
      sm = std::make_unique<RecordingStateMachine>();
      sm->probe = probes[id];
    }
  }
  std::map<uint64_t, PeerId> leaders;
  for (int g = 0; g < kGroups; g++) ASSERT_NO_FATAL_FAILURE(CreateGroup(2 * g + 2));
  for (int g = 0; g < kGroups; g++) ASSERT_NO_FATAL_FAILURE(leaders[2 * g + 2] = WaitForLeader(2 * g + 2));
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; i++) {
        const uint64_t group = 2 * ((t + i) % kGroups) + 2;
        if (!ProposeAndWait(leaders[group], group, "t" + std::to_string(t)).ok()) failed++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  size_t total = 0;
  for (int g = 0; g < kGroups; g++) {
    const size_t n = servers_[leaders[2 * g + 2]].sms.at(2 * g + 2)->data().size();
    total += n;
    ASSERT_NO_FATAL_FAILURE(WaitForSameData(2 * g + 2, n));
  }
  EXPECT_EQ(total, size_t(kThreads * kPerThread));
  uint64_t inline_runs = 0;
  for (auto& [id, s] : servers_) {
    EXPECT_EQ(probes[id]->overlaps.load(), 0) << "server " << id;
    inline_runs += s.runtime->Stats().inline_runs;
  }
  EXPECT_GT(inline_runs, 0u);
}

TEST_F(RuntimeTest, AFollowerRefusesProposalsNamingTheLeader) {
  ASSERT_NO_FATAL_FAILURE(CreateGroup(3));
  PeerId leader = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(3));
  PeerId follower = leader == 1 ? 2 : 1;
  Status s = ProposeAndWait(follower, 3, "x");
  ASSERT_TRUE(s.IsIllegalState()) << s.ToString();
  EXPECT_NE(s.ToString().find(std::to_string(leader)), std::string::npos) << s.ToString();
}

TEST_F(RuntimeTest, MessagesOfManyGroupsShareCalls) {
  constexpr int kGroups = 40;
  for (int g = 1; g <= kGroups; g++) ASSERT_NO_FATAL_FAILURE(CreateGroup(g));
  std::map<uint64_t, PeerId> leaders;
  for (int g = 1; g <= kGroups; g++) ASSERT_NO_FATAL_FAILURE(leaders[g] = WaitForLeader(g));
  std::atomic<int> ok{0}, failed{0};
  // Round by round (a leader sends a group's proposals of one round in one append), so
  // that every round makes messages for every group at once.
  for (int round = 1; round <= 5; round++) {
    for (int g = 1; g <= kGroups; g++) {
      servers_[leaders[g]].groups.at(g)->Propose("v", [&](const Status& s, uint64_t) {
        (s.ok() ? ok : failed)++;
      });
    }
    AssertEventually(kWait, [&] { ASSERT_EQ(ok + failed, round * kGroups); });
  }
  ASSERT_EQ(failed.load(), 0);
  uint64_t calls = 0, messages = 0;
  for (auto& [id, s] : servers_) {
    RuntimeStats st = s.runtime->Stats();
    calls += st.calls_sent - st.server_heartbeats;
    messages += st.messages_sent;
  }
  // Without batching every message would be a call of its own (planted:
  // --consensus_max_calls_in_flight=100000 gave 1,885 calls for 1,906 messages). With
  // it, 0.49-0.63 calls per message in 41 runs, once 0.67 under ctest -j2: the bound
  // sits between.
  EXPECT_LT(calls * 5, messages * 4) << calls << " calls carried " << messages << " messages";
}

TEST_F(RuntimeTest, IdleGroupsStopTickingAndWakeForAProposal) {
  constexpr int kGroups = 30;
  for (int g = 1; g <= kGroups; g++) ASSERT_NO_FATAL_FAILURE(CreateGroup(g));
  std::map<uint64_t, PeerId> leaders;
  for (int g = 1; g <= kGroups; g++) ASSERT_NO_FATAL_FAILURE(leaders[g] = WaitForLeader(g));
  ASSERT_EVENTUALLY(kWait, [&] {
    for (auto& [id, s] : servers_) {
      for (auto& [g, group] : s.groups) ASSERT_TRUE(group->info().quiesced) << id << "/" << g;
    }
  });
  auto totals = [&] {
    RuntimeStats t;
    for (auto& [id, s] : servers_) {
      RuntimeStats st = s.runtime->Stats();
      t.group_ticks += st.group_ticks;
      t.messages_sent += st.messages_sent;
      t.server_heartbeats += st.server_heartbeats;
    }
    return t;
  };
  RuntimeStats before = totals();
  // Over five minimum election timeouts (the only way to see that nothing happens is to
  // let time pass): no group ticks or sends, yet the servers keep heartbeating, and no
  // follower woke to campaign.
  SleepFor(MonoDelta::FromMilliseconds(2000));
  RuntimeStats after = totals();
  EXPECT_EQ(after.group_ticks, before.group_ticks);
  EXPECT_EQ(after.messages_sent, before.messages_sent);
  EXPECT_GT(after.server_heartbeats, before.server_heartbeats);
  for (int g = 1; g <= kGroups; g++) {
    for (auto& [id, s] : servers_) {
      GroupInfo info = s.groups.at(g)->info();
      EXPECT_TRUE(info.quiesced);
      EXPECT_EQ(info.leader, leaders[g]);
    }
  }
  ASSERT_OK(ProposeAndWait(leaders[5], 5, "wake"));
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(5, 1));
}

TEST_F(RuntimeTest, QuiescedFollowersElectANewLeaderWhenTheLeaderServerDies) {
  ASSERT_NO_FATAL_FAILURE(CreateGroup(9));
  PeerId leader = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(9));
  ASSERT_OK(ProposeAndWait(leader, 9, "before"));
  ASSERT_EVENTUALLY(kWait, [&] {
    for (auto& [id, s] : servers_) ASSERT_TRUE(s.groups.at(9)->info().quiesced);
  });
  StopServer(leader);
  PeerId next = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(next = WaitForLeader(9));
  ASSERT_NE(next, leader);
  uint64_t wakeups = 0;
  for (auto& [id, s] : servers_) {
    if (s.runtime) wakeups += s.runtime->Stats().wakeups;
  }
  EXPECT_GT(wakeups, 0u) << "the followers should have been woken by the server liveness check";
  ASSERT_OK(ProposeAndWait(next, 9, "after"));
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(9, 2));
}

TEST_F(RuntimeTest, AQuiescedLeaderStepsDownWhenAMajorityOfServersDies) {
  ASSERT_NO_FATAL_FAILURE(CreateGroup(8));
  PeerId leader = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(8));
  ASSERT_OK(ProposeAndWait(leader, 8, "before"));
  ASSERT_EVENTUALLY(kWait, [&] {
    for (auto& [id, s] : servers_) ASSERT_TRUE(s.groups.at(8)->info().quiesced);
  });
  std::vector<PeerId> others;
  for (auto& [id, s] : servers_) {
    if (id != leader) others.push_back(id);
  }
  for (PeerId id : others) StopServer(id);
  // Nothing is proposed or read: only the server liveness check can wake the leader,
  // and check-quorum then makes it step down.
  ASSERT_EVENTUALLY(kWait, [&] {
    ASSERT_NE(servers_.at(leader).groups.at(8)->info().role, RaftRole::kLeader);
  });
  EXPECT_GT(servers_.at(leader).runtime->Stats().wakeups, 0u);
}

TEST_F(RuntimeTest, RestartReplaysTheLogIntoTheStateMachine) {
  ASSERT_NO_FATAL_FAILURE(CreateGroup(4));
  PeerId leader = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(4));
  ASSERT_NO_FATAL_FAILURE(ProposeMany(leader, 4, 50, "r"));
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(4, 50));
  std::vector<std::string> expected = servers_[leader].sms.at(4)->data();
  uint64_t term = servers_[leader].groups.at(4)->info().term;
  for (PeerId id : {1, 2, 3}) StopServer(id);
  for (PeerId id : {1, 2, 3}) {
    servers_[id].sms.clear();  // a state machine that applied nothing durably
    ASSERT_NO_FATAL_FAILURE(StartServer(id));
  }
  Connect();
  ASSERT_NO_FATAL_FAILURE(CreateGroup(4));
  PeerId again = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(again = WaitForLeader(4));
  EXPECT_GT(servers_[again].groups.at(4)->info().term, term);
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(4, 50));
  EXPECT_EQ(servers_[again].sms.at(4)->data(), expected);
  ASSERT_OK(ProposeAndWait(again, 4, "after restart"));
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(4, 51));
}

TEST_F(RuntimeTest, ALinearizableReadWaitsForTheLeadersApply) {
  ASSERT_NO_FATAL_FAILURE(CreateGroup(2));
  PeerId leader = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(2));
  ASSERT_OK(ProposeAndWait(leader, 2, "w"));
  std::atomic<int> reads{0};
  Status follower_status;
  PeerId follower = leader == 1 ? 2 : 1;
  Mutex mu;
  servers_[leader].groups.at(2)->Read([&](const Status& s) {
    EXPECT_OK(s);
    // Everything committed before the read is applied here.
    EXPECT_EQ(servers_[leader].sms.at(2)->data().size(), 1u);
    reads++;
  });
  servers_[follower].groups.at(2)->Read([&](const Status& s) {
    MutexLock l(mu);
    follower_status = s;
    reads++;
  });
  ASSERT_EVENTUALLY(kWait, [&] { ASSERT_EQ(reads.load(), 2); });
  MutexLock l(mu);
  EXPECT_TRUE(follower_status.IsIllegalState()) << follower_status.ToString();
}

TEST_F(RuntimeTest, BadCallsGetClearErrorsAndTheServerKeepsServing) {
  ASSERT_NO_FATAL_FAILURE(CreateGroup(6));
  PeerId leader = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(6));
  auto client = rpc::Messenger::Create(rpc::MessengerOptions{});
  ASSERT_OK(client.status());
  ConsensusServiceProxy proxy(*client, servers_[1].addr);
  {
    MultiUpdateRequestPB req;
    req.set_from_server(2);
    req.set_to_server(5);  // server 1 listens there
    MultiUpdateResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(10));
    Status s = proxy.MultiUpdate(req, &resp, &rpc);
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  }
  {
    MultiUpdateRequestPB req;
    req.set_from_server(2);
    req.set_to_server(1);
    GroupMessagePB* gm = req.add_messages();
    gm->set_group(12345);
    gm->mutable_message()->set_type(MSG_HEARTBEAT);
    gm->mutable_message()->set_from(2);
    gm->mutable_message()->set_to(1);
    MultiUpdateResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(10));
    ASSERT_OK(proxy.MultiUpdate(req, &resp, &rpc));
    ASSERT_EQ(resp.unknown_groups_size(), 1);
    EXPECT_EQ(resp.unknown_groups(0), 12345u);
  }
  {
    // Messages of a known group that claim another sender or receiver than the call's
    // are dropped and counted.
    const uint64_t dropped = servers_[1].runtime->Stats().messages_dropped;
    MultiUpdateRequestPB req;
    req.set_from_server(2);
    req.set_to_server(1);
    for (auto [from, to] : {std::pair<PeerId, PeerId>{2, 3}, {3, 1}}) {
      GroupMessagePB* gm = req.add_messages();
      gm->set_group(6);
      gm->mutable_message()->set_type(MSG_HEARTBEAT);
      gm->mutable_message()->set_from(from);
      gm->mutable_message()->set_to(to);
      gm->mutable_message()->set_term(1000);  // would depose the leader if stepped
    }
    MultiUpdateResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(10));
    ASSERT_OK(proxy.MultiUpdate(req, &resp, &rpc));
    EXPECT_EQ(servers_[1].runtime->Stats().messages_dropped, dropped + 2);
    EXPECT_LT(servers_[1].groups.at(6)->info().term, 1000u);
  }
  (*client)->Shutdown();
  ASSERT_OK(ProposeAndWait(leader, 6, "still serving"));
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(6, 1));
}

// A follower that was down while its group took more entries than the leader keeps
// in memory (--raft_retained_entries below the durable index) catches up from the
// leader's log on disk, read back in batches, without a copy of the state.
TEST_F(RuntimeTest, AFollowerBehindTheMemoryLogCatchesUpFromTheLogOnDisk) {
  gflags::FlagSaver saver;
  FLAGS_raft_retained_entries = 10;
  ASSERT_NO_FATAL_FAILURE(CreateGroup(11));
  PeerId leader = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(11));
  const PeerId down = leader == 3 ? 2 : 3;
  StopServer(down);
  servers_[down].sms.erase(11);  // its state is what its log replays
  // 8 KiB entries: 3 MiB to catch up, several batches of 1 MiB.
  ASSERT_NO_FATAL_FAILURE(ProposeMany(leader, 11, 400, std::string(8 << 10, 'd')));
  // The state machines report everything durable: memory keeps 10 entries below it.
  for (auto& [id, s] : servers_) {
    if (!s.runtime) continue;
    const uint64_t applied = s.groups.at(11)->info().applied_index;
    s.groups.at(11)->ReportDurable(applied);
  }
  AssertEventually(kWait,
                   [&] { ASSERT_GE(servers_[leader].groups.at(11)->info().snapshot_index, 380u); });
  const uint64_t read_back = servers_[leader].runtime->Stats().entries_read_back;
  ASSERT_NO_FATAL_FAILURE(StartServer(down));
  Connect();
  ASSERT_NO_FATAL_FAILURE(CreateGroup(11, {down}));
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(11, 400));
  EXPECT_GE(servers_[leader].runtime->Stats().entries_read_back, read_back + 380);
  // Caught up: a read any replica may answer is fresh there again.
  EXPECT_EQ(servers_[leader].groups.at(11)->StalenessUs(GetMonoTimeMicros()), 0);
  AssertEventually(kWait, [&] {
    ASSERT_LT(servers_[down].groups.at(11)->StalenessUs(GetMonoTimeMicros()), 1'000'000);
  });
  ASSERT_OK(ProposeAndWait(leader, 11, "after"));
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(11, 401));
}

// Entries made durable stay in the log on disk for --log_min_seconds_to_retain, over
// segment rolls and checkpoints, so a follower down meanwhile catches up from the log;
// without retention they leave the log and the leader finds the follower needs a copy.
TEST_F(RuntimeTest, TheLogKeepsDurableEntriesForAFollowerThatComesBack) {
  gflags::FlagSaver saver;
  FLAGS_raft_retained_entries = 10;
  FLAGS_log_max_segments_to_retain = 1000;
  for (int retain_s : {300, 0}) {
    SCOPED_TRACE("--log_min_seconds_to_retain=" + std::to_string(retain_s));
    FLAGS_log_min_seconds_to_retain = retain_s;
    const uint64_t group = 20 + retain_s;
    segment_size_ = 256 << 10;  // 3 MiB of entries roll a dozen segments
    for (PeerId id : {1, 2, 3}) StopServer(id);
    for (PeerId id : {1, 2, 3}) ASSERT_NO_FATAL_FAILURE(StartServer(id));
    Connect();
    ASSERT_NO_FATAL_FAILURE(CreateGroup(group));
    PeerId leader = kNoPeer;
    ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(group));
    const PeerId down = leader == 3 ? 2 : 3;
    StopServer(down);
    servers_[down].sms.erase(group);
    for (int round = 0; round < 4; round++) {
      ASSERT_NO_FATAL_FAILURE(ProposeMany(leader, group, 100, std::string(8 << 10, 'a' + round)));
      for (auto& [id, s] : servers_) {
        if (s.runtime) s.groups.at(group)->ReportDurable(s.groups.at(group)->info().applied_index);
      }
    }
    AssertEventually(
        kWait, [&] { ASSERT_GE(servers_[leader].groups.at(group)->info().snapshot_index, 380u); });
    // The rolls wrote checkpoints: without retention the entries left the log.
    ASSERT_GT(servers_[leader].runtime->log()->Stats().segments_live, 1u);
    const uint64_t read_back = servers_[leader].runtime->Stats().entries_read_back;
    ASSERT_NO_FATAL_FAILURE(StartServer(down));
    Connect();
    ASSERT_NO_FATAL_FAILURE(CreateGroup(group, {down}));
    if (retain_s > 0) {
      ASSERT_NO_FATAL_FAILURE(WaitForSameData(group, 400));
      EXPECT_GE(servers_[leader].runtime->Stats().entries_read_back, read_back + 380);
      continue;
    }
    AssertEventually(kWait, [&] {
      bool needs_copy = false;
      for (const FollowerProgress& f : servers_[leader].groups.at(group)->info().followers) {
        if (f.id == down) needs_copy = f.state == FollowerState::kSnapshot;
      }
      ASSERT_TRUE(needs_copy);
    });
    EXPECT_LT(servers_[down].groups.at(group)->info().last_index, 380u);
    // It never caught up since it started: no read should be served there.
    EXPECT_EQ(servers_[down].groups.at(group)->StalenessUs(GetMonoTimeMicros()), INT64_MAX);
  }
}

// A peer that forges or garbles Raft messages of a group this server hosts: each is
// refused and counted, the server's groups keep their logs, and the group keeps
// replicating (raft_bad_input-test.cc has one test per kind against the core).
TEST_F(RuntimeTest, ForgedRaftMessagesAreRefusedAndTheGroupKeepsServing) {
  ASSERT_NO_FATAL_FAILURE(CreateGroup(8));
  PeerId leader = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(8));
  ASSERT_NO_FATAL_FAILURE(ProposeMany(leader, 8, 5, "before"));
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(8, 5));
  const PeerId follower = leader == 1 ? 2 : 1;
  const GroupInfo before = servers_[follower].groups.at(8)->info();
  const uint64_t term = before.term;
  const uint64_t last = before.last_index;

  // Appends in the leader's name, each with something wrong.
  std::vector<MessagePB> bad;
  auto append = [&](uint64_t log_term, uint64_t index, std::vector<EntryPB> entries) {
    MessagePB m;
    m.set_type(MSG_APPEND);
    m.set_from(leader);
    m.set_to(follower);
    m.set_term(term);
    m.set_log_term(log_term);
    m.set_index(index);
    m.set_commit(last + 2);
    for (EntryPB& e : entries) *m.add_entries() = std::move(e);
    bad.push_back(m);
    return &bad.back();
  };
  append(term, last, {MakeEntry(term, last + 1), MakeEntry(term, last + 3)});  // a gap
  append(term, last, {MakeEntry(term, last + 2)});                             // not after `index`
  append(term, last, {MakeEntry(term, last + 1), MakeEntry(term - 1, last + 2)});  // term goes down
  append(term, last, {MakeEntry(term + 1, last + 1)});  // term above the message's
  append(term + 1, last, {});                       // log_term above the term
  append(term, UINT64_MAX, {MakeEntry(term, 0)});   // indexes overflow
  append(term, last, {MakeEntry(term, last + 1, ENTRY_CONFIG, "\xff\xfe")});  // unreadable config
  append(term, last, {MakeEntry(term, last + 1, static_cast<EntryTypePB>(9))});  // unknown type
  append(term, last, {})->set_type(static_cast<MessageTypePB>(99));          // unknown message
  append(term, last, {MakeEntry(term, last + 1)})
      ->set_type(MSG_HEARTBEAT);  // entries in a heartbeat

  auto client = rpc::Messenger::Create(rpc::MessengerOptions{});
  ASSERT_OK(client.status());
  ConsensusServiceProxy proxy(*client, servers_[follower].addr);
  const uint64_t refused = servers_[follower].runtime->Stats().messages_refused;
  {
    MultiUpdateRequestPB req;
    req.set_from_server(leader);
    req.set_to_server(follower);
    for (const MessagePB& m : bad) {
      GroupMessagePB* gm = req.add_messages();
      gm->set_group(8);
      *gm->mutable_message() = m;
    }
    MultiUpdateResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(10));
    ASSERT_OK(proxy.MultiUpdate(req, &resp, &rpc));
    EXPECT_EQ(resp.unknown_groups_size(), 0);
  }
  AssertEventually(kWait, [&] {
    ASSERT_EQ(servers_[follower].runtime->Stats().messages_refused, refused + bad.size());
  });
  GroupInfo after = servers_[follower].groups.at(8)->info();
  EXPECT_TRUE(after.status.ok()) << after.status.ToString();
  EXPECT_LE(after.last_index, last + 1) << "a forged entry reached the log";  // +1: a no-op
  // A forged answer in a follower's name, acknowledging entries the leader never had.
  {
    const uint64_t refused_at_leader = servers_[leader].runtime->Stats().messages_refused;
    MultiUpdateRequestPB req;
    req.set_from_server(follower);
    req.set_to_server(leader);
    GroupMessagePB* gm = req.add_messages();
    gm->set_group(8);
    MessagePB* m = gm->mutable_message();
    m->set_type(MSG_APPEND_RESP);
    m->set_from(follower);
    m->set_to(leader);
    m->set_term(term);
    m->set_index(last + 1'000'000);
    MultiUpdateResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(10));
    ConsensusServiceProxy to_leader(*client, servers_[leader].addr);
    ASSERT_OK(to_leader.MultiUpdate(req, &resp, &rpc));
    AssertEventually(kWait, [&] {
      ASSERT_EQ(servers_[leader].runtime->Stats().messages_refused, refused_at_leader + 1);
    });
  }
  (*client)->Shutdown();
  ASSERT_OK(ProposeAndWait(leader, 8, "after"));
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(8, 6));
  EXPECT_EQ(servers_[follower].sms.at(8)->data().back(), "after");
}

#ifndef NDEBUG
// The runtime's side of a group runs on the group's worker only; a call from another
// thread is a bug that the DCHECKs catch (in builds with assertions, as
// scripts/check.sh makes).
TEST_F(RuntimeTest, AGroupsWorkerOnlyMethodsCheckTheirThread) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ASSERT_NO_FATAL_FAILURE(CreateGroup(5));
  std::shared_ptr<RaftGroup> g = servers_[1].groups.at(5);
  EXPECT_FALSE(g->worker()->IsCurrentThread());
  EXPECT_DEATH(g->Tick(GetMonoTimeMicros()), "IsCurrentThread");
  EXPECT_DEATH(g->Process(), "IsCurrentThread");
  EXPECT_DEATH(g->FailPending(Status::Aborted("test")), "IsCurrentThread");
  // On the worker they run.
  std::atomic<bool> ran{false};
  std::function<void()> task = [&] {
    EXPECT_TRUE(g->worker()->IsCurrentThread());
    EXPECT_TRUE(g->running());
    ran = true;
  };
  ASSERT_TRUE(g->worker()->Post(&task));
  AssertEventually(kWait, [&] { ASSERT_TRUE(ran.load()); });
}
#endif

// A group whose state machine says it applied past the end of its log (its log was
// lost or damaged) does not start, with an error naming it; the server's other
// groups run on.
TEST_F(RuntimeTest, AGroupWhoseStateIsDamagedFailsAloneAndTheOthersRun) {
  ASSERT_NO_FATAL_FAILURE(CreateGroup(3));
  PeerId leader = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(3));
  RecordingStateMachine sm;
  GroupOptions g;
  g.group_id = 33;
  g.name = "tablet damaged-one";
  g.voters = {1, 2, 3};
  g.state_machine = &sm;
  g.applied = 500;  // nothing of group 33 is in the log
  auto r = servers_[1].runtime->CreateGroup(g);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().ToString().find("tablet damaged-one"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().ToString().find("applied up to 500"), std::string::npos)
      << r.status().ToString();
  EXPECT_EQ(servers_[1].runtime->GetGroup(33), nullptr);
  ASSERT_OK(ProposeAndWait(leader, 3, "the others run"));
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(3, 1));
}

// A replica whose state machine was installed from a copy (its applied entry is past
// its log) starts its log after the copy, keeps its term and vote, and applies only
// what follows; a copy older than its log is refused. A leader whose follower's
// server hosts no replica any more asks its state machine for a copy.
TEST_F(RuntimeTest, AReplicaInstalledFromACopyStartsItsLogAfterIt) {
  ASSERT_NO_FATAL_FAILURE(CreateGroup(7));
  PeerId leader = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(7));
  ASSERT_NO_FATAL_FAILURE(ProposeMany(leader, 7, 10, "before"));
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(7, 10));
  const PeerId f = leader == 3 ? 2 : 3;
  Server& fs = servers_[f];
  ASSERT_OK(fs.runtime->StopGroup(7, /*forget=*/false));
  fs.groups.erase(7);
  const uint64_t term_before = fs.runtime->log()->GetGroupState(7).hard_state->term;
  ASSERT_NO_FATAL_FAILURE(ProposeMany(leader, 7, 20, "after"));
  const GroupInfo li = servers_[leader].groups.at(7)->info();
  const uint64_t copy_index = li.applied_index;
  ASSERT_GT(copy_index, fs.runtime->log()->GetGroupState(7).last_index);

  // Its state machine is installed from a copy of the leader's at copy_index.
  auto sm = std::make_unique<RecordingStateMachine>();
  sm->SkipTo(copy_index);
  GroupOptions g;
  g.group_id = 7;
  g.voters = {1, 2, 3};
  g.state_machine = sm.get();
  g.applied = copy_index;
  g.applied_term = li.term;
  g.applied_config = li.config;
  auto r = fs.runtime->CreateGroup(g);
  ASSERT_OK(r.status());
  fs.groups[7] = *r;
  sm->group = *r;
  GroupInfo fi = (*r)->info();
  EXPECT_EQ(fi.snapshot_index, copy_index);
  EXPECT_GE(fi.term, term_before) << "the term survives the copy";
  GroupState gs = fs.runtime->log()->GetGroupState(7);
  ASSERT_TRUE(gs.snapshot.has_value());
  EXPECT_EQ(gs.snapshot->index, copy_index);
  EXPECT_EQ(gs.snapshot->term, li.term);
  ASSERT_OK(ProposeAndWait(leader, 7, "next"));
  AssertEventually(kWait, [&] { ASSERT_EQ(sm->data(), std::vector<std::string>{"next"}); });

  // Stopped again, it cannot be given a copy older than its log's start.
  ASSERT_OK(fs.runtime->StopGroup(7, /*forget=*/false));
  fs.groups.erase(7);
  auto old_sm = std::make_unique<RecordingStateMachine>();
  g.applied = 3;
  g.state_machine = old_sm.get();
  r = fs.runtime->CreateGroup(g);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsIllegalState()) << r.status().ToString();
  EXPECT_NE(r.status().ToString().find("copy the tablet again"), std::string::npos)
      << r.status().ToString();

  // Its server runs no replica now: the leader's state machine is asked for a copy.
  ASSERT_OK(ProposeAndWait(leader, 7, "while it is gone"));
  AssertEventually(kWait, [&] {
    ASSERT_GT(servers_[leader].sms.at(7)->copies_needed.load(), 0);
    ASSERT_EQ(servers_[leader].sms.at(7)->copy_peer.load(), f);
  });
}

// A configuration change is news to the state machines of the members, the leader's
// included (its role did not change): the tablet server reports it to the master.
TEST_F(RuntimeTest, AConfigurationChangeIsNewsToTheStateMachines) {
  ASSERT_NO_FATAL_FAILURE(CreateGroup(7));
  PeerId leader = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(7));
  ASSERT_OK(ProposeAndWait(leader, 7, "first"));
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(7, 1));
  const PeerId removed = leader == 3 ? 2 : 3;
  RecordingStateMachine* sm = servers_[leader].sms.at(7).get();
  const int before = sm->changes.load();
  Mutex mu;
  CondVar cv;
  std::optional<Status> result;
  servers_[leader].groups.at(7)->ChangeConfig(ConfigChange::kRemovePeer, removed,
                                              [&](const Status& s, uint64_t) {
                                                MutexLock l(mu);
                                                result = s;
                                                cv.notify_all();
                                              });
  {
    UniqueLock l(mu);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(30),
                            [&]() NO_THREAD_SAFETY_ANALYSIS { return result.has_value(); }));
    ASSERT_OK(*result);
  }
  AssertEventually(kWait, [&] {
    ASSERT_GT(sm->changes.load(), before);
    ASSERT_EQ(servers_[leader].groups.at(7)->info().config.voters_size(), 2);
  });
  EXPECT_EQ(servers_[leader].groups.at(7)->info().role, RaftRole::kLeader);
}

// Groups whose state machines do not report durable state keep old log segments
// alive and are asked to flush; once they do, the segments go.
TEST_F(RuntimeTest, GroupsThatPinOldSegmentsAreAskedToFlush) {
  gflags::FlagSaver saver;
  FLAGS_log_max_old_segments = 2;
  for (PeerId id : {1, 2, 3}) StopServer(id);
  segment_size_ = 8 << 10;
  for (PeerId id : {1, 2, 3}) ASSERT_NO_FATAL_FAILURE(StartServer(id));
  Connect();
  ASSERT_NO_FATAL_FAILURE(CreateGroup(5));
  PeerId leader = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(5));
  // In rounds, so that the log writes (and rolls segments) many times.
  for (int round = 0; round < 20; round++) {
    ASSERT_NO_FATAL_FAILURE(ProposeMany(leader, 5, 20, std::string(200, 'x')));
  }
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(5, 400));
  // Nothing reported durable: more segments than allowed stay, and the state machines
  // are asked (every second) to flush.
  ASSERT_EVENTUALLY(kWait, [&] {
    for (auto& [id, s] : servers_) ASSERT_GT(s.sms.at(5)->flush_requests.load(), 0) << id;
  });
  for (auto& [id, s] : servers_) {
    EXPECT_GT(s.runtime->log()->Stats().segments_live, 3u) << "server " << id;
    s.sms.at(5)->flush_when_asked = true;  // read by the worker at its next request
  }
  ASSERT_EVENTUALLY(kWait, [&] {
    for (auto& [id, s] : servers_) {
      ASSERT_LE(s.runtime->log()->Stats().segments_live, 3u) << "server " << id;
    }
  });
  ASSERT_OK(ProposeAndWait(leader, 5, "after"));
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(5, 401));

  // After a restart the log starts after the durable point: a state machine that
  // claims less is refused; one at its durable index gets the rest replayed.
  std::map<PeerId, uint64_t> durable;
  for (auto& [id, s] : servers_) durable[id] = s.sms.at(5)->reported;
  for (PeerId id : {1, 2, 3}) StopServer(id);
  for (PeerId id : {1, 2, 3}) ASSERT_NO_FATAL_FAILURE(StartServer(id));
  Connect();
  for (auto& [id, s] : servers_) {
    ASSERT_GT(durable[id], 0u);
    GroupOptions g;
    g.group_id = 5;
    g.voters = {1, 2, 3};
    auto r = s.runtime->CreateGroup(g);
    ASSERT_TRUE(r.status().IsIllegalState()) << r.status().ToString();
    s.sms[5] = std::make_unique<RecordingStateMachine>();
    s.sms[5]->SkipTo(durable[id]);
    g.state_machine = s.sms[5].get();
    g.applied = durable[id];
    r = s.runtime->CreateGroup(g);
    ASSERT_OK(r.status());
    s.groups[5] = *r;
  }
  ASSERT_NO_FATAL_FAILURE(leader = WaitForLeader(5));
  ASSERT_OK(ProposeAndWait(leader, 5, "after restart"));
  AssertEventually(kWait, [&] {
    for (auto& [id, s] : servers_) {
      auto d = s.sms.at(5)->data();
      ASSERT_FALSE(d.empty());
      ASSERT_EQ(d.back(), "after restart") << "server " << id;
      // Only what came after the durable point was applied again.
      ASSERT_LE(d.size(), 401 - durable[id] + 1 + 1) << "server " << id;
    }
  });
}

TEST_F(RuntimeTest, CreatingAGroupTwiceIsRefused) {
  ASSERT_NO_FATAL_FAILURE(CreateGroup(8));
  GroupOptions g;
  g.group_id = 8;
  g.voters = {1, 2, 3};
  auto r = servers_[1].runtime->CreateGroup(g);
  EXPECT_TRUE(r.status().IsAlreadyPresent()) << r.status().ToString();
  g.group_id = 10;
  g.voters = {};
  r = servers_[1].runtime->CreateGroup(g);
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
}

// --fault_injection_consensus_drop_peers cuts a server off both ways, changed while
// the runtimes run: the other two elect a leader and commit without it; once the flag
// is cleared it catches up. (One process: the flag is every runtime's, which is what a
// partition needs anyway: each side drops the other.)
TEST_F(RuntimeTest, DroppedPeersArePartitionedAwayAndCatchUpWhenHealed) {
  ASSERT_NO_FATAL_FAILURE(CreateGroup(5));
  PeerId old_leader = kNoPeer;
  ASSERT_NO_FATAL_FAILURE(old_leader = WaitForLeader(5));
  ASSERT_OK(ProposeAndWait(old_leader, 5, "before"));
  // Server ids are uuids' first 16 hex digits (peer_id.h).
  char uuid[33];
  snprintf(uuid, sizeof(uuid), "%016llx%016x", (unsigned long long)old_leader, 0);
  ASSERT_NE("", gflags::SetCommandLineOption("fault_injection_consensus_drop_peers", uuid));
  PeerId next = kNoPeer;
  ASSERT_EVENTUALLY(kWait, [&] {
    next = kNoPeer;
    for (auto& [id, s] : servers_) {
      if (id != old_leader && s.groups.at(5)->info().role == RaftRole::kLeader) next = id;
    }
    ASSERT_NE(next, kNoPeer);
  });
  ASSERT_OK(ProposeAndWait(next, 5, "during"));
  // The cut-off server has not seen it.
  EXPECT_EQ(servers_[old_leader].sms.at(5)->data().size(), 1u);
  EXPECT_GT(servers_[old_leader].runtime->Stats().messages_dropped, 0u);
  // More than 16 servers: refused, and the partition stays.
  std::string many;
  for (int i = 0; i < 17; i++) many += (i ? ",s" : "s") + std::to_string(i);
  EXPECT_EQ("", gflags::SetCommandLineOption("fault_injection_consensus_drop_peers", many.c_str()));
  ASSERT_NE("", gflags::SetCommandLineOption("fault_injection_consensus_drop_peers", ""));
  ASSERT_NO_FATAL_FAILURE(WaitForLeader(5));
  ASSERT_NO_FATAL_FAILURE(WaitForSameData(5, 2));
}

}  // namespace
}  // namespace nyala::consensus
