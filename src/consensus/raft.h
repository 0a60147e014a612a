// Raft: the consensus state machine of one group (one tablet's replicas), after the
// Raft thesis (Ongaro 2014). It does no I/O, starts no threads and reads no clock:
// its driver feeds it messages (Step), the passing of time (Tick, and the `now` every
// call carries: microseconds of the driver's monotonic clock) and proposals, and takes
// back a Ready: what to persist, what to send, what is committed and may be applied,
// and which reads are safe. Every decision is a function of those inputs (the random
// election timeouts come from a generator seeded in RaftOptions), so a test can
// replay a run exactly.
//
// What it implements:
// - Leader election with randomized timeouts, pre-vote (a node rejoining from a
//   partition asks first whether it could win, so it does not depose a healthy
//   leader by bumping the term) and check-quorum (a leader that has not heard from a
//   majority within an election timeout steps down). A node that heard from a leader
//   within the minimum election timeout refuses votes for others (leader stickiness),
//   which is what makes leases safe. A candidate's own vote counts once the driver
//   made it durable (Advance), so a lone voter leads only then.
// - Log replication with pipelining: a follower in the replicate state is sent
//   entries without waiting for answers, up to max_inflight_msgs messages and
//   max_inflight_bytes bytes unanswered; a rejected append backs up by a whole term at
//   a time (the follower names its conflicting term and where it starts). Proposals
//   are sent with the next Ready, so those made before the driver takes it travel
//   together (one append per follower).
// - Commitment only of entries of the leader's own term by counting replicas (thesis
//   §3.6.2); a new leader appends a no-op to commit its term.
// - Linearizable reads: under the leader's lease, at once; otherwise after a heartbeat
//   round a majority answers (ReadIndex). Either way the answer is a ReadState: the read
//   is safe once the state machine has applied `index`.
//
// Leases. The leader holds a lease until lease_us after the send time (its clock) of
// the latest round a majority has answered. A follower that received a message of
// that round does not vote for anyone else until election_timeout_min_us after it
// received it (its clock). RaftOptions::Validate() requires lease_us to fit inside
// that promise for clocks whose rates differ by at most max_clock_drift, so no two
// leaders hold a lease at one time. A new leader also waits out what its voters
// report of the previous leader's remaining lease before it claims one.
//
// - Leadership transfer (thesis §3.10): the leader stops taking proposals, brings the
//   target up to date and tells it to campaign at once; the target's vote requests are
//   granted despite leader stickiness, and each vote reports how long the voter still
//   owed the old leader, which the new leader waits out before it claims a lease. The
//   old leader gives its lease up when it tells the target to campaign.
//
// - Log compaction: the driver may drop entries its state machine has applied and
//   made durable (Compact). A follower that needs entries no longer in the leader's
//   in-memory log is named in the Ready's `fetches` when the driver keeps a log it can
//   read them back from (RaftOptions::fetch_from_storage): it hands them back with
//   SendFromStorage, one bounded batch per round trip, until the follower reaches the
//   in-memory log. When the driver's log lacks them too (StorageMissing), or without
//   fetch_from_storage, the follower is named in the Ready's `snapshots`: the driver
//   copies the state machine to it (tablet copy), the follower's driver calls
//   RestoreSnapshot, and the leader's ReportSnapshot resumes replication after the
//   snapshot's index.
//
// - Membership change one server at a time (thesis §4.1): a configuration is a log
//   entry (ENTRY_CONFIG) and takes effect on a node as soon as it is in its log,
//   committed or not; a leader proposes the next change only once the previous one is
//   committed and an entry of its own term is. Learners receive the log but neither
//   vote nor count toward a majority; a voter is added as a learner first and promoted
//   once it holds everything committed. A leader that removes itself keeps leading
//   (without counting itself) until the change commits, then steps down; until then
//   it may also campaign (it may be the only node holding the change). A node answers
//   vote requests whatever its own configuration (it may be behind the candidate's);
//   a candidate counts only the votes of voters of its configuration.
//
// - Quiescence: a leader that is idle (everything committed and on every follower, no
//   reads or transfer pending) sends one last heartbeat marked `quiesce` and then
//   none; each follower whose log ends where the leader's does goes quiet too. A
//   quiesced node does nothing on Tick (the driver need not tick it at all), so an
//   idle group costs nothing. Any proposal, read or transfer wakes the leader, and any
//   message from the leader wakes a follower. The driver must watch the leader's
//   server itself (server-to-server heartbeats) and call WakeUp on a quiesced follower
//   whose leader's server went silent; a quiesced follower refuses votes meanwhile,
//   as leader stickiness does, so a restarted or cut-off peer cannot depose the idle
//   leader (its vote request wakes the leader instead). Safety does not depend on any
//   of this: a quiesced leader's lease runs out like any other.
//
// Thread-safety: none. The driver serializes every call on one instance.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/status.h"
#include "consensus/raft.pb.h"

