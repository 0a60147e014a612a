// RaftGroup: one consensus group (one tablet's replicas) on this server, driven by the
// multi-group runtime (consensus/runtime.h): the Raft core of raft.h, its records in
// the server's shared log, its messages on the runtime's batched transport, and the
// state machine it applies committed entries to.
//
// A group's Raft instance and state machine are touched only by the one runtime
// worker the group is assigned to (its thread, or a reactor that borrowed its part:
// "the worker" below); every call of the first public section posts a task to that
// worker and returns at once. Callbacks run on the worker: they must not block, and
// may call this group (or any other) again. The group reaches its runtime only
// through GroupWorker, and the runtime drives it through the second public section,
// whose methods DCHECK that they run on the worker.
//
// Durability: the driver persists each Ready's entries, truncation and hard state in
// the shared log and sends the Ready's messages only once they are durable (a
// leader's appends and heartbeats excepted: they promise nothing about the leader's
// own log, and going out before its fdatasync overlaps the leader's sync with the
// followers'). Committed entries are durable when they are applied.
//
// Thread-safety: every public method may be called from any thread. Once the
// runtime is shut down, calls fail at once with ServiceUnavailable; the runtime must
// outlive every call.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "consensus/raft.h"

namespace nyala::consensus {

class RaftGroup;
class SharedLog;
struct ConsensusMetrics;

// When one proposal passed each stage on the leader, in monotonic microseconds (0: not
// yet), written as it goes by the group's worker (and the log's writer thread) and
// readable from any thread meanwhile (for /rpcz). Given to ProposeInTerm; the stages
// of a replicated write (docs/consensus.md, "Where a write's time goes").
struct ProposalTrace {
  std::atomic<int64_t> appended_us{0};   // appended to the leader's Raft log (worker)
  std::atomic<int64_t> sent_us{0};       // its Ready taken: records to the log, appends out
  std::atomic<int64_t> durable_us{0};    // in the leader's log on disk
  std::atomic<int64_t> committed_us{0};  // a Ready took it as committed
  std::atomic<int64_t> applied_us{0};    // applied here; the callback runs next
};

// The worker a group belongs to, as the group sees it: the group's one door to the
// runtime that drives it (ConsensusRuntime implements it for each of its workers).
class GroupWorker {
 public:
  virtual ~GroupWorker() = default;
  // Any thread: queues `*task` to run on this worker. False once the worker stopped,
  // and `*task` is then left to the caller (it is moved from only when queued).
  virtual bool Post(std::function<void()>* task) = 0;
  // Any thread: whether the calling thread runs this worker's part now (its thread,
  // or a reactor that borrowed it; during shutdown, the thread shutting it down).
  virtual bool IsCurrentThread() const = 0;
  // Worker only: `group` has work; its Ready is handled before the worker sleeps.
  virtual void Touch(RaftGroup* group) = 0;
  // Worker only: whether log appends may be written and synced on this thread
  // (SharedLog::AppendHereIfIdle): on a reactor that borrowed the worker's part.
  virtual bool LogWritesHere() const = 0;
  // The worker, or the log's writer thread once a Ready's records are durable: sends
  // `msgs` of group `group` to their servers (moved from).
  virtual void Send(uint64_t group, std::vector<MessagePB>* msgs) = 0;
  // Any thread: what log lines call server `id` ("server <uuid>").
  virtual std::string PeerName(PeerId id) const = 0;
  // Any thread: a message from a peer was refused as invalid (counted).
  virtual void CountRefused() = 0;
  // Any thread: runs `task` on the runtime's log-reading thread, off every worker (it
  // may block on the disk). False, `task` dropped, once the runtime shuts down.
  virtual bool PostToReader(std::function<void()> task) = 0;
  // Any thread: `n` entries were read back from the log for a lagging follower.
  virtual void CountReadBack(uint64_t n) = 0;
  // Any thread: when (monotonic microseconds) server `id` was last heard from, or
  // INT64_MIN / 2.
  virtual int64_t LastHeardUs(PeerId id) const = 0;
  // Where the group records its latencies; null: nowhere.
  virtual const ConsensusMetrics* metrics() const { return nullptr; }
};

// What a group applies committed entries to (a tablet). Called on the group's worker
// thread, in log order, every committed entry once per incarnation of the group:
// ENTRY_NORMAL entries carry the state machine's commands; ENTRY_NOOP and
// ENTRY_CONFIG entries carry none but advance the applied index too. After a restart
// the entries above GroupOptions::applied are applied again.
//
// The state machine reports, with RaftGroup::ReportDurable, up to which index its
// applied state is durable: the log then lets go of the records below it. If it must
// survive a restart from there, it keeps the configuration in effect at that index
// too (the last ENTRY_CONFIG applied), for GroupOptions::applied_config.
class StateMachine {
 public:
  virtual ~StateMachine() = default;
  virtual void Apply(const EntryPB& entry) = 0;
  // The group's records keep old log segments alive (more than
  // --log_max_old_segments): make the applied state durable and ReportDurable it.
  virtual void FlushRequested() {}
  // The group's role, term, leader or configuration changed (GroupInfo has the new
  // ones).
  virtual void LeadershipChanged() {}
  // The group failed and stops for good (its log failed: a full or broken disk, or
  // its records were damaged): it applies nothing more in this incarnation. Its
  // pending proposals were failed with ServiceUnavailable before this call.
  virtual void GroupFailed(const Status& /*error*/) {}
  // Leader: member `peer` needs a copy of the state machine (the entries it lacks are
  // gone from the log, or its server hosts no replica of the group), at least as new
  // as `index`. Called again while it lasts (at most once per message round); the
  // state machine starts a copy (at most one at a time per peer) and reports its end
  // with RaftGroup::ReportCopied.
  virtual void CopyNeeded(PeerId /*peer*/, uint64_t /*index*/) {}
};

struct GroupOptions {
  uint64_t group_id = 0;
  // What log lines call the group ("tablet <id>"); "consensus group <group_id>" if empty.
  std::string name;
  // The group's first configuration (a new replica's, or one created with the table);
  // what the log holds overrides it.
  std::vector<PeerId> voters;
  std::vector<PeerId> learners;
  StateMachine* state_machine = nullptr;  // must outlive the group
  // The state machine's durable applied index and the configuration in effect there,
  // as it recorded them (0 and none for a new replica).
  uint64_t applied = 0;
  std::optional<ConfigPB> applied_config;
  // The term of the entry at `applied` (0: unknown). A state machine installed from a
  // copy is ahead of the log, or holds another history than the log at `applied`:
  // CreateGroup then makes the log start at `applied` (a snapshot mark, dropping the
  // entries that do not follow from it) before the group starts.
  uint64_t applied_term = 0;
};

// A snapshot of a group's state, for tests, heartbeats and web pages.
struct GroupInfo {
  RaftRole role = RaftRole::kFollower;
  uint64_t term = 0;
  PeerId leader = kNoPeer;
  uint64_t commit_index = 0;
  uint64_t applied_index = 0;
  uint64_t last_index = 0;
  // Entries up to here are compacted from memory (a follower that needs them is sent
  // them from the log on disk, or a copy).
  uint64_t snapshot_index = 0;
  bool quiesced = false;
  ConfigPB config;
  // On the leader: each other member's replication state.
  std::vector<FollowerProgress> followers;
  Status status;  // not OK once the group failed (its log failed, or was damaged)
};

class RaftGroup : public std::enable_shared_from_this<RaftGroup> {
 public:
  // `index` is the entry's index when it was appended (0 if it never was).
  using Callback = std::function<void(const Status& s, uint64_t index)>;

