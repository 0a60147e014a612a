// TabletReplica: one tablet's replica of its Raft group (consensus/raft_group.h) on
// this server. It owns the group once started, is the group's state machine, and
// answers the questions the tablet's write and read paths ask about leadership:
//
//   CheckLeader / ReadyLeaderTerm  may this replica decide writes now (it leads, and
//                                  has applied every entry of earlier terms)?
//   CanReadNow / WaitForLinearizableRead
//                                  is a read here linearizable (now, or after a
//                                  leadership confirmation)?
//   ReplicateAsync / Replicate     append a write command in the term it was decided
//                                  in; done (or return) once it is applied here.
//
// The seam with the tablet (tablet.h): the tablet decides a write (decode, row locks,
// existence reads) and encodes it as a write command (write_command.h); the replica
// replicates it; every replica's Apply decodes each committed command and hands it to
// its ReplicaStorage (the tablet) to write, with the replica's applied state (applied
// index and configuration, an opaque value to the storage) in the same batch. The
// tablet owns its replica; the replica borrows the tablet as its ReplicaStorage.
//
// Every tablet is a replica of a group, a group of one included; until Start() (or
// when it failed) the replica does not lead: CheckLeader and reads refuse, and
// Replicate fails with ServiceUnavailable.
//
// Threads:
//  - Start() and Stop(): the tablet manager's threads (start-up, the admin thread).
//    Start() once, before the replica is used for writes or reads.
//  - Apply, FlushRequested, LeadershipChanged, GroupFailed (consensus::StateMachine):
//    the group's runtime worker, one call at a time; they must not block. They DCHECK
//    that no two of them overlap and, once Start() stored the group, that they run on
//    its worker (GroupWorker::IsCurrentThread: its thread, or a reactor that borrowed
//    the worker's part, runtime.h).
//  - Everything else: any thread. Replicate, WaitUntilLeader and
//    WaitForLinearizableRead block the caller (never call them from the worker).
//    ReplicateAsync's `done` runs on the group's worker (or at once on the caller's
//    thread when no group runs): it must not block.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "common/mutex.h"
#include "common/result.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "consensus/raft_group.h"
#include "nyala/monotime.h"
#include "nyala/slice.h"
#include "rpc/rpc_header.pb.h"
#include "tserver/tserver.pb.h"

namespace nyala::consensus {
class ConsensusRuntime;
}

namespace nyala::tserver {

struct DecodedWriteCommand;
struct TServerMetrics;

// What a replica calls into its server. Given to Start(); the functions run on the
// group's worker thread and must not block.
struct TabletReplicaHooks {
  // The uuid of the server with Raft peer id `id` ("" when unknown).
  std::function<std::string(consensus::PeerId id)> uuid_of;
  // The group's role, term or leader changed, or the tablet failed (for the next
  // tablet report).
  std::function<void()> consensus_changed;
  // A write carrying a request id was applied here (led by this replica or another):
  // its request's final response, stored as the request's record with the rows, for
  // the server's RequestTracker, so that a retry reaching this replica once it leads
  // is answered, not applied again.
  std::function<void(const rpc::RequestIdPB& id, const WriteResponsePB& resp)> applied_request;
  // Leader: the replica on server `peer` needs a copy of the tablet at least as new as
  // `index` (consensus::StateMachine::CopyNeeded). On the group's worker: must not block.
  std::function<void(consensus::PeerId peer, uint64_t index)> copy_needed;
};

// The tablet's side of the seam: what a replica applies committed entries to.
// Implemented by Tablet. Called on the group's worker thread (LoadAppliedState: in
// Start(), before the group exists).
class ReplicaStorage {
 public:
  virtual ~ReplicaStorage() = default;
  // Whether the tablet takes entries: false once it failed or was deleted (the
  // replica then only advances its applied index).
  virtual bool Running() const = 0;
  // Writes `cmd`'s row changes and request record, and `applied_state`, in one batch.
  virtual Status ApplyWrite(const DecodedWriteCommand& cmd, Slice applied_state) = 0;
  // Writes `applied_state` alone (an entry that carries no write).
  virtual Status StoreAppliedState(Slice applied_state) = 0;
  // The applied state stored last ("" for a new tablet).
  virtual Result<std::string> LoadAppliedState() = 0;
  // Makes every apply so far durable (the store's WAL synced).
  virtual Status SyncApplied() = 0;
  // The tablet stops serving, failed with `error` (an apply failed, or the group did).
  // Called once at most, while Running().
  virtual void Fail(const Status& error) = 0;
};

class TabletReplica : public consensus::StateMachine {
 public:
  // `storage` must outlive the replica, and its group must be stopped (Stop(), or the
  // runtime shut down) before the replica goes. `metrics` may be null (tests).
  TabletReplica(std::string tablet_id, ReplicaStorage* storage, TServerMetrics* metrics);
  ~TabletReplica() override;
  TabletReplica(const TabletReplica&) = delete;
  TabletReplica& operator=(const TabletReplica&) = delete;

