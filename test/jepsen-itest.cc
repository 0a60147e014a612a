// A Jepsen-style test of replicated tablets: client threads run random Gets, Upserts,
// Inserts and Deletes on a few keys of a table whose tablets have three replicas on
// four tablet servers, while a nemesis kills (kill -9) and restarts tablet servers,
// pauses them (SIGSTOP/SIGCONT), cuts one off from the others' Raft traffic
// (--fault_injection_consensus_drop_peers, set through GenericService.SetFlag),
// changes a tablet's membership behind the master's back (a follower removed,
// tombstoned, added back as a learner that gets a copy of the tablet, and promoted),
// and has the master move a replica to the server that holds none of its tablet
// (MasterAdminService.MoveReplica, a rebalancing move: a learner added there, copied,
// promoted, then the old voter removed; half the time the leader's replica, which
// hands leadership over first). Every operation's invocation and completion times and
// outcome go into a history, which the linearizability checker
// (test/linearizability.h) must find linearizable.
//
// The master considers a server failed, and replaces its replicas, after
// --follower_unavailable_considered_failed_sec (20 s here, far longer than a kill or a
// pause lasts): the only replicas it moves are the nemesis' moves, and the replica a
// membership change left missing (the fourth server can take it). Once the nemesis
// stopped, the test waits for the moves to finish and every tablet to settle, and
// requires three voters and no learner in each.
//
// Outcomes: ok; the observed failures of the model (insert: already_present, delete:
// not_found, get: absent); failed (refused by the client before anything was sent);
// unknown (anything else: a timeout or an error after which the write may have been
// applied). The history is written to <test dir>/history.jsonl (and to
// --jepsen_history_out), the nemesis' timeline to <test dir>/nemesis.log, on the
// same clock (nanoseconds since the workload started); the test dir is kept when the
// test fails, with every daemon's log.
//
// The run lasts --jepsen_seconds in all (default 60, or $NYALA_JEPSEN_SECONDS), setup
// and check included; scripts/jepsen.sh runs it for longer soaks.
//
// JepsenITest.DISABLED_FollowerReadsAreCaught runs the same workload with Gets that
// any replica may answer (ReplicaSelection::kClosestReplica, which is not
// linearizable and says so) and expects the checker to find the stale reads:
//   jepsen-itest --gtest_also_run_disabled_tests --gtest_filter='*FollowerReads*'
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "common/test_util.h"
#include "common/wire_protocol.h"
#include "master/master.proxy.h"
#include "nyala/client.h"
#include "test/linearizability.h"
#include "test/mini_cluster.h"
#include "tserver/tserver_admin.proxy.h"

DEFINE_int32(jepsen_seconds, 0,
             "Total time of each Jepsen test, cluster start-up and the check included (the "
             "workload gets what is left after about 15 s). 0: $NYALA_JEPSEN_SECONDS, or 60");
DEFINE_int32(jepsen_threads, 6, "Client threads, each with a client and session of its own");
DEFINE_int32(jepsen_keys, 12, "Keys the clients work on (int64 keys 0..n-1)");
DEFINE_int32(jepsen_get_percent, 40,
             "Share of the operations that are Gets, in percent; the rest are upserts, "
             "inserts and deletes in equal parts");
DEFINE_validator(jepsen_get_percent, [](const char*, int32_t v) { return v >= 0 && v < 100; });
DEFINE_int32(jepsen_tablets, 3,
             "Hash buckets of the table (its tablets), each of 3 replicas on the 4 tablet "
             "servers");
DEFINE_int32(jepsen_op_timeout_ms, 2000,
             "Client timeout of each operation: a write not acknowledged by then is unknown");
DEFINE_int64(jepsen_min_ok_per_kind, 50,
             "Fewest operations of each kind (get, upsert, insert, delete) that must succeed "
             "for the run to count");
DEFINE_int32(jepsen_min_nemesis_per_kind, 2,
             "Fewest nemesis events of each kind (kill, pause, partition) the run must have "
             "(membership changes and moves: at least 1)");
DEFINE_bool(jepsen_closest_replica_reads, false,
            "Gets read at the closest replica (ReplicaSelection::kClosestReplica) instead of "
            "the leader: not linearizable; the checker should find violations");
DEFINE_string(jepsen_tserver_flags, "",
              "Extra flags for every tablet server, separated by spaces (e.g. "
              "\"--raft_election_timeout_ms=300 --raft_heartbeat_interval_ms=30\")");
DEFINE_string(jepsen_history_out, "",
              "Also write the history (JSON Lines, test/linearizability.h) to this file, kept "
              "whatever the outcome");