namespace nyala::consensus {

using PeerId = uint64_t;
constexpr PeerId kNoPeer = 0;

// A log entry, never changed once made: the in-memory log, the Readies that hand it
// to the driver and the driver's pending work share one copy (on a follower, the copy
// in the append message that brought it, when the driver shares that message). Safe
// to read from several threads.
using EntryPtr = std::shared_ptr<const EntryPB>;

struct RaftOptions {
  PeerId id = kNoPeer;
  // The group's first configuration, in effect until a configuration entry (or a
  // snapshot's configuration) replaces it. A node outside it (a replica being added)
  // starts as a non-member: it neither campaigns nor votes until its log says it is a
  // voter.
  std::vector<PeerId> voters;
  std::vector<PeerId> learners;
  // A follower that hears from no leader for a random time in [min, 2 * min) campaigns.
  int64_t election_timeout_min_us = 1'000'000;
  int64_t heartbeat_interval_us = 100'000;
  // How long a leader's lease lasts after the send time of the round a majority
  // answered. Must satisfy Validate().
  int64_t lease_us = 800'000;
  // Bound on how much faster or slower one node's clock runs than another's (0.01:
  // one percent).
  double max_clock_drift = 0.01;
  bool pre_vote = true;
  bool check_quorum = true;
  // Flow control toward one follower in the replicate state.
  int max_inflight_msgs = 64;
  int64_t max_inflight_bytes = 8 << 20;
  // Entries bytes per append message (at least one entry is sent).
  int64_t max_msg_bytes = 1 << 20;
  // Quiesce when idle (see the file comment).
  bool quiesce_when_idle = true;
  // The driver can read compacted entries back from its own log (Ready::fetches);
  // without it, a follower behind the compaction point needs a snapshot at once.
  bool fetch_from_storage = false;
  // When the commit index advances, send followers that are owed nothing else an
  // empty append that carries it. Off (the multi-group runtime's choice), they learn
  // it with the next append or heartbeat: one round trip per commit fewer, which
  // would compete with the next entry's, for followers that apply up to a heartbeat
  // interval later when the load stops.
  bool notify_commit_at_once = true;
  uint64_t random_seed = 1;

  // InvalidArgument unless the id is non-zero, there is a voter, members are distinct
  // and non-zero, the
  // heartbeat is shorter than the election timeout, and
  // lease_us * (1 + max_clock_drift) < election_timeout_min_us * (1 - max_clock_drift).
  Status Validate() const;
};

// What the driver persisted before a restart, handed back to a new instance.
struct RaftPersistentState {
  HardStatePB hard_state;
  // The log was compacted up to here (0: never); the entry at snapshot_index had
  // snapshot_term.
  uint64_t snapshot_index = 0;
  uint64_t snapshot_term = 0;
  // The configuration in effect at snapshot_index, if a snapshot or compaction
  // recorded one (else RaftOptions' first configuration).
  std::optional<ConfigPB> snapshot_config;
  std::vector<EntryPB> entries;  // contiguous from snapshot_index + 1
  uint64_t applied = 0;          // the state machine's durable applied index

