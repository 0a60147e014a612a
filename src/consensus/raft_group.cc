#include "consensus/raft_group.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <utility>

#include "common/histogram.h"
#include "consensus/consensus_metrics.h"
#include "consensus/log.h"
#include "nyala/monotime.h"
#include "rpc/rpc_context.h"

DEFINE_int32(raft_retained_entries, 10000,
             "Entries a Raft group keeps in memory below the index its state machine reported "
             "durable, for followers that lag behind");
DEFINE_int32(log_min_seconds_to_retain, 300,
             "Seconds a Raft group's entries stay in the consensus log on disk after its state "
             "machine made them durable, so that a follower that was down this long (a restart, "
             "an upgrade) catches up from the log instead of needing a copy of the tablet. "
             "Bounded by --log_max_segments_to_retain");
DEFINE_validator(log_min_seconds_to_retain, [](const char*, int32_t v) { return v >= 0; });
DEFINE_int32(log_max_segments_to_retain, 6,
             "Old consensus log segments (of --log_segment_size_mb each) the server keeps at "
             "most for --log_min_seconds_to_retain; past this many, durable entries leave the "
             "log at once. Keep it below --log_max_old_segments, or groups are asked to flush "
             "for what only retention keeps");
DEFINE_validator(log_max_segments_to_retain, [](const char*, int32_t v) { return v >= 0; });

namespace nyala::consensus {

namespace {

HardState ToLogHardState(const HardStatePB& hs) {
  HardState out;
  out.term = hs.term();
  out.commit_index = hs.commit();
  if (hs.vote() != kNoPeer) out.voted_for = std::to_string(hs.vote());
  return out;
}

// Entry bytes read back from the log per batch for a lagging follower: one append
// message's worth (RaftOptions::max_msg_bytes).
constexpr uint64_t kReadBackBatchBytes = 1 << 20;

// Appends per follower whose round trip the leader times at once (NoteSent): more
// pipelined than that, the oldest are forgotten.
constexpr size_t kMaxTrackedAppends = 64;

Status StoppedStatus() {
  return Status::ServiceUnavailable("the consensus runtime is shutting down",
                                    "the outcome of calls in flight is unknown");
}

}  // namespace

RaftGroup::RaftGroup(GroupWorker* worker, SharedLog* log, const GroupOptions& opts,
                     std::unique_ptr<Raft> raft)
    : id_(opts.group_id),
      name_(opts.name.empty() ? "consensus group " + std::to_string(opts.group_id) : opts.name),
      worker_(worker),
      log_(log),
      sm_(opts.state_machine),
      raft_(std::move(raft)),
      applied_(opts.applied) {
  last_role_ = raft_->role();
  last_term_ = raft_->term();
  PublishInfo();
}

RaftGroup::~RaftGroup() = default;

// A proposal on its way to the group's worker: one object (one allocation) per
// proposal, which is the hot path of every write.
struct RaftGroup::AppendTask {
  std::shared_ptr<RaftGroup> self;
  std::optional<std::pair<ConfigChange, PeerId>> change;  // else a normal entry of `data`
  uint64_t term = 0;  // non-zero: append only as the leader of this term
  std::string data;
  Callback done;
  std::shared_ptr<ProposalTrace> trace;  // may be null

  void operator()() {
    if (!self->failed_.ok()) return done(self->failed_, 0);
    const int64_t now = GetMonoTimeMicros();
    Result<uint64_t> index = AppendToRaft(self->raft_.get(), now);
    if (!index.ok()) return done(index.status(), 0);
    if (trace) trace->appended_us.store(now, std::memory_order_relaxed);
    self->TrackProposal(*index, std::move(done), std::move(trace));
    self->worker_->Touch(self.get());
  }

