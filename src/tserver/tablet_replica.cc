#include "tserver/tablet_replica.h"
#include "common/result.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <chrono>

#include "common/coding.h"
#include "common/flag_tags.h"
#include "common/wire_protocol.h"
#include "consensus/raft.pb.h"
#include "consensus/runtime.h"
#include "tserver/tserver_metrics.h"
#include "tserver/write_command.h"

DEFINE_int32(follower_read_max_lag_ms, 30000,
             "A replica answers reads that any replica may serve (closest-replica reads) only "
             "if it held everything its leader had committed at most this long ago; a replica "
             "further behind, catching up, or needing a copy refuses them "
             "(REPLICA_TOO_STALE) and the client reads at another replica");
TAG_FLAG(follower_read_max_lag_ms, runtime);
DEFINE_validator(follower_read_max_lag_ms, [](const char*, int32_t v) { return v > 0; });

namespace nyala::tserver {

namespace {

void SetNotTheLeader(const Status& s, const std::string& leader, TabletServerErrorPB* error) {
  error->set_code(TabletServerErrorPB::NOT_THE_LEADER);
  StatusToPB(s, error->mutable_status());
  error->set_leader_uuid(leader);
}

// A callback's outcome, waited for by the thread that made the call.
struct Waiter {
  Mutex mu;
  CondVar cv;
  bool done GUARDED_BY(mu) = false;
  Status status GUARDED_BY(mu);
  void Set(const Status& s) {
    MutexLock l(mu);
    status = s;
    done = true;
    cv.notify_all();
  }
};

}  // namespace

// Marks a consensus::StateMachine call for its duration. The group calls its state
// machine from one worker at a time; two calls that overlap mean a caller that is not
// the group's worker.
class TabletReplica::WorkerSection {
 public:
  explicit WorkerSection(TabletReplica* replica) : replica_(replica) {
    const bool busy = replica_->in_worker_call_.exchange(true, std::memory_order_acq_rel);
    DCHECK(!busy) << "tablet " << replica_->tablet_id_
                  << ": two state machine calls at once: one is not from the group's worker";
#ifndef NDEBUG
    // Once the group is known here (Start stores it after creating it; the worker may
    // call before), the caller must be its worker.
    if (auto g = replica_->group()) DCHECK(g->worker()->IsCurrentThread());
#endif
  }
  ~WorkerSection() { replica_->in_worker_call_.store(false, std::memory_order_release); }
  WorkerSection(const WorkerSection&) = delete;
  WorkerSection& operator=(const WorkerSection&) = delete;

