#include "tserver/tablet_manager.h"
#include "common/result.h"

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <google/protobuf/util/message_differencer.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_set>

#include "common/flag_tags.h"
#include "common/wire_protocol.h"
#include "consensus/peer_id.h"
#include "consensus/runtime.h"
#include "nyala/monotime.h"
#include "rpc/sockaddr.h"
#include "tserver/peer_directory.h"
#include "tserver/replica_starter.h"
#include "tserver/request_tracker.h"
#include "tserver/row_locks.h"
#include "tserver/tablet_store.h"
#include "tserver/tserver_metrics.h"

DEFINE_int32(update_tablet_stats_interval_ms, 5000,
             "How often the tablet server measures each tablet's on-disk size and live row "
             "estimate; tablets whose figures changed are in the next heartbeat's report "
             "(what `nyala table statistics` and the master's table pages show).");
DEFINE_validator(update_tablet_stats_interval_ms, [](const char*, int32_t v) { return v > 0; });
TAG_FLAG(update_tablet_stats_interval_ms, runtime);
DEFINE_int32(tablet_durable_report_interval_ms, 1000,
             "How often the tablet server syncs its RocksDB WALs and tells each replica's "
             "Raft group how far its applied rows are durable, so that consensus log "
             "segments and in-memory entries below that point are let go");