  // Whether a Raft instance may start from this state: entries contiguous from
  // snapshot_index + 1 with terms not decreasing (and not below snapshot_term),
  // valid configurations, and an applied index within [snapshot_index, last index].
  // Corruption saying what does not hold (the state was damaged on disk, or the
  // state machine and the log disagree).
  Status Validate() const;
};

// Whether `m`, as it came off the wire, is a message the core may act on: checks
// that need no state (Raft::Step also refuses what contradicts its own log). OK, or
// InvalidArgument saying what is wrong:
//  - a known message type; entries only in MSG_APPEND;
//  - an append's entries have indexes contiguous from `index` + 1 (no overflow),
//    terms not decreasing, none below `log_term` nor above the message's term, known
//    types, and configuration entries that hold a valid configuration;
//  - a response's `log_term` is not above its term.
// Pure; any thread.
Status ValidateMessage(const MessagePB& m);

// Whether `config` is one a group may be in: at least one voter, no member 0, no
// member listed twice (as voter or learner).
Status ValidateConfig(const ConfigPB& config);

// The leader needs the state machine at `index` (term `term`, configuration `config`)
// copied to `peer`.
struct SnapshotRequest {
  PeerId peer = kNoPeer;
  uint64_t index = 0;
  uint64_t term = 0;
  ConfigPB config;
};

// The leader's in-memory log no longer holds what `peer` needs, from `index` on: the
// driver reads entries from `index` on back from its log (a bounded batch) and hands
// them to Raft::SendFromStorage, or calls Raft::StorageMissing if its log lacks them.
struct FetchRequest {
  PeerId peer = kNoPeer;
  uint64_t index = 0;
};

enum class ConfigChange {
  kAddLearner,      // a new member that receives the log but does not vote
  kPromoteLearner,  // the learner becomes a voter (it must be caught up: see below)
  kRemovePeer,      // a voter (the leader too) or a learner leaves the group
};

// A learner is caught up enough to promote when it holds every committed entry, or
// when it replicates (acknowledged lately) and every committed entry is sent to it with
// at most this many not yet acknowledged: under steady writes it is always an append
// or two behind, and would otherwise wait for a lull.
constexpr uint64_t kPromoteMaxLagEntries = 1000;

// A read that may be served once the state machine has applied `index`.
struct ReadState {
  uint64_t request_id = 0;
  uint64_t index = 0;
};

enum class RaftRole { kFollower, kPreCandidate, kCandidate, kLeader };
const char* RaftRoleName(RaftRole role);

// How a leader replicates to one follower.
enum class FollowerState {
  kProbe,      // one append at a time, finding where its log matches
  kReplicate,  // appends pipelined
  kSnapshot,   // it needs a copy of the state machine (ReportSnapshot ends it)
  kFetch,      // catching up from entries the driver reads back from its log
};

// A leader's view of one follower.
struct FollowerProgress {
  PeerId id = kNoPeer;
  uint64_t match = 0;  // its log matches the leader's up to here
  FollowerState state = FollowerState::kProbe;
};

// One batch of work for the driver, in this order:
//   1. persist `truncate_from` (drop the log from that index on), `entries`, and
//      `hard_state` if set — durably;
//   2. then send `messages` (never before step 1 is durable: they may promise it);
//   3. apply `committed` in order (they are durable here already);
//   4. serve each of `reads` once the applied index reaches its index;
//   5. call Raft::Advance() with this Ready.
// `snapshots` and `fetches` start work that ends in a later call (ReportSnapshot,
// SendFromStorage or StorageMissing), any time after.
// Steps 1-2 may happen asynchronously while the driver keeps calling Step/Tick; the
// next Ready can be taken before Advance() of this one only if it is persisted after.
struct Ready {
  std::optional<uint64_t> truncate_from;
  std::vector<EntryPtr> entries;
  std::optional<HardStatePB> hard_state;
  std::vector<MessagePB> messages;
  std::vector<EntryPtr> committed;
  std::vector<ReadState> reads;
  std::vector<SnapshotRequest> snapshots;  // copies to start (any time)
  std::vector<FetchRequest> fetches;       // entries to read back from the log

  bool empty() const {
    return !truncate_from && entries.empty() && !hard_state && messages.empty() &&
           committed.empty() && reads.empty() && snapshots.empty() && fetches.empty();
  }
};

class Raft {
 public:
  // REQUIRES: options.Validate() and state.Validate() are OK; `state` is what the
  // previous incarnation of this node persisted (empty for a new group).
  Raft(RaftOptions options, const RaftPersistentState& state, int64_t now_us);