  // Made by ConsensusRuntime::CreateGroup: `worker` and `log` must outlive the group;
  // `raft` was built from what the log holds of the group.
  RaftGroup(GroupWorker* worker, SharedLog* log, const GroupOptions& opts,
            std::unique_ptr<Raft> raft);
  ~RaftGroup();
  RaftGroup(const RaftGroup&) = delete;
  RaftGroup& operator=(const RaftGroup&) = delete;

  uint64_t id() const { return id_; }
  // GroupOptions::name, for log lines and errors.
  const std::string& name() const { return name_; }

  // Replicates `data` as a log entry. `done` runs once the entry is committed and
  // applied on this server (OK); at once with IllegalState when this server is not
  // the leader (the message names the leader when it is known); with Aborted when
  // another leader's entry took its index (it was not applied); with
  // ServiceUnavailable when the group stops or fails first (the outcome is unknown:
  // the entry may still commit).
  void Propose(std::string data, Callback done);
  // Propose, only in term `term`: IllegalState, nothing appended, if this server does
  // not lead in that term when the proposal reaches the worker (a caller that decided
  // what to propose from the state of term `term` must not see it appended in another).
  // With `trace`, the group notes in it when the entry passed each stage.
  void ProposeInTerm(uint64_t term, std::string data, Callback done,
                     std::shared_ptr<ProposalTrace> trace = nullptr);
  // A linearizable read: `done` runs with OK once this server's state machine holds
  // every entry committed before the call (under the leader's lease at once, else
  // after a heartbeat round), or with IllegalState when this server is not the
  // leader or loses leadership first.
  void Read(std::function<void(const Status&)> done);
  // One membership change (Raft::ProposeConfigChange); `done` as for Propose.
  void ChangeConfig(ConfigChange change, PeerId peer, Callback done);
  // Raft::TransferLeadership; `done` gets its status (not the transfer's outcome).
  void TransferLeadership(PeerId to, std::function<void(const Status&)> done);
  // Raft::CampaignNow: this server campaigns without waiting for an election timeout
  // (the first leader of a new group).
  void Campaign();
  // Leader: the copy StateMachine::CopyNeeded asked for is installed on `peer` at
  // `index` (`ok`), or failed: replication to it resumes after `index`, or from where
  // it was (another copy is asked for if it is still needed).
  void ReportCopied(PeerId peer, uint64_t index, bool ok);
  // Runs `task` on the group's worker, between two calls of the state machine (so no
  // Apply runs meanwhile). False, `task` dropped, once the worker stopped.
  bool RunOnWorker(std::function<void()> task) { return PostToWorker(std::move(task)); }