namespace nyala {
namespace {

using client::Client;
using client::ClientBuilder;
using client::Session;
using client::Table;
using lin::OpResult;
using lin::OpType;

// Tablets of kNumReplicas replicas on one server more: a move has a server to go to.
constexpr int kNumTservers = 4;
constexpr int kNumReplicas = 3;
constexpr char kTable[] = "jepsen";
constexpr char kDropPeersFlag[] = "fault_injection_consensus_drop_peers";

MonoDelta RunTime() {
  int s = FLAGS_jepsen_seconds;
  if (s <= 0) {
    const char* env = getenv("NYALA_JEPSEN_SECONDS");
    s = env && *env ? atoi(env) : 0;
  }
  return MonoDelta::FromSeconds(s > 0 ? s : 60);
}

// --- The workload ------------------------------------------------------------------

// One client thread: its client, table and session, and the operations it recorded.
struct Worker {
  int id = 0;
  std::shared_ptr<Client> client;
  std::shared_ptr<Table> table;
  std::shared_ptr<Session> session;
  lin::History ops;
};

// Whether `s`, the answer to a write, is the model's observed failure for `type`: a
// row error the tablet server answered with (the only such errors: the table has one
// range, so every key has a tablet).
bool IsObservedRowError(OpType type, const Status& s) {
  const std::string text = s.ToString();
  if (type == OpType::kInsert) {
    return s.IsAlreadyPresent() && text.find("key already present") != std::string::npos;
  }
  if (type == OpType::kDelete) {
    return s.IsNotFound() && text.find("key not found") != std::string::npos;
  }
  return false;
}

// Runs one write and fills op.result (and op.error).
void RunWrite(Worker* w, lin::Operation* op) {
  std::unique_ptr<client::WriteOperation> wo;
  switch (op->type) {
    case OpType::kUpsert:
      wo = w->table->NewUpsert();
      break;
    case OpType::kInsert:
      wo = w->table->NewInsert();
      break;
    default:
      wo = w->table->NewDelete();
      break;
  }
  Status s = wo->Set("key", Cell::Int64(op->key));
  if (s.ok() && op->type != OpType::kDelete) s = wo->Set("v", Cell::Int64(op->value));
  if (!s.ok()) {
    op->result = OpResult::kFailed;
    op->error = s.ToString();
    return;
  }
  s = w->session->Apply(std::move(wo));
  if (!s.ok()) {
    // The session keeps row errors too: drop them, they are in `s`.
    std::vector<std::unique_ptr<client::WriteError>> errors;
    bool overflowed = false;
    w->session->GetPendingErrors(&errors, &overflowed);
  }
  op->error = s.ok() ? "" : s.ToString().substr(0, 300);
  if (s.ok()) {
    op->result = OpResult::kOk;
  } else if (IsObservedRowError(op->type, s)) {
    op->result = op->type == OpType::kInsert ? OpResult::kAlreadyPresent : OpResult::kNotFound;
  } else if (s.IsInvalidArgument() && op->error.find("write to tablet") == std::string::npos) {
    // Refused by the session before it was sent (a server's answer names the tablet).
    op->result = OpResult::kFailed;
  } else {
    op->result = OpResult::kUnknown;  // timed out, or failed after it may have applied
  }
}

void RunGet(Worker* w, lin::Operation* op) {
  Row key = w->table->NewRow();
  if (Status s = key.Set("key", Cell::Int64(op->key)); !s.ok()) {
    op->result = OpResult::kFailed;
    op->error = s.ToString();
    return;
  }
  Result<client::GetResult> r =
      w->table->Get(key, {},
                    FLAGS_jepsen_closest_replica_reads ? client::ReplicaSelection::kClosestReplica
                                                       : client::ReplicaSelection::kLeaderOnly);
  if (!r.ok()) {
    op->result = OpResult::kUnknown;
    op->error = r.status().ToString().substr(0, 300);
    return;
  }
  if (!r->found(0)) {
    op->result = OpResult::kAbsent;
    return;
  }
  Result<int64_t> v = r->row(0)->GetInt64(1);
  if (!v.ok()) {
    op->result = OpResult::kUnknown;
    op->error = "bad row: " + v.status().ToString();
    return;
  }
  op->result = OpResult::kOk;
  op->value = *v;
}

// Random operations until `end` or `stop`; times in nanoseconds since `origin`.
void RunWorker(Worker* w, MonoTime origin, MonoTime end, const std::atomic<bool>* stop,
               uint32_t seed) {
  std::mt19937_64 rng(seed);
  int64_t next_value = int64_t(w->id + 1) * 1'000'000'000;
  while (!stop->load(std::memory_order_relaxed) && MonoTime::Now() < end) {
    lin::Operation op;
    op.client = w->id;
    op.key = int64_t(rng() % uint64_t(FLAGS_jepsen_keys));
    // --jepsen_get_percent gets; the writes split evenly between the three kinds.
    const int dice = int(rng() % 100);
    const int write = (dice - FLAGS_jepsen_get_percent) * 3 / (100 - FLAGS_jepsen_get_percent);
    op.type = dice < FLAGS_jepsen_get_percent ? OpType::kGet
              : write == 0                    ? OpType::kUpsert
              : write == 1                    ? OpType::kInsert
                                              : OpType::kDelete;
    if (op.type == OpType::kUpsert || op.type == OpType::kInsert) op.value = next_value++;
    op.start_ns = (MonoTime::Now() - origin).ToNanoseconds();
    if (op.type == OpType::kGet) {
      RunGet(w, &op);
    } else {
      RunWrite(w, &op);
    }
    op.end_ns = (MonoTime::Now() - origin).ToNanoseconds();
    w->ops.push_back(std::move(op));
  }
}

// --- The nemesis -------------------------------------------------------------------

// kMembership: a follower's replica of a tablet is removed from its group, tombstoned,
// added back as a learner (it gets a copy of the tablet, then the log) and promoted.
// kMove: the master moves a replica of a tablet to the server that holds none of it.
enum class Fault { kKill, kPause, kPartition, kMembership, kMove };
constexpr Fault kFaults[] = {Fault::kKill, Fault::kPause, Fault::kPartition, Fault::kMembership,
                             Fault::kMove};
const char* FaultName(Fault f) {
  return f == Fault::kKill         ? "kill"
         : f == Fault::kPause      ? "pause"
         : f == Fault::kPartition  ? "partition"
         : f == Fault::kMembership ? "membership"
                                   : "move";
}

struct NemesisEvent {
  Fault fault = Fault::kKill;
  int target = -1;       // tablet server index (a move's: the server moved off); -1: none
  int64_t start_ns = 0;  // since the workload's origin
  int64_t end_ns = 0;    // healed (a move: finished, or no longer waited for)
  int dest = -1;         // a move's server moved to
  bool leader = false;   // a move of the leader's replica
  bool done = false;     // a move finished within its hold
  std::string detail;    // the tablet, and how it went (membership changes, moves)
};

// A tablet as its leader (in the newest term any server reports) sees its group.
struct TabletView {
  int leader = -1;  // tablet server index; -1: none now
  uint64_t term = 0;
  std::vector<std::string> voters;  // uuids, the leader's configuration
  std::vector<std::string> learners;
  std::set<int> holders;  // servers with a replica that has rows (not tombstoned)
};

// Faults one tablet server at a time: a fault is held for a few seconds, healed, and
// the cluster left alone for a while before the next. Runs on the test's main thread,
// which started the daemons: a daemon dies with the thread that forked it
// (external_daemon.h), so restarts must be made from here too.
class Nemesis {
 public:
  // `admin` finds the tablets' leaders.
  Nemesis(test::MiniCluster* cluster, std::shared_ptr<Client> admin, MonoTime origin, uint32_t seed)
      : cluster_(cluster), admin_(std::move(admin)), origin_(origin), rng_(seed) {}