  // Time passes: campaigns, heartbeats, check-quorum.
  void Tick(int64_t now_us);
  // Campaigns now (with pre-vote) instead of at the election timeout: the driver's
  // way to elect the preferred first leader of a new group at once. Nothing if this
  // node leads already; IllegalState if it may not campaign (not a voter).
  Status CampaignNow(int64_t now_us);
  // A message from a peer, which the driver shares and must not change any more: the
  // log keeps an append's entries where they are, without copying them (each entry
  // keeps the whole message alive while the log holds it). A message to another
  // node, from none or from itself, one ValidateMessage refuses, an append that would
  // rewrite a committed entry, or an answer acknowledging entries this leader never
  // had is refused with InvalidArgument before its log changes; stale and duplicate
  // messages are fine.
  Status Step(std::shared_ptr<const MessagePB> m, int64_t now_us);
  // The same for a message the driver keeps: it is copied first.
  Status Step(const MessagePB& m, int64_t now_us);
  // Appends `data` to the log if this node is the leader: the entry's index. Else
  // IllegalState naming the known leader (or "no leader").
  Result<uint64_t> Propose(std::string data, int64_t now_us);
  // Asks for a linearizable read. The answer comes in a later Ready's `reads` (at once
  // under a lease, else after a heartbeat round). IllegalState if not the leader; a
  // read pending when the node loses leadership is dropped (the caller times out and
  // retries elsewhere).
  Status ReadIndex(uint64_t request_id, int64_t now_us);
  // Hands leadership to voter `to` (see the file comment). Proposals are refused
  // (IllegalState) until the transfer ends: when `to` wins, or after an election
  // timeout. IllegalState if not the leader; InvalidArgument if `to` is not another
  // voter.
  Status TransferLeadership(PeerId to, int64_t now_us);
  PeerId transfer_target() const { return transfer_to_; }

  // Proposes one membership change as a configuration entry: its index. IllegalState
  // if not the leader, while a transfer or an earlier change is not finished, before
  // an entry of this term is committed, or (kPromoteLearner) while the learner is not
  // caught up (kPromoteMaxLagEntries); InvalidArgument if the change does not fit the configuration
  // (adding a member, promoting a non-learner, removing a non-member or the last
  // voter).
  Result<uint64_t> ProposeConfigChange(ConfigChange change, PeerId peer, int64_t now_us);
  // The configuration in effect here: the newest in the log, committed or not.
  const ConfigPB& config() const { return config_; }
  // The index of its entry (0: the first configuration or a snapshot's).
  uint64_t config_index() const { return configs_.empty() ? 0 : configs_.rbegin()->first; }
  bool IsVoter(PeerId id) const;

  // Quiesced: idle, and Tick does nothing until something wakes the node (see the file
  // comment). The driver calls WakeUp on a quiesced follower whose leader's server it
  // no longer hears from: it runs its election timer again.
  bool quiesced() const { return quiesced_; }
  void WakeUp(int64_t now_us);

  // Drops the entries up to `index`, which the state machine has applied and made
  // durable (the driver drops them from its log too). InvalidArgument past what was
  // handed for applying or persisted.
  Status Compact(uint64_t index);
  // Follower: the driver installed a copy of the state machine at `index` (entry term
  // `term`, configuration `config` as the SnapshotRequest gave it). The log is kept
  // after `index` if it holds that entry, else dropped; the driver's log must match (it
  // keeps or drops the same), and it installs the copy only once every Ready taken
  // before is durable, so that none of their entries lands on top of the copy (a log
  // writes the copy after them). A copy older than the commit index changes nothing;
  // a leader or candidate given a newer one steps down (the copy came from another
  // leader).
  void RestoreSnapshot(uint64_t index, uint64_t term, const ConfigPB& config, int64_t now_us);
  // Leader: the copy to `peer` at `index` finished (`ok`) or failed; replication to it
  // resumes.
  void ReportSnapshot(PeerId peer, uint64_t index, bool ok);
  // Leader: the answer to a FetchRequest for `peer`: `entries`, read back from the
  // driver's log from the request's index on (at least one), and `prev_term`, the term
  // of the entry before them. They go to `peer` in one append if it still waits for
  // them; an answer that comes too late (leadership or the follower's position
  // changed) is ignored. InvalidArgument, nothing sent, if the entries are not
  // contiguous, do not start at the index asked for, run past this log, or disagree
  // with it where they overlap; the follower is then asked for again.
  Status SendFromStorage(PeerId peer, uint64_t prev_term, const std::vector<EntryPtr>& entries);
  // Leader: the driver's log lacks what the FetchRequest for `peer` at `index` asked
  // for: the follower needs a copy (a SnapshotRequest in the next Ready).
  void StorageMissing(PeerId peer, uint64_t index);
  uint64_t snapshot_index() const { return snap_index_; }
  // Leader: every other member's replication state, by id, into `out` (cleared
  // first; empty if not the leader). Reuses its capacity: no allocation when steady.
  void Followers(std::vector<FollowerProgress>* out) const;