 private:
  TabletReplica* const replica_;
};

TabletReplica::TabletReplica(std::string tablet_id, ReplicaStorage* storage,
                             TServerMetrics* metrics)
    : tablet_id_(std::move(tablet_id)), storage_(storage), metrics_(metrics) {}

TabletReplica::~TabletReplica() = default;

namespace {
constexpr uint8_t kAppliedStateVersion = 1;
constexpr size_t kAppliedStateHeader = 17;  // version, index, term
}  // namespace

std::string TabletReplica::EncodeAppliedState(const AppliedState& state) {
  std::string v;
  v.push_back(static_cast<char>(kAppliedStateVersion));
  PutFixed64BE(&v, state.index);
  PutFixed64BE(&v, state.term);
  if (state.config) state.config->AppendToString(&v);
  return v;
}

Status TabletReplica::DecodeAppliedState(Slice v, AppliedState* state) {
  *state = AppliedState();
  if (v.empty()) return Status::OK();
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  size_t header = 8;
  // The earlier form starts with the index's high byte, 0 below 2^56.
  if (p[0] == kAppliedStateVersion) {
    if (v.size() < kAppliedStateHeader) return Status::Corruption("short applied state");
    state->index = DecodeFixed64BE(p + 1);
    state->term = DecodeFixed64BE(p + 9);
    header = kAppliedStateHeader;
  } else if (p[0] != 0) {
    return Status::Corruption("applied state of an unknown version " + std::to_string(p[0]));
  } else {
    if (v.size() < 8) return Status::Corruption("short applied state");
    state->index = DecodeFixed64BE(p);
  }
  if (v.size() > header) {
    consensus::ConfigPB c;
    if (!c.ParseFromArray(v.data() + header, int(v.size() - header))) {
      return Status::Corruption("unparseable applied configuration");
    }
    state->config = std::move(c);
  }
  return Status::OK();
}

Status TabletReplica::Start(consensus::ConsensusRuntime* runtime, consensus::GroupOptions options,
                            TabletReplicaHooks hooks, bool campaign) {
  DCHECK(group() == nullptr) << "tablet " << tablet_id_ << ": started twice";
  runtime_ = runtime;
  hooks_ = std::move(hooks);
  ASSIGN_OR_RETURN(std::string state, storage_->LoadAppliedState());
  AppliedState applied;
  RETURN_NOT_OK_PREPEND(DecodeAppliedState(state, &applied), "tablet " + tablet_id_);
  applied_config_ = applied.config;
  applied_index_.store(applied.index, std::memory_order_release);
  options.state_machine = this;
  options.applied = applied.index;
  options.applied_term = applied.term;
  options.applied_config = applied_config_;
  ASSIGN_OR_RETURN(std::shared_ptr<consensus::RaftGroup> g, runtime->CreateGroup(options));
  NoteLeadership(g->info(), /*count=*/false);
  {
    MutexLock l(group_mu_);
    group_ = g;
  }
  if (campaign) g->Campaign();
  return Status::OK();
}

Status TabletReplica::Stop(bool forget_log) {
  std::shared_ptr<consensus::RaftGroup> g = group();
  if (!g) return Status::OK();
  Status s = runtime_->StopGroup(g->id(), forget_log);
  // The group's worker calls nothing any more; callers that still hold the group keep
  // it alive, and from here on the replica reports that its group is not running.
  MutexLock l(group_mu_);
  group_.reset();
  return s;
}

std::shared_ptr<consensus::RaftGroup> TabletReplica::group() const {
  MutexLock l(group_mu_);
  return group_;
}

uint64_t TabletReplica::ReadyLeaderTerm() const {
  std::shared_ptr<consensus::RaftGroup> g = group();
  if (!g) return 0;
  const uint64_t term = g->leader_term();
  return term != 0 && applied_term_.load(std::memory_order_acquire) == term ? term : 0;
}

bool TabletReplica::CheckLeader(TabletServerErrorPB* error) const {
  if (ReadyLeaderTerm() != 0) return true;
  std::shared_ptr<consensus::RaftGroup> g = group();
  if (!g) {
    SetNotTheLeader(
        Status::IllegalState("tablet " + tablet_id_ + ": this replica's Raft group is not running",
                             "retry shortly"),
        "", error);
    return false;
  }
  const consensus::GroupInfo info = g->info();
  std::string leader;
  if (info.leader != consensus::kNoPeer && hooks_.uuid_of) leader = hooks_.uuid_of(info.leader);
  Status s;
  if (info.role == consensus::RaftRole::kLeader) {
    s = Status::IllegalState("tablet " + tablet_id_ + ": this replica was elected leader in term " +
                                 std::to_string(info.term) +
                                 " and has not yet applied the entries of earlier terms",
                             "retry shortly");
  } else {
    s = Status::IllegalState(
        "tablet " + tablet_id_ + ": this replica is not the leader",
        leader.empty() ? "no leader is known: an election is running, or a majority of the "
                         "tablet's replicas is unreachable"
                       : "the leader is " + leader);
  }
  SetNotTheLeader(s, leader, error);
  return false;
}

bool TabletReplica::CanReadNow() const {
  std::shared_ptr<consensus::RaftGroup> g = group();
  if (!g) return false;
  // Every write acknowledged before now was applied here first: by this leader, or,
  // of earlier terms, before its own first entry.
  const uint64_t term = g->leader_term();
  return term != 0 && applied_term_.load(std::memory_order_acquire) == term &&
         g->HoldsLease(GetMonoTimeMicros());
}

bool TabletReplica::CheckFollowerRead(TabletServerErrorPB* error) const {
  std::shared_ptr<consensus::RaftGroup> g = group();
  if (!g) {
    error->set_code(TabletServerErrorPB::TABLET_NOT_RUNNING);
    StatusToPB(
        Status::IllegalState("tablet " + tablet_id() + ": its consensus group is not running"),
        error->mutable_status());
    return false;
  }
  const int64_t stale_us = g->StalenessUs(GetMonoTimeMicros());
  const int64_t max_us = int64_t{FLAGS_follower_read_max_lag_ms} * 1000;
  if (stale_us <= max_us) return true;
  const std::string why = stale_us == INT64_MAX
                              ? "this replica has not caught up with its leader since it started"
                              : "this replica last held everything its leader committed " +
                                    std::to_string(stale_us / 1000) + " ms ago";
  error->set_code(TabletServerErrorPB::REPLICA_TOO_STALE);
  StatusToPB(Status::IllegalState("tablet " + tablet_id() + ": " + why,
                                  "more than --follower_read_max_lag_ms (" +
                                      std::to_string(FLAGS_follower_read_max_lag_ms) +
                                      "); read from another replica"),
             error->mutable_status());
  return false;
}

bool TabletReplica::WaitUntilLeader(MonoDelta timeout) const {
  const MonoTime deadline = MonoTime::Now() + timeout;
  UniqueLock l(leader_mu_);
  while (ReadyLeaderTerm() == 0) {
    const MonoDelta left = deadline - MonoTime::Now();
    if (left <= MonoDelta()) return false;
    leader_cv_.wait_for(l, std::chrono::microseconds(left.ToMicroseconds()));
  }
  return true;
}

bool TabletReplica::WaitForLinearizableRead(MonoDelta timeout, TabletServerErrorPB* error) const {
  if (CanReadNow()) return true;
  if (!CheckLeader(error)) return false;
  std::shared_ptr<consensus::RaftGroup> g = group();  // not null: CheckLeader passed
  auto w = std::make_shared<Waiter>();
  g->Read([w](const Status& s) { w->Set(s); });
  Status s;
  {
    UniqueLock l(w->mu);
    const bool done = w->cv.wait_for(l, std::chrono::microseconds(timeout.ToMicroseconds()),
                                     [&]() NO_THREAD_SAFETY_ANALYSIS { return w->done; });
    s = done ? w->status
             : Status::TimedOut("tablet " + tablet_id_ + ": the leader could not confirm its " +
                                "leadership in time for a linearizable read");
  }
  if (s.ok()) return true;
  if (s.IsIllegalState()) {
    if (CheckLeader(error)) SetNotTheLeader(s, "", error);
  } else {
    error->set_code(TabletServerErrorPB::TABLET_NOT_RUNNING);
    StatusToPB(s, error->mutable_status());
  }
  return false;
}

Status TabletReplica::Replicate(std::string command, uint64_t term,
                                std::shared_ptr<consensus::ProposalTrace> trace) {
  auto w = std::make_shared<Waiter>();
  ReplicateAsync(std::move(command), term, std::move(trace), [w](const Status& s) { w->Set(s); });
  UniqueLock l(w->mu);
  w->cv.wait(l, [&]() NO_THREAD_SAFETY_ANALYSIS { return w->done; });
  return w->status;
}

// A proposal of ReplicateAsync: its callback runs once, from whichever comes first.
struct TabletReplica::AsyncProposal {
  uint64_t term = 0;
  std::function<void(const Status&)> done;
  std::atomic<bool> finished{false};
};

void TabletReplica::ReplicateAsync(std::string command, uint64_t term,
                                   std::shared_ptr<consensus::ProposalTrace> trace,
                                   std::function<void(const Status&)> done) {
  std::shared_ptr<consensus::RaftGroup> g = group();
  if (!g) {
    return done(Status::IllegalState("tablet " + tablet_id_ + ": its Raft group is not running"));
  }
  // The group answers once the entry is applied here, replaced by another leader's,
  // or the group stops. A leader that loses its leadership (a majority unreachable: it
  // steps down after an election timeout) answers sooner, with an unknown outcome
  // (NotifyLeadershipWaiters): the entry may still commit under a successor. The
  // write's row locks may go then: this replica takes writes again only as a leader
  // that applied every earlier entry, this one included or replaced (CheckLeader); a
  // retry with the same request id is answered from the record wherever the entry
  // was applied.
  auto p = std::make_shared<AsyncProposal>();
  p->term = term;
  p->done = std::move(done);
  {
    MutexLock l(leader_mu_);
    proposals_waiting_.emplace(p.get(), p);
  }
  g->ProposeInTerm(
      term, std::move(command),
      [this, p](const Status& s, uint64_t) { FinishProposal(p.get(), s); }, std::move(trace));
  // A leadership lost before the insert above was told to no one: the group then
  // refuses the proposal (not the leader in `term`), or appends it before it steps
  // down, which LeadershipChanged tells.
}

void TabletReplica::FinishProposal(AsyncProposal* p, const Status& s) {
  if (p->finished.exchange(true, std::memory_order_acq_rel)) return;
  std::shared_ptr<AsyncProposal> keep;  // the callback may drop the group's reference
  {
    MutexLock l(leader_mu_);
    auto it = proposals_waiting_.find(p);
    if (it != proposals_waiting_.end()) {
      keep = std::move(it->second);
      proposals_waiting_.erase(it);
    }
  }
  std::function<void(const Status&)> done = std::move(p->done);
  done(s);
}

Status TabletReplica::ApplyWriteEntry(const consensus::EntryPB& e) {
  DecodedWriteCommand cmd;
  RETURN_NOT_OK(DecodeWriteCommand(e.data(), &cmd));
  RETURN_NOT_OK(
      storage_->ApplyWrite(cmd, EncodeAppliedState({e.index(), e.term(), applied_config_})));
  if (cmd.has_request && hooks_.applied_request) {
    hooks_.applied_request(cmd.request_id, cmd.response);
  }
  return Status::OK();
}

Status TabletReplica::ApplyOtherEntry(const consensus::EntryPB& e) {
  if (e.type() == consensus::ENTRY_CONFIG) {
    consensus::ConfigPB c;
    if (!c.ParseFromString(e.data())) {
      return Status::Corruption("unparseable configuration entry " + std::to_string(e.index()));
    }
    applied_config_ = std::move(c);
  }
  // Stored too: the applied index reported durable (and the log released below it)
  // must never be above the one a restart reads back.
  return storage_->StoreAppliedState(EncodeAppliedState({e.index(), e.term(), applied_config_}));
}

void TabletReplica::Apply(const consensus::EntryPB& e) {
  WorkerSection section(this);
  if (storage_->Running()) {
    const Status s = e.type() == consensus::ENTRY_NORMAL ? ApplyWriteEntry(e) : ApplyOtherEntry(e);
    if (!s.ok()) {
      // The rows would fall out of step with the other replicas: stop serving.
      LOG(ERROR) << "tablet " << tablet_id_ << ": applying entry " << e.index()
                 << " failed; the tablet stops: " << s.ToString();
      FailTablet(s.CloneAndPrepend("applying entry " + std::to_string(e.index())));
    }
  }
  applied_index_.store(e.index(), std::memory_order_release);
  while (!index_waiters_.empty() && index_waiters_.begin()->first <= e.index()) {
    auto it = index_waiters_.begin();
    std::function<void(bool)> fn = std::move(it->second);
    const bool at = it->first == e.index();
    index_waiters_.erase(it);
    fn(at);
  }
  if (applied_term_.load(std::memory_order_relaxed) != e.term()) {
    MutexLock l(leader_mu_);
    applied_term_.store(e.term(), std::memory_order_release);
    leader_cv_.notify_all();
  }
}

bool TabletReplica::RunAtIndex(uint64_t index, std::function<void(bool)> fn) {
  std::shared_ptr<consensus::RaftGroup> g = group();
  if (!g) return false;
  return g->RunOnWorker([this, g, index, fn = std::move(fn)]() mutable {
    if (!g->running()) return;  // stopped: the replica may be gone
    const uint64_t applied = applied_index();
    if (index == 0 || index == applied) return fn(true);
    if (index < applied) return fn(false);
    index_waiters_.emplace(index, std::move(fn));
  });
}

void TabletReplica::FailTablet(const Status& s) {
  storage_->Fail(s);
  if (hooks_.consensus_changed) hooks_.consensus_changed();
}

void TabletReplica::FlushRequested() {
  WorkerSection section(this);
  if (!storage_->Running()) return;
  const uint64_t index = applied_index();
  // Every write applied so far is in the storage's WAL: syncing it makes them durable.
  Status s = storage_->SyncApplied();
  if (!s.ok()) {
    LOG(WARNING) << "tablet " << tablet_id_ << ": " << s.ToString();
    return;
  }
  if (auto g = group()) g->ReportDurable(index);
}

void TabletReplica::CopyNeeded(consensus::PeerId peer, uint64_t index) {
  if (hooks_.copy_needed) hooks_.copy_needed(peer, index);
}

void TabletReplica::GroupFailed(const Status& error) {
  WorkerSection section(this);
  if (!storage_->Running()) return;
  LOG(ERROR) << "tablet " << tablet_id_
             << ": its consensus group failed; the tablet stops: " << error.ToString();
  storage_->Fail(error.CloneAndPrepend("consensus"));
  NotifyLeadershipWaiters();
  if (hooks_.consensus_changed) hooks_.consensus_changed();
}

void TabletReplica::LeadershipChanged() {
  WorkerSection section(this);
  if (auto g = group()) NoteLeadership(g->info(), /*count=*/true);
  NotifyLeadershipWaiters();
  if (hooks_.consensus_changed) hooks_.consensus_changed();
}

void TabletReplica::NotifyLeadershipWaiters() {
  std::shared_ptr<consensus::RaftGroup> g = group();
  const uint64_t term = g ? g->leader_term() : 0;
  std::vector<std::shared_ptr<AsyncProposal>> lost;
  {
    MutexLock l(leader_mu_);
    leader_cv_.notify_all();
    for (const auto& [ptr, p] : proposals_waiting_) {
      if (p->term != term) lost.push_back(p);
    }
  }
  for (const auto& p : lost) {
    FinishProposal(p.get(),
                   Status::ServiceUnavailable(
                       "tablet " + tablet_id_ + ": this replica lost its leadership (term " +
                           std::to_string(p->term) + ") before the write committed",
                       "its outcome is unknown: retry with the same request id"));
  }
}

void TabletReplica::NoteLeadership(const consensus::GroupInfo& info, bool count) {
  MutexLock l(seen_mu_);
  if (count && metrics_ != nullptr) {
    const bool leads = info.role == consensus::RaftRole::kLeader;
    const bool led = seen_role_ == consensus::RaftRole::kLeader;
    if (leads && !led) metrics_->leaderships_won->Increment();
    if (!leads && led) metrics_->leaderships_lost->Increment();
    if (info.term > seen_term_) metrics_->term_changes->Increment();
    if (info.leader != consensus::kNoPeer && info.leader != seen_leader_) {
      metrics_->leader_changes->Increment();
    }
  }
  seen_role_ = info.role;
  seen_term_ = std::max(seen_term_, info.term);
  if (info.leader != consensus::kNoPeer) seen_leader_ = info.leader;
}

}  // namespace nyala::tserver
