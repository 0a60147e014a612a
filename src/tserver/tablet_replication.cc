// Tablet as a replica of its Raft group (tablet.h).
#include "tserver/write_command.h"

#include <glog/logging.h>

#include <chrono>

#include "common/coding.h"
#include "common/monotime.h"
#include "consensus/raft.pb.h"
#include "tserver/tablet.h"
#include "tserver/tablet_store.h"

namespace nyala::tserver {

namespace {
// A callback's outcome, waited for by the thread that made the call.
struct Waiter {
  Mutex mu;
  CondVar cv;
  bool done GUARDED_BY(mu) = false;
  Status status GUARDED_BY(mu);
  std::atomic<bool> leadership_changed{false};

  void NoteLeadershipChange() {
    MutexLock l(mu);
    leadership_changed.store(true, std::memory_order_release);
    cv.notify_all();
  }

  void Set(const Status& s) {
    MutexLock l(mu);
    status = s;
    done = true;
    cv.notify_all();
  }
};
}  // namespace

struct Tablet::ProposalWaiter : Waiter {};

// --- Tablet ------------------------------------------------------------------------

Status Tablet::LoadAppliedState(uint64_t* index, std::optional<consensus::ConfigPB>* config) {
  ASSIGN_OR_RETURN(std::string v, store_->GetAppliedState(seq()));
  *index = 0;
  config->reset();
  if (v.empty()) return Status::OK();
  if (v.size() < 8) return Status::Corruption("tablet " + tablet_id(), "short applied state");
  *index = DecodeFixed64BE(reinterpret_cast<const uint8_t*>(v.data()));
  if (v.size() > 8) {
    consensus::ConfigPB c;
    if (!c.ParseFromArray(v.data() + 8, int(v.size() - 8))) {
      return Status::Corruption("tablet " + tablet_id(), "unparseable applied configuration");
    }
    applied_config_ = c;
    has_applied_config_ = true;
    *config = std::move(c);
  }
  applied_index_.store(*index, std::memory_order_release);
  return Status::OK();
}

void Tablet::SetReplicaHooks(TabletReplicaHooks hooks) { hooks_ = std::move(hooks); }

void Tablet::AttachGroup(std::shared_ptr<consensus::RaftGroup> group) {
  NoteLeadership(group->info(), /*count=*/false);
  MutexLock l(group_mu_);
  DCHECK(!group_);
  group_ = std::move(group);
}

std::shared_ptr<consensus::RaftGroup> Tablet::group() const {
  MutexLock l(group_mu_);
  return group_;
}

consensus::GroupInfo Tablet::ConsensusInfo() const {
  if (auto g = group()) return g->info();
  consensus::GroupInfo info;
  info.role = consensus::RaftRole::kLeader;
  return info;
}

uint64_t Tablet::ReadyLeaderTerm() const {
  std::shared_ptr<consensus::RaftGroup> g = group();
  if (!g) return 1;
  const uint64_t term = g->leader_term();
  return term != 0 && applied_term_.load(std::memory_order_acquire) == term ? term : 0;
}

bool Tablet::CheckLeader(TabletServerErrorPB* error) const {
  std::shared_ptr<consensus::RaftGroup> g = group();
  if (!g) return true;
  if (ReadyLeaderTerm() != 0) return true;
  const consensus::GroupInfo info = g->info();
  std::string leader;
  if (info.leader != consensus::kNoPeer && hooks_.uuid_of) leader = hooks_.uuid_of(info.leader);
  Status s;
  if (info.role == consensus::RaftRole::kLeader) {
    s = Status::IllegalState("tablet " + tablet_id() + ": this replica was elected leader in term " +
                                 std::to_string(info.term) +
                                 " and has not yet applied the entries of earlier terms",
                             "retry shortly");
  } else {
    s = Status::IllegalState(
        "tablet " + tablet_id() + ": this replica is not the leader",
        leader.empty() ? "no leader is known: an election is running, or a majority of the "
                         "tablet's replicas is unreachable"
                       : "the leader is " + leader);
  }
  SetError(TabletServerErrorPB::NOT_THE_LEADER, s, error);
  error->set_leader_uuid(leader);
  return false;
}

bool Tablet::CanReadNow() const {
  std::shared_ptr<consensus::RaftGroup> g = group();
  if (!g) return true;
  // Every write acknowledged before now was applied here first: by this leader, or,
  // of earlier terms, before its own first entry.
  const uint64_t term = g->leader_term();
  return term != 0 && applied_term_.load(std::memory_order_acquire) == term &&
         g->HoldsLease(GetMonoTimeMicros());
}

bool Tablet::WaitUntilLeader(MonoDelta timeout) const {
  const MonoTime deadline = MonoTime::Now() + timeout;
  auto ready = [this] {
    std::shared_ptr<consensus::RaftGroup> g = group();
    if (!g) return true;
    const uint64_t term = g->leader_term();
    return term != 0 && applied_term_.load(std::memory_order_acquire) == term;
  };
  UniqueLock l(leader_mu_);
  while (!ready()) {
    const MonoDelta left = deadline - MonoTime::Now();
    if (left <= MonoDelta()) return false;
    leader_cv_.wait_for(l, std::chrono::microseconds(left.ToMicroseconds()));
  }
  return true;
}

bool Tablet::WaitForLinearizableRead(MonoDelta timeout, TabletServerErrorPB* error) const {
  std::shared_ptr<consensus::RaftGroup> g = group();
  if (!g || CanReadNow()) return true;
  if (!CheckLeader(error)) return false;
  auto w = std::make_shared<Waiter>();
  g->Read([w](const Status& s) { w->Set(s); });
  Status s;
  {
    UniqueLock l(w->mu);
    const bool done = w->cv.wait_for(l, std::chrono::microseconds(timeout.ToMicroseconds()),
                                     [&]() NO_THREAD_SAFETY_ANALYSIS { return w->done; });
    s = done ? w->status
             : Status::TimedOut("tablet " + tablet_id() + ": the leader could not confirm its " +
                                "leadership in time for a linearizable read");
  }
  if (s.ok()) return true;
  if (s.IsIllegalState()) {
    if (CheckLeader(error)) SetError(TabletServerErrorPB::NOT_THE_LEADER, s, error);
  } else {
    SetError(TabletServerErrorPB::TABLET_NOT_RUNNING, s, error);
  }
  return false;
}

Status Tablet::Replicate(std::string command, uint64_t term) {
  std::shared_ptr<consensus::RaftGroup> g = group();
  if (!g) return ApplyWrite(command, 0);
  // The group answers once the entry is applied here, replaced by another leader's,
  // or the group stops. A leader that loses its leadership (a majority unreachable: it
  // steps down after an election timeout) answers sooner, with an unknown outcome: the
  // entry may still commit under a successor. Its row locks may go then: this replica
  // takes writes again only as a leader that applied every earlier entry, this one
  // included or replaced (CheckLeader); a retry with the same request id is answered
  // from the record wherever the entry was applied.
  auto w = std::make_shared<ProposalWaiter>();
  {
    MutexLock l(leader_mu_);
    proposals_waiting_.insert(w.get());
  }
  g->ProposeInTerm(term, std::move(command), [w](const Status& s, uint64_t) { w->Set(s); });
  Status s;
  {
    UniqueLock l(w->mu);
    for (;;) {
      w->cv.wait(l, [&]() NO_THREAD_SAFETY_ANALYSIS {
        return w->done || w->leadership_changed.load(std::memory_order_acquire);
      });
      if (w->done) {
        s = w->status;
        break;
      }
      if (g->leader_term() != term) {
        s = Status::ServiceUnavailable(
            "tablet " + tablet_id() + ": this replica lost its leadership (term " +
                std::to_string(term) + ") before the write committed",
            "its outcome is unknown: retry with the same request id");
        break;
      }
      w->leadership_changed.store(false, std::memory_order_release);  // still leading
    }
  }
  {
    MutexLock l(leader_mu_);
    proposals_waiting_.erase(w.get());
  }
  if (s.ok() && state() == TabletState::kFailed) return failure_;
  return s;
}

void Tablet::AddAppliedState(uint64_t index, StoreWriteBatch* batch) {
  std::string v;
  PutFixed64BE(&v, index);
  if (has_applied_config_) applied_config_.AppendToString(&v);
  store_->PutAppliedState(batch, seq(), v);
}

Status Tablet::ApplyWrite(Slice command, uint64_t index) {
  DecodedWriteCommand cmd;
  RETURN_NOT_OK(DecodeWriteCommand(command, &cmd));
  thread_local StoreWriteBatch batch;
  batch.Clear();
  std::string key, largest;
  for (const DecodedWriteCommand::Change& c : cmd.changes) {
    key = TabletPrefix(seq());
    key.append(c.key.cdata(), c.key.size());
    if (c.is_delete) {
      batch.Delete(*rows_, key);
    } else {
      batch.Put(*rows_, key, c.value);
    }
    if (Slice(largest).compare(Slice(key)) < 0) largest = key;
  }
  // Deletions of forgotten records first, in case one has the same key.
  store_->TakeRequestRecordDeletes(&batch);
  if (cmd.has_request) {
    std::string record_key, record_value;
    AppendRequestRecordKey(seq(), cmd.request_id.client_id(), cmd.request_id.seq_no(), &record_key);
    AppendRequestRecordHeader(GetWallTimeMicros(), cmd.request_id.first_incomplete_seq_no(),
                              &record_value);
    cmd.response.AppendToString(&record_value);
    store_->PutRequestRecord(&batch, record_key, record_value);
  }
  if (index > 0) AddAppliedState(index, &batch);
  RETURN_NOT_OK(store_->Write(&batch));
  if (!largest.empty()) {
    MutexLock l(key_bound_mu_);
    if (Slice(key_bound_).compare(Slice(largest)) < 0) key_bound_ = largest;
  }
  if (cmd.has_request && index > 0 && hooks_.applied_request) {
    hooks_.applied_request(*this, cmd.request_id, cmd.response);
  }
  return Status::OK();
}

void Tablet::Apply(const consensus::EntryPB& e) {
  if (state() == TabletState::kRunning) {
    Status s;
    switch (e.type()) {
      case consensus::ENTRY_NORMAL:
        s = ApplyWrite(e.data(), e.index());
        break;
      case consensus::ENTRY_CONFIG:
      case consensus::ENTRY_NOOP:
      default: {
        if (e.type() == consensus::ENTRY_CONFIG) {
          consensus::ConfigPB c;
          if (!c.ParseFromString(e.data())) {
            s = Status::Corruption("unparseable configuration entry " + std::to_string(e.index()));
            break;
          }
          applied_config_ = std::move(c);
          has_applied_config_ = true;
        }
        // Stored too: the applied index reported durable (and the log released below
        // it) must never be above the one a restart reads back.
        StoreWriteBatch batch;
        AddAppliedState(e.index(), &batch);
        s = store_->Write(&batch);
        break;
      }
    }
    if (!s.ok()) {
      // The rows would fall out of step with the other replicas: stop serving.
      LOG(ERROR) << "tablet " << tablet_id() << ": applying entry " << e.index()
                 << " failed; the tablet stops: " << s.ToString();
      failure_ = s.CloneAndPrepend("applying entry " + std::to_string(e.index()));
      state_.store(TabletState::kFailed, std::memory_order_release);
      if (hooks_.consensus_changed) hooks_.consensus_changed();
    }
  }
  applied_index_.store(e.index(), std::memory_order_release);
  if (applied_term_.load(std::memory_order_relaxed) != e.term()) {
    MutexLock l(leader_mu_);
    applied_term_.store(e.term(), std::memory_order_release);
    leader_cv_.notify_all();
  }
}

void Tablet::FlushRequested() {
  if (state() != TabletState::kRunning) return;
  const uint64_t index = applied_index();
  // Every write applied so far is in the WAL: syncing it makes them durable.
  Status s = store_->SyncWal();
  if (!s.ok()) {
    LOG(WARNING) << "tablet " << tablet_id() << ": " << s.ToString();
    return;
  }
  if (auto g = group()) g->ReportDurable(index);
}

void Tablet::GroupFailed(const Status& error) {
  if (state() != TabletState::kRunning) return;
  LOG(ERROR) << "tablet " << tablet_id() << ": its consensus group failed; the tablet stops: "
             << error.ToString();
  failure_ = error.CloneAndPrepend("consensus");
  state_.store(TabletState::kFailed, std::memory_order_release);
  {
    MutexLock l(leader_mu_);
    leader_cv_.notify_all();
    for (ProposalWaiter* w : proposals_waiting_) w->NoteLeadershipChange();
  }
  if (hooks_.consensus_changed) hooks_.consensus_changed();
}

void Tablet::LeadershipChanged() {
  if (auto g = group()) NoteLeadership(g->info(), /*count=*/true);
  {
    MutexLock l(leader_mu_);
    leader_cv_.notify_all();
    for (ProposalWaiter* w : proposals_waiting_) w->NoteLeadershipChange();
  }
  if (hooks_.consensus_changed) hooks_.consensus_changed();
}

}  // namespace nyala::tserver