  bool HasReady() const;
  Ready TakeReady();
  // The driver finished `ready` (see Ready): its entries and hard state are durable.
  // A candidate whose own vote is durable now may become the leader (a lone voter).
  void Advance(const Ready& ready, int64_t now_us);

  RaftRole role() const { return role_; }
  uint64_t term() const { return term_; }
  PeerId leader() const { return leader_; }
  PeerId id() const { return opts_.id; }
  uint64_t commit_index() const { return commit_; }
  // Follower: the highest commit index a leader told this node of, and when (the
  // caller's clock) it last heard from a leader. A follower that has applied up to
  // leader_commit() held everything committed as of last_leader_contact_us().
  uint64_t leader_commit() const { return leader_commit_; }
  int64_t last_leader_contact_us() const { return last_leader_contact_us_; }
  uint64_t last_index() const { return LastIndex(); }
  uint64_t TermAt(uint64_t index) const;
  // Whether this node is the leader and holds its lease at `now_us`, and until when.
  bool HasLease(int64_t now_us) const;
  int64_t lease_expiry_us() const { return lease_expiry_us_; }
  std::string ToString() const;

 private:
  // Replication state of one follower, on the leader.
  struct Progress {
    // kFetch: waiting for the driver to read entries back from its log
    // (SendFromStorage or StorageMissing).
    using State = FollowerState;
    uint64_t match = 0;
    uint64_t next = 1;
    State state = State::kProbe;
    bool probe_sent = false;  // kProbe: one append is out, wait for its answer
    // kReplicate: the last index and bytes of each unanswered append, oldest first.
    std::deque<std::pair<uint64_t, int64_t>> inflight;
    int64_t inflight_bytes = 0;
    bool recently_active = false;  // heard from since the last check-quorum
    uint64_t acked_round = 0;      // newest round it answered
    bool quiesced = false;         // answered this idle spell's quiesce heartbeat
  };

  uint64_t LastIndex() const { return snap_index_ + entries_.size(); }
  uint64_t LastTerm() const { return entries_.empty() ? snap_term_ : entries_.back()->term(); }
  // REQUIRES: snap_index_ < index <= LastIndex().
  const EntryPtr& Entry(uint64_t index) const { return entries_[index - snap_index_ - 1]; }
  size_t Quorum() const { return size_t(config_.voters_size()) / 2 + 1; }
  bool IsMember(PeerId id) const;
  // Whether this node runs elections (voters, and a voter whose removal is pending).
  bool MayCampaign() const;
  // Votes of voters (of the configuration) granted, or refused.
  size_t CountVotes(bool granted) const;
  // The configuration in effect at `index` (at or after the snapshot index).
  ConfigPB ConfigAt(uint64_t index) const;
  // config_ from the log (after entries are appended, truncated or compacted); a
  // leader's followers follow it.
  void UpdateConfig(int64_t now_us);
  void NoteConfigEntry(const EntryPB& e);
  bool LogUpToDate(uint64_t last_term, uint64_t last_index) const;

  void BecomeFollower(uint64_t term, PeerId leader, int64_t now_us);
  void BecomePreCandidate(int64_t now_us);
  void BecomeCandidate(int64_t now_us);
  void BecomeLeader(int64_t now_us);
  void ResetElectionDeadline(int64_t now_us);
  // forced: a leadership transfer's campaign (no pre-vote; votes marked forced).
  void Campaign(bool pre, int64_t now_us, bool forced = false);
  void SetTerm(uint64_t term);

  void StepVoteRequest(const MessagePB& m, int64_t now_us);
  void StepVoteResponse(const MessagePB& m, int64_t now_us);
  // The log keeps the entries of `append` (see Step). InvalidArgument, nothing
  // changed, if the append would rewrite a committed entry.
  Status StepAppend(const std::shared_ptr<const MessagePB>& append, int64_t now_us);
  void StepHeartbeat(const MessagePB& m, int64_t now_us);
  // InvalidArgument, nothing changed, if `m` acknowledges entries past this log.
  Status StepAppendResponse(const MessagePB& m, int64_t now_us);
  void StepHeartbeatResponse(const MessagePB& m, int64_t now_us);
  void HeardFromLeader(const MessagePB& m, int64_t now_us);