  // Faults until `end`. An error if a fault could not be made or healed.
  Status Run(MonoTime end) {
    SleepFor(MonoDelta::FromSeconds(1));  // the workload gets going first
    std::vector<Fault> round;
    int misfits = 0;  // faults in a row that did not fit before `end`
    while (true) {
      if (round.empty()) {
        // Kill, pause and partition in random order, then the membership change and
        // the move in random order (taken from the back): the slow ones of a round do
        // not crowd out the next round's short ones before the end.
        std::vector<Fault> fast = {Fault::kKill, Fault::kPause, Fault::kPartition};
        round = {Fault::kMembership, Fault::kMove};
        std::shuffle(round.begin(), round.end(), rng_);
        std::shuffle(fast.begin(), fast.end(), rng_);
        round.insert(round.end(), fast.begin(), fast.end());
      }
      const Fault f = round.back();
      round.pop_back();
      // A partition outlasts an election timeout (1-2 s by default), so that the
      // others elect new leaders while the cut-off one may still think it leads.
      // A pause may also end around an election timeout or the leader's lease (80%
      // of it): the paused leader wakes up not knowing whether it was replaced.
      // A membership change or a move takes what it takes (a copy, then the
      // promotion; a move also the leadership hand-over and the removal), usually a
      // few seconds: it starts if that much is left. A membership change may take this
      // long (then the nemesis failed); a move this long and until `end`, after which
      // it is the master's to finish (WaitSettled waits for it).
      const bool slow = f == Fault::kMembership || f == Fault::kMove;
      const MonoDelta hold = f == Fault::kPartition    ? Millis(3000, 5000)
                             : f == Fault::kPause      ? Millis(500, 3500)
                             : f == Fault::kMembership ? MonoDelta::FromSeconds(15)
                             : f == Fault::kMove       ? MonoDelta::FromSeconds(20)
                                                       : Millis(1500, 3500);
      const MonoDelta needs = slow ? MonoDelta::FromSeconds(8) : hold;
      if (MonoTime::Now() + needs > end) {
        if (++misfits >= int(std::size(kFaults))) return Status::OK();
        continue;  // a shorter one may fit
      }
      misfits = 0;
      RETURN_NOT_OK(CheckAlive());
      NemesisEvent e;
      e.fault = f;
      e.start_ns = Now();
      if (f == Fault::kMembership) {
        e.target = PickFollower();
      } else if (f != Fault::kMove) {
        e.target = PickTarget();
      }
      if (e.target >= 0) {
        LOG(INFO) << "nemesis: " << FaultName(f) << " tablet server " << e.target << " for "
                  << hold.ToString();
      }
      const MonoTime deadline =
          f == Fault::kMove ? std::min(MonoTime::Now() + hold, end) : MonoTime::Now() + hold;
      RETURN_NOT_OK_PREPEND(Inject(&e, hold, deadline), std::string("nemesis ") + FaultName(f));
      e.end_ns = Now();
      if (e.target < 0) {
        LOG(INFO) << "nemesis: no " << FaultName(f) << " possible now: " << e.detail;
        continue;
      }
      LOG(INFO) << "nemesis: healed " << FaultName(f) << " of tablet server " << e.target
                << (e.detail.empty() ? "" : ": ") << e.detail;
      events_.push_back(e);
      // The cluster recovers undisturbed for a while (a fault's duration is the point
      // here: there is no condition to wait for).
      const MonoDelta quiet = Millis(1000, 2500);
      if (MonoTime::Now() + quiet > end) return Status::OK();
      SleepFor(quiet);
    }
  }

  // An error naming any tablet server that exited on its own (a crash), with the end
  // of its log.
  Status CheckAlive() {
    for (int i = 0; i < kNumTservers; i++) {
      test::ExternalDaemon* ts = cluster_->tserver(i);
      if (!ts->IsRunning()) {
        return Status::RuntimeError("tablet server " + std::to_string(i) + " died on its own (" +
                                        ts->ExitDescription() + ")",
                                    ts->LogTail());
      }
    }
    return Status::OK();
  }

  // Undoes whatever a failed Run may have left: every server running, continued and
  // connected. Best effort; the first error (a server that died on its own first).
  Status HealAll() {
    Status first = CheckAlive();
    for (int i = 0; i < kNumTservers; i++) {
      test::ExternalDaemon* ts = cluster_->tserver(i);
      if (ts->pid() > 0) kill(ts->pid(), SIGCONT);
      if (!ts->IsRunning()) {
        Status s = ts->Start();
        if (first.ok() && !s.ok()) first = s;
      }
    }
    for (int i = 0; i < kNumTservers; i++) {
      Status s = cluster_->SetTserverFlag(i, kDropPeersFlag, "");
      if (first.ok() && !s.ok()) first = s;
    }
    // A membership change cut short: its member goes back in.
    for (const auto& [tablet_id, member] : removed_) {
      Status s = AddBack(tablet_id, member, MonoTime::Now() + MonoDelta::FromSeconds(30));
      if (first.ok() && !s.ok()) first = s.CloneAndPrepend("tablet " + tablet_id);
    }
    removed_.clear();
    return first;
  }

  // Waits (until `deadline`) for the moves cut short to finish and every tablet to
  // settle: kNumReplicas voters and no learner, as the master and the leader see it,
  // and nothing being replaced. An error naming the tablets that did not.
  Status WaitSettled(MonoTime deadline) {
    const MonoTime start = MonoTime::Now();
    for (std::string why; !(why = Problems(/*settling=*/true)).empty();) {
      if (MonoTime::Now() > deadline) {
        return Status::TimedOut("tablets not settled after " + (MonoTime::Now() - start).ToString(),
                                why);
      }
      SleepFor(MonoDelta::FromMilliseconds(200));
    }
    LOG(INFO) << "nemesis: every tablet settled after " << (MonoTime::Now() - start).ToString();
    moves_.clear();
    return Status::OK();
  }

  // An error unless every tablet has kNumReplicas voters and no learner, as the master
  // and the tablet's leader see it.
  Status CheckReplicas() {
    const std::string why = Problems(/*settling=*/false);
    return why.empty() ? Status::OK() : Status::IllegalState("replicas", why);
  }

  const std::vector<NemesisEvent>& events() const { return events_; }

 private:
  Status Inject(NemesisEvent* e, MonoDelta hold, MonoTime deadline) {
    const Fault f = e->fault;
    if (f == Fault::kMove) return Move(e, deadline);
    if (f == Fault::kMembership) return Rereplicate(e, deadline);
    const int target = e->target;
    test::ExternalDaemon* ts = cluster_->tserver(target);
    switch (f) {
      case Fault::kKill:
        ts->Kill(SIGKILL);
        SleepFor(hold);
        return ts->Start();  // same data dir and ports
      case Fault::kPause:
        if (kill(ts->pid(), SIGSTOP) != 0) return Status::RuntimeError("SIGSTOP failed");
        SleepFor(hold);
        if (kill(ts->pid(), SIGCONT) != 0) return Status::RuntimeError("SIGCONT failed");
        return Status::OK();
      case Fault::kPartition: {
        // Both sides drop, as a real partition would.
        std::string others;
        for (int i = 0; i < kNumTservers; i++) {
          if (i == target) continue;
          others += (others.empty() ? "" : ",") + cluster_->tserver(i)->uuid();
          RETURN_NOT_OK(cluster_->SetTserverFlag(i, kDropPeersFlag, ts->uuid()));
        }
        RETURN_NOT_OK(cluster_->SetTserverFlag(target, kDropPeersFlag, others));
        SleepFor(hold);
        for (int i = 0; i < kNumTservers; i++) {
          RETURN_NOT_OK(cluster_->SetTserverFlag(i, kDropPeersFlag, ""));
        }
        return Status::OK();
      }
      default:
        return Status::OK();
    }
  }