  const std::string& tablet_id() const { return tablet_id_; }

  // Creates (or, after a restart, reopens) the replica's group on `runtime` with
  // `options`' id and first configuration, from the applied state the storage holds;
  // the group replays what its log holds past it. Campaigns at once when `campaign`
  // (the first leader of a new group; a group of one). Once only. Fails (the replica
  // stays without a group) when the applied state does not decode or the runtime
  // refuses the group. `runtime` must outlive the replica's group.
  Status Start(consensus::ConsensusRuntime* runtime, consensus::GroupOptions options,
               TabletReplicaHooks hooks, bool campaign);
  // Removes the group from the runtime: writes waiting for it fail with Aborted, and
  // nothing is applied once this returns. Nothing if the group never started. With
  // `forget_log` false its records stay in the consensus log (its term, vote and
  // entries), for a copy of the tablet to start the group from again.
  Status Stop(bool forget_log = true);
  // The group, or null before Start() succeeded and after Stop().
  std::shared_ptr<consensus::RaftGroup> group() const;

  // Fills `error` with NOT_THE_LEADER (naming the leader when known) and returns false
  // unless this replica leads and has applied every entry of earlier terms (so its
  // existence checks see every committed write).
  bool CheckLeader(TabletServerErrorPB* error) const;
  // The term this replica leads in with every earlier term's entry applied, or 0
  // (CheckLeader's condition).
  uint64_t ReadyLeaderTerm() const;
  // Whether a read here is linearizable now without waiting: this replica leads under
  // its lease with its own term's first entry applied.
  bool CanReadNow() const;
  // For a read any replica may answer: false, with REPLICA_TOO_STALE in `error`, when
  // this replica last held everything its leader had committed more than
  // --follower_read_max_lag_ms ago (or never since it started: a replica catching up
  // or needing a copy). Never blocks.
  bool CheckFollowerRead(TabletServerErrorPB* error) const;
  // Waits until CheckLeader would pass: false after `timeout`.
  bool WaitUntilLeader(MonoDelta timeout) const;
  // Waits until a read here sees every write committed before the call (the leader's
  // lease, or a heartbeat round, then the apply): false with `error` set when this
  // replica does not lead or `timeout` passes first.
  bool WaitForLinearizableRead(MonoDelta timeout, TabletServerErrorPB* error) const;
  // Hands `command` (write_command.h) to the group, to be appended in `term` only (the
  // term whose state the write was decided on), and waits until it is applied here.
  // OK: applied (by the storage; whether that apply succeeded is the storage's to
  // say). IllegalState or Aborted: not applied (another leader, or another entry at
  // its index). ServiceUnavailable: the outcome is unknown (leadership lost, or the
  // group stopped or failed, before the entry committed).
  // With `trace`, the group stamps the proposal's stages in it.
  Status Replicate(std::string command, uint64_t term,
                   std::shared_ptr<consensus::ProposalTrace> trace = nullptr);
  // Replicate without waiting: `done` runs once with its outcome, on the group's worker
  // (after the apply, when another leader's entry took the index, when the group stops
  // or fails, or when this replica stops leading in `term` first), or on the calling
  // thread before this returns when no group runs.
  void ReplicateAsync(std::string command, uint64_t term,
                      std::shared_ptr<consensus::ProposalTrace> trace,
                      std::function<void(const Status&)> done);

  // The index of the last entry applied (any thread).
  uint64_t applied_index() const { return applied_index_.load(std::memory_order_acquire); }
  // Any thread: runs `fn` on the group's worker once entry `index` is the last applied
  // one (at once if it is; 0: the last applied one now), before the next apply, with
  // true; with false if this replica applied past `index` first. Not run at all if the
  // group stops first. False, `fn` dropped, when no group runs.
  bool RunAtIndex(uint64_t index, std::function<void(bool at_index)> fn);
  // The applied index last reported durable to the group (the tablet manager's
  // reporter; any thread).
  uint64_t reported_durable_index() const {
    return reported_durable_.load(std::memory_order_relaxed);
  }
  void set_reported_durable_index(uint64_t i) {
    reported_durable_.store(i, std::memory_order_relaxed);
  }