  Result<uint64_t> AppendToRaft(Raft* raft, int64_t now) {
    if (change) return raft->ProposeConfigChange(change->first, change->second, now);
    if (term != 0 && (raft->role() != RaftRole::kLeader || raft->term() != term)) {
      return Status::IllegalState("not the leader in term " + std::to_string(term),
                                  "this server is " + raft->ToString());
    }
    return raft->Propose(std::move(data), now);
  }
};

void RaftGroup::Propose(std::string data, Callback done) {
  Append(
      AppendTask{shared_from_this(), std::nullopt, 0, std::move(data), std::move(done), nullptr});
}

void RaftGroup::ProposeInTerm(uint64_t term, std::string data, Callback done,
                              std::shared_ptr<ProposalTrace> trace) {
  Append(AppendTask{shared_from_this(), std::nullopt, term, std::move(data), std::move(done),
                    std::move(trace)});
}

void RaftGroup::ChangeConfig(ConfigChange change, PeerId peer, Callback done) {
  Append(AppendTask{shared_from_this(), std::make_pair(change, peer), 0, "", std::move(done),
                    nullptr});
}

void RaftGroup::Append(AppendTask task) {
  std::function<void()> run = std::move(task);
  if (!worker_->Post(&run)) run.target<AppendTask>()->done(StoppedStatus(), 0);
}

void RaftGroup::TrackProposal(uint64_t index, Callback done, std::shared_ptr<ProposalTrace> trace) {
  DCHECK(worker_->IsCurrentThread());
  auto [it, inserted] = proposals_.try_emplace(index);
  if (!inserted) {
    // An entry this node proposed at that index in an earlier term was overwritten
    // before it could be applied: it never will be.
    Callback old = std::move(it->second.done);
    it->second = PendingProposal{raft_->term(), std::move(done), std::move(trace)};
    old(Status::Aborted("the entry was replaced by another leader's at index " +
                        std::to_string(index) + " and not applied"),
        index);
    return;
  }
  it->second = PendingProposal{raft_->term(), std::move(done), std::move(trace)};
}

void RaftGroup::Read(std::function<void(const Status&)> done) {
  auto self = shared_from_this();
  auto task = [self, done]() mutable {
    if (!self->failed_.ok()) return done(self->failed_);
    const uint64_t id = self->next_read_id_++;
    Status s = self->raft_->ReadIndex(id, GetMonoTimeMicros());
    if (!s.ok()) return done(s);
    self->reads_[id] = PendingRead{0, std::move(done)};
    self->worker_->Touch(self.get());
  };
  if (!PostToWorker(std::move(task))) done(StoppedStatus());
}

void RaftGroup::TransferLeadership(PeerId to, std::function<void(const Status&)> done) {
  auto self = shared_from_this();
  auto task = [self, to, done]() {
    if (!self->failed_.ok()) return done(self->failed_);
    done(self->raft_->TransferLeadership(to, GetMonoTimeMicros()));
    self->worker_->Touch(self.get());
  };
  if (!PostToWorker(std::move(task))) done(StoppedStatus());
}

void RaftGroup::Campaign() {
  auto self = shared_from_this();
  PostToWorker([self] {
    if (!self->failed_.ok()) return;
    Status s = self->raft_->CampaignNow(GetMonoTimeMicros());
    LOG_IF(WARNING, !s.ok()) << self->name_ << ": " << s.ToString();
    self->worker_->Touch(self.get());
  });
}

void RaftGroup::ReportCopied(PeerId peer, uint64_t index, bool ok) {
  auto self = shared_from_this();
  PostToWorker([self, peer, index, ok] {
    if (!self->failed_.ok()) return;
    self->raft_->ReportSnapshot(peer, index, ok);
    self->worker_->Touch(self.get());
  });
}

void RaftGroup::PeerLacksReplica(PeerId peer) {
  DCHECK(worker_->IsCurrentThread());
  if (!failed_.ok() || sm_ == nullptr || raft_->role() != RaftRole::kLeader) return;
  const ConfigPB& c = raft_->config();
  const bool member =
      std::find(c.voters().begin(), c.voters().end(), peer) != c.voters().end() ||
      std::find(c.learners().begin(), c.learners().end(), peer) != c.learners().end();
  if (member) sm_->CopyNeeded(peer, raft_->snapshot_index());
}

void RaftGroup::ReportDurable(uint64_t index) {
  auto self = shared_from_this();
  PostToWorker([self, index] {
    if (!self->failed_.ok()) return;
    const uint64_t durable = std::min(index, self->applied_);
    self->log_->SetDurableIndex(self->id_, self->LogRetentionFloor(durable));
    const uint64_t retained = uint64_t(std::max(FLAGS_raft_retained_entries, 0));
    if (durable > retained && durable - retained > self->raft_->snapshot_index()) {
      Status s = self->raft_->Compact(durable - retained);
      LOG_IF(WARNING, !s.ok()) << self->name_ << ": " << s.ToString();
    }
  });
}

uint64_t RaftGroup::LogRetentionFloor(uint64_t durable) {
  DCHECK(worker_->IsCurrentThread());
  const int64_t now = GetMonoTimeMicros();
  const int64_t keep_us = int64_t{std::max(FLAGS_log_min_seconds_to_retain, 0)} * 1'000'000;
  // One sample a second at most: (when, durable index then).
  if (durable_samples_.empty() || now - durable_samples_.back().first >= 1'000'000) {
    durable_samples_.emplace_back(now, durable);
  }
  // The newest sample at least keep_us old is the floor; older ones are not needed.
  while (durable_samples_.size() > 1 && now - durable_samples_[1].first >= keep_us) {
    durable_samples_.pop_front();
  }
  uint64_t floor = durable;
  if (now - durable_samples_.front().first >= keep_us) {
    floor = durable_samples_.front().second;
  } else {
    floor = std::min(durable, retained_floor_);  // younger than keep_us: keep it all
  }
  if (log_->Stats().segments_live > uint64_t(std::max(FLAGS_log_max_segments_to_retain, 0)) + 1) {
    floor = durable;  // the log holds as much as retention may keep: let go
  }
  if (anchor_until_us_ > now) {
    floor = std::min(floor, anchor_index_);  // a copy being sent needs what follows it
  } else {
    anchor_until_us_ = 0;
  }
  retained_floor_ = std::max(retained_floor_, std::min(floor, durable));
  return retained_floor_;
}

void RaftGroup::AnchorLog(uint64_t index, int64_t until_us) {
  DCHECK(worker_->IsCurrentThread());
  if (anchor_until_us_ == 0 || index < anchor_index_) anchor_index_ = index;
  anchor_until_us_ = std::max(anchor_until_us_, until_us);
}

GroupInfo RaftGroup::info() const {
  MutexLock l(info_mu_);
  return info_;
}

// --- Worker -----------------------------------------------------------------------

bool RaftGroup::running() const {
  DCHECK(worker_->IsCurrentThread());
  return failed_.ok();
}

bool RaftGroup::quiesced() const {
  DCHECK(worker_->IsCurrentThread());
  return raft_->quiesced();
}

RaftRole RaftGroup::role() const {
  DCHECK(worker_->IsCurrentThread());
  return raft_->role();
}

PeerId RaftGroup::leader() const {
  DCHECK(worker_->IsCurrentThread());
  return raft_->leader();
}

const ConfigPB& RaftGroup::config() const {
  DCHECK(worker_->IsCurrentThread());
  return raft_->config();
}

bool RaftGroup::MarkDirty() {
  DCHECK(worker_->IsCurrentThread());
  if (dirty_) return false;
  dirty_ = true;
  return true;
}

void RaftGroup::RequestFlush() {
  DCHECK(worker_->IsCurrentThread());
  if (failed_.ok() && sm_ != nullptr) sm_->FlushRequested();
}

void RaftGroup::Step(std::shared_ptr<const MessagePB> m, int64_t now_us) {
  DCHECK(worker_->IsCurrentThread());
  if (!failed_.ok()) return;
  const PeerId from = m->from();
  if (m->type() == MSG_APPEND_RESP && !m->reject() && !appends_out_.empty()) NoteAck(*m, now_us);
  Status s = raft_->Step(std::move(m), now_us);
  if (!s.ok()) {
    worker_->CountRefused();
    LOG_EVERY_N(WARNING, 100) << name_ << ": a message from " << worker_->PeerName(from)
                              << " was refused: " << s.ToString();
  }
}

void RaftGroup::NoteAppendReceived(int64_t received_us) {
  DCHECK(worker_->IsCurrentThread());
  if (append_received_us_ == 0) append_received_us_ = received_us;
}

void RaftGroup::NoteAck(const MessagePB& m, int64_t now_us) {
  auto it = appends_out_.find(m.from());
  if (it == appends_out_.end()) return;
  int64_t sent_us = 0;
  auto& out = it->second;
  while (!out.empty() && out.front().first <= m.index()) {
    sent_us = out.front().second;
    out.pop_front();
  }
  const ConsensusMetrics* metrics = worker_->metrics();
  if (sent_us != 0 && metrics != nullptr) metrics->ack_round_trip->Increment(now_us - sent_us);
}

void RaftGroup::NoteSent(const Ready& rd, const std::vector<MessagePB>& msgs, int64_t now_us) {
  if (raft_->role() != RaftRole::kLeader) {
    appends_out_.clear();
    return;
  }
  if (!proposals_.empty()) {
    for (const EntryPtr& e : rd.entries) {
      auto it = proposals_.find(e->index());
      if (it != proposals_.end() && it->second.trace) {
        it->second.trace->sent_us.store(now_us, std::memory_order_relaxed);
      }
    }
  }
  if (worker_->metrics() == nullptr) return;
  for (const MessagePB& m : msgs) {
    if (m.type() != MSG_APPEND || m.entries_size() == 0) continue;
    auto& out = appends_out_[m.to()];
    if (!out.empty() && out.back().first >= m.entries().rbegin()->index()) out.clear();  // resent
    out.emplace_back(m.entries().rbegin()->index(), now_us);
    if (out.size() > kMaxTrackedAppends) out.pop_front();
  }
}

void RaftGroup::Tick(int64_t now_us) {
  DCHECK(worker_->IsCurrentThread());
  if (failed_.ok()) raft_->Tick(now_us);
}

void RaftGroup::WakeUp(int64_t now_us) {
  DCHECK(worker_->IsCurrentThread());
  if (failed_.ok()) raft_->WakeUp(now_us);
}

void RaftGroup::Process() {
  DCHECK(worker_->IsCurrentThread());
  dirty_ = false;
  if (!failed_.ok()) return;
  while (failed_.ok() && raft_->HasReady()) HandleReady(raft_->TakeReady());
  NoteRole();
  // A new configuration (an entry appended, or a snapshot installed) is news too: the
  // tablet server reports it to the master at once.
  if (PublishInfo() && sm_ != nullptr) sm_->LeadershipChanged();
  PublishFreshness();
}

void RaftGroup::PublishFreshness() {
  const PeerId leader = raft_->leader();
  // A leader told this node its commit index (a restarted node knows of none yet),
  // and everything up to it is applied here.
  const bool caught_up = raft_->role() == RaftRole::kFollower && leader != kNoPeer &&
                         raft_->leader_commit() > 0 && applied_ >= raft_->leader_commit();
  if (caught_up) {
    caught_up_us_.store(raft_->last_leader_contact_us(), std::memory_order_release);
  }
  quiet_leader_.store(caught_up && raft_->quiesced() ? leader : kNoPeer, std::memory_order_release);
}

int64_t RaftGroup::StalenessUs(int64_t now_us) const {
  if (leader_term() != 0) return 0;
  int64_t since = caught_up_us_.load(std::memory_order_acquire);
  // A quiesced follower hears nothing from its idle leader but server heartbeats.
  if (const PeerId quiet = quiet_leader_.load(std::memory_order_acquire); quiet != kNoPeer) {
    since = std::max(since, worker_->LastHeardUs(quiet));
  }
  if (since == INT64_MIN) return INT64_MAX;
  return std::max<int64_t>(0, now_us - since);
}

void RaftGroup::PublishLease() {
  const int64_t now = GetMonoTimeMicros();
  const bool held = failed_.ok() && raft_->role() == RaftRole::kLeader && raft_->HasLease(now);
  lease_expiry_us_.store(held ? raft_->lease_expiry_us() : 0, std::memory_order_release);
}

void RaftGroup::HandleReady(Ready rd) {
  DCHECK(worker_->IsCurrentThread());
  const int64_t ready_us = GetMonoTimeMicros();
  // Before this Ready's messages leave: a leader that gave its lease up (a transfer)
  // must not be read from under it once its successor may be elected.
  PublishLease();
  std::vector<LogRecord> records;
  records.reserve(rd.entries.size() + 2);
  if (rd.truncate_from) records.push_back(LogRecord::MakeTruncate(id_, *rd.truncate_from));
  for (const EntryPtr& e : rd.entries) {
    records.push_back(LogRecord::MakeEntry(id_, e->term(), e->index(), e));
  }
  // The term and vote must be durable before anything is sent; the commit index need
  // not be (a restarted node learns it again), so a change of it alone waits for the
  // next records instead of costing an fdatasync of its own.
  if (rd.hard_state) unlogged_hs_ = *rd.hard_state;
  if (unlogged_hs_) {
    const bool vote_changed = unlogged_hs_->term() != logged_hs_.term() ||
                              unlogged_hs_->vote() != logged_hs_.vote();
    if (vote_changed || !records.empty()) {
      records.push_back(LogRecord::MakeHardState(id_, ToLogHardState(*unlogged_hs_)));
      logged_hs_ = *unlogged_hs_;
      unlogged_hs_.reset();
    }
  }
  for (const FetchRequest& f : rd.fetches) FetchFromLog(f);
  for (const SnapshotRequest& s : rd.snapshots) {
    if (sm_ != nullptr && failed_.ok()) sm_->CopyNeeded(s.peer, s.index);
  }
  ApplyCommitted(rd.committed, ready_us);
  for (const ReadState& r : rd.reads) {
    auto it = reads_.find(r.request_id);
    if (it != reads_.end()) it->second.index = r.index;
  }
  ReleaseReads();

  // With nothing of this group waiting for the disk, the messages go now. Otherwise a
  // leader's appends and heartbeats go now (they promise nothing about its own log:
  // its entries count toward commitment only once Advance says they are durable), and
  // the rest once this Ready's records, and every earlier one's, are durable.
  const bool wait = !records.empty() || !persisting_.empty();
  std::vector<MessagePB> now_msgs;
  if (!wait) {
    now_msgs.swap(rd.messages);
  } else {
    std::vector<MessagePB> later;
    for (MessagePB& m : rd.messages) {
      const bool early = m.type() == MSG_APPEND || m.type() == MSG_HEARTBEAT;
      (early ? now_msgs : later).push_back(std::move(m));
    }
    rd.messages.swap(later);
  }
  if (!rd.entries.empty()) NoteSent(rd, now_msgs, ready_us);
  if (!now_msgs.empty()) worker_->Send(id_, &now_msgs);
  if (!wait) {
    raft_->Advance(rd, GetMonoTimeMicros());
    return;
  }
  rd.committed.clear();
  rd.reads.clear();
  rd.snapshots.clear();
  const bool has_records = !records.empty();
  // A Ready with records sends its messages from the log's writer thread as soon as
  // they are durable (the log finishes a group's appends in order, so every earlier
  // Ready's records are durable then too), sparing a wake-up of the worker on the
  // way from a follower's fdatasync to its answer. A Ready without records waits in
  // line for the worker.
  std::vector<MessagePB> on_durable;
  if (has_records) on_durable.swap(rd.messages);
  // On a reactor that runs the worker's part (--consensus_run_on_reactor), which may
  // block, the records are written and synced right here when the log's writer is
  // idle, and a follower's answer leaves right after: no wakeup of the writer, nor of
  // the worker for the completion. Only for a lone entry (or none: a vote) with
  // nothing else of the group waiting for the disk, which is what a light load
  // brings. Under a heavier one the reactor had better go on reading (a leader the
  // answers and proposals, a follower the next appends) while the writer thread syncs
  // (2026-12-04, consensus-bench, 256 in flight: with every leader fdatasync inline,
  // a quarter fewer commits a second).
  const bool write_here =
      has_records && rd.entries.size() <= 1 && persisting_.empty() && worker_->LogWritesHere();
  persisting_.push_back(InFlightReady{!has_records, std::move(rd)});
  if (has_records) {
    auto self = shared_from_this();
    // A follower's records for appends read off the wire: timed to their answer.
    int64_t received_us = 0;
    if (raft_->role() != RaftRole::kLeader) received_us = append_received_us_;
    append_received_us_ = 0;
    auto done = [self, msgs = std::move(on_durable), received_us,
                 submitted_us = ready_us](const Status& s) mutable {
      const int64_t durable_us = GetMonoTimeMicros();
      if (s.ok() && !msgs.empty()) {
        self->worker_->Send(self->id_, &msgs);
        // Written by a reactor's inline task (AppendHereIfIdle): out now, not when the
        // task ends.
        rpc::FlushPendingSends();
      }
      if (const ConsensusMetrics* m = self->worker_->metrics(); m != nullptr && received_us != 0) {
        m->follower_log->Increment(durable_us - submitted_us);
        m->follower_append->Increment(GetMonoTimeMicros() - received_us);
      }
      // Then back to the group's worker. A stopped runtime failed the group's
      // callbacks already.
      self->PostToWorker([self, s, durable_us] {
        self->OnPersisted(s, durable_us);
        self->worker_->Touch(self.get());
      });
    };
    if (write_here) {
      rpc::FlushPendingSends();  // a leader's appends, above: the followers sync meanwhile
      log_->AppendHereIfIdle(std::move(records), std::move(done));
    } else {
      log_->AppendAsync(std::move(records), std::move(done));
    }
  }
}

void RaftGroup::FetchFromLog(const FetchRequest& f) {
  DCHECK(worker_->IsCurrentThread());
  auto self = shared_from_this();
  auto read = [self, f] {
    std::vector<LogEntry> got;
    Status s = self->log_->ReadEntries(self->id_, f.index, kReadBackBatchBytes, &got);
    uint64_t prev_term = 0;
    if (s.ok() && f.index > 1) {
      Result<uint64_t> t = self->log_->TermAt(self->id_, f.index - 1);
      if (t.ok()) {
        prev_term = *t;
      } else {
        s = t.status();
      }
    }
    std::vector<EntryPtr> entries;
    entries.reserve(got.size());
    for (const LogEntry& e : got) {
      if (!s.ok()) break;
      auto pb = std::make_shared<EntryPB>();
      if (!pb->ParseFromString(e.data) || pb->index() != e.index || pb->term() != e.term) {
        s = Status::Corruption("log entry " + std::to_string(e.index) + " does not parse");
        break;
      }
      entries.push_back(std::move(pb));
    }
    if (s.ok() && entries.empty()) s = Status::NotFound("no entry from " + std::to_string(f.index));
    if (s.ok()) self->worker_->CountReadBack(entries.size());
    self->PostToWorker([self, f, s, prev_term, entries = std::move(entries)] {
      if (!self->failed_.ok()) return;
      if (!s.ok()) {
        LOG(WARNING) << self->name_ << ": " << self->worker_->PeerName(f.peer)
                     << " needs entries from " << f.index
                     << ", which the log on disk no longer holds (" << s.ToString()
                     << "): it needs a copy of the tablet";
        self->raft_->StorageMissing(f.peer, f.index);
      } else {
        LOG_EVERY_N(INFO, 50) << self->name_ << ": " << self->worker_->PeerName(f.peer)
                              << " is behind the entries kept in memory; sending it entries "
                              << f.index << "-" << entries.back()->index()
                              << " read back from the log on disk";
        Status r = self->raft_->SendFromStorage(f.peer, prev_term, entries);
        LOG_IF(WARNING, !r.ok()) << self->name_ << ": " << r.ToString();
      }
      self->worker_->Touch(self.get());
    });
  };
  if (!worker_->PostToReader(std::move(read))) raft_->StorageMissing(f.peer, f.index);
}

void RaftGroup::OnPersisted(const Status& s, int64_t durable_us) {
  DCHECK(worker_->IsCurrentThread());
  if (!failed_.ok()) return;
  if (!s.ok()) return Fail(s);
  for (InFlightReady& f : persisting_) {
    if (!f.durable) {
      f.durable = true;  // the log finishes a group's appends in submission order
      f.durable_us = durable_us;
      break;
    }
  }
  while (!persisting_.empty() && persisting_.front().durable) {
    InFlightReady f = std::move(persisting_.front());
    persisting_.pop_front();
    if (!proposals_.empty()) {
      for (const EntryPtr& e : f.ready.entries) {
        auto it = proposals_.find(e->index());
        if (it != proposals_.end() && it->second.trace) {
          it->second.trace->durable_us.store(f.durable_us, std::memory_order_relaxed);
        }
      }
    }
    if (!f.ready.messages.empty()) worker_->Send(id_, &f.ready.messages);
    raft_->Advance(f.ready, GetMonoTimeMicros());
  }
}

void RaftGroup::ApplyCommitted(const std::vector<EntryPtr>& committed, int64_t ready_us) {
  for (const EntryPtr& entry : committed) {
    const EntryPB& e = *entry;
    if (e.index() <= applied_) continue;  // applied and durable before a restart
    auto it = proposals_.find(e.index());
    ProposalTrace* trace = it != proposals_.end() ? it->second.trace.get() : nullptr;
    if (trace != nullptr) trace->committed_us.store(ready_us, std::memory_order_relaxed);
    if (sm_ != nullptr) sm_->Apply(e);
    applied_ = e.index();
    if (it == proposals_.end()) continue;
    if (trace != nullptr) trace->applied_us.store(GetMonoTimeMicros(), std::memory_order_relaxed);
    Callback done = std::move(it->second.done);
    const bool ours = it->second.term == e.term();
    proposals_.erase(it);
    if (ours) {
      done(Status::OK(), e.index());
    } else {
      done(Status::Aborted("the entry was replaced by another leader's at index " +
                           std::to_string(e.index()) + " and not applied"),
           e.index());
    }
  }
}

void RaftGroup::ReleaseReads() {
  for (auto it = reads_.begin(); it != reads_.end();) {
    if (it->second.index != 0 && it->second.index <= applied_) {
      auto done = std::move(it->second.done);
      it = reads_.erase(it);
      done(Status::OK());
    } else {
      ++it;
    }
  }
}

void RaftGroup::NoteRole() {
  const RaftRole role = raft_->role();
  const uint64_t term = raft_->term();
  if (last_role_ == RaftRole::kLeader && (role != RaftRole::kLeader || term != last_term_)) {
    // Raft dropped the reads it had not answered; those it answered stay safe.
    for (auto it = reads_.begin(); it != reads_.end();) {
      if (it->second.index == 0) {
        auto done = std::move(it->second.done);
        it = reads_.erase(it);
        done(Status::IllegalState("lost leadership before the read was confirmed",
                                  "retry on the new leader"));
      } else {
        ++it;
      }
    }
  }
  const bool changed = role != last_role_ || term != last_term_ || raft_->leader() != last_leader_;
  last_role_ = role;
  last_term_ = term;
  last_leader_ = raft_->leader();
  if (changed && sm_ != nullptr) {
    PublishInfo();
    sm_->LeadershipChanged();
  }
}

void RaftGroup::Fail(const Status& s) {
  LOG(ERROR) << name_ << ": its consensus group failed and stops: " << s.ToString();
  failed_ = s;
  FailPending(Status::ServiceUnavailable(name_ + ": its consensus group failed", s.ToString()));
  PublishInfo();
  if (sm_ != nullptr) sm_->GroupFailed(s);
}

void RaftGroup::FailPending(const Status& s) {
  DCHECK(worker_->IsCurrentThread());
  auto proposals = std::move(proposals_);
  proposals_.clear();
  auto reads = std::move(reads_);
  reads_.clear();
  for (auto& [index, p] : proposals) p.done(s, index);
  for (auto& [id, r] : reads) r.done(s);
}

void RaftGroup::Stop() {
  DCHECK(worker_->IsCurrentThread());
  if (!failed_.ok()) return;
  failed_ = Status::Aborted(name_ + ": its consensus group was removed");
  FailPending(
      Status::Aborted(name_ + ": its consensus group was removed", "the outcome is unknown"));
  PublishInfo();
}

bool RaftGroup::PublishInfo() {
  MutexLock l(info_mu_);
  bool config_changed = false;
  info_.role = raft_->role();
  info_.term = raft_->term();
  info_.leader = raft_->leader();
  info_.commit_index = raft_->commit_index();
  info_.applied_index = applied_;
  info_.last_index = raft_->last_index();
  info_.snapshot_index = raft_->snapshot_index();
  raft_->Followers(&info_.followers);
  info_.quiesced = raft_->quiesced();
  // The configuration changes only with a configuration entry or a snapshot.
  const std::pair<uint64_t, uint64_t> config_at{raft_->config_index(), raft_->snapshot_index()};
  if (config_at != info_config_at_ || info_.config.voters_size() == 0) {
    const ConfigPB config = raft_->config();
    config_changed = config.SerializeAsString() != info_.config.SerializeAsString();
    info_.config = config;
    info_config_at_ = config_at;
  }
  info_.status = failed_;
  leader_term_.store(failed_.ok() && info_.role == RaftRole::kLeader ? info_.term : 0,
                     std::memory_order_release);
  PublishLease();
  return config_changed;
}

}  // namespace nyala::consensus