  // Leaders do not move back once a fault moved them, so a server picked at random
  // often leads nothing and its fault costs nothing: three times in four, a server
  // that leads some tablet (as the master last heard), if the master answers.
  int PickTarget() {
    if (rng_() % 4 != 0) {
      std::vector<int> leaders;
      Result<std::vector<client::TabletInfo>> tablets = admin_->ListTabletsOfTable(kTable);
      if (tablets.ok()) {
        for (const client::TabletInfo& t : *tablets) {
          for (const client::ReplicaInfo& r : t.replicas) {
            if (!r.is_leader) continue;
            const int i = IndexOfAddress(r.rpc_address);
            if (i >= 0) leaders.push_back(i);
          }
        }
      }
      if (!leaders.empty()) return leaders[rng_() % leaders.size()];
    }
    return int(rng_() % kNumTservers);
  }

  // A server that follows (a voter, not the leader) in some tablet, as the tablets'
  // leaders see it; any server if none answers.
  int PickFollower() {
    std::set<int> followers;
    for (const auto& [id, v] : Views()) {
      if (v.leader < 0) continue;
      for (const std::string& uuid : v.voters) {
        const int i = IndexOf(uuid);
        if (i >= 0 && i != v.leader) followers.insert(i);
      }
    }
    if (followers.empty()) return int(rng_() % kNumTservers);
    auto it = followers.begin();
    std::advance(it, rng_() % followers.size());
    return *it;
  }

  int IndexOf(const std::string& uuid) const {
    for (int i = 0; i < kNumTservers; i++) {
      if (cluster_->tserver(i)->uuid() == uuid) return i;
    }
    return -1;
  }
  int IndexOfAddress(const std::string& rpc_address) const {
    for (int i = 0; i < kNumTservers; i++) {
      if (cluster_->tserver(i)->rpc_addr().ToString() == rpc_address) return i;
    }
    return -1;
  }

  // Every tablet of the table as the servers that answer see it.
  std::map<std::string, TabletView> Views() {
    std::map<std::string, TabletView> views;
    for (int i = 0; i < kNumTservers; i++) {
      tserver::ListTabletsResponsePB resp;
      rpc::RpcController rpc;
      rpc.set_timeout(MonoDelta::FromSeconds(2));
      if (!cluster_->tserver_admin_proxy(i).ListTablets({}, &resp, &rpc).ok()) continue;
      for (const auto& t : resp.tablets()) {
        if (t.table_name() != kTable) continue;
        TabletView& v = views[t.tablet_id()];
        if (t.state() != tserver::TABLET_DATA_TOMBSTONED &&
            t.state() != tserver::TABLET_DATA_DELETED) {
          v.holders.insert(i);
        }
        if (t.has_consensus() && t.consensus().role() == master::LEADER &&
            t.consensus().term() >= v.term) {
          v.leader = i;
          v.term = t.consensus().term();
          v.voters.assign(t.consensus().voter_uuids().begin(), t.consensus().voter_uuids().end());
          v.learners.assign(t.consensus().learner_uuids().begin(),
                            t.consensus().learner_uuids().end());
        }
      }
    }
    return views;
  }

  // The server whose replica of `tablet_id` leads in the newest term, by asking every
  // server; -1 if none does now.
  int FindLeader(const std::string& tablet_id) {
    int leader = -1;
    uint64_t term = 0;
    for (int i = 0; i < kNumTservers; i++) {
      tserver::ListTabletsResponsePB resp;
      rpc::RpcController rpc;
      rpc.set_timeout(MonoDelta::FromSeconds(2));
      if (!cluster_->tserver_admin_proxy(i).ListTablets({}, &resp, &rpc).ok()) continue;
      for (const auto& t : resp.tablets()) {
        if (t.tablet_id() == tablet_id && t.has_consensus() &&
            t.consensus().role() == master::LEADER && t.consensus().term() >= term) {
          leader = i;
          term = t.consensus().term();
        }
      }
    }
    return leader;
  }

  // The master's view of the table's tablets (`tablet_id` "": all of them).
  Result<master::ListTabletsResponsePB> MasterTablets(const std::string& tablet_id) {
    master::ListTabletsRequestPB req;
    if (tablet_id.empty()) {
      req.mutable_table()->set_table_name(kTable);
    } else {
      req.set_tablet_id(tablet_id);
    }
    master::ListTabletsResponsePB resp;
    RETURN_NOT_OK(cluster_->CallMaster(&master::MasterServiceProxy::ListTablets, req, &resp,
                                       MonoDelta::FromSeconds(5)));
    if (resp.has_error()) return test::MasterErrorToStatus(resp.error());
    return resp;
  }

  // Why the master's view of tablet `t` is not settled ("" if it is): a replacement or
  // move going on, voters other than kNumReplicas, a learner, no leader known.
  static std::string UnsettledInMaster(const master::ListTabletsResponsePB::TabletPB& t) {
    int voters = 0;
    int learners = 0;
    for (const auto& r : t.replicas()) (r.role() == master::LEARNER ? learners : voters)++;
    if (t.has_replacement()) return t.replacement().description();
    if (voters != kNumReplicas || learners != 0) {
      return std::to_string(voters) + " voters, " + std::to_string(learners) + " learners";
    }
    if (t.leader_uuid().empty()) return "no leader known";
    return "";
  }

  // What is wrong with the table's tablets ("" if nothing): each tablet whose voters
  // are not kNumReplicas, or that has a learner, as the master or the tablet's leader
  // sees it; with `settling`, also one being replaced or moved, or without a leader.
  std::string Problems(bool settling) {
    Result<master::ListTabletsResponsePB> listed = MasterTablets("");
    if (!listed.ok()) return "the master: " + listed.status().ToString();
    std::string out;
    if (listed->tablets_size() != FLAGS_jepsen_tablets) {
      out = "; the master lists " + std::to_string(listed->tablets_size()) + " tablets";
    }
    const std::map<std::string, TabletView> views = Views();
    for (const auto& t : listed->tablets()) {
      int voters = 0;
      int learners = 0;
      for (const auto& r : t.replicas()) (r.role() == master::LEARNER ? learners : voters)++;
      std::string why;
      if (voters != kNumReplicas || learners != 0) {
        why = "the master shows " + std::to_string(voters) + " voters, " +
              std::to_string(learners) + " learners";
      }
      auto v = views.find(t.tablet_id());
      if (v == views.end() || v->second.leader < 0) {
        why += std::string(why.empty() ? "" : "; ") + "no leader";
      } else if (int(v->second.voters.size()) != kNumReplicas || !v->second.learners.empty()) {
        why += std::string(why.empty() ? "" : "; ") + "its leader ts" +
               std::to_string(v->second.leader) + " has " +
               std::to_string(v->second.voters.size()) + " voters, " +
               std::to_string(v->second.learners.size()) + " learners";
      }
      if (settling && why.empty()) {
        why = UnsettledInMaster(t);
        auto m = moves_.find(t.tablet_id());
        if (why.empty() && m != moves_.end() && !MoveDone(t, m->second.first, m->second.second)) {
          why = "the move off " + m->second.first + " to " + m->second.second + " is not done";
        }
      }
      if (!why.empty()) out += "; tablet " + t.tablet_id() + ": " + why;
    }
    return out.empty() ? "" : out.substr(2);
  }

