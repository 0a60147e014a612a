#include "consensus/raft.h"
#include "common/status.h"

#include <glog/logging.h>

#include <algorithm>
#include <array>
#include <functional>
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
  if (voters.empty()) return Status::InvalidArgument("raft: the group has no voter");
  std::set<PeerId> seen;
  for (const auto* list : {&voters, &learners}) {
    for (PeerId v : *list) {
      if (v == kNoPeer) return Status::InvalidArgument("raft: a member id is 0");
      if (!seen.insert(v).second) {
        return Status::InvalidArgument("raft: member " + std::to_string(v) + " listed twice");
      }
    }
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

void Raft::Followers(std::vector<FollowerProgress>* out) const {
  out->clear();
  if (role_ != RaftRole::kLeader) return;
  for (const auto& [id, p] : progress_) out->push_back({id, p.match, p.state});
}

Status ValidateConfig(const ConfigPB& config) {
  if (config.voters_size() == 0) return Status::InvalidArgument("a configuration without voters");
  std::set<PeerId> seen;
  for (const auto* list : {&config.voters(), &config.learners()}) {
    for (PeerId id : *list) {
      if (id == kNoPeer) return Status::InvalidArgument("a configuration with member 0");
      if (!seen.insert(id).second) {
        return Status::InvalidArgument("a configuration lists member " + std::to_string(id) +
                                       " twice");
      }
    }
  }
  return Status::OK();
}

namespace {

// Checks one entry of a log (from the wire or the disk): its type, and the
// configuration a configuration entry holds.
Status ValidateEntry(const EntryPB& e) {
  switch (e.type()) {
    case ENTRY_NORMAL:
    case ENTRY_NOOP:
      return Status::OK();
    case ENTRY_CONFIG: {
      ConfigPB c;
      if (!c.ParseFromString(e.data())) {
        return Status::InvalidArgument("configuration entry " + std::to_string(e.index()) +
                                       " does not parse");
      }
      return ValidateConfig(c).CloneAndPrepend("entry " + std::to_string(e.index()));
    }
    default:
      return Status::InvalidArgument("entry " + std::to_string(e.index()) + " has unknown type " +
                                     std::to_string(int(e.type())));
  }
}

// Checks that `entries` follow (prev_index, prev_term): indexes contiguous, terms not
// decreasing, each entry valid.
template <typename Entries>
Status ValidateRun(uint64_t prev_index, uint64_t prev_term, const Entries& entries) {
  if (prev_index > UINT64_MAX - uint64_t(entries.size())) {
    return Status::InvalidArgument("entry indexes overflow after " + std::to_string(prev_index));
  }
  uint64_t index = prev_index, term = prev_term;
  for (const EntryPB& e : entries) {
    if (e.index() != index + 1) {
      return Status::InvalidArgument("entry " + std::to_string(e.index()) + " follows entry " +
                                     std::to_string(index) + ": indexes must be contiguous");
    }
    if (e.term() < term) {
      return Status::InvalidArgument("entry " + std::to_string(e.index()) + " has term " +
                                     std::to_string(e.term()) + ", below term " +
                                     std::to_string(term) + " of the entry before it");
    }
    RETURN_NOT_OK(ValidateEntry(e));
    index = e.index();
    term = e.term();
  }
  return Status::OK();
}

}  // namespace

Status ValidateMessage(const MessagePB& m) {
  switch (m.type()) {
    case MSG_PRE_VOTE:
    case MSG_PRE_VOTE_RESP:
    case MSG_VOTE:
    case MSG_VOTE_RESP:
    case MSG_APPEND:
    case MSG_APPEND_RESP:
    case MSG_HEARTBEAT:
    case MSG_HEARTBEAT_RESP:
    case MSG_TIMEOUT_NOW:
      break;
    default:
      return Status::InvalidArgument("unknown message type " + std::to_string(int(m.type())));
  }
  if (m.type() != MSG_APPEND) {
    if (m.entries_size() != 0) {
      return Status::InvalidArgument(std::string(MessageTypePB_Name(m.type())) + " carries " +
                                     std::to_string(m.entries_size()) + " entries");
    }
    return Status::OK();
  }
  if (m.log_term() > m.term()) {
    return Status::InvalidArgument("an append of term " + std::to_string(m.term()) +
                                   " follows an entry of term " + std::to_string(m.log_term()));
  }
  RETURN_NOT_OK(ValidateRun(m.index(), m.log_term(), m.entries()));
  if (m.entries_size() > 0 && m.entries(m.entries_size() - 1).term() > m.term()) {
    return Status::InvalidArgument("an append of term " + std::to_string(m.term()) +
                                   " carries entries of term " +
                                   std::to_string(m.entries(m.entries_size() - 1).term()));
  }
  return Status::OK();
}

Status RaftPersistentState::Validate() const {
  if (snapshot_config) {
    RETURN_NOT_OK(ValidateConfig(*snapshot_config).CloneAndPrepend("the snapshot's configuration"));
  }
  Status s = ValidateRun(snapshot_index, snapshot_term, entries);
  if (!s.ok()) return Status::Corruption("the logged entries", s.message());
  const uint64_t last = snapshot_index + entries.size();
  if (applied > last) {
    return Status::Corruption("the state machine applied up to " + std::to_string(applied),
                              "but the log ends at " + std::to_string(last));
  }
  if (applied < snapshot_index) {
    return Status::Corruption("the state machine applied only up to " + std::to_string(applied),
                              "but the log starts after " + std::to_string(snapshot_index));
  }
  return Status::OK();
}

Raft::Raft(RaftOptions options, const RaftPersistentState& state, int64_t now_us)
    : opts_(std::move(options)),
      rng_(opts_.random_seed * 0x9E3779B97F4A7C15ULL + opts_.id),
      term_(state.hard_state.term()),
      vote_(state.hard_state.vote()),
      snap_index_(state.snapshot_index),
      snap_term_(state.snapshot_term) {
  DCHECK_OK(opts_.Validate());
  DCHECK_OK(state.Validate());
  if (state.snapshot_config) {
    snap_config_ = *state.snapshot_config;
  } else {
    for (PeerId v : opts_.voters) snap_config_.add_voters(v);
    for (PeerId l : opts_.learners) snap_config_.add_learners(l);
  }
  entries_.reserve(state.entries.size());
  for (const EntryPB& e : state.entries) {
    entries_.push_back(std::make_shared<const EntryPB>(e));
    NoteConfigEntry(e);
  }
  config_ = configs_.empty() ? snap_config_ : configs_.rbegin()->second;
  persisted_ = LastIndex();
  unstable_ = LastIndex() + 1;
  // Applied entries were committed and durable before they were applied, even if the
  // hard state that carried the commit index did not reach the disk.
  commit_ = std::min<uint64_t>(std::max(state.hard_state.commit(), state.applied), LastIndex());
  applied_handed_ = state.applied;
  last_hard_state_ = state.hard_state;
  // A restarted node may have promised a leader, before it crashed, not to vote for
  // anyone else for a while; it no longer knows when, so it keeps the promise anew.
  // A node still in term 0 never heard from a leader (it would have taken the term,
  // durably, before answering): a new group's replicas vote at once, so the replica
  // that campaigns on creation is elected without waiting an election timeout.
  if (state.hard_state.term() > 0) last_leader_contact_us_ = now_us;
  ResetElectionDeadline(now_us);
}

bool Raft::IsVoter(PeerId id) const {
  return std::find(config_.voters().begin(), config_.voters().end(), id) != config_.voters().end();
}

bool Raft::IsMember(PeerId id) const {
  return IsVoter(id) || std::find(config_.learners().begin(), config_.learners().end(), id) !=
                            config_.learners().end();
}

void Raft::NoteConfigEntry(const EntryPB& e) {
  if (e.type() != ENTRY_CONFIG) return;
  // ValidateMessage (from the wire) or RaftPersistentState::Validate (from the disk)
  // checked that it parses; a proposal is built here.
  ConfigPB c;
  c.ParseFromString(e.data());
  configs_[e.index()] = std::move(c);
}

ConfigPB Raft::ConfigAt(uint64_t index) const {
  auto it = configs_.upper_bound(index);
  if (it == configs_.begin()) return snap_config_;
  return std::prev(it)->second;
}

void Raft::UpdateConfig(int64_t now_us) {
  const ConfigPB& newest = configs_.empty() ? snap_config_ : configs_.rbegin()->second;
  if (newest.SerializeAsString() == config_.SerializeAsString()) return;
  config_ = newest;
  VLOG(1) << ToString() << ": configuration " << config_.ShortDebugString();
  if (role_ != RaftRole::kLeader) return;
  // Followers follow the configuration: new members are probed from the end of the
  // log, removed ones forgotten.
  for (auto it = progress_.begin(); it != progress_.end();) {
    it = IsMember(it->first) ? std::next(it) : progress_.erase(it);
  }
  for (const auto* list : {&config_.voters(), &config_.learners()}) {
    for (PeerId id : *list) {
      if (id == opts_.id || progress_.count(id)) continue;
      Progress& p = progress_[id];
      p.next = LastIndex() + 1;
      p.recently_active = true;  // give it an election timeout to answer
      SendAppends(id);
    }
  }
  if (transfer_to_ != kNoPeer && !IsVoter(transfer_to_)) transfer_to_ = kNoPeer;
  WakeLeader(now_us);
}

uint64_t Raft::TermAt(uint64_t index) const {
  if (index == snap_index_) return snap_term_;
  if (index < snap_index_ || index > LastIndex()) return 0;
  return Entry(index)->term();
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
  quiet_round_ = 0;  // rounds count per leader, and so per term
}

void Raft::BecomeFollower(uint64_t term, PeerId leader, int64_t now_us) {
  const bool was_leader = role_ == RaftRole::kLeader;
  SetTerm(term);
  role_ = RaftRole::kFollower;
  leader_ = leader;
  progress_.clear();
  appends_pending_ = false;
  round_sent_us_.clear();
  pending_reads_.clear();
  lease_expiry_us_ = 0;
  votes_.clear();
  transfer_to_ = kNoPeer;
  quiesced_ = false;
  quiesce_round_ = 0;
  if (was_leader) last_leader_contact_us_ = now_us;
  ResetElectionDeadline(now_us);
}

void Raft::BecomePreCandidate(int64_t now_us) {
  role_ = RaftRole::kPreCandidate;
  leader_ = kNoPeer;
  quiesced_ = false;
  votes_.clear();
  votes_[opts_.id] = true;
  ResetElectionDeadline(now_us);
}

void Raft::BecomeCandidate(int64_t now_us) {
  SetTerm(term_ + 1);
  vote_ = opts_.id;
  role_ = RaftRole::kCandidate;
  leader_ = kNoPeer;
  quiesced_ = false;
  votes_.clear();
  // Its own vote counts once it is durable (Advance): a node that led a term it could
  // forget in a crash might vote for another leader of that term after restarting.
  // Other voters answer only after that, but a lone voter needs nobody's answer.
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
  quiesced_ = false;
  quiesce_round_ = 0;
  for (const auto* list : {&config_.voters(), &config_.learners()}) {
    for (PeerId id : *list) {
      if (id == opts_.id) continue;
      progress_[id].next = LastIndex() + 1;
    }
  }
  auto noop = std::make_shared<EntryPB>();
  noop->set_term(term_);
  noop->set_index(LastIndex() + 1);
  noop->set_type(ENTRY_NOOP);
  entries_.push_back(std::move(noop));
  term_start_index_ = LastIndex();
  // What the voters still owed the previous leader, on their clocks; ours may run
  // slower or faster by the drift bound either way.
  const double scale = (1 + opts_.max_clock_drift) / (1 - opts_.max_clock_drift);
  lease_not_before_us_ = now_us + int64_t(double(max_voter_lease_remaining_us_) * scale) + 1;
  lease_expiry_us_ = 0;
  round_ = 0;
  majority_round_ = 0;
  round_sent_us_.clear();
  check_quorum_deadline_us_ = now_us + opts_.election_timeout_min_us;
  BroadcastHeartbeats(now_us);  // opens round 1; the appends below carry it
  BroadcastAppends();
  NoteRoundAck(opts_.id, round_);  // a group of one
  MaybeCommit();
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
  if (pre && CountVotes(true) >= Quorum()) {  // a group of one; it leads in Advance
    Campaign(false, now_us);
    return;
  }
  for (PeerId v : config_.voters()) {
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
  if (quiesced_) return;
  if (role_ == RaftRole::kLeader) {
    if (!IsVoter(opts_.id) && commit_ >= config_index()) {
      // The configuration that removed this leader is committed: hand over (thesis
      // §4.2.2); the voters elect a leader among themselves.
      VLOG(1) << ToString() << ": removed from the group; stepping down";
      BecomeFollower(term_, kNoPeer, now_us);
      return;
    }
    if (transfer_to_ != kNoPeer && now_us >= transfer_deadline_us_) {
      VLOG(1) << ToString() << ": leadership transfer to node " << transfer_to_ << " timed out";
      transfer_to_ = kNoPeer;
    }
    if (now_us >= next_heartbeat_us_) BroadcastHeartbeats(now_us, /*allow_quiesce=*/true);
    // A leader removing itself keeps leading until the change commits, even unheard:
    // the nodes that hold the change may all be outside the new configuration, and
    // only this leader brings its voters the entry they need to elect a successor.
    if (opts_.check_quorum && now_us >= check_quorum_deadline_us_ && IsVoter(opts_.id)) {
      // Voters that went quiet at this leader's word count as heard from.
      size_t active = 1;
      for (auto& [id, p] : progress_) {
        if ((p.recently_active || p.quiesced) && IsVoter(id)) active++;
        p.recently_active = false;
      }
      if (active < Quorum()) {
        VLOG(1) << ToString() << ": heard from " << active << " of " << config_.voters_size()
                << " voters in an election timeout; stepping down";
        BecomeFollower(term_, kNoPeer, now_us);
        return;
      }
      check_quorum_deadline_us_ = now_us + opts_.election_timeout_min_us;
    }
    return;
  }
  if (now_us < election_deadline_us_) return;
  if (MayCampaign()) {
    Campaign(opts_.pre_vote, now_us);
  } else {
    ResetElectionDeadline(now_us);  // learners and removed members do not campaign
  }
}

Status Raft::CampaignNow(int64_t now_us) {
  if (role_ == RaftRole::kLeader) return Status::OK();
  if (!MayCampaign()) return Status::IllegalState(ToString() + " is not a voter and may not campaign");
  quiesced_ = false;
  Campaign(/*pre=*/true, now_us);
  return Status::OK();
}

bool Raft::MayCampaign() const {
  if (IsVoter(opts_.id)) return true;
  // A voter whose removal is not committed yet still campaigns (thesis §4.2.2): it may
  // be the only one holding the change that the new configuration's voters need.
  // Its votes come from those voters; it does not count itself.
  const uint64_t at = config_index();
  if (at == 0 || at <= commit_) return false;
  const ConfigPB before = ConfigAt(at - 1);
  return std::find(before.voters().begin(), before.voters().end(), opts_.id) !=
         before.voters().end();
}

size_t Raft::CountVotes(bool granted) const {
  size_t n = 0;
  for (const auto& [id, g] : votes_) n += (g == granted && IsVoter(id));
  return n;
}

void Raft::WakeUp(int64_t now_us) {
  if (!quiesced_) return;
  if (role_ == RaftRole::kLeader) {
    WakeLeader(now_us);
    return;
  }
  quiesced_ = false;
  ResetElectionDeadline(now_us);
}

// Messages ---------------------------------------------------------------------

void Raft::Send(MessagePB m) {
  m.set_from(opts_.id);
  if (m.term() == 0) m.set_term(term_);
  msgs_.push_back(std::move(m));
}

Status Raft::Step(const MessagePB& m, int64_t now_us) {
  return Step(std::make_shared<const MessagePB>(m), now_us);
}

Status Raft::Step(std::shared_ptr<const MessagePB> shared, int64_t now_us) {
  const MessagePB& m = *shared;
  if (m.to() != opts_.id) {
    return Status::InvalidArgument("raft: message to node " + std::to_string(m.to()) +
                                   " stepped into node " + std::to_string(opts_.id));
  }
  if (m.from() == kNoPeer || m.from() == opts_.id) {
    return Status::InvalidArgument("raft: message from " + std::to_string(m.from()) +
                                   " stepped into node " + std::to_string(opts_.id));
  }
  RETURN_NOT_OK_PREPEND(ValidateMessage(m), "raft");
  // Vote requests are answered whatever this node's configuration says (thesis §4.1:
  // its configuration may be older than the candidate's). A removed replica cannot
  // disrupt: its log falls behind, so its pre-votes fail, and stickiness holds.
  if (quiesced_ && role_ != RaftRole::kLeader && m.from() == leader_ &&
      (m.type() == MSG_PRE_VOTE || m.type() == MSG_VOTE)) {
    // The leader this node went quiet for campaigns: it restarted and leads no more.
    quiesced_ = false;
    ResetElectionDeadline(now_us);
  }
  const bool sticky = role_ == RaftRole::kLeader || quiesced_ ||
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
      return StepAppend(shared, now_us);
    case MSG_HEARTBEAT:
      StepHeartbeat(m, now_us);
      break;
    case MSG_APPEND_RESP:
      if (role_ == RaftRole::kLeader) return StepAppendResponse(m, now_us);
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
      !m.forced() && (role_ == RaftRole::kLeader || quiesced_ ||
                      now_us - last_leader_contact_us_ < opts_.election_timeout_min_us);
  if (role_ == RaftRole::kLeader && quiesced_) {
    // A voter that does not hear from this leader (it restarted, or missed the quiesce
    // heartbeat): wake up and tell it.
    WakeLeader(now_us);
    BroadcastHeartbeats(now_us);
  }
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
  if (!IsVoter(m.from())) return;
  votes_[m.from()] = !m.reject();
  if (!m.reject()) {
    max_voter_lease_remaining_us_ =
        std::max<int64_t>(max_voter_lease_remaining_us_, int64_t(m.lease_remaining_us()));
  }
  const size_t granted = CountVotes(true);
  if (granted >= Quorum()) {
    if (pre) {
      Campaign(false, now_us);
    } else {
      BecomeLeader(now_us);
    }
  } else if (CountVotes(false) >= Quorum()) {
    BecomeFollower(term_, kNoPeer, now_us);
  }
}

void Raft::HeardFromLeader(const MessagePB& m, int64_t now_us) {
  if (role_ != RaftRole::kFollower) BecomeFollower(term_, m.from(), now_us);
  leader_ = m.from();
  last_leader_contact_us_ = now_us;
  // An append carries the leader's whole commit index; a heartbeat carries it apart.
  leader_commit_ = std::max<uint64_t>(leader_commit_,
                                      m.type() == MSG_HEARTBEAT ? m.leader_commit() : m.commit());
  // A message the leader sent before its quiesce heartbeat (the network reordered
  // them) does not wake this node: the leader sends nothing more until it wakes, and
  // everything it sends from then on carries a newer round.
  if (m.round() > quiet_round_) quiesced_ = false;
  ResetElectionDeadline(now_us);
}

Status Raft::StepAppend(const std::shared_ptr<const MessagePB>& append, int64_t now_us) {
  const MessagePB& m = *append;
  HeardFromLeader(m, now_us);
  MessagePB r;
  r.set_type(MSG_APPEND_RESP);
  r.set_to(m.from());
  r.set_round(m.round());
  if (m.index() < commit_) {
    // Everything up to the commit index matches the leader's log already.
    r.set_index(commit_);
    Send(std::move(r));
    return Status::OK();
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
    return Status::OK();
  }
  bool config_changed = false;
  RETURN_NOT_OK(AppendEntriesToLog(append, &config_changed));
  if (config_changed) UpdateConfig(now_us);
  const uint64_t match = m.index() + uint64_t(m.entries_size());
  CommitTo(std::min<uint64_t>(m.commit(), match));
  r.set_index(match);
  Send(std::move(r));
  return Status::OK();
}

Status Raft::AppendEntriesToLog(const std::shared_ptr<const MessagePB>& append,
                                bool* config_changed) {
  // ValidateMessage made the entries contiguous from the append's index, which
  // StepAppend found in this log; nothing changes before the first entry that
  // differs from this log, and that one must lie past the commit index.
  *config_changed = false;
  for (const EntryPB& e : append->entries()) {
    if (e.index() <= snap_index_) continue;  // in this node's snapshot already
    if (e.index() <= LastIndex()) {
      if (TermAt(e.index()) == e.term()) continue;
      if (e.index() <= commit_) {
        return Status::InvalidArgument(
            "raft: an append of term " + std::to_string(append->term()) + " rewrites entry " +
            std::to_string(e.index()) + " (term " + std::to_string(TermAt(e.index())) +
            "), which is committed here (commit index " + std::to_string(commit_) + ")");
      }
      entries_.resize(e.index() - snap_index_ - 1);
      auto dropped = configs_.lower_bound(e.index());
      *config_changed |= dropped != configs_.end();
      configs_.erase(dropped, configs_.end());
      truncate_from_ = std::min(truncate_from_.value_or(e.index()), e.index());
      unstable_ = std::min(unstable_, e.index());
      persisted_ = std::min(persisted_, e.index() - 1);
    }
    DCHECK_EQ(e.index(), LastIndex() + 1);
    // An alias of the message's own pointer: no allocation, no copy.
    entries_.push_back(EntryPtr(append, &e));
    NoteConfigEntry(e);
    *config_changed |= e.type() == ENTRY_CONFIG;
  }
  return Status::OK();
}

void Raft::StepHeartbeat(const MessagePB& m, int64_t now_us) {
  HeardFromLeader(m, now_us);
  CommitTo(std::min<uint64_t>(m.commit(), LastIndex()));
  MessagePB r;
  r.set_type(MSG_HEARTBEAT_RESP);
  r.set_to(m.from());
  r.set_round(m.round());
  if (m.quiesce() && LastIndex() == m.index() && LastTerm() == m.log_term() &&
      commit_ == LastIndex()) {
    quiesced_ = true;  // until the leader or the driver wakes it
    quiet_round_ = m.round();
    r.set_quiesce(true);
  }
  Send(std::move(r));
}

void Raft::CommitTo(uint64_t index) {
  if (index > commit_) commit_ = std::min(index, LastIndex());
}

// Leader -----------------------------------------------------------------------

void Raft::BroadcastHeartbeats(int64_t now_us, bool allow_quiesce) {
  round_++;
  round_sent_us_[round_] = now_us;
  // Rounds whose lease would have run out by now can give none: forget them (rounds
  // pile up while quiesced followers answer none).
  while (!round_sent_us_.empty() && round_sent_us_.begin()->second + opts_.lease_us <= now_us) {
    round_sent_us_.erase(round_sent_us_.begin());
  }
  next_heartbeat_us_ = now_us + opts_.heartbeat_interval_us;
  const bool idle = allow_quiesce && Idle();
  if (!idle) {
    if (quiesce_round_ != 0) WakeLeader(now_us);
  } else if (quiesce_round_ == 0) {
    quiesce_round_ = round_;
  }
  bool all_quiet = true;
  for (auto& [id, p] : progress_) {
    if (idle && p.quiesced) continue;
    all_quiet = false;
    MessagePB m;
    m.set_type(MSG_HEARTBEAT);
    m.set_to(id);
    m.set_commit(std::min(p.match, commit_));
    m.set_leader_commit(commit_);
    m.set_round(round_);
    if (idle) {
      m.set_quiesce(true);
      m.set_index(LastIndex());
      m.set_log_term(LastTerm());
    }
    Send(std::move(m));
  }
  if (idle && all_quiet) {
    quiesced_ = true;
    VLOG(2) << ToString() << ": quiesced";
  }
}

bool Raft::Idle() const {
  if (!opts_.quiesce_when_idle || role_ != RaftRole::kLeader || transfer_to_ != kNoPeer ||
      !pending_reads_.empty() || !IsVoter(opts_.id)) {
    return false;
  }
  if (persisted_ != LastIndex() || commit_ != LastIndex() || TermAt(commit_) != term_) return false;
  for (const auto& [id, p] : progress_) {
    if (p.state != Progress::State::kReplicate || p.match != LastIndex()) return false;
  }
  return true;
}

void Raft::WakeLeader(int64_t now_us) {
  if (!quiesced_ && quiesce_round_ == 0) return;
  quiesced_ = false;
  quiesce_round_ = 0;
  for (auto& [id, p] : progress_) {
    // Quiet followers answered nothing lately; give them an election timeout to.
    p.recently_active = p.recently_active || p.quiesced;
    p.quiesced = false;
  }
  check_quorum_deadline_us_ =
      std::max(check_quorum_deadline_us_, now_us + opts_.election_timeout_min_us);
  next_heartbeat_us_ = std::min(next_heartbeat_us_, now_us + opts_.heartbeat_interval_us);
  // A new round, so that followers tell what follows from what came before the
  // quiesce heartbeat (see HeardFromLeader).
  round_++;
  round_sent_us_[round_] = now_us;
}

void Raft::BroadcastAppends() {
  for (auto& [id, p] : progress_) SendAppends(id);
}

void Raft::SendAppends(PeerId to) {
  Progress& p = progress_[to];
  // Waiting for ReportSnapshot, or for SendFromStorage or StorageMissing.
  if (p.state == Progress::State::kSnapshot || p.state == Progress::State::kFetch) return;
  if (p.next - 1 < snap_index_) {
    // The entries it needs are compacted away here: the driver reads them back from
    // its log if it can, else the follower needs a copy of the state machine.
    p.inflight.clear();
    p.inflight_bytes = 0;
    if (opts_.fetch_from_storage) {
      p.state = Progress::State::kFetch;
      fetches_.push_back({to, p.next});
    } else {
      p.state = Progress::State::kSnapshot;
      snapshots_.push_back({to, snap_index_, snap_term_, snap_config_});
    }
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
      const EntryPB& e = *Entry(i);
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

Status Raft::StepAppendResponse(const MessagePB& m, int64_t now_us) {
  auto it = progress_.find(m.from());
  if (it == progress_.end()) return Status::OK();
  // A leader's log only grows in its term: a follower cannot hold more of it.
  if (!m.reject() && m.index() > LastIndex()) {
    return Status::InvalidArgument("raft: an answer of term " + std::to_string(m.term()) +
                                   " acknowledges entries up to " + std::to_string(m.index()) +
                                   ", past this leader's last entry " +
                                   std::to_string(LastIndex()));
  }
  Progress& p = it->second;
  p.recently_active = true;
  NoteRoundAck(m.from(), m.round());
  if (p.state == Progress::State::kSnapshot || p.state == Progress::State::kFetch) {
    // Answers to appends sent before the copy or the read began; only the match may
    // move.
    if (!m.reject() && m.index() > p.match) p.match = m.index();
    MaybeCommit();
    return Status::OK();
  }
  if (m.reject()) {
    if (m.index() == 0 && m.reject_hint() == 0) return Status::OK();  // a stale-term answer
    // Stale rejections (of an append already superseded) change nothing.
    if (p.state == Progress::State::kReplicate ? m.index() < p.match + 1
                                               : m.index() + 1 != p.next) {
      return Status::OK();
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
    return Status::OK();
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
  return Status::OK();
}

void Raft::StepHeartbeatResponse(const MessagePB& m, int64_t now_us) {
  auto it = progress_.find(m.from());
  if (it == progress_.end()) return;
  Progress& p = it->second;
  p.recently_active = true;
  NoteRoundAck(m.from(), m.round());
  if (m.quiesce() && quiesce_round_ != 0 && m.round() >= quiesce_round_ && p.match == LastIndex()) {
    p.quiesced = true;
  }
  if (p.match >= LastIndex() || p.state == Progress::State::kSnapshot ||
      p.state == Progress::State::kFetch) {
    return;
  }
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
  // The newest round a majority of the voters (this node counts, with the current
  // round, if it is one) answered.
  std::vector<uint64_t> rounds;
  if (IsVoter(opts_.id)) rounds.push_back(round_);
  for (auto& [id, p] : progress_) {
    if (IsVoter(id)) rounds.push_back(p.acked_round);
  }
  if (rounds.size() < Quorum()) return;
  std::sort(rounds.rbegin(), rounds.rend());
  const uint64_t majority_round = rounds[Quorum() - 1];
  if (majority_round <= majority_round_) return;
  majority_round_ = majority_round;
  auto sent = round_sent_us_.find(majority_round);
  if (sent != round_sent_us_.end()) {  // else pruned: too old to give a lease
    if (!lease_given_up_) {
      lease_expiry_us_ = std::max(lease_expiry_us_, sent->second + opts_.lease_us);
    }
    round_sent_us_.erase(round_sent_us_.begin(), sent);
  }
  while (!pending_reads_.empty() && pending_reads_.front().round <= majority_round) {
    reads_.push_back({pending_reads_.front().request_id, pending_reads_.front().index});
    pending_reads_.pop_front();
  }
}

void Raft::MaybeCommit() {
  // Runs on every proposal and answer: no allocation for groups of up to 7 voters.
  std::array<uint64_t, 7> small;
  std::vector<uint64_t> large;
  const size_t voters = size_t(config_.voters_size());
  uint64_t* matches = small.data();
  if (voters > small.size()) {
    large.resize(voters);
    matches = large.data();
  }
  size_t n = 0;
  if (IsVoter(opts_.id)) matches[n++] = persisted_;
  for (auto& [id, p] : progress_) {
    if (n < voters && IsVoter(id)) matches[n++] = p.match;
  }
  if (n < Quorum()) return;
  std::sort(matches, matches + n, std::greater<uint64_t>());
  const uint64_t q = matches[Quorum() - 1];
  // Only an entry of this term is committed by counting replicas (thesis §3.6.2).
  if (q > commit_ && TermAt(q) == term_) {
    commit_ = q;
    if (!opts_.notify_commit_at_once) return;
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
  WakeLeader(now_us);
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

Result<uint64_t> Raft::Propose(std::string data, int64_t now_us) {
  if (role_ != RaftRole::kLeader) {
    return NotLeader();
  }
  if (transfer_to_ != kNoPeer) {
    return Status::IllegalState("transferring leadership to node " + std::to_string(transfer_to_) +
                                "; retry on the new leader");
  }
  WakeLeader(now_us);
  auto e = std::make_shared<EntryPB>();
  e->set_term(term_);
  e->set_index(LastIndex() + 1);
  e->set_type(ENTRY_NORMAL);
  e->set_data(std::move(data));
  entries_.push_back(std::move(e));
  // The appends leave with the next Ready: every proposal the driver makes before it
  // takes that Ready travels in one append per follower, not one each.
  appends_pending_ = true;
  MaybeCommit();  // a group of one
  return LastIndex();
}

Result<uint64_t> Raft::ProposeConfigChange(ConfigChange change, PeerId peer, int64_t now_us) {
  if (role_ != RaftRole::kLeader) return NotLeader();
  if (transfer_to_ != kNoPeer) {
    return Status::IllegalState("transferring leadership to node " + std::to_string(transfer_to_) +
                                "; retry on the new leader");
  }
  if (config_index() > commit_) {
    return Status::IllegalState("the configuration change at entry " +
                                std::to_string(config_index()) +
                                " is not committed yet; one change at a time");
  }
  if (commit_ < term_start_index_) {
    // Thesis §4.1 (and its erratum): a new leader commits an entry of its term before
    // it changes the configuration, or two leaders' changes could both commit.
    return Status::IllegalState("the new leader has not committed an entry of its term yet");
  }
  const std::string who = "node " + std::to_string(peer);
  if (peer == kNoPeer) return Status::InvalidArgument("raft: peer id 0");
  ConfigPB next = config_;
  auto drop = [](google::protobuf::RepeatedField<uint64_t>* list, PeerId id) {
    list->erase(std::remove(list->begin(), list->end(), id), list->end());
  };
  const bool learner = IsMember(peer) && !IsVoter(peer);
  switch (change) {
    case ConfigChange::kAddLearner:
      if (IsMember(peer)) return Status::InvalidArgument(who + " is a member already");
      next.add_learners(peer);
      break;
    case ConfigChange::kPromoteLearner: {
      if (!learner) return Status::InvalidArgument(who + " is not a learner");
      // It holds every committed entry, or it replicates, answered lately, and has
      // every committed entry on the way (at most kPromoteMaxLagEntries unanswered):
      // under steady writes a learner is always an append or two behind.
      auto it = progress_.find(peer);
      const bool streaming = it != progress_.end() &&
                             it->second.state == Progress::State::kReplicate &&
                             it->second.recently_active && it->second.next > commit_ &&
                             commit_ - it->second.match <= kPromoteMaxLagEntries;
      if (it == progress_.end() || (it->second.match < commit_ && !streaming)) {
        return Status::IllegalState(
            who + " has not caught up yet (holds " +
            std::to_string(it == progress_.end() ? 0 : it->second.match) + " of " +
            std::to_string(commit_) + " committed entries); promote it later");
      }
      drop(next.mutable_learners(), peer);
      next.add_voters(peer);
      break;
    }
    case ConfigChange::kRemovePeer:
      if (!IsMember(peer)) return Status::InvalidArgument(who + " is not a member");
      if (IsVoter(peer) && config_.voters_size() == 1) {
        return Status::InvalidArgument(who + " is the last voter");
      }
      drop(next.mutable_voters(), peer);
      drop(next.mutable_learners(), peer);
      break;
  }
  WakeLeader(now_us);
  auto e = std::make_shared<EntryPB>();
  e->set_term(term_);
  e->set_index(LastIndex() + 1);
  e->set_type(ENTRY_CONFIG);
  e->set_data(next.SerializeAsString());
  NoteConfigEntry(*e);
  entries_.push_back(std::move(e));
  UpdateConfig(now_us);
  BroadcastAppends();
  MaybeCommit();
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
  WakeLeader(now_us);
  BroadcastHeartbeats(now_us);
  pending_reads_.push_back({request_id, index, round_});
  NoteRoundAck(opts_.id, round_);  // a group of one
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
  snap_config_ = ConfigAt(index);
  configs_.erase(configs_.begin(), configs_.upper_bound(index));
  entries_.erase(entries_.begin(), entries_.begin() + int64_t(index - snap_index_));
  snap_index_ = index;
  snap_term_ = term;
  return Status::OK();
}

void Raft::RestoreSnapshot(uint64_t index, uint64_t term, const ConfigPB& config,
                           int64_t now_us) {
  if (index <= commit_) return;  // older than what this node has
  if (role_ != RaftRole::kFollower) {
    // The copy comes from another leader, which committed entries this node has not
    // applied: it leads no more (if ever it did, the driver erred in copying here).
    BecomeFollower(std::max(term_, term), kNoPeer, now_us);
  }
  snap_config_ = config;
  if (TermAt(index) == term) {
    // The log goes on from the snapshot's entry: keep what follows it.
    configs_.erase(configs_.begin(), configs_.upper_bound(index));
    entries_.erase(entries_.begin(), entries_.begin() + int64_t(index - snap_index_));
    persisted_ = std::max(persisted_, index);
    unstable_ = std::max(unstable_, index + 1);
  } else {
    // Another history: nothing of it is kept, persisted or owed to the driver.
    entries_.clear();
    configs_.clear();
    persisted_ = index;
    unstable_ = index + 1;
  }
  snap_index_ = index;
  snap_term_ = term;
  if (truncate_from_ && *truncate_from_ <= index) truncate_from_.reset();
  commit_ = index;
  applied_handed_ = index;
  UpdateConfig(now_us);
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

Status Raft::SendFromStorage(PeerId peer, uint64_t prev_term,
                             const std::vector<EntryPtr>& entries) {
  if (role_ != RaftRole::kLeader) return Status::OK();
  auto it = progress_.find(peer);
  if (it == progress_.end() || it->second.state != Progress::State::kFetch) return Status::OK();
  Progress& p = it->second;
  auto refuse = [&](const std::string& why) {
    // Asked for again at the next heartbeat answer, as if the read had failed.
    p.state = Progress::State::kProbe;
    p.probe_sent = true;
    return Status::InvalidArgument("raft: entries read back for node " + std::to_string(peer) +
                                   " " + why);
  };
  if (entries.empty() || entries.front()->index() != p.next) {
    return refuse("do not start at index " + std::to_string(p.next));
  }
  uint64_t index = p.next - 1, term = prev_term;
  for (const EntryPtr& e : entries) {
    if (e->index() != index + 1 || e->term() < term || e->term() > term_) {
      return refuse("are not a log: entry " + std::to_string(e->index()) + " of term " +
                    std::to_string(e->term()) + " after entry " + std::to_string(index) +
                    " of term " + std::to_string(term));
    }
    if (e->index() > LastIndex() ||
        (e->index() >= snap_index_ && TermAt(e->index()) != e->term())) {
      return refuse("disagree with this log at entry " + std::to_string(e->index()));
    }
    index = e->index();
    term = e->term();
  }
  MessagePB m;
  m.set_type(MSG_APPEND);
  m.set_to(peer);
  m.set_index(p.next - 1);
  m.set_log_term(prev_term);
  m.set_commit(commit_);
  m.set_round(round_);
  for (const EntryPtr& e : entries) *m.add_entries() = *e;
  Send(std::move(m));
  // Its answer moves the follower to replicate at what it holds; if that is still
  // below the in-memory log, the next batch is asked for.
  p.state = Progress::State::kProbe;
  p.probe_sent = true;
  return Status::OK();
}

void Raft::StorageMissing(PeerId peer, uint64_t index) {
  if (role_ != RaftRole::kLeader) return;
  auto it = progress_.find(peer);
  if (it == progress_.end() || it->second.state != Progress::State::kFetch ||
      it->second.next != index) {
    return;
  }
  it->second.state = Progress::State::kSnapshot;
  snapshots_.push_back({peer, snap_index_, snap_term_, snap_config_});
}

// Ready ------------------------------------------------------------------------

bool Raft::HasReady() const {
  return appends_pending_ || truncate_from_ || unstable_ <= LastIndex() || !msgs_.empty() ||
         !reads_.empty() || !snapshots_.empty() || !fetches_.empty() ||
         std::min(commit_, persisted_) > applied_handed_ || term_ != last_hard_state_.term() ||
         vote_ != last_hard_state_.vote() || commit_ != last_hard_state_.commit();
}

Ready Raft::TakeReady() {
  if (appends_pending_) {
    appends_pending_ = false;
    if (role_ == RaftRole::kLeader) BroadcastAppends();
  }
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
  rd.fetches.swap(fetches_);
  return rd;
}

void Raft::Advance(const Ready& ready, int64_t now_us) {
  // The newest entry of the Ready that is still in the log, unchanged, is durable, and
  // so is everything before it.
  for (auto it = ready.entries.rbegin(); it != ready.entries.rend(); ++it) {
    if (TermAt((*it)->index()) == (*it)->term()) {
      persisted_ = std::max(persisted_, (*it)->index());
      break;
    }
  }
  if (role_ == RaftRole::kCandidate && ready.hard_state && ready.hard_state->term() == term_ &&
      ready.hard_state->vote() == opts_.id && !votes_.count(opts_.id)) {
    // The candidate's own vote is durable now (see BecomeCandidate).
    votes_[opts_.id] = true;
    if (CountVotes(true) >= Quorum()) BecomeLeader(now_us);
  }
  if (role_ == RaftRole::kLeader) MaybeCommit();
}

}  // namespace nyala::consensus
