// TabletManager's side of tablet copy: exporting a tablet for a copy session (the
// source), and installing a downloaded copy in place of a replica, or as a new one
// (the receiver). The session layer (tablet_copy_source.h, tablet_copy_client.h) moves
// the files between them.
#include <glog/logging.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "common/coding.h"
#include "common/status.h"
#include "consensus/raft_group.h"
#include "nyala/monotime.h"
#include "tserver/replica_starter.h"
#include "tserver/request_tracker.h"
#include "tserver/tablet_manager.h"
#include "tserver/tablet_replica.h"
#include "tserver/tablet_store.h"

namespace nyala::tserver {

namespace {

constexpr char kRequestsFile[] = "requests";
// How long the export may keep the group's worker waiting for it.
constexpr int kExportOnWorkerTimeoutSec = 60;
// How long the source's log keeps the entries after an export (RaftGroup::AnchorLog):
// the receiver downloads and installs the copy, then is sent them.
constexpr int64_t kLogAnchorUs = int64_t{10} * 60 * 1'000'000;

// Writes the request records as the superblock's requests_file says.
Status WriteRecordsFile(const std::string& path,
                        const std::vector<std::pair<std::string, std::string>>& records) {
  std::string buf;
  for (const auto& [k, v] : records) {
    PutVarint64(&buf, k.size());
    buf.append(k);
    PutVarint64(&buf, v.size());
    buf.append(v);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
  out.close();
  if (!out) return Status::IOError("cannot write " + path);
  return Status::OK();
}

Status ReadRecordsFile(const std::string& path, uint64_t expected,
                       std::vector<std::pair<std::string, std::string>>* records) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Corruption("tablet copy: no request-records file " + path);
  std::string buf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Slice s(buf);
  while (!s.empty()) {
    uint64_t klen = 0, vlen = 0;
    if (!GetVarint64(&s, &klen) || klen > s.size()) {
      return Status::Corruption("tablet copy: a request record's key does not decode");
    }
    std::string key(s.cdata(), klen);
    s.remove_prefix(klen);
    if (!GetVarint64(&s, &vlen) || vlen > s.size()) {
      return Status::Corruption("tablet copy: a request record's value does not decode");
    }
    records->emplace_back(std::move(key), std::string(s.cdata(), vlen));
    s.remove_prefix(vlen);
  }
  if (records->size() != expected) {
    return Status::Corruption("tablet copy: " + std::to_string(records->size()) +
                              " request records where the superblock says " +
                              std::to_string(expected));
  }
  return Status::OK();
}

}  // namespace

Status TabletManager::ExportForCopy(const std::string& tablet_id, const std::string& dir,
                                    std::vector<std::string>* files, std::string* superblock) {
  std::shared_ptr<Tablet> t = Lookup(tablet_id);
  if (!t || t->state() != TabletState::kRunning) {
    return Status::NotFound("tablet " + tablet_id + " is not running on this server");
  }
  std::shared_ptr<consensus::RaftGroup> g = t->replica().group();
  std::shared_ptr<TabletRows> rows = t->rows();
  if (!g || !rows) {
    return Status::IllegalState("tablet " + tablet_id + ": its Raft group is not running");
  }
  TabletStore* store = t->store();
  // Most of the memtable goes to disk before the worker waits for the export's own flush.
  RETURN_NOT_OK_PREPEND(store->FlushRows(*rows), "tablet " + tablet_id);
  // On the group's worker, between two applies: the rows, the records (at the
  // snapshot) and the applied state are of one point.
  struct Export {
    std::unique_ptr<StoreSnapshot> snapshot;
    Status status;
    std::string applied;
    TabletCopySuperblockPB sb;
  };
  auto ex = std::make_shared<Export>();
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  const bool posted = g->RunOnWorker([ex, done, store, rows, g, dir, seq = t->seq()] {
    ex->snapshot = store->GetSnapshot();
    ex->status = store->ExportRows(*rows, dir, &ex->sb);
    if (ex->status.ok()) {
      Result<std::string> applied = store->GetAppliedStateAt(seq, *ex->snapshot);
      TabletReplica::AppliedState state;
      if (applied.ok() && TabletReplica::DecodeAppliedState(*applied, &state).ok()) {
        g->AnchorLog(state.index, GetMonoTimeMicros() + kLogAnchorUs);
      }
      if (applied.ok()) {
        ex->applied = std::move(*applied);
      } else {
        ex->status = applied.status();
      }
    }
    done->set_value();
  });
  if (!posted) return Status::ServiceUnavailable("tablet " + tablet_id + ": its group stopped");
  if (finished.wait_for(std::chrono::seconds(kExportOnWorkerTimeoutSec)) !=
      std::future_status::ready) {
    return Status::TimedOut("tablet " + tablet_id + ": the export did not run within " +
                            std::to_string(kExportOnWorkerTimeoutSec) + " s");
  }
  RETURN_NOT_OK_PREPEND(ex->status, "tablet " + tablet_id + ": exporting its rows");
  TabletReplica::AppliedState applied;
  RETURN_NOT_OK_PREPEND(TabletReplica::DecodeAppliedState(ex->applied, &applied),
                        "tablet " + tablet_id);
  if (applied.index == 0 || applied.term == 0) {
    return Status::ServiceUnavailable("tablet " + tablet_id +
                                          ": its applied state does not name an entry and its "
                                          "term yet",
                                      "retry once it applied an entry");
  }
  std::vector<std::pair<std::string, std::string>> records;
  RETURN_NOT_OK(store->ForEachRequestRecordOf(t->seq(), ex->snapshot.get(), [&](Slice k, Slice v) {
    records.emplace_back(k.ToString(), v.ToString());
    return Status::OK();
  }));
  ex->snapshot.reset();
  RETURN_NOT_OK(WriteRecordsFile(dir + "/" + kRequestsFile, records));
  TabletCopySuperblockPB& sb = ex->sb;
  *sb.mutable_metadata() = t->metadata();
  sb.mutable_metadata()->set_row_key_prefix(t->row_prefix());
  sb.set_applied_state(ex->applied);
  sb.set_applied_index(applied.index);
  sb.set_applied_term(applied.term);
  sb.set_requests_file(kRequestsFile);
  sb.set_num_requests(records.size());
  files->clear();
  for (const CopiedSstFilePB& f : sb.sst_files()) files->push_back(f.name());
  files->push_back(kRequestsFile);
  *superblock = sb.SerializeAsString();
  LOG(INFO) << "tablet " << tablet_id << ": exported for a copy at index " << applied.index
            << " (term " << applied.term << "): " << sb.sst_files_size() << " SST files, "
            << records.size() << " request records";
  return Status::OK();
}

Result<uint64_t> TabletManager::InstallCopy(const std::string& tablet_id,
                                            const std::string& staging_dir,
                                            const std::string& superblock,
                                            RequestTracker* tracker) {
  if (!starter_) return Status::ServiceUnavailable("replication has not started");
  TabletCopySuperblockPB sb;
  if (!sb.ParseFromString(superblock)) {
    return Status::Corruption("tablet copy of " + tablet_id + ": the superblock does not parse");
  }
  if (sb.metadata().tablet_id() != tablet_id) {
    return Status::Corruption("tablet copy of " + tablet_id + ": the superblock describes tablet " +
                              sb.metadata().tablet_id());
  }
  TabletReplica::AppliedState applied;
  RETURN_NOT_OK_PREPEND(TabletReplica::DecodeAppliedState(sb.applied_state(), &applied),
                        "tablet copy of " + tablet_id);
  if (applied.index != sb.applied_index() || applied.term != sb.applied_term() ||
      applied.index == 0 || applied.term == 0) {
    return Status::Corruption("tablet copy of " + tablet_id +
                              ": its applied state does not match its superblock");
  }
  if (sb.requests_file().empty() || sb.requests_file().find('/') != std::string::npos) {
    return Status::Corruption("tablet copy of " + tablet_id + ": bad request-records file name");
  }
  std::vector<std::pair<std::string, std::string>> records;
  RETURN_NOT_OK(
      ReadRecordsFile(staging_dir + "/" + sb.requests_file(), sb.num_requests(), &records));

  MutexLock admin(admin_mu_);
  std::shared_ptr<Tablet> old = Lookup(tablet_id);
  if (old && old->replica().applied_index() >= applied.index) {
    return Status::AlreadyPresent("tablet " + tablet_id + ": this replica applied index " +
                                      std::to_string(old->replica().applied_index()) +
                                      ", as far as the copy (" + std::to_string(applied.index) +
                                      ")",
                                  "it needs no copy");
  }
  TabletStore* store = old ? old->store() : stores_[next_store_++ % stores_.size()].get();
  TabletMetadataPB meta = sb.metadata();
  meta.set_state(TABLET_DATA_READY);
  if (old) *meta.mutable_peers() = old->metadata().peers();
  // The copy's rows, records and applied state, under a new seq, with the metadata that
  // names them: from here a restart finds the copy, not the replica it replaces.
  RETURN_NOT_OK_PREPEND(store->ImportTablet(&meta, staging_dir, sb, records, sb.applied_state()),
                        "tablet " + tablet_id + ": installing its copy");
  if (old) {
    // The replica it replaces stops, its log kept (term, vote), and its data goes.
    WARN_NOT_OK(old->replica().Stop(/*forget_log=*/false),
                "tablet " + tablet_id + ": stopping the replica a copy replaces");
    old->MarkDeleted();
    WARN_NOT_OK(store->DropTabletData(old->seq()),
                "tablet " + tablet_id + ": dropping the data of the replica a copy replaced");
  }
  auto tablet = Tablet::Open(std::move(meta), store, row_locks_.get(), metrics_);
  if (!tablet.ok()) {
    MutexLock l(mu_);
    tablets_.erase(tablet_id);
    RecordChangeLocked(tablet_id, true);
    return tablet.status().CloneAndPrepend("tablet " + tablet_id + ": opening its copy");
  }
  // Its records answer retries of the writes it holds, here as on the source.
  const int64_t now_us = GetWallTimeMicros();
  for (const auto& [key, value] : records) {
    std::string full;
    AppendTabletPrefix((*tablet)->seq(), &full);
    full.append(key);
    RequestRecord r;
    WriteResponsePB resp;
    if (!DecodeRequestRecord(full, value, &r).ok() ||
        !resp.ParseFromArray(r.response.data(), static_cast<int>(r.response.size()))) {
      continue;  // checked on the source; a bad one answers no retry
    }
    tracker->Restore(r.client_id.view(), r.seq_no, r.first_incomplete_seq_no, std::move(resp),
                     MonoDelta::FromMicroseconds(now_us - r.write_time_micros),
                     RequestRecordLocation{store, (*tablet)->seq()});
  }
  // The group starts from the copy: its log is made to start after the copy's index.
  Status s = StartGroup(*tablet, /*campaign=*/false);
  std::shared_ptr<Tablet> installed = *tablet;
  if (!s.ok()) {
    installed = Tablet::Failed(installed->metadata(), s, store, row_locks_.get(), metrics_);
  }
  {
    MutexLock l(mu_);
    tablets_[tablet_id] = installed;
    RecordChangeLocked(tablet_id, false);
  }
  NotifyChange();
  RETURN_NOT_OK_PREPEND(s, "tablet " + tablet_id + ": starting its group from the copy");
  LOG(INFO) << "tablet " << tablet_id << ": installed a copy at index " << applied.index
            << " (term " << applied.term << ") in " << store->path() << " as seq "
            << (*tablet)->seq() << (old ? ", replacing the replica that was here" : "");
  return applied.index;
}

}  // namespace nyala::tserver