  // Whether the master shows the move of `t` off `from` to `to` done: `from` gone,
  // `to` a voter.
  static bool MoveDone(const master::ListTabletsResponsePB::TabletPB& t, const std::string& from,
                       const std::string& to) {
    bool from_gone = true;
    bool to_votes = false;
    for (const auto& r : t.replicas()) {
      if (r.ts_uuid() == from) from_gone = false;
      if (r.ts_uuid() == to && r.role() != master::LEARNER) to_votes = true;
    }
    return from_gone && to_votes;
  }

  // One membership change of `member` in `tablet_id`, sent to its leader (found again
  // while it moves) until it is made or `deadline`. Answers that trying again does not
  // change come back at once: the member is one already (ADD_LEARNER), is not a learner
  // (PROMOTE_LEARNER: the master may have promoted it, a tablet lacking a voter) or
  // not a member (REMOVE_PEER); the callers decide.
  Status Change(const std::string& tablet_id, tserver::ChangeConfigTypePB type, int member,
                MonoTime deadline) {
    Status last = Status::TimedOut("no leader found");
    while (MonoTime::Now() < deadline) {
      const int leader = FindLeader(tablet_id);
      if (leader >= 0) {
        tserver::ChangeConfigRequestPB req;
        req.set_tablet_id(tablet_id);
        req.set_type(type);
        req.mutable_peer()->set_permanent_uuid(cluster_->tserver(member)->uuid());
        req.mutable_peer()->set_host("127.0.0.1");
        req.mutable_peer()->set_port(cluster_->tserver(member)->rpc_addr().port());
        tserver::ChangeConfigResponsePB resp;
        rpc::RpcController rpc;
        rpc.set_timeout(MonoDelta::FromSeconds(5));
        last = cluster_->tserver_admin_proxy(leader).ChangeConfig(req, &resp, &rpc);
        if (last.ok() && resp.has_error()) last = StatusFromPB(resp.error().status());
        if (last.ok()) return last;
        const std::string text = last.ToString();
        if (text.find("member already") != std::string::npos ||
            text.find("is not a learner") != std::string::npos ||
            text.find("is not a member") != std::string::npos) {
          break;
        }
      }
      SleepFor(MonoDelta::FromMilliseconds(200));
    }
    return last.CloneAndPrepend(std::string(tserver::ChangeConfigTypePB_Name(type)));
  }

  // Adds `member` back to `tablet_id` as a learner and promotes it once it caught up.
  Status AddBack(const std::string& tablet_id, int member, MonoTime deadline) {
    Status s = Change(tablet_id, tserver::ADD_LEARNER, member, deadline);
    // "a member already": added before a failure cut the change short.
    if (!s.ok() && s.ToString().find("member already") == std::string::npos) return s;
    s = Change(tablet_id, tserver::PROMOTE_LEARNER, member, deadline);
    if (!s.ok() && s.ToString().find("is not a learner") != std::string::npos) return Status::OK();
    return s;
  }

  // Takes e->target's replica of a tablet it follows in out of the group, tombstones
  // it, and brings it back through a copy. The tablet lacks a voter meanwhile, and the
  // master may step in: promote the learner itself, or add a replica on the server
  // that holds none (and later remove a voter too many). A tablet the master is
  // changing already is left alone. No tablet to change: e->target -1.
  Status Rereplicate(NemesisEvent* e, MonoTime deadline) {
    const int target = e->target;
    // Tried for a few seconds while there is none (as right after a fault).
    const MonoTime give_up = std::min(MonoTime::Now() + MonoDelta::FromSeconds(3), deadline);
    std::vector<std::string> candidates;
    while (true) {
      std::set<std::string> busy;  // as the master sees them
      if (Result<master::ListTabletsResponsePB> listed = MasterTablets(""); listed.ok()) {
        for (const auto& t : listed->tablets()) {
          if (!UnsettledInMaster(t).empty()) busy.insert(t.tablet_id());
        }
      }
      for (const auto& [id, v] : Views()) {
        const bool votes = std::find(v.voters.begin(), v.voters.end(),
                                     cluster_->tserver(target)->uuid()) != v.voters.end();
        if (v.leader >= 0 && v.leader != target && votes && !busy.count(id)) {
          candidates.push_back(id);
        }
      }
      if (!candidates.empty() || MonoTime::Now() > give_up) break;
      SleepFor(MonoDelta::FromMilliseconds(300));
    }
    if (candidates.empty()) {
      e->target = -1;
      e->detail = "tablet server " + std::to_string(target) + " follows in no settled tablet";
      return Status::OK();
    }
    const std::string tablet_id = candidates[rng_() % candidates.size()];
    e->detail = "tablet " + tablet_id;
    LOG(INFO) << "nemesis: membership: tablet " << tablet_id << " loses and regains server "
              << target;
    Status removed = Change(tablet_id, tserver::REMOVE_PEER, target, deadline);
    // "not a member": removed by an earlier try whose answer was lost.
    if (!removed.ok() && removed.ToString().find("is not a member") == std::string::npos) {
      return removed;
    }
    removed_[tablet_id] = target;
    tserver::DeleteTabletRequestPB del;
    del.set_tablet_id(tablet_id);
    del.set_delete_type(tserver::TABLET_DATA_TOMBSTONED);
    del.set_reason("jepsen nemesis: removed from its group");
    tserver::DeleteTabletResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(5));
    RETURN_NOT_OK(cluster_->tserver_admin_proxy(target).DeleteTablet(del, &resp, &rpc));
    if (resp.has_error()) return StatusFromPB(resp.error().status()).CloneAndPrepend("tombstone");
    RETURN_NOT_OK(AddBack(tablet_id, target, deadline));
    removed_.erase(tablet_id);
    return Status::OK();
  }

  struct MoveChoice {
    std::string tablet_id;
    int from = -1;
    int to = -1;
    bool leader = false;
  };

