#include "consensus/raft.h"

#include <glog/logging.h>

#include <algorithm>
#include <set>

namespace nyala::consensus {

namespace {

int64_t EntryBytes(const EntryPB& e) { return int64_t(e.data().size()) + 24; }

}  // namespace

const char* RaftRoleName(RaftRole role) {
  switch (role) {
    case RaftRole::kFollower:
      return "follower";
    case RaftRole::kPreCandidate:
      return "pre-candidate";
    case RaftRole::kCandidate:
      return "candidate";
    case RaftRole::kLeader:
      return "leader";
  }
  return "?";
}

Status RaftOptions::Validate() const {
  if (id == kNoPeer) return Status::InvalidArgument("raft: the node id must not be 0");
  std::set<PeerId> seen;
  for (PeerId v : voters) {
    if (v == kNoPeer) return Status::InvalidArgument("raft: a voter id is 0");
    if (!seen.insert(v).second) {
      return Status::InvalidArgument("raft: voter " + std::to_string(v) + " listed twice");
    }
  }
  if (!seen.count(id)) {
    return Status::InvalidArgument("raft: node " + std::to_string(id) + " is not a voter");
  }
  if (heartbeat_interval_us <= 0 || heartbeat_interval_us >= election_timeout_min_us) {
    return Status::InvalidArgument(
        "raft: the heartbeat interval must be positive and shorter "
        "than the minimum election timeout");
  }
  if (max_clock_drift < 0 || max_clock_drift >= 0.5) {
    return Status::InvalidArgument("raft: max_clock_drift must be in [0, 0.5)");
  }
  if (double(lease_us) * (1 + max_clock_drift) >=
      double(election_timeout_min_us) * (1 - max_clock_drift)) {
    return Status::InvalidArgument(
        "raft: lease_us * (1 + max_clock_drift) must be below election_timeout_min_us * "
        "(1 - max_clock_drift), or two leaders could hold a lease at once");
  }
  if (max_inflight_msgs <= 0 || max_inflight_bytes <= 0 || max_msg_bytes <= 0) {
    return Status::InvalidArgument("raft: flow-control limits must be positive");
  }
  return Status::OK();
}

Raft::Raft(RaftOptions options, const RaftPersistentState& state, int64_t now_us)
    : opts_(std::move(options)),
      rng_(opts_.random_seed * 0x9E3779B97F4A7C15ULL + opts_.id),
      term_(state.hard_state.term()),
      vote_(state.hard_state.vote()),
      snap_index_(state.snapshot_index),
      snap_term_(state.snapshot_term),
      entries_(state.entries) {
  CHECK_OK(opts_.Validate());
  for (size_t i = 0; i < entries_.size(); i++) {
    CHECK_EQ(entries_[i].index(), snap_index_ + i + 1);
  }
  persisted_ = LastIndex();
  unstable_ = LastIndex() + 1;
  // Applied entries were committed and durable before they were applied, even if the
  // hard state that carried the commit index did not reach the disk.
  CHECK_LE(state.applied, LastIndex()) << "node " << opts_.id << ": applied past its log";
  CHECK_GE(state.applied, snap_index_) << "node " << opts_.id << ": compacted past applied";
  commit_ = std::min<uint64_t>(std::max(state.hard_state.commit(), state.applied), LastIndex());
  applied_handed_ = state.applied;
  last_hard_state_ = state.hard_state;
  // A restarted node may have promised a leader, before it crashed, not to vote for
  // anyone else for a while; it no longer knows when, so it keeps the promise anew.
  last_leader_contact_us_ = now_us;
  ResetElectionDeadline(now_us);
}

bool Raft::IsVoter(PeerId id) const {
  return std::find(opts_.voters.begin(), opts_.voters.end(), id) != opts_.voters.end();
}

uint64_t Raft::TermAt(uint64_t index) const {
  if (index == snap_index_) return snap_term_;
  if (index < snap_index_ || index > LastIndex()) return 0;
  return Entry(index).term();
}

bool Raft::LogUpToDate(uint64_t last_term, uint64_t last_index) const {
  return last_term > LastTerm() || (last_term == LastTerm() && last_index >= LastIndex());
}

bool Raft::HasLease(int64_t now_us) const {
  return role_ == RaftRole::kLeader && now_us >= lease_not_before_us_ && now_us < lease_expiry_us_;
}

std::string Raft::ToString() const {
  return "node " + std::to_string(opts_.id) + " " + RaftRoleName(role_) + " term " +
         std::to_string(term_) + " leader " + std::to_string(leader_) + " last " +
         std::to_string(LastIndex()) + "/" + std::to_string(LastTerm()) + " commit " +
         std::to_string(commit_) + " persisted " + std::to_string(persisted_);
}

// Roles ------------------------------------------------------------------------

void Raft::ResetElectionDeadline(int64_t now_us) {
  std::uniform_int_distribution<int64_t> jitter(0, opts_.election_timeout_min_us - 1);
  election_deadline_us_ = now_us + opts_.election_timeout_min_us + jitter(rng_);
}

void Raft::SetTerm(uint64_t term) {
  if (term == term_) return;
  DCHECK_GT(term, term_);
  term_ = term;
  vote_ = kNoPeer;
}

void Raft::BecomeFollower(uint64_t term, PeerId leader, int64_t now_us) {
  const bool was_leader = role_ == RaftRole::kLeader;
  SetTerm(term);
  role_ = RaftRole::kFollower;
  leader_ = leader;
  progress_.clear();
  round_sent_us_.clear();
  pending_reads_.clear();
  lease_expiry_us_ = 0;
  votes_.clear();
  transfer_to_ = kNoPeer;
  if (was_leader) last_leader_contact_us_ = now_us;
  ResetElectionDeadline(now_us);
}

void Raft::BecomePreCandidate(int64_t now_us) {
  role_ = RaftRole::kPreCandidate;
  leader_ = kNoPeer;
  votes_.clear();
  votes_[opts_.id] = true;
  ResetElectionDeadline(now_us);
}

void Raft::BecomeCandidate(int64_t now_us) {
  SetTerm(term_ + 1);
  vote_ = opts_.id;
  role_ = RaftRole::kCandidate;
  leader_ = kNoPeer;
  votes_.clear();
  votes_[opts_.id] = true;
  max_voter_lease_remaining_us_ = 0;
  ResetElectionDeadline(now_us);
}

void Raft::BecomeLeader(int64_t now_us) {
  role_ = RaftRole::kLeader;
  transfer_to_ = kNoPeer;
  lease_given_up_ = false;
  leader_ = opts_.id;
  votes_.clear();
  progress_.clear();
  for (PeerId v : opts_.voters) {
    if (v == opts_.id) continue;
    Progress& p = progress_[v];
    p.next = LastIndex() + 1;
  }
  EntryPB noop;
  noop.set_term(term_);
  noop.set_index(LastIndex() + 1);
  noop.set_type(ENTRY_NOOP);
  entries_.push_back(std::move(noop));
  term_start_index_ = LastIndex();
  // What the voters still owed the previous leader, on their clocks; ours may run
  // slower or faster by the drift bound either way.
  const double scale = (1 + opts_.max_clock_drift) / (1 - opts_.max_clock_drift);
  lease_not_before_us_ = now_us + int64_t(double(max_voter_lease_remaining_us_) * scale) + 1;
  lease_expiry_us_ = 0;
  round_ = 0;
  round_sent_us_.clear();
  check_quorum_deadline_us_ = now_us + opts_.election_timeout_min_us;
  BroadcastHeartbeats(now_us);  // opens round 1; the appends below carry it
  BroadcastAppends();
  if (opts_.voters.size() == 1) {
    NoteRoundAck(opts_.id, round_);
    MaybeCommit();
  }
}

void Raft::Campaign(bool pre, int64_t now_us, bool forced) {
  // A forced campaign breaks this node's own promise to the old leader too: count
  // what it still owed with what its voters report.
  const int64_t owed = last_leader_contact_us_ + opts_.election_timeout_min_us - now_us;
  if (pre) {
    BecomePreCandidate(now_us);
  } else {
    BecomeCandidate(now_us);
  }
  if (forced) max_voter_lease_remaining_us_ = std::max<int64_t>(0, owed);
  if (votes_.size() >= Quorum()) {  // a group of one
    if (pre) {
      Campaign(false, now_us);
    } else {
      BecomeLeader(now_us);
    }
    return;
  }
  for (PeerId v : opts_.voters) {
    if (v == opts_.id) continue;
    MessagePB m;
    m.set_type(pre ? MSG_PRE_VOTE : MSG_VOTE);
    m.set_to(v);
    m.set_term(pre ? term_ + 1 : term_);
    m.set_log_term(LastTerm());
    m.set_index(LastIndex());
    m.set_forced(forced);
    Send(std::move(m));
  }
}

// Time -------------------------------------------------------------------------

void Raft::Tick(int64_t now_us) {
  if (role_ == RaftRole::kLeader) {
    if (transfer_to_ != kNoPeer && now_us >= transfer_deadline_us_) {
      VLOG(1) << ToString() << ": leadership transfer to node " << transfer_to_ << " timed out";
      transfer_to_ = kNoPeer;
    }
    if (now_us >= next_heartbeat_us_) BroadcastHeartbeats(now_us);
    if (opts_.check_quorum && now_us >= check_quorum_deadline_us_) {
      size_t active = 1;
      for (auto& [id, p] : progress_) {
        if (p.recently_active) active++;
        p.recently_active = false;
      }
      if (active < Quorum()) {
        VLOG(1) << ToString() << ": heard from " << active << " of " << opts_.voters.size()
                << " voters in an election timeout; stepping down";
        BecomeFollower(term_, kNoPeer, now_us);
        return;
      }
      check_quorum_deadline_us_ = now_us + opts_.election_timeout_min_us;
    }
    return;
  }
  if (now_us >= election_deadline_us_) Campaign(opts_.pre_vote, now_us);
}

// Messages ---------------------------------------------------------------------

void Raft::Send(MessagePB m) {
  m.set_from(opts_.id);
  if (m.term() == 0) m.set_term(term_);
  msgs_.push_back(std::move(m));
}

Status Raft::Step(const MessagePB& m, int64_t now_us) {
  if (m.to() != opts_.id) {
    return Status::InvalidArgument("raft: message to node " + std::to_string(m.to()) +
                                   " stepped into node " + std::to_string(opts_.id));
  }
  if (!IsVoter(m.from()) || m.from() == opts_.id) {
    return Status::InvalidArgument("raft: message from " + std::to_string(m.from()) +
                                   ", not a peer of node " + std::to_string(opts_.id));
  }
  const bool sticky = role_ == RaftRole::kLeader ||
                      now_us - last_leader_contact_us_ < opts_.election_timeout_min_us;
  if (m.term() > term_) {
    switch (m.type()) {
      case MSG_PRE_VOTE:
        break;  // asks about term + 1; changes nothing here
      case MSG_PRE_VOTE_RESP:
        if (!m.reject()) break;  // a grant carries the term asked about
        BecomeFollower(m.term(), kNoPeer, now_us);
        break;
      case MSG_VOTE:
        // Leader stickiness: while this node may have promised a leader not to vote,
        // a vote request does not even move its term (thesis §4.2.3).
        if (sticky && !m.forced()) return Status::OK();
        BecomeFollower(m.term(), kNoPeer, now_us);
        break;
      case MSG_APPEND:
      case MSG_HEARTBEAT:
        BecomeFollower(m.term(), m.from(), now_us);
        break;
      default:
        BecomeFollower(m.term(), kNoPeer, now_us);
        break;
    }
  } else if (m.term() < term_) {
    // A deposed leader, or a pre-candidate behind on terms, learns the current term.
    if (m.type() == MSG_APPEND || m.type() == MSG_HEARTBEAT) {
      MessagePB r;
      r.set_type(MSG_APPEND_RESP);
      r.set_to(m.from());
      r.set_reject(true);
      Send(std::move(r));
    } else if (m.type() == MSG_PRE_VOTE) {
      MessagePB r;
      r.set_type(MSG_PRE_VOTE_RESP);
      r.set_to(m.from());
      r.set_reject(true);
      Send(std::move(r));
    }
    return Status::OK();
  }

  switch (m.type()) {
    case MSG_PRE_VOTE:
    case MSG_VOTE:
      StepVoteRequest(m, now_us);
      break;
    case MSG_PRE_VOTE_RESP:
    case MSG_VOTE_RESP:
      StepVoteResponse(m, now_us);
      break;
    case MSG_APPEND:
      StepAppend(m, now_us);
      break;
    case MSG_HEARTBEAT:
      StepHeartbeat(m, now_us);
      break;
    case MSG_APPEND_RESP:
      if (role_ == RaftRole::kLeader) StepAppendResponse(m, now_us);
      break;
    case MSG_HEARTBEAT_RESP:
      if (role_ == RaftRole::kLeader) StepHeartbeatResponse(m, now_us);
      break;
    case MSG_TIMEOUT_NOW:
      // The leader of this term hands over: campaign at once, no pre-vote.
      if (role_ == RaftRole::kFollower && m.from() == leader_) {
        VLOG(1) << ToString() << ": leadership transferred by node " << m.from();
        Campaign(/*pre=*/false, now_us, /*forced=*/true);
      }
      break;
    default:
      return Status::InvalidArgument("raft: unknown message type " + std::to_string(m.type()));
  }
  return Status::OK();
}

void Raft::StepVoteRequest(const MessagePB& m, int64_t now_us) {
  const bool pre = m.type() == MSG_PRE_VOTE;
  const bool sticky =
      !m.forced() && (role_ == RaftRole::kLeader ||
                      now_us - last_leader_contact_us_ < opts_.election_timeout_min_us);
  const bool can_vote =
      vote_ == m.from() || (vote_ == kNoPeer && leader_ == kNoPeer) || (pre && m.term() > term_);
  MessagePB r;
  r.set_type(pre ? MSG_PRE_VOTE_RESP : MSG_VOTE_RESP);
  r.set_to(m.from());
  if (can_vote && !sticky && LogUpToDate(m.log_term(), m.index())) {
    r.set_term(m.term());
    if (!pre) {
      vote_ = m.from();
      ResetElectionDeadline(now_us);
    }
    if (m.forced()) {
      // What this node still owes the leader it last heard from (or was): the new
      // leader waits it out before it claims a lease.
      const int64_t owed = last_leader_contact_us_ + opts_.election_timeout_min_us - now_us;
      r.set_lease_remaining_us(uint64_t(std::max<int64_t>(0, owed)));
    }
  } else {
    r.set_term(term_);
    r.set_reject(true);
  }
  Send(std::move(r));
}

void Raft::StepVoteResponse(const MessagePB& m, int64_t now_us) {
  const bool pre = m.type() == MSG_PRE_VOTE_RESP;
  if (pre ? role_ != RaftRole::kPreCandidate : role_ != RaftRole::kCandidate) return;
  if (pre && !m.reject() && m.term() != term_ + 1) return;  // an answer to an older round
  votes_[m.from()] = !m.reject();
  if (!m.reject()) {
    max_voter_lease_remaining_us_ =
        std::max<int64_t>(max_voter_lease_remaining_us_, int64_t(m.lease_remaining_us()));
  }
  size_t granted = 0;
  for (auto& [id, g] : votes_) granted += g;
  if (granted >= Quorum()) {
    if (pre) {
      Campaign(false, now_us);
    } else {
      BecomeLeader(now_us);
    }
  } else if (votes_.size() - granted >= Quorum()) {
    BecomeFollower(term_, kNoPeer, now_us);
  }
}

void Raft::HeardFromLeader(const MessagePB& m, int64_t now_us) {
  if (role_ != RaftRole::kFollower) BecomeFollower(term_, m.from(), now_us);
  leader_ = m.from();
  last_leader_contact_us_ = now_us;
  ResetElectionDeadline(now_us);
}

void Raft::StepAppend(const MessagePB& m, int64_t now_us) {
  HeardFromLeader(m, now_us);
  MessagePB r;
  r.set_type(MSG_APPEND_RESP);
  r.set_to(m.from());
  r.set_round(m.round());
  if (m.index() < commit_) {
    // Everything up to the commit index matches the leader's log already.
    r.set_index(commit_);
    Send(std::move(r));
    return;
  }
  if (m.index() > LastIndex() || TermAt(m.index()) != m.log_term()) {
    r.set_reject(true);
    r.set_index(m.index());
    if (m.index() > LastIndex()) {
      r.set_reject_hint(LastIndex() + 1);
    } else {
      // Skip back over the whole conflicting term, but not into the committed prefix.
      const uint64_t conflict_term = TermAt(m.index());
      uint64_t first = m.index();
      while (first - 1 > commit_ && TermAt(first - 1) == conflict_term) first--;
      r.set_reject_hint(first);
      r.set_hint_term(conflict_term);
    }
    Send(std::move(r));
    return;
  }
  AppendEntriesToLog(m);
  const uint64_t match = m.index() + uint64_t(m.entries_size());
  CommitTo(std::min<uint64_t>(m.commit(), match));
  r.set_index(match);
  Send(std::move(r));
}

void Raft::AppendEntriesToLog(const MessagePB& m) {
  for (const EntryPB& e : m.entries()) {
    if (e.index() <= snap_index_) continue;  // in this node's snapshot already
    if (e.index() <= LastIndex()) {
      if (TermAt(e.index()) == e.term()) continue;
      CHECK_GT(e.index(), commit_) << ToString() << ": the leader overwrites a committed entry";
      entries_.resize(e.index() - snap_index_ - 1);
      truncate_from_ = std::min(truncate_from_.value_or(e.index()), e.index());
      unstable_ = std::min(unstable_, e.index());
      persisted_ = std::min(persisted_, e.index() - 1);
    }
    CHECK_EQ(e.index(), LastIndex() + 1);
    entries_.push_back(e);
  }
}

void Raft::StepHeartbeat(const MessagePB& m, int64_t now_us) {
  HeardFromLeader(m, now_us);
  CommitTo(std::min<uint64_t>(m.commit(), LastIndex()));
  MessagePB r;
  r.set_type(MSG_HEARTBEAT_RESP);
  r.set_to(m.from());
  r.set_round(m.round());
  Send(std::move(r));
}

void Raft::CommitTo(uint64_t index) {
  if (index > commit_) commit_ = std::min(index, LastIndex());
}

// Leader -----------------------------------------------------------------------

void Raft::BroadcastHeartbeats(int64_t now_us) {
  round_++;
  round_sent_us_[round_] = now_us;
  next_heartbeat_us_ = now_us + opts_.heartbeat_interval_us;
  for (auto& [id, p] : progress_) {
    MessagePB m;
    m.set_type(MSG_HEARTBEAT);
    m.set_to(id);
    m.set_commit(std::min(p.match, commit_));
    m.set_round(round_);
    Send(std::move(m));
  }
}

void Raft::BroadcastAppends() {
  for (auto& [id, p] : progress_) SendAppends(id);
}

void Raft::SendAppends(PeerId to) {
  Progress& p = progress_[to];
  if (p.state == Progress::State::kSnapshot) return;  // waiting for ReportSnapshot
  if (p.next - 1 < snap_index_) {
    // The entries it needs are compacted away: it needs a copy of the state machine.
    p.state = Progress::State::kSnapshot;
    p.inflight.clear();
    p.inflight_bytes = 0;
    snapshots_.push_back({to, snap_index_, snap_term_});
    return;
  }
  auto send_from = [&](uint64_t next, bool allow_empty) -> std::pair<uint64_t, int64_t> {
    MessagePB m;
    m.set_type(MSG_APPEND);
    m.set_to(to);
    m.set_index(next - 1);
    m.set_log_term(TermAt(next - 1));
    m.set_commit(commit_);
    m.set_round(round_);
    int64_t bytes = 0;
    for (uint64_t i = next; i <= LastIndex(); i++) {
      const EntryPB& e = Entry(i);
      if (m.entries_size() > 0 && bytes + EntryBytes(e) > opts_.max_msg_bytes) break;
      bytes += EntryBytes(e);
      *m.add_entries() = e;
    }
    if (m.entries_size() == 0 && !allow_empty) return {0, 0};
    const uint64_t last = next - 1 + uint64_t(m.entries_size());
    Send(std::move(m));
    return {last, bytes};
  };
  if (p.state == Progress::State::kProbe) {
    if (p.probe_sent) return;
    send_from(p.next, /*allow_empty=*/true);
    p.probe_sent = true;
    return;
  }
  while (p.next <= LastIndex() && int(p.inflight.size()) < opts_.max_inflight_msgs &&
         p.inflight_bytes < opts_.max_inflight_bytes) {
    auto [last, bytes] = send_from(p.next, /*allow_empty=*/false);
    p.inflight.emplace_back(last, bytes);
    p.inflight_bytes += bytes;
    p.next = last + 1;
  }
}

void Raft::StepAppendResponse(const MessagePB& m, int64_t now_us) {
  auto it = progress_.find(m.from());
  if (it == progress_.end()) return;
  Progress& p = it->second;
  p.recently_active = true;
  NoteRoundAck(m.from(), m.round());
  if (p.state == Progress::State::kSnapshot) {
    // Answers to appends sent before the copy began; only the match may move.
    if (!m.reject() && m.index() > p.match) p.match = m.index();
    MaybeCommit();
    return;
  }
  if (m.reject()) {
    if (m.index() == 0 && m.reject_hint() == 0) return;  // a stale-term answer
    // Stale rejections (of an append already superseded) change nothing.
    if (p.state == Progress::State::kReplicate ? m.index() < p.match + 1
                                               : m.index() + 1 != p.next) {
      return;
    }
    uint64_t next = m.reject_hint();
    if (m.hint_term() != 0) {
      // If this log has entries of the follower's conflicting term, the follower may
      // hold all of them: retry right after our last one.
      for (uint64_t i = std::min<uint64_t>(m.index(), LastIndex()); i > 0; i--) {
        if (TermAt(i) == m.hint_term()) {
          next = std::max(next, i + 1);
          break;
        }
        if (TermAt(i) < m.hint_term()) break;
      }
    }
    next = std::min<uint64_t>(next, m.index());  // strictly back from the rejected one
    p.next = std::max<uint64_t>(next, p.match + 1);
    p.state = Progress::State::kProbe;
    p.probe_sent = false;
    p.inflight.clear();
    p.inflight_bytes = 0;
    SendAppends(m.from());
    return;
  }
  if (m.index() > p.match) {
    p.match = m.index();
    if (p.next <= p.match) p.next = p.match + 1;
  }
  if (p.state == Progress::State::kProbe) {
    // The follower's log matches ours up to match: stream from there.
    p.state = Progress::State::kReplicate;
    p.next = p.match + 1;
    p.inflight.clear();
    p.inflight_bytes = 0;
    p.probe_sent = false;
  }
  while (!p.inflight.empty() && p.inflight.front().first <= p.match) {
    p.inflight_bytes -= p.inflight.front().second;
    p.inflight.pop_front();
  }
  MaybeCommit();
  SendAppends(m.from());
  if (transfer_to_ == m.from()) MaybeSendTimeoutNow(m.from());
}

void Raft::StepHeartbeatResponse(const MessagePB& m, int64_t now_us) {
  auto it = progress_.find(m.from());
  if (it == progress_.end()) return;
  Progress& p = it->second;
  p.recently_active = true;
  NoteRoundAck(m.from(), m.round());
  if (p.match >= LastIndex() || p.state == Progress::State::kSnapshot) return;
  // The follower is behind. Appends may have been lost (or it restarted): in probe,
  // probe again; in replicate, make room for one more append if the window is full,
  // and if everything was sent already, send an empty append after the last one, which
  // the follower rejects if it lacks what came before (and so falls back to probing).
  if (p.state == Progress::State::kProbe) {
    p.probe_sent = false;
  } else {
    if (int(p.inflight.size()) >= opts_.max_inflight_msgs) {
      p.inflight_bytes -= p.inflight.front().second;
      p.inflight.pop_front();
    }
    if (p.next > LastIndex()) SendEmptyAppend(m.from(), p);
  }
  SendAppends(m.from());
}

void Raft::SendEmptyAppend(PeerId to, const Progress& p) {
  MessagePB m;
  m.set_type(MSG_APPEND);
  m.set_to(to);
  m.set_index(p.next - 1);
  m.set_log_term(TermAt(p.next - 1));
  m.set_commit(commit_);
  m.set_round(round_);
  Send(std::move(m));
}

void Raft::NoteRoundAck(PeerId from, uint64_t round) {
  if (from != opts_.id) {
    Progress& p = progress_[from];
    if (round <= p.acked_round) return;
    p.acked_round = round;
  }
  // The newest round a majority (this node counts, with the current round) answered.
  std::vector<uint64_t> rounds = {round_};
  for (auto& [id, p] : progress_) rounds.push_back(p.acked_round);
  std::sort(rounds.rbegin(), rounds.rend());
  const uint64_t majority_round = rounds[Quorum() - 1];
  auto sent = round_sent_us_.find(majority_round);
  if (sent == round_sent_us_.end()) return;  // round 0, or pruned: nothing new
  if (!lease_given_up_) {
    lease_expiry_us_ = std::max(lease_expiry_us_, sent->second + opts_.lease_us);
  }
  round_sent_us_.erase(round_sent_us_.begin(), sent);
  while (!pending_reads_.empty() && pending_reads_.front().round <= majority_round) {
    reads_.push_back({pending_reads_.front().request_id, pending_reads_.front().index});
    pending_reads_.pop_front();
  }
}

void Raft::MaybeCommit() {
  std::vector<uint64_t> matches = {persisted_};
  for (auto& [id, p] : progress_) matches.push_back(p.match);
  std::sort(matches.rbegin(), matches.rend());
  const uint64_t q = matches[Quorum() - 1];
  // Only an entry of this term is committed by counting replicas (thesis §3.6.2).
  if (q > commit_ && TermAt(q) == term_) {
    commit_ = q;
    // Tell followers that have nothing else coming.
    for (auto& [id, p] : progress_) {
      if (p.state == Progress::State::kReplicate && p.next > LastIndex() &&
          int(p.inflight.size()) < opts_.max_inflight_msgs) {
        SendEmptyAppend(id, p);
      }
    }
  }
}

// Proposals, reads and transfers ----------------------------------------------

Status Raft::NotLeader() const {
  return Status::IllegalState(
      leader_ == kNoPeer ? std::string("not the leader, and no leader is known")
                         : "not the leader; the leader is node " + std::to_string(leader_));
}

Status Raft::TransferLeadership(PeerId to, int64_t now_us) {
  if (role_ != RaftRole::kLeader) return Status::IllegalState("not the leader");
  if (to == opts_.id || !IsVoter(to)) {
    return Status::InvalidArgument("cannot transfer leadership to node " + std::to_string(to) +
                                   ": not another voter of the group");
  }
  transfer_to_ = to;
  transfer_deadline_us_ = now_us + opts_.election_timeout_min_us;
  MaybeSendTimeoutNow(to);
  SendAppends(to);
  return Status::OK();
}

void Raft::MaybeSendTimeoutNow(PeerId to) {
  if (progress_[to].match != LastIndex()) return;  // bring it up to date first
  // The target may now win without waiting for anyone's promise to this leader to
  // run out, and commit writes this node would not see: no lease reads from here on
  // in this term, even if the transfer times out (the message may still arrive).
  lease_given_up_ = true;
  lease_expiry_us_ = 0;
  MessagePB m;
  m.set_type(MSG_TIMEOUT_NOW);
  m.set_to(to);
  Send(std::move(m));
}

Result<uint64_t> Raft::Propose(std::string data, int64_t /*now_us*/) {
  if (role_ != RaftRole::kLeader) {
    return NotLeader();
  }
  if (transfer_to_ != kNoPeer) {
    return Status::IllegalState("transferring leadership to node " + std::to_string(transfer_to_) +
                                "; retry on the new leader");
  }
  EntryPB e;
  e.set_term(term_);
  e.set_index(LastIndex() + 1);
  e.set_type(ENTRY_NORMAL);
  e.set_data(std::move(data));
  entries_.push_back(std::move(e));
  BroadcastAppends();
  if (opts_.voters.size() == 1) MaybeCommit();
  return LastIndex();
}

Status Raft::ReadIndex(uint64_t request_id, int64_t now_us) {
  if (role_ != RaftRole::kLeader) {
    return NotLeader();
  }
  // Everything committed before the read began is at or below this: the commit index,
  // or this term's no-op, which follows every entry an earlier leader committed.
  const uint64_t index = std::max(commit_, term_start_index_);
  if (HasLease(now_us)) {
    reads_.push_back({request_id, index});
    return Status::OK();
  }
  BroadcastHeartbeats(now_us);
  pending_reads_.push_back({request_id, index, round_});
  if (opts_.voters.size() == 1) NoteRoundAck(opts_.id, round_);
  return Status::OK();
}

// Compaction and snapshots -----------------------------------------------------

Status Raft::Compact(uint64_t index) {
  if (index <= snap_index_) return Status::OK();
  if (index > applied_handed_ || index > persisted_) {
    return Status::InvalidArgument("raft: cannot compact to " + std::to_string(index) +
                                   ": applied " + std::to_string(applied_handed_) + ", persisted " +
                                   std::to_string(persisted_));
  }
  const uint64_t term = TermAt(index);
  entries_.erase(entries_.begin(), entries_.begin() + int64_t(index - snap_index_));
  snap_index_ = index;
  snap_term_ = term;
  return Status::OK();
}

void Raft::RestoreSnapshot(uint64_t index, uint64_t term, int64_t /*now_us*/) {
  if (index <= commit_) return;  // older than what this node has
  if (TermAt(index) == term) {
    // The log goes on from the snapshot's entry: keep what follows it.
    entries_.erase(entries_.begin(), entries_.begin() + int64_t(index - snap_index_));
    persisted_ = std::max(persisted_, index);
    unstable_ = std::max(unstable_, index + 1);
  } else {
    // Another history: nothing of it is kept, persisted or owed to the driver.
    entries_.clear();
    persisted_ = index;
    unstable_ = index + 1;
  }
  snap_index_ = index;
  snap_term_ = term;
  if (truncate_from_ && *truncate_from_ <= index) truncate_from_.reset();
  commit_ = index;
  applied_handed_ = index;
}

void Raft::ReportSnapshot(PeerId peer, uint64_t index, bool ok) {
  if (role_ != RaftRole::kLeader) return;
  auto it = progress_.find(peer);
  if (it == progress_.end() || it->second.state != Progress::State::kSnapshot) return;
  Progress& p = it->second;
  if (ok) p.match = std::max(p.match, index);
  p.next = p.match + 1;
  p.state = Progress::State::kProbe;
  p.probe_sent = false;
  SendAppends(peer);
}

// Ready ------------------------------------------------------------------------

bool Raft::HasReady() const {
  return truncate_from_ || unstable_ <= LastIndex() || !msgs_.empty() || !reads_.empty() ||
         !snapshots_.empty() || std::min(commit_, persisted_) > applied_handed_ ||
         term_ != last_hard_state_.term() || vote_ != last_hard_state_.vote() ||
         commit_ != last_hard_state_.commit();
}

Ready Raft::TakeReady() {
  Ready rd;
  rd.truncate_from = truncate_from_;
  truncate_from_.reset();
  for (uint64_t i = std::max(unstable_, snap_index_ + 1); i <= LastIndex(); i++) {
    rd.entries.push_back(Entry(i));
  }
  unstable_ = LastIndex() + 1;
  if (term_ != last_hard_state_.term() || vote_ != last_hard_state_.vote() ||
      commit_ != last_hard_state_.commit()) {
    last_hard_state_.set_term(term_);
    last_hard_state_.set_vote(vote_);
    last_hard_state_.set_commit(commit_);
    rd.hard_state = last_hard_state_;
  }
  rd.messages.swap(msgs_);
  const uint64_t apply_to = std::min(commit_, persisted_);
  for (uint64_t i = applied_handed_ + 1; i <= apply_to; i++) {
    rd.committed.push_back(Entry(i));
  }
  applied_handed_ = std::max(applied_handed_, apply_to);
  rd.reads.swap(reads_);
  rd.snapshots.swap(snapshots_);
  return rd;
}

void Raft::Advance(const Ready& ready) {
  // The newest entry of the Ready that is still in the log, unchanged, is durable, and
  // so is everything before it.
  for (auto it = ready.entries.rbegin(); it != ready.entries.rend(); ++it) {
    if (TermAt(it->index()) == it->term()) {
      persisted_ = std::max(persisted_, it->index());
      break;
    }
  }
  if (role_ == RaftRole::kLeader) MaybeCommit();
}

}  // namespace nyala::consensus