namespace nyala::tserver {

using google::protobuf::util::MessageDifferencer;

master::TabletStatePB ReportedState(const Tablet& tablet) {
  switch (tablet.state()) {
    case TabletState::kRunning:
      return master::TABLET_RUNNING;
    case TabletState::kFailed:
      return master::TABLET_FAILED;
    case TabletState::kDeleted:
    case TabletState::kTombstoned:
      return master::TABLET_DELETED;
  }
  return master::TABLET_UNKNOWN;
}

TabletManager::TabletManager(std::vector<std::string> data_dirs, TServerMetrics* metrics)
    : data_dirs_(std::move(data_dirs)),
      metrics_(metrics),
      row_locks_(std::make_unique<RowLocks>()) {}

TabletManager::~TabletManager() { Shutdown(); }

Status TabletManager::OpenStore(const std::string& dir) {
  const std::string path = dir + "/tablets";
  ASSIGN_OR_RETURN(std::unique_ptr<TabletStore> store,
                   TabletStore::Open(path, metrics_ ? metrics_->registry : nullptr));
  std::vector<TabletMetadataPB> metas;
  RETURN_NOT_OK_PREPEND(store->LoadTabletMetadata(&metas), path);
  int loaded = 0;
  for (TabletMetadataPB& meta : metas) {
    const std::string id = meta.tablet_id();
    if (meta.state() == TABLET_DATA_DELETED) {
      LOG(INFO) << "tablet " << id << ": finishing an interrupted delete";
      RETURN_NOT_OK_PREPEND(store->DropTablet(meta.seq(), id), "deleting tablet " + id);
      continue;
    }
    if (meta.state() == TABLET_DATA_TOMBSTONED || meta.state() == TABLET_DATA_COPYING) {
      MutexLock l(mu_);
      tablets_.emplace(id,
                       Tablet::Tombstone(std::move(meta), store.get(), row_locks_.get(), metrics_));
      continue;  // not reported: the master knows it as removed
    }
    std::shared_ptr<Tablet> tablet;
    auto opened = Tablet::Open(meta, store.get(), row_locks_.get(), metrics_);
    if (opened.ok()) {
      tablet = std::move(opened).value();
    } else {
      LOG(ERROR) << "tablet " << id << " in " << path << " is FAILED: " << opened.status();
      tablet =
          Tablet::Failed(std::move(meta), opened.status(), store.get(), row_locks_.get(), metrics_);
    }
    MutexLock l(mu_);
    if (tablets_.count(id)) {
      LOG(ERROR) << "tablet " << id << " is in two data dirs; ignoring the copy in " << path;
      continue;
    }
    tablets_.emplace(id, std::move(tablet));
    RecordChangeLocked(id, false);
    loaded++;
  }
  LOG(INFO) << "opened " << path << ": " << loaded << " tablets";
  stores_.push_back(std::move(store));
  return Status::OK();
}

Status TabletManager::Open() {
  if (data_dirs_.empty()) return Status::InvalidArgument("no data dirs");
  for (const std::string& dir : data_dirs_) RETURN_NOT_OK(OpenStore(dir));
  admin_thread_ = std::thread([this] { AdminLoop(); });
  return Status::OK();
}

void TabletManager::AdminLoop() {
  pthread_setname_np(pthread_self(), "tablet-admin");
  for (;;) {
    {
      UniqueLock l(create_mu_);
      admin_cv_.wait(l, [this]() REQUIRES(create_mu_) {
        return admin_stop_ || !create_queue_.empty() || !delete_queue_.empty();
      });
      if (admin_stop_) break;
    }
    RunQueued();
  }
  // Stopping: answer what is still queued without doing it (the master retries).
  std::vector<PendingCreate*> creates;
  std::vector<PendingDelete*> deletes;
  {
    MutexLock q(create_mu_);
    for (PendingCreate* p : create_queue_) {
      if (p->callback) creates.push_back(p);
    }
    for (PendingDelete* p : delete_queue_) {
      if (p->callback) deletes.push_back(p);
    }
    std::erase_if(create_queue_, [](PendingCreate* p) { return bool(p->callback); });
    std::erase_if(delete_queue_, [](PendingDelete* p) { return bool(p->callback); });
  }
  const Status stopping = Status::ServiceUnavailable("the tablet server is shutting down");
  for (PendingCreate* p : creates) {
    p->callback(stopping, TabletServerErrorPB::UNKNOWN_ERROR);
    delete p;
  }
  for (PendingDelete* p : deletes) {
    p->callback(stopping);
    delete p;
  }
}

void TabletManager::RunQueued() {
  std::vector<PendingCreate*> creates;
  std::vector<PendingDelete*> deletes;
  {
    MutexLock admin(admin_mu_);
    {
      MutexLock q(create_mu_);
      creates.swap(create_queue_);
      deletes.swap(delete_queue_);
    }
    if (!creates.empty()) CreateBatchLocked(creates);
    if (!deletes.empty()) DeleteBatchLocked(deletes);
    // A synchronous caller may return (its request gone) as soon as admin_mu_ is free:
    // keep only the asynchronous requests, which are ours to answer.
    std::erase_if(creates, [](PendingCreate* p) { return !p->callback; });
    std::erase_if(deletes, [](PendingDelete* p) { return !p->callback; });
  }
  // The asynchronous ones are answered here (a synchronous caller reads its own
  // outcome once it holds admin_mu_). A tablet of one replica elects itself within an
  // fdatasync or two: it is answered once it takes writes, so a table of such tablets
  // is writable when its creation is done.
  for (PendingCreate* p : creates) {
    if (p->status.ok() && p->tablet && p->req->peers_size() <= 1 &&
        !p->tablet->replica().WaitUntilLeader(MonoDelta::FromSeconds(5))) {
      LOG(WARNING) << "tablet " << p->req->tablet_id() << " has no leader 5 s after its creation";
    }
    p->callback(p->status, p->code);
    delete p;
  }
  for (PendingDelete* p : deletes) {
    p->callback(p->status);
    delete p;
  }
}

void TabletManager::CreateTabletAsync(const CreateTabletRequestPB* req, CreateDone done) {
  auto p = std::make_unique<PendingCreate>();
  p->req = req;
  if (Status s = PrepareCreate(*req, p.get()); !s.ok()) return done(s, p->code);
  p->callback = std::move(done);
  {
    MutexLock q(create_mu_);
    if (!admin_stop_ && admin_thread_.joinable()) {
      create_queue_.push_back(p.release());
      admin_cv_.notify_one();
      return;
    }
  }
  p->callback(Status::ServiceUnavailable("the tablet server is shutting down"),
              TabletServerErrorPB::UNKNOWN_ERROR);
}

void TabletManager::DeleteTabletAsync(std::string tablet_id,
                                      std::function<void(const Status&)> done) {
  auto p = std::make_unique<PendingDelete>();
  p->id_storage = std::move(tablet_id);
  p->tablet_id = &p->id_storage;
  p->callback = std::move(done);
  {
    MutexLock q(create_mu_);
    if (!admin_stop_ && admin_thread_.joinable()) {
      delete_queue_.push_back(p.release());
      admin_cv_.notify_one();
      return;
    }
  }
  p->callback(Status::ServiceUnavailable("the tablet server is shutting down"));
}

Status TabletManager::LoadRequestRecords(RequestTracker* tracker) {
  const std::vector<std::shared_ptr<Tablet>> tablets = GetTablets();
  const int64_t now_us = GetWallTimeMicros();
  for (const auto& store : stores_) {
    std::unordered_set<uint64_t> seqs;  // the tablets of this store, running or failed
    for (const auto& t : tablets) {
      if (t->store() == store.get()) seqs.insert(t->seq());
    }
    int64_t read = 0, kept = 0;
    Status s = store->ForEachRequestRecord([&](const RequestRecord& r) -> Status {
      read++;
      if (!seqs.contains(r.tablet_seq)) {
        store->QueueRequestRecordDelete(r.tablet_seq, r.client_id, r.seq_no);
        return Status::OK();
      }
      WriteResponsePB resp;
      if (!resp.ParseFromArray(r.response.data(), static_cast<int>(r.response.size()))) {
        return Status::Corruption("unparseable response in the record of request " +
                                  std::to_string(r.seq_no) + " of client " +
                                  r.client_id.ToString());
      }
      kept +=
          tracker->Restore(r.client_id.view(), r.seq_no, r.first_incomplete_seq_no, std::move(resp),
                           MonoDelta::FromMicroseconds(now_us - r.write_time_micros),
                           RequestRecordLocation{store.get(), r.tablet_seq});
      return Status::OK();
    });
    RETURN_NOT_OK_PREPEND(s, store->path() + ": loading request records");
    // The tracker may also have forgotten records it restored first; write it all now.
    RETURN_NOT_OK_PREPEND(store->WriteRequestRecordDeletes(),
                          store->path() + ": deleting expired request records");
    LOG(INFO) << store->path() << ": " << read << " write request records, " << kept
              << " restored to answer retries";
  }
  return Status::OK();
}

Status TabletManager::StartGroup(const std::shared_ptr<Tablet>& tablet, bool campaign) {
  return starter_->Start(tablet.get(), campaign, [this, id = tablet->tablet_id()] {
    {
      MutexLock l(mu_);
      if (tablets_.count(id)) RecordChangeLocked(id, false);
    }
    NotifyChange();
  });
}

Status TabletManager::StartReplication(consensus::ConsensusRuntime* runtime,
                                       RequestTracker* tracker, const std::string& uuid) {
  DCHECK(!starter_) << "replication started twice";
  peers_ = std::make_unique<PeerDirectory>(
      uuid, [runtime](consensus::PeerId id, const rpc::Sockaddr& addr, const std::string& uuid) {
        runtime->AddPeer(id, addr, uuid);
      });
  starter_ = std::make_unique<ReplicaStarter>(runtime, tracker, peers_.get(), copy_needed_);
  int started = 0, failed = 0;
  for (const auto& t : GetTablets()) {
    if (t->state() != TabletState::kRunning) continue;
    Status s = StartGroup(t, ReplicaStarter::CampaignsAtRestart(t->metadata()));
    if (s.ok()) {
      started++;
      continue;
    }
    failed++;
    std::shared_ptr<Tablet> f =
        Tablet::Failed(t->metadata(), s, t->store(), row_locks_.get(), metrics_);
    MutexLock l(mu_);
    tablets_[t->tablet_id()] = f;
    RecordChangeLocked(t->tablet_id(), false);
  }
  LOG(INFO) << "started the Raft groups of " << started << " tablets (" << failed << " failed)";
  durable_reporter_ = std::thread([this] { ReporterLoop(); });
  return Status::OK();
}

void TabletManager::ReporterLoop() {
  UniqueLock l(reporter_mu_);
  MonoTime next_stats = MonoTime::Now();  // the first figures go with an early report
  while (!reporter_stop_) {
    const MonoTime now = MonoTime::Now();
    const MonoDelta to_stats = next_stats > now ? next_stats - now : MonoDelta();
    const int64_t wait_ms = std::min<int64_t>(std::max(FLAGS_tablet_durable_report_interval_ms, 10),
                                              to_stats.ToMilliseconds() + 1);
    reporter_cv_.wait_for(l, std::chrono::milliseconds(wait_ms));
    if (reporter_stop_) break;
    l.Unlock();
    ReportDurableIndexes();
    if (MonoTime::Now() >= next_stats) {
      UpdateTabletStats();
      next_stats =
          MonoTime::Now() + MonoDelta::FromMilliseconds(FLAGS_update_tablet_stats_interval_ms);
    }
    l.Lock();
  }
}

void TabletManager::ReportDurableIndexes() {
  const std::vector<std::shared_ptr<Tablet>> tablets = GetTablets();
  for (const auto& store : stores_) {
    // The applied indexes first: every apply up to them is in the WAL the sync covers.
    std::vector<std::pair<std::shared_ptr<consensus::RaftGroup>, uint64_t>> durable;
    std::vector<TabletReplica*> reported;
    for (const auto& t : tablets) {
      if (t->store() != store.get() || t->state() != TabletState::kRunning) continue;
      TabletReplica& replica = t->replica();
      const uint64_t applied = replica.applied_index();
      // Idle tablets cost nothing: no sync, no task for their group.
      if (applied == replica.reported_durable_index()) continue;
      if (auto g = replica.group()) {
        durable.emplace_back(std::move(g), applied);
        reported.push_back(&replica);
      }
    }
    if (durable.empty()) continue;
    if (Status s = store->SyncWal(); !s.ok()) {
      LOG(WARNING) << store->path() << ": " << s.ToString();
      continue;
    }
    for (size_t i = 0; i < durable.size(); i++) {
      durable[i].first->ReportDurable(durable[i].second);
      reported[i]->set_reported_durable_index(durable[i].second);
    }
  }
}

void TabletManager::UpdateTabletStats() {
  std::vector<std::string> changed;
  for (const auto& t : GetTablets()) {
    if (t->state() != TabletState::kRunning) continue;
    if (t->MeasureStats()) changed.push_back(t->tablet_id());
  }
  if (changed.empty()) return;
  MutexLock l(mu_);
  for (const auto& id : changed) {
    auto it = tablets_.find(id);
    // Not if it was deleted (or replaced) meanwhile: that change stands.
    if (it != tablets_.end() && it->second->state() == TabletState::kRunning) {
      RecordChangeLocked(id, false);
    }
  }
}

void TabletManager::UpdatePeers(
    const google::protobuf::RepeatedPtrField<master::TSInfoPB>& servers) {
  if (peers_) peers_->Update(servers);
}

std::string TabletManager::UuidOfPeer(uint64_t id) const {
  return peers_ ? peers_->UuidOf(id) : std::string();
}

Status TabletManager::TombstoneTablet(const std::string& tablet_id) {
  MutexLock admin(admin_mu_);
  std::shared_ptr<Tablet> t = Lookup(tablet_id);
  if (!t) return Status::NotFound("no tablet " + tablet_id);
  if (t->state() == TabletState::kTombstoned) return Status::OK();
  // The group stops with its log kept: its term, vote and last position stay.
  RETURN_NOT_OK_PREPEND(t->replica().Stop(/*forget_log=*/false),
                        "tablet " + tablet_id + ": stopping its Raft group");
  t->MarkDeleted();  // waits for running writes and gets
  TabletMetadataPB tombstone = t->metadata();
  tombstone.set_state(TABLET_DATA_TOMBSTONED);
  TabletStore* store = t->store();
  RETURN_NOT_OK_PREPEND(store->PutTabletMetadata(tombstone), "tablet " + tablet_id + ": tombstone");
  RETURN_NOT_OK_PREPEND(store->DropTabletData(t->seq()),
                        "tablet " + tablet_id + ": dropping its data");
  if (metrics_) TabletMetrics::RemoveFromRegistry(metrics_->registry, tablet_id);
  {
    MutexLock l(mu_);
    tablets_[tablet_id] =
        Tablet::Tombstone(std::move(tombstone), store, row_locks_.get(), metrics_);
    RecordChangeLocked(tablet_id, true);
  }
  NotifyChange();
  LOG(INFO) << "tablet " << tablet_id
            << ": tombstoned (its data dropped, its consensus state kept)";
  return Status::OK();
}

void TabletManager::AddPeerAddress(const std::string& uuid, const std::string& host,
                                   uint32_t port) {
  if (peers_) peers_->AddPeer(uuid, host, port);
}

std::string TabletManager::PeerAddress(const std::string& uuid) const {
  return peers_ ? peers_->AddressOf(uuid) : std::string();
}

void TabletManager::StopAdminThread() {
  {
    MutexLock q(create_mu_);
    admin_stop_ = true;
    admin_cv_.notify_all();
  }
  if (admin_thread_.joinable()) admin_thread_.join();
}

void TabletManager::Shutdown() {
  StopAdminThread();
  {
    MutexLock l(reporter_mu_);
    reporter_stop_ = true;
    reporter_cv_.notify_all();
  }
  if (durable_reporter_.joinable()) durable_reporter_.join();
  {
    MutexLock l(mu_);
    tablets_.clear();
  }
  for (auto& store : stores_) WARN_NOT_OK(store->Flush(), "flushing " + store->path());
  stores_.clear();
}

std::shared_ptr<Tablet> TabletManager::Lookup(std::string_view id) const {
  MutexLock l(mu_);
  auto it = tablets_.find(id);
  return it == tablets_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<Tablet>> TabletManager::GetTablets() const {
  MutexLock l(mu_);
  std::vector<std::shared_ptr<Tablet>> out;
  out.reserve(tablets_.size());
  for (const auto& [id, t] : tablets_) out.push_back(t);
  return out;
}

size_t TabletManager::NumTablets() const {
  MutexLock l(mu_);
  return tablets_.size();
}

void TabletManager::CompareWithExisting(const Tablet& existing, PendingCreate* p) {
  const CreateTabletRequestPB& req = *p->req;
  const TabletMetadataPB m = existing.metadata();
  // The same tablet with another schema version (its table was altered since one of
  // the two was made) is the same tablet: the alteration reaches it through its log.
  const bool same_version = m.schema().version() == req.schema().version();
  if (m.table_id() == req.table_id() &&
      (!same_version || (m.table_name() == req.table_name() &&
                         MessageDifferencer::Equals(m.schema(), req.schema()))) &&
      MessageDifferencer::Equals(m.partition_schema(), req.partition_schema()) &&
      MessageDifferencer::Equals(m.partition(), req.partition())) {
    p->status = Status::OK();
    return;
  }
  p->code = TabletServerErrorPB::TABLET_ALREADY_EXISTS;
  p->status = Status::AlreadyPresent("tablet " + req.tablet_id() +
                                     " already exists with another definition (table " +
                                     m.table_name() + ")");
}

Status TabletManager::PrepareCreate(const CreateTabletRequestPB& req, PendingCreate* p) {
  p->req = &req;
  p->code = TabletServerErrorPB::UNKNOWN_ERROR;
  if (req.tablet_id().empty()) {
    p->code = TabletServerErrorPB::INVALID_CONFIG;
    return Status::InvalidArgument("CreateTablet without a tablet id");
  }
  auto schema = Schema::FromPB(req.schema());
  if (!schema.ok()) {
    p->code = TabletServerErrorPB::INVALID_SCHEMA;
    return schema.status().CloneAndPrepend("schema");
  }
  auto pschema = PartitionSchema::FromPB(req.partition_schema(), *schema);
  if (!pschema.ok()) {
    p->code = TabletServerErrorPB::INVALID_SCHEMA;
    return pschema.status().CloneAndPrepend("partition schema");
  }
  TabletMetadataPB& meta = p->meta;
  meta.set_tablet_id(req.tablet_id());
  meta.set_table_id(req.table_id());
  meta.set_table_name(req.table_name());
  *meta.mutable_schema() = req.schema();
  *meta.mutable_partition_schema() = req.partition_schema();
  *meta.mutable_partition() = req.partition();
  meta.set_state(TABLET_DATA_READY);
  *meta.mutable_peers() = req.peers();
  return Status::OK();
}

Status TabletManager::CreateTablet(const CreateTabletRequestPB& req,
                                   TabletServerErrorPB::Code* code) {
  PendingCreate p;
  if (Status s = PrepareCreate(req, &p); !s.ok()) {
    *code = p.code;
    return s;
  }
  {
    MutexLock q(create_mu_);
    create_queue_.push_back(&p);
  }
  // Group commit: whoever holds admin_mu_ next takes every create queued by then,
  // ours included unless an earlier holder took (and finished) it already.
  RunQueued();
  {
    MutexLock admin(admin_mu_);  // ours is done once no batch holding it runs
    DCHECK(p.done);
  }
  *code = p.code;
  if (!p.status.ok() || !p.tablet) return p.status;
  // A tablet of one replica elects itself within an fdatasync or two: answer once it
  // takes writes, so a table of such tablets is writable when its creation is done.
  if (req.peers_size() <= 1 && !p.tablet->replica().WaitUntilLeader(MonoDelta::FromSeconds(5))) {
    LOG(WARNING) << "tablet " << req.tablet_id() << " has no leader 5 s after its creation";
  }
  return Status::OK();
}

void TabletManager::CreateBatchLocked(const std::vector<PendingCreate*>& batch) {
  if (!starter_) {
    // Every tablet is a replica of its group: none before replication runs.
    for (PendingCreate* p : batch) {
      p->status = Status::ServiceUnavailable("tablet " + p->req->tablet_id() +
                                             ": the tablet server's replication has not started");
      p->done = true;
    }
    return;
  }
  // Tablets that exist, or that come twice in this batch (a retry racing the first
  // call), are compared with the one created; the others are created, per store.
  std::vector<PendingCreate*> again;
  std::map<TabletStore*, std::vector<PendingCreate*>> by_store;
  std::set<std::string> ids;
  for (PendingCreate* p : batch) {
    if (std::shared_ptr<Tablet> existing = Lookup(p->req->tablet_id())) {
      CompareWithExisting(*existing, p);
      p->done = true;
    } else if (!ids.insert(p->req->tablet_id()).second) {
      again.push_back(p);
    } else {
      by_store[stores_[next_store_++ % stores_.size()].get()].push_back(p);
    }
  }
  int created = 0;
  for (auto& [store, ps] : by_store) {
    std::vector<TabletMetadataPB*> metas;
    for (PendingCreate* p : ps) metas.push_back(&p->meta);
    // One synced batch holds the metadata of all of them.
    if (Status s = store->CreateTabletsMetadata(metas); !s.ok()) {
      for (PendingCreate* p : ps) {
        p->status = s;
        p->done = true;
      }
      continue;
    }
    for (PendingCreate* p : ps) {
      const CreateTabletRequestPB& req = *p->req;
      p->done = true;
      auto tablet = Tablet::Open(std::move(p->meta), store, row_locks_.get(), metrics_);
      if (!tablet.ok()) {
        p->status = tablet.status();
        continue;
      }
      // Before the tablet is visible: no write may reach it without its group. The
      // first peer the master listed campaigns at once (the master spreads the first
      // places, so the leaders start spread); the others wait for it.
      const bool first = starter_->CampaignsAtCreation((*tablet)->metadata());
      if (Status s = StartGroup(*tablet, first); !s.ok()) {
        WARN_NOT_OK(store->DropTablet((*tablet)->seq(), req.tablet_id()),
                    "dropping tablet " + req.tablet_id());
        p->status = s.CloneAndPrepend("tablet " + req.tablet_id());
        continue;
      }
      {
        MutexLock l(mu_);
        tablets_[req.tablet_id()] = *tablet;
        RecordChangeLocked(req.tablet_id(), false);
      }
      p->tablet = *tablet;
      p->status = Status::OK();
      created++;
      LOG(INFO) << "created tablet " << req.tablet_id() << " of table " << req.table_name()
                << " (" << req.table_id() << ") seq " << p->tablet->seq() << " in "
                << store->path();
    }
  }
  for (PendingCreate* p : again) {
    if (std::shared_ptr<Tablet> existing = Lookup(p->req->tablet_id())) {
      CompareWithExisting(*existing, p);
    } else {
      p->status = Status::ServiceUnavailable("tablet " + p->req->tablet_id() +
                                             " was being created by another call that failed");
    }
    p->done = true;
  }
  if (batch.size() > 1) {
    VLOG(1) << "created " << created << " tablets in one batch of " << batch.size();
  }
  if (created > 0) NotifyChange();
}

Status TabletManager::DeleteTablet(const std::string& tablet_id) {
  PendingDelete p;
  p.tablet_id = &tablet_id;
  {
    MutexLock q(create_mu_);
    delete_queue_.push_back(&p);
  }
  RunQueued();  // group commit, as in CreateTablet
  MutexLock admin(admin_mu_);
  DCHECK(p.done);
  return p.status;
}

void TabletManager::DeleteBatchLocked(const std::vector<PendingDelete*>& batch) {
  struct Doomed {
    PendingDelete* p;
    std::shared_ptr<Tablet> tablet;
    TabletMetadataPB tombstone;
  };
  std::map<TabletStore*, std::vector<Doomed>> by_store;
  std::set<std::string> ids;
  for (PendingDelete* p : batch) {
    const std::string& id = *p->tablet_id;
    p->done = true;
    std::shared_ptr<Tablet> tablet = Lookup(id);
    if (!tablet || !ids.insert(id).second) {
      p->status = Status::NotFound("no tablet " + id);
      continue;
    }
    // Writes waiting for the group get Aborted; nothing is applied from here on.
    WARN_NOT_OK(tablet->replica().Stop(), "removing the Raft group of tablet " + id);
    // A tombstone runs no group, but its consensus state is in the log.
    if (tablet->state() == TabletState::kTombstoned && starter_) starter_->ForgetLog(id);
    tablet->MarkDeleted();  // waits for running writes and gets
    TabletMetadataPB tombstone = tablet->metadata();
    tombstone.set_state(TABLET_DATA_DELETED);
    TabletStore* store = tablet->store();
    by_store[store].push_back(Doomed{p, std::move(tablet), std::move(tombstone)});
  }
  bool changed = false;
  for (auto& [store, doomed] : by_store) {
    std::vector<const TabletMetadataPB*> tombstones;
    for (const Doomed& d : doomed) tombstones.push_back(&d.tombstone);
    // The tombstones make the next start finish this if it fails or we crash.
    if (Status s = store->PutTabletsMetadata(tombstones); !s.ok()) {
      for (Doomed& d : doomed) d.p->status = s.CloneAndPrepend("tombstone");
      continue;
    }
    {
      MutexLock l(mu_);
      for (const Doomed& d : doomed) {
        tablets_.erase(*d.p->tablet_id);
        RecordChangeLocked(*d.p->tablet_id, true);
      }
    }
    changed = true;
    std::vector<std::pair<uint64_t, std::string>> drops;
    for (const Doomed& d : doomed) {
      if (metrics_) TabletMetrics::RemoveFromRegistry(metrics_->registry, *d.p->tablet_id);
      drops.emplace_back(d.tablet->seq(), *d.p->tablet_id);
    }
    Status s = store->DropTablets(drops);
    for (Doomed& d : doomed) {
      d.p->status = s.ok() ? s : s.CloneAndPrepend("dropping the rows of tablet " + *d.p->tablet_id);
      if (s.ok()) LOG(INFO) << "deleted tablet " << *d.p->tablet_id;
    }
  }
  if (changed) NotifyChange();
}

int64_t TabletManager::RecordChangeLocked(const std::string& id, bool deleted) {
  changes_[id] = Change{++last_change_, deleted};
  return last_change_;
}

void TabletManager::NotifyChange() {
  std::function<void()> cb;
  {
    MutexLock l(mu_);
    cb = change_cb_;
  }
  if (cb) cb();
}

void TabletManager::set_change_callback(std::function<void()> cb) {
  MutexLock l(mu_);
  change_cb_ = std::move(cb);
}

int64_t TabletManager::LatestChange() const {
  MutexLock l(mu_);
  return last_change_;
}

namespace {
void FillReported(const Tablet& t, master::ReportedTabletPB* pb) {
  pb->set_tablet_id(t.tablet_id());
  pb->set_state(ReportedState(t));
  pb->set_table_id(t.metadata().table_id());
  pb->set_schema_version(t.schema_version());
  if (t.state() == TabletState::kFailed) StatusToPB(t.failure(), pb->mutable_error());
  Tablet::Stats stats;
  if (t.state() == TabletState::kRunning && t.ReportedStats(&stats)) {
    pb->mutable_stats()->set_on_disk_size(stats.on_disk_size);
    pb->mutable_stats()->set_live_row_count(stats.live_row_count);
  }
}

master::ReplicaRolePB RoleOf(const consensus::GroupInfo& info, consensus::PeerId self) {
  if (info.role == consensus::RaftRole::kLeader) return master::LEADER;
  for (uint64_t l : info.config.learners()) {
    if (l == self) return master::LEARNER;
  }
  return master::FOLLOWER;
}
}  // namespace

void TabletManager::FillConsensus(const Tablet& t, master::ReportedTabletPB* pb) const {
  master::ConsensusStatePB c;
  if (ConsensusStateOf(t, &c)) *pb->mutable_consensus() = std::move(c);
}

bool TabletManager::ConsensusStateOf(const Tablet& t, master::ConsensusStatePB* c) const {
  std::shared_ptr<consensus::RaftGroup> group = t.replica().group();
  if (t.state() != TabletState::kRunning || !group) return false;
  const consensus::GroupInfo info = group->info();
  c->set_role(RoleOf(info, peers_ ? peers_->self_id() : consensus::kNoPeer));
  c->set_term(info.term);
  if (info.leader != consensus::kNoPeer) c->set_leader_uuid(UuidOfPeer(info.leader));
  c->set_committed_index(info.commit_index);
  c->set_applied_index(info.applied_index);
  c->set_last_index(info.last_index);
  c->set_quiesced(info.quiesced);
  for (uint64_t v : info.config.voters()) c->add_voter_uuids(UuidOfPeer(v));
  for (uint64_t l : info.config.learners()) c->add_learner_uuids(UuidOfPeer(l));
  for (const consensus::FollowerProgress& f : info.followers) {
    master::FollowerStatusPB* pb = c->add_followers();
    pb->set_uuid(UuidOfPeer(f.id));
    pb->set_match_index(f.match);
    switch (f.state) {
      case consensus::FollowerState::kProbe:
        pb->set_state(master::FollowerStatusPB::PROBE);
        break;
      case consensus::FollowerState::kReplicate:
        pb->set_state(master::FollowerStatusPB::REPLICATE);
        break;
      case consensus::FollowerState::kSnapshot:
        pb->set_state(master::FollowerStatusPB::NEEDS_COPY);
        break;
      case consensus::FollowerState::kFetch:
        pb->set_state(master::FollowerStatusPB::CATCHING_UP_FROM_LOG);
        break;
    }
  }
  return true;
}

int64_t TabletManager::BuildReport(bool full, int64_t since, master::TabletReportPB* report) const {
  MutexLock l(mu_);
  report->set_is_incremental(!full);
  if (full) {
    for (const auto& [id, t] : tablets_) {
      if (t->state() == TabletState::kTombstoned) continue;  // removed, for the master
      auto* pb = report->add_updated_tablets();
      FillReported(*t, pb);
      FillConsensus(*t, pb);
    }
    return last_change_;
  }
  for (const auto& [id, change] : changes_) {
    if (change.seq <= since) continue;
    if (change.deleted) {
      report->add_removed_tablet_ids(id);
      continue;
    }
    auto it = tablets_.find(id);
    if (it != tablets_.end()) {
      auto* pb = report->add_updated_tablets();
      FillReported(*it->second, pb);
      FillConsensus(*it->second, pb);
    }
  }
  return last_change_;
}

void TabletManager::PruneReportedDeletes(int64_t upto) {
  MutexLock l(mu_);
  for (auto it = changes_.begin(); it != changes_.end();) {
    if (it->second.deleted && it->second.seq <= upto) {
      it = changes_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace nyala::tserver