  // Leader: sends what `to` is owed, within flow control.
  void SendAppends(PeerId to);
  void BroadcastAppends();
  // An append of no entries after p.next - 1, carrying the commit index.
  void SendEmptyAppend(PeerId to, const Progress& p);
  // allow_quiesce: a periodic heartbeat, which quiesces followers when idle.
  void BroadcastHeartbeats(int64_t now_us, bool allow_quiesce = false);
  void NoteRoundAck(PeerId from, uint64_t round);
  void MaybeCommit();
  void ReleaseReads();
  // Whether a configuration entry was appended or truncated away (`*config_changed`);
  // InvalidArgument, nothing changed, if an entry conflicts with a committed one.
  Status AppendEntriesToLog(const std::shared_ptr<const MessagePB>& append, bool* config_changed);
  // Sets the commit index (never backwards, never past what may be applied here).
  void CommitTo(uint64_t index);
  void Send(MessagePB m);
  // IllegalState naming the known leader, for calls only a leader takes.
  Status NotLeader() const;
  void MaybeSendTimeoutNow(PeerId to);
  // Leader: whether it may quiesce (see the file comment).
  bool Idle() const;
  // Leader: something happened; heartbeat and count followers again.
  void WakeLeader(int64_t now_us);

  RaftOptions opts_;
  std::mt19937_64 rng_;

  // Persistent state (mirrored by what the driver persisted, once Advance()d).
  uint64_t term_ = 0;
  PeerId vote_ = kNoPeer;
  uint64_t snap_index_ = 0;  // entries up to here are compacted away
  uint64_t snap_term_ = 0;
  std::vector<EntryPtr> entries_;  // entries_[i] has index snap_index_ + i + 1
  ConfigPB snap_config_;                  // in effect at snap_index_
  std::map<uint64_t, ConfigPB> configs_;  // configuration entries in entries_, by index
  ConfigPB config_;                       // the newest of those, or snap_config_

  // The driver has durable entries up to persisted_; entries from unstable_ on have
  // not been handed to it; truncate_from_ is owed in the next Ready.
  uint64_t persisted_ = 0;
  uint64_t unstable_ = 1;
  std::optional<uint64_t> truncate_from_;
  HardStatePB last_hard_state_;

  RaftRole role_ = RaftRole::kFollower;
  PeerId leader_ = kNoPeer;
  uint64_t commit_ = 0;
  uint64_t leader_commit_ = 0;   // follower: the newest commit index a leader sent
  uint64_t applied_handed_ = 0;  // committed entries handed to the driver up to here

  int64_t election_deadline_us_ = 0;
  int64_t last_leader_contact_us_ = INT64_MIN / 2;  // follower: when it last heard a leader
  std::map<PeerId, bool> votes_;                    // candidate: who answered, granted?
  int64_t max_voter_lease_remaining_us_ = 0;

  // Leader state.
  std::map<PeerId, Progress> progress_;
  uint64_t round_ = 0;                         // the current heartbeat round
  uint64_t majority_round_ = 0;                // the newest round a majority answered
  std::map<uint64_t, int64_t> round_sent_us_;  // send time of each recent round
  int64_t next_heartbeat_us_ = 0;
  int64_t check_quorum_deadline_us_ = 0;
  int64_t lease_expiry_us_ = 0;  // lease valid while now < this
  int64_t lease_not_before_us_ = 0;
  uint64_t term_start_index_ = 0;  // the no-op of this term
  struct PendingRead {
    uint64_t request_id;
    uint64_t index;
    uint64_t round;  // released when a majority answered this round
  };
  std::deque<PendingRead> pending_reads_;
  PeerId transfer_to_ = kNoPeer;  // a leadership transfer in progress, to this voter
  bool lease_given_up_ = false;   // this term sent MSG_TIMEOUT_NOW: no more leases
  int64_t transfer_deadline_us_ = 0;

  bool quiesced_ = false;
  uint64_t quiesce_round_ = 0;  // leader: the first quiesce heartbeat of this idle spell
  uint64_t quiet_round_ = 0;    // follower: the round of the heartbeat that quiesced it

  bool appends_pending_ = false;  // leader: proposals not yet sent (see Propose)
  std::vector<MessagePB> msgs_;
  std::vector<ReadState> reads_;
  std::vector<SnapshotRequest> snapshots_;
  std::vector<FetchRequest> fetches_;
};

}  // namespace nyala::consensus