  // Asks the master to move a replica of a settled tablet (nothing moving or replaced,
  // its voters as the master and its leader see them) off one of its voters, the
  // leader half the time, to a running server that holds none of the tablet. The move
  // started, or none (`why`: the master refused each, or no tablet is settled).
  Result<std::optional<MoveChoice>> StartMove(std::string* why) {
    ASSIGN_OR_RETURN(master::ListTabletsResponsePB listed, MasterTablets(""));
    const std::map<std::string, TabletView> views = Views();
    std::vector<MoveChoice> candidates;
    *why = "no settled tablet";
    for (const auto& t : listed.tablets()) {
      auto v = views.find(t.tablet_id());
      if (!UnsettledInMaster(t).empty() || v == views.end() || v->second.leader < 0 ||
          int(v->second.voters.size()) != kNumReplicas || !v->second.learners.empty()) {
        continue;
      }
      const TabletView& view = v->second;
      std::set<std::string> members(view.voters.begin(), view.voters.end());
      for (const auto& r : t.replicas()) members.insert(r.ts_uuid());
      std::vector<int> followers;
      for (const std::string& uuid : view.voters) {
        const int i = IndexOf(uuid);
        if (i >= 0 && i != view.leader) followers.push_back(i);
      }
      std::vector<int> tos;
      for (int i = 0; i < kNumTservers; i++) {
        if (!members.count(cluster_->tserver(i)->uuid()) && !view.holders.count(i) &&
            cluster_->tserver(i)->IsRunning()) {
          tos.push_back(i);
        }
      }
      if (tos.empty() || followers.empty()) {
        *why = "no server to move a replica of tablet " + t.tablet_id() + " to";
        continue;
      }
      MoveChoice c;
      c.tablet_id = t.tablet_id();
      c.leader = rng_() % 2 == 0;
      c.from = c.leader ? view.leader : followers[rng_() % followers.size()];
      c.to = tos[rng_() % tos.size()];
      candidates.push_back(std::move(c));
    }
    std::shuffle(candidates.begin(), candidates.end(), rng_);
    master::MasterAdminServiceProxy proxy(cluster_->messenger(), cluster_->master()->rpc_addr());
    for (const MoveChoice& c : candidates) {
      master::MoveReplicaRequestPB req;
      req.set_tablet_id(c.tablet_id);
      req.set_from_uuid(cluster_->tserver(c.from)->uuid());
      req.set_to_uuid(cluster_->tserver(c.to)->uuid());
      master::MoveReplicaResponsePB resp;
      rpc::RpcController rpc;
      rpc.set_timeout(MonoDelta::FromSeconds(5));
      RETURN_NOT_OK_PREPEND(proxy.MoveReplica(req, &resp, &rpc), "MoveReplica");
      if (!resp.has_error()) return std::optional<MoveChoice>(c);
      // The master's view moved on since (a leader changed, a replacement started).
      *why = "MoveReplica of tablet " + c.tablet_id + ": " +
             test::MasterErrorToStatus(resp.error()).ToString();
      LOG(INFO) << "nemesis: " << *why;
    }
    return std::optional<MoveChoice>();
  }

  // A move (StartMove; tried for a few seconds while no tablet is settled, as right
  // after a fault), waited for until the master shows it done or `deadline`. A move not
  // done by then is the master's to finish (WaitSettled waits for it). No move
  // started: e->target -1.
  Status Move(NemesisEvent* e, MonoTime deadline) {
    const MonoTime give_up = std::min(MonoTime::Now() + MonoDelta::FromSeconds(3), deadline);
    std::optional<MoveChoice> c;
    while (true) {
      ASSIGN_OR_RETURN(c, StartMove(&e->detail));
      if (c || MonoTime::Now() > give_up) break;
      SleepFor(MonoDelta::FromMilliseconds(300));
    }
    if (!c) return Status::OK();
    e->target = c->from;
    e->dest = c->to;
    e->leader = c->leader;
    const std::string from = cluster_->tserver(c->from)->uuid();
    const std::string to = cluster_->tserver(c->to)->uuid();
    moves_[c->tablet_id] = {from, to};
    LOG(INFO) << "nemesis: move: tablet " << c->tablet_id << " from tablet server " << c->from
              << (c->leader ? " (its leader)" : "") << " to " << c->to;
    const MonoTime start = MonoTime::Now();
    const std::string what = "tablet " + c->tablet_id + (c->leader ? ", the leader's replica" : "");
    std::string step;
    while (true) {
      Result<master::ListTabletsResponsePB> now = MasterTablets(c->tablet_id);
      if (now.ok() && now->tablets_size() == 1) {
        const auto& t = now->tablets(0);
        if (MoveDone(t, from, to)) {
          e->done = true;
          moves_.erase(c->tablet_id);
          e->detail = what + ": done in " + (MonoTime::Now() - start).ToString();
          return Status::OK();
        }
        if (t.has_replacement() && t.replacement().description() != step) {
          step = t.replacement().description();
          LOG(INFO) << "nemesis: move: tablet " << c->tablet_id << ": " << step;
        }
      }
      if (MonoTime::Now() > deadline) break;
      SleepFor(MonoDelta::FromMilliseconds(100));
    }
    e->detail = what + ": not done after " + (MonoTime::Now() - start).ToString() +
                (step.empty() ? "" : " (" + step + ")");
    return Status::OK();
  }

  MonoDelta Millis(int lo, int hi) {
    return MonoDelta::FromMilliseconds(lo + int64_t(rng_() % uint64_t(hi - lo + 1)));
  }
  int64_t Now() const { return (MonoTime::Now() - origin_).ToNanoseconds(); }

  test::MiniCluster* const cluster_;
  const std::shared_ptr<Client> admin_;
  const MonoTime origin_;
  std::mt19937_64 rng_;
  std::vector<NemesisEvent> events_;
  // Members a membership change took out and has not put back yet, by tablet.
  std::map<std::string, int> removed_;
  // The moves asked of the master (from, to uuids), by tablet.
  std::map<std::string, std::pair<std::string, std::string>> moves_;
};

// --- The test ----------------------------------------------------------------------

struct RunResult {
  lin::History history;
  std::vector<NemesisEvent> events;
  lin::CheckResult check;
};

class JepsenITest : public NyalaTest {
 protected:
  // Starts the cluster, runs the workload and the nemesis, reads every key once the
  // cluster is healed, checks the history and prints the summary. Fatal failures are
  // the harness' own (the cluster did not start, a fault could not be healed).
  void Run(const std::vector<std::string>& tserver_flags, RunResult* out);