  // The tablet's state changed in a way its next tablet report must carry (a schema
  // change applied): the consensus_changed hook. The group's worker thread only.
  void NotifyReportable() {
    if (hooks_.consensus_changed) hooks_.consensus_changed();
  }

  // consensus::StateMachine (the group's worker thread).
  void Apply(const consensus::EntryPB& entry) override;
  void FlushRequested() override;
  void LeadershipChanged() override;
  // The group failed (its consensus log could not be written, e.g. the disk is full):
  // the tablet fails too, with that error, and says so to the master.
  void GroupFailed(const Status& error) override;
  void CopyNeeded(consensus::PeerId peer, uint64_t index) override;

  // What a tablet stores with its rows about the last entry applied to them.
  struct AppliedState {
    uint64_t index = 0;
    uint64_t term = 0;                          // 0 when stored by a build that did not keep it
    std::optional<consensus::ConfigPB> config;  // the configuration in effect there
  };
  // The applied state's encoding, as stored with the rows (docs/storage-format.md):
  // a version byte (1), the index and the term as 8 bytes big-endian each, then the
  // configuration (a ConfigPB), if any. Decode also reads the earlier form (the
  // index, then the configuration; no term). Public for tests and tablet copy.
  static std::string EncodeAppliedState(const AppliedState& state);
  static Status DecodeAppliedState(Slice value, AppliedState* state);

 private:
  struct AsyncProposal;
  class WorkerSection;

  // Runs `p`'s callback with `s` unless it ran already, and forgets `p`.
  void FinishProposal(AsyncProposal* p, const Status& s) EXCLUDES(leader_mu_);

  // Applies one ENTRY_NORMAL entry (a write command) through the storage.
  Status ApplyWriteEntry(const consensus::EntryPB& e);
  // Stores the applied index alone (ENTRY_NOOP, ENTRY_CONFIG).
  Status ApplyOtherEntry(const consensus::EntryPB& e);
  // The storage failed to apply entry `index`: the tablet stops.
  void FailTablet(const Status& s);
  // Wakes WaitUntilLeader and the writes waiting in Replicate.
  void NotifyLeadershipWaiters() EXCLUDES(leader_mu_);
  // Counts in the server's metrics what changed since the group state last noted (a
  // new leader, term, or this replica winning or losing leadership); with `count`
  // false only notes `info` (when the group starts).
  void NoteLeadership(const consensus::GroupInfo& info, bool count) EXCLUDES(seen_mu_);

  // Set at construction, never changed.
  const std::string tablet_id_;
  ReplicaStorage* const storage_;
  TServerMetrics* const metrics_;

  // Set by Start() (before the group exists), then read only.
  consensus::ConsensusRuntime* runtime_ = nullptr;
  TabletReplicaHooks hooks_;

  mutable Mutex group_mu_;
  std::shared_ptr<consensus::RaftGroup> group_ GUARDED_BY(group_mu_);

  // The term of the last entry applied: the leader takes writes once it equals the
  // group's term (its own no-op applied, so is everything before it).
  std::atomic<uint64_t> applied_term_{0};
  // Notified when applied_term_ or the group's leadership changes (WaitUntilLeader).
  mutable Mutex leader_mu_;
  mutable CondVar leader_cv_;
  // Proposals not finished yet: failed when the leadership changes first.
  std::unordered_map<AsyncProposal*, std::shared_ptr<AsyncProposal>> proposals_waiting_
      GUARDED_BY(leader_mu_);
  // The applied index (written by the worker, read anywhere).
  std::atomic<uint64_t> applied_index_{0};
  // RunAtIndex's waiters, by index. Worker only.
  std::multimap<uint64_t, std::function<void(bool)>> index_waiters_;
  std::atomic<uint64_t> reported_durable_{0};
  // The configuration in effect at the applied index: set by Start() before the group
  // exists, then by the worker only.
  std::optional<consensus::ConfigPB> applied_config_;
  // Debug check that the StateMachine calls never overlap (WorkerSection).
  std::atomic<bool> in_worker_call_{false};

  // The group state NoteLeadership saw last.
  Mutex seen_mu_;
  consensus::RaftRole seen_role_ GUARDED_BY(seen_mu_) = consensus::RaftRole::kFollower;
  uint64_t seen_term_ GUARDED_BY(seen_mu_) = 0;
  consensus::PeerId seen_leader_ GUARDED_BY(seen_mu_) = consensus::kNoPeer;
};

}  // namespace nyala::tserver