  // The state machine's applied state is durable up to `index` (capped at what was
  // applied): the log may drop the group's records at or below it, and the in-memory
  // log keeps at most --raft_retained_entries of the entries below it, for followers
  // that lag (one further behind would need a copy of the state).
  void ReportDurable(uint64_t index);

  GroupInfo info() const EXCLUDES(info_mu_);
  // The term this server leads in, or 0 when it does not lead (as of the last
  // published state; one atomic load, for the hot paths).
  uint64_t leader_term() const { return leader_term_.load(std::memory_order_acquire); }
  // Whether this server leads under its lease at monotonic time `now_us` (as of the
  // last published state; given up before any message that could elect a successor
  // leaves). With leader_term() and an applied entry of that term, a read of the
  // state machine now is linearizable without asking the worker.
  bool HoldsLease(int64_t now_us) const {
    return now_us < lease_expiry_us_.load(std::memory_order_acquire);
  }
  // How long before monotonic time `now_us` this replica last held every entry its
  // leader had committed (as of the last published state; any thread): 0 on the
  // leader; for a quiesced follower that holds everything, the time since its
  // leader's server was last heard from; INT64_MAX if never since it started.
  int64_t StalenessUs(int64_t now_us) const;

  // --- The runtime's side: worker only (DCHECKed), except worker().
  GroupWorker* worker() const { return worker_; }
  // A message from a peer (refused ones are logged and counted). `m` is shared with
  // the in-memory log, which keeps its entries.
  void Step(std::shared_ptr<const MessagePB> m, int64_t now_us);
  // An append with entries for this group was read off the wire at `received_us` (for
  // the follower's stage histograms: the next Ready's records are its).
  void NoteAppendReceived(int64_t received_us);
  void Tick(int64_t now_us);
  // Raft::WakeUp: a quiesced group whose peers went silent runs its timers again.
  void WakeUp(int64_t now_us);
  // Takes and handles every Ready the core has.
  void Process();
  // ConsensusRuntime::RemoveGroup: the group stops for good; nothing reaches the state
  // machine after this returns.
  void Stop();
  // Fails every pending callback with `s` (the runtime shuts down).
  void FailPending(const Status& s);
  // Server `peer` answered that it hosts no replica of this group: a leader asks its
  // state machine for a copy if `peer` is a member.
  void PeerLacksReplica(PeerId peer);
  // Asks the state machine to make its applied state durable (it keeps old log
  // segments alive), unless the group failed.
  void RequestFlush();
  // A copy of the state machine at `index` is being sent: the log keeps the entries
  // after it until monotonic time `until_us` (retention and the segment cap
  // notwithstanding), so that the copy's receiver finds them once it installed the copy.
  // Several anchors keep the lowest index and the latest time.
  void AnchorLog(uint64_t index, int64_t until_us);
  // Whether the group runs: not failed, nor stopped.
  bool running() const;
  // The core's state, for the runtime's liveness checks.
  bool quiesced() const;
  RaftRole role() const;
  PeerId leader() const;
  const ConfigPB& config() const;
  // The runtime's list of groups to Process: false if the group is in it already,
  // else marks it so (true). Process clears the mark.
  bool MarkDirty();

 private:
  struct PendingProposal {
    uint64_t term;
    Callback done;
    std::shared_ptr<ProposalTrace> trace;  // may be null
  };
  struct PendingRead {
    uint64_t index = 0;  // 0: Raft has not answered yet
    std::function<void(const Status&)> done;
  };
  // A Ready waiting for its records to be durable, with the messages it may send then.
  struct InFlightReady {
    bool durable = false;
    Ready ready;
    int64_t durable_us = 0;  // when the log said so
  };