 private:
  Result<std::shared_ptr<Table>> CreateTable(const std::shared_ptr<Client>& client);
  Status ConnectWorker(Worker* w, const std::string& master);
  // A Get of every key once the cluster is healed, each retried until it answers (or
  // `deadline`), recorded as client `id`.
  void FinalReads(const std::shared_ptr<Table>& table, int id, MonoTime origin, MonoTime deadline,
                  lin::History* out);
  void WriteFiles(const RunResult& r);
  static void PrintSummary(const RunResult& r, MonoDelta workload);
};

Result<std::shared_ptr<Table>> JepsenITest::CreateTable(const std::shared_ptr<Client>& client) {
  ASSIGN_OR_RETURN(Schema schema, client::SchemaBuilder()
                                      .AddKeyColumn("key", DataType::kInt64)
                                      .AddColumn("v", DataType::kInt64)
                                      .Build());
  std::unique_ptr<client::TableCreator> creator = client->NewTableCreator();
  creator->table_name(kTable)
      .schema(schema)
      .num_replicas(kNumReplicas)
      .timeout(MonoDelta::FromSeconds(60));
  if (FLAGS_jepsen_tablets > 1) creator->add_hash_partitions({"key"}, FLAGS_jepsen_tablets);
  RETURN_NOT_OK(creator->Create());
  return client->OpenTable(kTable);
}

Status JepsenITest::ConnectWorker(Worker* w, const std::string& master) {
  const MonoDelta timeout = MonoDelta::FromMilliseconds(FLAGS_jepsen_op_timeout_ms);
  ASSIGN_OR_RETURN(
      w->client,
      ClientBuilder().add_master_server_addr(master).default_rpc_timeout(timeout).Build());
  ASSIGN_OR_RETURN(w->table, w->client->OpenTable(kTable));
  w->session = w->client->NewSession();
  RETURN_NOT_OK(w->session->SetFlushMode(Session::FlushMode::kAutoFlushSync));
  return w->session->SetTimeout(timeout);
}

void JepsenITest::FinalReads(const std::shared_ptr<Table>& table, int id, MonoTime origin,
                             MonoTime deadline, lin::History* out) {
  Worker w;
  w.id = id;
  w.table = table;
  for (int64_t k = 0; k < FLAGS_jepsen_keys; k++) {
    for (MonoDelta backoff = MonoDelta::FromMilliseconds(50);;) {
      lin::Operation op;
      op.client = id;
      op.key = k;
      op.type = OpType::kGet;
      op.start_ns = (MonoTime::Now() - origin).ToNanoseconds();
      RunGet(&w, &op);
      op.end_ns = (MonoTime::Now() - origin).ToNanoseconds();
      const bool answered = op.result != OpResult::kUnknown;
      out->push_back(std::move(op));
      if (answered) break;
      if (MonoTime::Now() + backoff > deadline) {
        ADD_FAILURE() << "key " << k << " still unreadable "
                      << "after the cluster was healed: " << out->back().error;
        break;
      }
      SleepFor(backoff);  // the cluster is electing leaders: retry
      backoff = std::min(backoff * 2, MonoDelta::FromSeconds(1));
    }
  }
}

void JepsenITest::Run(const std::vector<std::string>& tserver_flags, RunResult* out) {
  const MonoTime test_start = MonoTime::Now();
  const MonoDelta total = RunTime();
  const uint32_t seed = TestRandomSeed();
  test::MiniClusterOptions opts;
  opts.root_dir = test_dir();
  opts.num_tservers = kNumTservers;
  // Failed servers' replicas are replaced only after this long: never during a run
  // (a kill or pause lasts under 4 s). The master's requests for the leaders' reports,
  // which a move's steps wait for, come every tenth of it.
  opts.master_flags = {"--follower_unavailable_considered_failed_sec=20"};
  opts.tserver_flags = tserver_flags;
  std::istringstream extra(FLAGS_jepsen_tserver_flags);
  for (std::string f; extra >> f;) opts.tserver_flags.push_back(f);
  test::MiniCluster cluster(opts);
  printf("test dir: %s (kept if the test fails)\n", test_dir().c_str());
  ASSERT_OK(cluster.Start());

  // Setup: the table, and a client per thread (connected before the clock starts).
  std::shared_ptr<Client> admin;
  {
    auto c = ClientBuilder().add_master_server_addr(cluster.master_addr()).Build();
    ASSERT_OK(c.status());
    admin = *c;
  }
  auto table = CreateTable(admin);
  ASSERT_OK(table.status());
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < FLAGS_jepsen_threads; i++) {
    workers.push_back(std::make_unique<Worker>());
    workers.back()->id = i;
    ASSERT_OK(ConnectWorker(workers.back().get(), cluster.master_addr()));
  }

  // The workload gets what the budget leaves after setup and about 8 s for the
  // final reads, the check and the shutdown; at least 20 s. The nemesis stops 4 s
  // before the workload, so that the last ops run on a healed cluster.
  const MonoTime origin = MonoTime::Now();
  const MonoDelta workload = std::max(MonoDelta::FromSeconds(20),
                                      total - (origin - test_start) - MonoDelta::FromSeconds(8));
  const MonoTime end = origin + workload;
  LOG(INFO) << "jepsen: setup took " << (origin - test_start).ToString() << "; workload of "
            << workload.ToString() << " with " << FLAGS_jepsen_threads << " threads on "
            << FLAGS_jepsen_keys << " keys";
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (auto& w : workers) {
    threads.emplace_back(RunWorker, w.get(), origin, end, &stop, seed + uint32_t(w->id) + 1);
  }
  Nemesis nemesis(&cluster, admin, origin, seed);
  Status nemesis_status = nemesis.Run(end - MonoDelta::FromSeconds(4));
  if (!nemesis_status.ok()) stop = true;  // the harness failed: no point going on
  Status heal = nemesis.HealAll();
  // The moves cut short finish, and every tablet settles, before the final reads.
  Status settled = heal.ok() && nemesis_status.ok()
                       ? nemesis.WaitSettled(MonoTime::Now() + MonoDelta::FromSeconds(30))
                       : Status::OK();
  for (auto& t : threads) t.join();
  ASSERT_OK(nemesis_status);
  ASSERT_OK(heal);
  EXPECT_OK(settled);
  for (auto& w : workers) {
    for (auto& op : w->ops) out->history.push_back(std::move(op));
    w->session.reset();
    w->table.reset();
    w->client.reset();
  }
  // Every key readable on the healed cluster (the client's own timeouts: 10 s).
  FinalReads(*table, FLAGS_jepsen_threads, origin, MonoTime::Now() + MonoDelta::FromSeconds(20),
             &out->history);
  out->events = nemesis.events();
  // The table kept its replication factor through the moves and membership changes.
  EXPECT_OK(nemesis.CheckReplicas());

  std::sort(
      out->history.begin(), out->history.end(),
      [](const lin::Operation& a, const lin::Operation& b) { return a.start_ns < b.start_ns; });
  WriteFiles(*out);
  lin::CheckOptions check_opts;
  check_opts.time_limit_ms = 60'000;
  Result<lin::CheckResult> check = lin::CheckHistory(out->history, check_opts);
  ASSERT_OK(check.status());
  out->check = std::move(check).value();
  PrintSummary(*out, workload);