  struct AppendTask;
  // Posts `task` (Raft::Propose or ProposeConfigChange) to the worker; its callback as
  // for Propose.
  void Append(AppendTask task);

  // Any thread: GroupWorker::Post of a task it may drop when refused.
  bool PostToWorker(std::function<void()> task) { return worker_->Post(&task); }

  // --- Worker only.
  void TrackProposal(uint64_t index, Callback done, std::shared_ptr<ProposalTrace> trace);
  void HandleReady(Ready rd);
  // With metrics: notes when the leader's appends with entries in `msgs` leave, and
  // stamps the traces of the entries of `rd` as sent.
  void NoteSent(const Ready& rd, const std::vector<MessagePB>& msgs, int64_t now_us);
  // With metrics: a follower's acknowledgement `m` arrived; records the round trip of
  // the newest append it covers.
  void NoteAck(const MessagePB& m, int64_t now_us);
  // What the log may drop up to, for a durable index `durable`: the durable index of
  // --log_min_seconds_to_retain ago (the entries since stay on disk, for followers
  // that come back), or `durable` once the log holds more than
  // --log_max_segments_to_retain old segments. Never decreases.
  uint64_t LogRetentionFloor(uint64_t durable);
  // Reads the entries `f` asks for back from the log, on the reader thread, and hands
  // them to the core on the worker (Raft::SendFromStorage, or StorageMissing).
  void FetchFromLog(const FetchRequest& f);
  // The oldest of this group's log appends finished (at `durable_us`).
  void OnPersisted(const Status& s, int64_t durable_us);
  // Applies `committed`, taken by a Ready at `ready_us`.
  void ApplyCommitted(const std::vector<EntryPtr>& committed, int64_t ready_us);
  void ReleaseReads();
  // Leadership lost or term changed: pending reads fail (Raft dropped them).
  void NoteRole();
  void Fail(const Status& s);
  // True when the configuration published changed.
  bool PublishInfo();

  const uint64_t id_;
  const std::string name_;
  GroupWorker* const worker_;
  SharedLog* const log_;
  StateMachine* const sm_;

  // Worker only.
  std::unique_ptr<Raft> raft_;
  Status failed_;
  uint64_t applied_ = 0;
  std::map<uint64_t, PendingProposal> proposals_;  // by index
  uint64_t next_read_id_ = 1;
  std::map<uint64_t, PendingRead> reads_;  // by request id
  std::deque<InFlightReady> persisting_;
  // LogRetentionFloor's state: (monotonic time, durable index reported then), oldest
  // first; and the floor last given to the log.
  std::deque<std::pair<int64_t, uint64_t>> durable_samples_;
  uint64_t retained_floor_ = 0;
  // AnchorLog's anchor (until 0: none).
  uint64_t anchor_index_ = 0;
  int64_t anchor_until_us_ = 0;
  HardStatePB logged_hs_;                   // the newest hard state handed to the log
  std::optional<HardStatePB> unlogged_hs_;  // a newer one differing only in commit
  // The earliest time an append behind the next Ready's records was read off the wire
  // (0: none since the last Ready with records).
  int64_t append_received_us_ = 0;
  // Leader, with metrics: per follower, (last index, when sent) of its appends not yet
  // acknowledged, oldest first, at most kMaxTrackedAppends.
  std::map<PeerId, std::deque<std::pair<uint64_t, int64_t>>> appends_out_;
  RaftRole last_role_ = RaftRole::kFollower;
  uint64_t last_term_ = 0;
  PeerId last_leader_ = kNoPeer;
  bool dirty_ = false;  // in the worker's list of groups to Process

  std::atomic<uint64_t> leader_term_{0};
  // StalenessUs's state, published by the worker: when this replica last held all the
  // leader had committed (INT64_MIN: never), and, while it is a quiesced follower
  // holding all of it, its leader (else kNoPeer).
  std::atomic<int64_t> caught_up_us_{INT64_MIN};
  std::atomic<PeerId> quiet_leader_{kNoPeer};
  // Worker: publishes them.
  void PublishFreshness();
  std::atomic<int64_t> lease_expiry_us_{0};
  // Worker thread: publishes the lease (0 unless leading under one now).
  void PublishLease();
  mutable Mutex info_mu_;
  GroupInfo info_ GUARDED_BY(info_mu_);
  // (configuration entry index, snapshot index) info_.config was taken at.
  std::pair<uint64_t, uint64_t> info_config_at_ GUARDED_BY(info_mu_);
};

}  // namespace nyala::consensus