  table->reset();
  admin.reset();
  EXPECT_OK(cluster.Shutdown());  // every daemon exits 0 on SIGTERM
}

void JepsenITest::WriteFiles(const RunResult& r) {
  std::vector<std::string> paths = {test_dir() + "/history.jsonl"};
  if (!FLAGS_jepsen_history_out.empty()) paths.push_back(FLAGS_jepsen_history_out);
  for (const std::string& path : paths) {
    std::ofstream f(path, std::ios::trunc);
    lin::WriteHistory(r.history, f);
    if (!f) ADD_FAILURE() << "cannot write " << path;
  }
  std::ofstream n(test_dir() + "/nemesis.log", std::ios::trunc);
  for (const NemesisEvent& e : r.events) {
    n << FaultName(e.fault) << " ts" << e.target;
    if (e.dest >= 0) n << " to ts" << e.dest;
    n << " [" << e.start_ns << ", " << e.end_ns << "]";
    if (!e.detail.empty()) n << " " << e.detail;
    n << "\n";
  }
  printf("history: %s (%zu ops)\n", paths.back().c_str(), r.history.size());
}

void JepsenITest::PrintSummary(const RunResult& r, MonoDelta workload) {
  // Ops by kind and outcome.
  std::map<std::pair<OpType, OpResult>, int64_t> n;
  for (const lin::Operation& op : r.history) n[{op.type, op.result}]++;
  const OpType types[] = {OpType::kGet, OpType::kUpsert, OpType::kInsert, OpType::kDelete};
  printf(
      "\n=== jepsen summary (%.0f s workload, %d threads, %d keys, %d tablets x %d "
      "replicas on %d servers) ===\n",
      workload.ToSeconds(), FLAGS_jepsen_threads, FLAGS_jepsen_keys, FLAGS_jepsen_tablets,
      kNumReplicas, kNumTservers);
  printf("%-8s %8s %8s %16s %8s %8s %8s\n", "op", "ok", "absent", "already/notfound", "failed",
         "unknown", "total");
  for (OpType t : types) {
    const int64_t observed = n[{t, OpResult::kAlreadyPresent}] + n[{t, OpResult::kNotFound}];
    const int64_t total = n[{t, OpResult::kOk}] + n[{t, OpResult::kAbsent}] + observed +
                          n[{t, OpResult::kFailed}] + n[{t, OpResult::kUnknown}];
    printf("%-8s %8lld %8lld %16lld %8lld %8lld %8lld\n", lin::OpTypeName(t),
           (long long)n[{t, OpResult::kOk}], (long long)n[{t, OpResult::kAbsent}],
           (long long)observed, (long long)n[{t, OpResult::kFailed}],
           (long long)n[{t, OpResult::kUnknown}], (long long)total);
  }
  std::map<Fault, int> faults;
  int leader_moves = 0;
  int moves_done = 0;
  printf("nemesis events:");
  for (const NemesisEvent& e : r.events) {
    faults[e.fault]++;
    if (e.fault == Fault::kMove) {
      leader_moves += e.leader;
      moves_done += e.done;
      printf(" move(ts%d%s->ts%d)@%.1fs", e.target, e.leader ? "*" : "", e.dest,
             double(e.start_ns) / 1e9);
    } else {
      printf(" %s(ts%d)@%.1fs", FaultName(e.fault), e.target, double(e.start_ns) / 1e9);
    }
  }
  printf(
      "\nnemesis totals: kill %d, pause %d, partition %d, membership %d, move %d (%d of a "
      "leader's replica (*), %d done within the hold)\n",
      faults[Fault::kKill], faults[Fault::kPause], faults[Fault::kPartition],
      faults[Fault::kMembership], faults[Fault::kMove], leader_moves, moves_done);
  const lin::CheckResult& c = r.check;
  int64_t steps = 0, checked = 0, unknown = 0;
  int conc = 0;
  double secs = 0;
  for (const lin::KeyReport& k : c.keys) {
    steps += k.steps;
    checked += k.checked_ops;
    unknown += k.unknown_ops;
    conc = std::max(conc, k.max_concurrency);
    secs += k.seconds;
  }
  printf(
      "checker: %lld ops, %lld checked (%lld unknown), %zu keys, max concurrency %d, %lld "
      "search steps, %.3f s; %zu violations, %zu undecided\n",
      (long long)c.total_ops, (long long)checked, (long long)unknown, c.keys.size(), conc,
      (long long)steps, secs, c.violations.size(), c.undecided.size());
  printf("%s\n=== end of jepsen summary ===\n", c.Summary().c_str());
  fflush(stdout);
}

int64_t CountOk(const lin::History& h, OpType type) {
  int64_t n = 0;
  for (const lin::Operation& op : h) {
    const bool ok =
        op.result == OpResult::kOk || (type == OpType::kGet && op.result == OpResult::kAbsent);
    n += op.type == type && ok;
  }
  return n;
}

TEST_F(JepsenITest, ReplicatedTabletsAreLinearizable) {
  RunResult r;
  ASSERT_NO_FATAL_FAILURE(Run({}, &r));
  EXPECT_EQ(lin::Verdict::kLinearizable, r.check.verdict) << r.check.Summary();
  EXPECT_TRUE(r.check.violations.empty());
  EXPECT_TRUE(r.check.undecided.empty());
  // The run did work: enough successful ops of each kind, and faults of each kind.
  for (OpType t : {OpType::kGet, OpType::kUpsert, OpType::kInsert, OpType::kDelete}) {
    EXPECT_GE(CountOk(r.history, t), FLAGS_jepsen_min_ok_per_kind) << lin::OpTypeName(t);
  }
  for (Fault f : kFaults) {
    const auto n = std::count_if(r.events.begin(), r.events.end(),
                                 [f](const NemesisEvent& e) { return e.fault == f; });
    // A default run of 60 s makes about two rounds of the five kinds; membership changes
    // and moves, the slow ones, need one (the first round has one of each).
    const int64_t min =
        f == Fault::kMembership || f == Fault::kMove ? 1 : FLAGS_jepsen_min_nemesis_per_kind;
    EXPECT_GE(n, min) << FaultName(f);
  }
}

// The checker catches reads that are not linearizable: Gets answered by followers.
TEST_F(JepsenITest, DISABLED_FollowerReadsAreCaught) {
  FLAGS_jepsen_closest_replica_reads = true;
  RunResult r;
  Run({}, &r);
  FLAGS_jepsen_closest_replica_reads = false;
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(lin::Verdict::kNotLinearizable, r.check.verdict);
}

}  // namespace
}  // namespace nyala
