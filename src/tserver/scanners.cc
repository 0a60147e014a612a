#include "tserver/scanners.h"
#include "common/status.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>

#include "common/flag_tags.h"
#include "common/row_block.h"
#include "server/fs_manager.h"
#include "tserver/tablet_store.h"
#include "tserver/tserver_metrics.h"

DEFINE_int32(scanner_ttl_ms, 60000,
             "Idle time after which a scanner is expired and its snapshot freed, in ms.");
DEFINE_validator(scanner_ttl_ms, [](const char*, int32_t v) { return v > 0; });
TAG_FLAG(scanner_ttl_ms, runtime);

namespace nyala::tserver {

// One open scan. Everything below mu_ is touched only by the call holding mu_.
class Scanner {
 public:
  Scanner(std::string id, std::shared_ptr<Tablet> tablet, std::shared_ptr<const TabletSchema> ts,
          std::shared_ptr<const Projection> proj, std::vector<ColumnPredicate> preds,
          uint64_t limit)
      : id_(std::move(id)),
        tablet_(std::move(tablet)),
        ts_(std::move(ts)),
        proj_(std::move(proj)),
        preds_(std::move(preds)),
        limit_(limit),
        created_(MonoTime::Now()),
        row_(&ts_->schema) {
    decode_key_ = proj_->needs_key;
    for (const ColumnPredicate& p : preds_) decode_key_ |= ts_->schema.is_key_column(p.column());
    Touch();
  }

  const std::string& id() const { return id_; }
  const Tablet& tablet() const { return *tablet_; }
  void Touch() {
    last_access_ns_.store(MonoTime::Now().ToNanoseconds(), std::memory_order_relaxed);
  }
  MonoDelta Idle() const {
    return MonoDelta::FromNanoseconds(MonoTime::Now().ToNanoseconds() -
                                      last_access_ns_.load(std::memory_order_relaxed));
  }

  // Opens the iterator over `range` at `snapshot`, which must have been taken before
  // the scanner's TabletSchema (so that it holds no row of a newer schema version).
  void Open(const KeyRange& range, std::unique_ptr<StoreSnapshot> snapshot) {
    snapshot_ = std::move(snapshot);
    it_ = tablet_->NewIterator(snapshot_.get(), range);
    it_->SeekToFirst();
  }

  // The next batch (call_seq_id == last + 1) or the previous one again (== last).
  Status NextBatch(uint32_t batch_bytes, bool repeat, std::string* rows, std::string* indirect,
                   int64_t* num_rows, bool* has_more, std::string* last_key) {
    if (repeat) {
      rows_returned_ = batch_start_rows_;
      batch_bytes = batch_bytes_;
      it_->Seek(Slice(batch_start_key_));
    } else {
      batch_start_rows_ = rows_returned_;
      batch_bytes_ = batch_bytes;
      if (it_->Valid()) {
        const Slice k = it_->key();
        batch_start_key_.assign(k.cdata(), k.size());
      }
    }
    RowBlockEncoder enc(&proj_->schema);
    *has_more = false;
    int64_t scanned = 0;
    const int* source = proj_->source_index.data();
    for (; it_->Valid(); it_->Next()) {
      if (limit_ > 0 && uint64_t(rows_returned_) >= limit_) break;
      if (enc.num_rows() > 0 && enc.encoded_size() >= batch_bytes) {
        *has_more = true;
        break;
      }
      const Slice key = it_->key();
      row_.arena()->Reset();
      RETURN_NOT_OK_PREPEND(ts_->DecodeStoredRow(key, it_->value(), decode_key_, &row_),
                            "tablet " + tablet_->tablet_id() + ": stored row");
      scanned++;
      bool pass = true;
      for (const ColumnPredicate& p : preds_) {
        if (!p.Evaluate(row_.cell(p.column()))) {
          pass = false;
          break;
        }
      }
      if (!pass) continue;
      enc.AppendRow(row_.view().cells(), source);
      rows_returned_++;
      last_key_.assign(key.cdata() + kTabletPrefixSize, key.size() - kTabletPrefixSize);
    }
    if (!*has_more) RETURN_NOT_OK(it_->status());
    rows_scanned_ += scanned;
    scanned_in_call_ = scanned;
    *num_rows = enc.num_rows();
    *last_key = last_key_;
    enc.Finish(rows, indirect);
    return Status::OK();
  }

  ScannerInfo Info() const {
    ScannerInfo info;
    info.id = id_;
    info.tablet_id = tablet_->tablet_id();
    info.table_name = tablet_->metadata().table_name();
    for (int i = 0; i < proj_->schema.num_columns(); i++) {
      if (i) info.projection += ", ";
      info.projection += proj_->schema.column(i).name();
    }
    for (size_t i = 0; i < preds_.size(); i++) {
      if (i) info.predicates += " AND ";
      info.predicates += preds_[i].ToString();
    }
    info.rows_returned = rows_returned_;
    info.rows_scanned = rows_scanned_;
    info.age = MonoTime::Now() - created_;
    info.idle = Idle();
    return info;
  }

  const Projection& projection() const { return *proj_; }
  int64_t scanned_in_call() const { return scanned_in_call_; }

  // Held by the call using the scanner.
  Mutex mu;
  // The call_seq_id of the last batch served.
  uint32_t last_call_seq_id GUARDED_BY(mu) = 0;

 private:
  const std::string id_;
  const std::shared_ptr<Tablet> tablet_;
  const std::shared_ptr<const TabletSchema> ts_;
  const std::shared_ptr<const Projection> proj_;
  const std::vector<ColumnPredicate> preds_;
  const uint64_t limit_;
  const MonoTime created_;
  std::atomic<int64_t> last_access_ns_{0};
  bool decode_key_ = false;

  std::unique_ptr<StoreSnapshot> snapshot_;
  std::unique_ptr<StoreIterator> it_;
  Row row_;
  int64_t rows_returned_ = 0;
  int64_t rows_scanned_ = 0;
  int64_t scanned_in_call_ = 0;
  std::string last_key_;
  // Where the last batch started, to serve it again.
  std::string batch_start_key_;
  int64_t batch_start_rows_ = 0;
  uint32_t batch_bytes_ = 0;
};

namespace {

uint32_t BatchBytes(const ScanRequestPB& req) {
  if (req.batch_size_bytes() == 0) return ScannerManager::kDefaultBatchSizeBytes;
  return std::min(req.batch_size_bytes(), ScannerManager::kMaxBatchSizeBytes);
}

void ScanError(TabletServerErrorPB::Code code, const Status& s, ScanResponsePB* resp) {
  SetError(code, s, resp->mutable_error());
}

// Counts the rows one Scan call read and returned, per server and per tablet.
void CountRows(TServerMetrics* metrics, const Tablet& tablet, int64_t scanned, int64_t returned) {
  if (metrics) {
    metrics->rows_scanned->Increment(scanned);
    metrics->rows_returned->Increment(returned);
  }
  if (const TabletMetrics* tm = tablet.tablet_metrics()) {
    tm->rows_scanned->Increment(scanned);
    tm->rows_returned->Increment(returned);
  }
}

void CountScanRequest(const Tablet& tablet) {
  if (const TabletMetrics* tm = tablet.tablet_metrics()) tm->scan_requests->Increment();
}

}  // namespace

ScannerManager::ScannerManager(TServerMetrics* metrics)
    : metrics_(metrics), reaper_([this] { ReaperLoop(); }) {}

ScannerManager::~ScannerManager() { Shutdown(); }

void ScannerManager::Shutdown() {
  std::unordered_map<std::string, std::shared_ptr<Scanner>> dropped;
  {
    MutexLock l(mu_);
    shutting_down_ = true;
    dropped.swap(scanners_);
  }
  reaper_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
}

void ScannerManager::ReaperLoop() {
  UniqueLock l(mu_);
  while (!shutting_down_) {
    const int64_t period_ms = std::clamp<int64_t>(FLAGS_scanner_ttl_ms / 4, 5, 1000);
    reaper_cv_.wait_for(l, std::chrono::milliseconds(period_ms));
    if (shutting_down_) break;
    l.Unlock();
    ExpireIdleScanners();
    l.Lock();
  }
}

void ScannerManager::ExpireIdleScanners() {
  const MonoDelta ttl = MonoDelta::FromMilliseconds(FLAGS_scanner_ttl_ms);
  std::vector<std::shared_ptr<Scanner>> expired;  // destroyed outside the lock
  {
    MutexLock l(mu_);
    for (auto it = scanners_.begin(); it != scanners_.end();) {
      Scanner* s = it->second.get();
      // A scanner in use is not idle; TryLock keeps the reaper from waiting on it.
      if (s->Idle() > ttl && s->mu.TryLock()) {
        s->mu.Unlock();
        LOG(INFO) << "scanner " << s->id() << " expired after " << s->Idle().ToString() << " idle";
        expired.push_back(std::move(it->second));
        it = scanners_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (metrics_ && !expired.empty()) metrics_->scanners_expired->Increment(expired.size());
}

std::shared_ptr<Scanner> ScannerManager::Find(const std::string& id) {
  MutexLock l(mu_);
  auto it = scanners_.find(id);
  return it == scanners_.end() ? nullptr : it->second;
}

void ScannerManager::Remove(const std::string& id) {
  std::shared_ptr<Scanner> s;
  MutexLock l(mu_);
  auto it = scanners_.find(id);
  if (it == scanners_.end()) return;
  s = std::move(it->second);
  scanners_.erase(it);
}

void ScannerManager::StartScan(std::shared_ptr<Tablet> tablet, const ScanRequestPB& req,
                               ScanResponsePB* resp, std::string* rows, std::string* indirect) {
  const NewScanRequestPB& ns = req.new_scan_request();
  CountScanRequest(*tablet);
  if (tablet->state() == TabletState::kFailed) {
    ScanError(TabletServerErrorPB::TABLET_FAILED,
              Status::IllegalState("tablet " + tablet->tablet_id() + " failed: " +
                                   tablet->failure().ToString()),
              resp);
    return;
  }
  if (tablet->state() == TabletState::kTombstoned) {
    // As writes and Gets answer: the client looks the tablet up again.
    ScanError(TabletServerErrorPB::TABLET_NOT_FOUND,
              Status::NotFound("tablet " + tablet->tablet_id() +
                               " is tombstoned here (its replica moved away)"),
              resp);
    return;
  }
  if (tablet->state() != TabletState::kRunning) {
    ScanError(TabletServerErrorPB::TABLET_NOT_RUNNING,
              Status::IllegalState("tablet " + tablet->tablet_id() + " is " +
                                   TabletStateName(tablet->state())),
              resp);
    return;
  }
  if (ns.read_mode() != READ_LATEST) {
    // No history is kept to read a snapshot from: refuse rather than answer with the
    // latest rows, which the caller did not ask for.
    LOG(WARNING) << "scan of tablet " << tablet->tablet_id() << " refused: read mode "
                 << ReadModePB_Name(ns.read_mode()) << " is not supported";
    ScanError(TabletServerErrorPB::INVALID_SCAN_SPEC,
              Status::NotSupported(
                  "read mode " + ReadModePB_Name(ns.read_mode()) + " is not supported yet",
                  "scan with READ_LATEST"),
              resp);
    return;
  }
  // Linearizable: the scan's snapshot holds every write committed before it began.
  // A scan the client let any replica answer reads this replica's applied rows.
  if (TabletServerErrorPB err;
      ns.replica_selection() == LEADER_ONLY
          ? !tablet->replica().WaitForLinearizableRead(MonoDelta::FromSeconds(10), &err)
          : !tablet->replica().CheckFollowerRead(&err)) {
    *resp->mutable_error() = std::move(err);
    return;
  }
  // The snapshot first: every row in it was written under the schema taken next, or
  // an earlier one.
  std::unique_ptr<StoreSnapshot> snapshot = tablet->GetSnapshot();
  std::shared_ptr<const TabletSchema> ts = tablet->tablet_schema();
  auto proj = ts->MakeProjection(ns.projected_columns());
  if (!proj.ok()) {
    ScanError(TabletServerErrorPB::MISMATCHED_SCHEMA, proj.status(), resp);
    return;
  }
  std::vector<ColumnPredicate> preds;
  preds.reserve(ns.predicates_size());
  for (const ColumnPredicatePB& pb : ns.predicates()) {
    auto p = ColumnPredicate::FromPB(pb, ts->schema);
    if (!p.ok()) {
      ScanError(TabletServerErrorPB::INVALID_SCAN_SPEC, p.status(), resp);
      return;
    }
    preds.push_back(std::move(p).value());
  }
  KeyRange range = KeyRangeFromPredicates(ts->schema, preds);
  IntersectKeyRange(Slice(ns.start_primary_key()), Slice(ns.stop_primary_key()), &range);
  if (metrics_) metrics_->scanners_opened->Increment();
  *resp->mutable_projection() = (*proj)->schema_pb;
  if (range.empty || req.close_scanner()) {
    resp->set_has_more_results(false);
    resp->mutable_data()->set_num_rows(0);
    return;
  }
  auto scanner =
      std::make_shared<Scanner>(server::GenerateUuid(), std::move(tablet), std::move(ts),
                                std::move(proj).value(), std::move(preds), ns.limit());
  MutexLock l(scanner->mu);
  scanner->Open(range, std::move(snapshot));
  int64_t num_rows = 0;
  bool has_more = false;
  Status s = scanner->NextBatch(BatchBytes(req), false, rows, indirect, &num_rows, &has_more,
                                resp->mutable_last_primary_key());
  CountRows(metrics_, scanner->tablet(), scanner->scanned_in_call(), num_rows);
  if (!s.ok()) {
    rows->clear();
    indirect->clear();
    resp->clear_projection();
    ScanError(TabletServerErrorPB::UNKNOWN_ERROR, s, resp);
    return;
  }
  resp->mutable_data()->set_num_rows(static_cast<int32_t>(num_rows));
  resp->set_has_more_results(has_more);
  if (has_more) {
    scanner->last_call_seq_id = req.call_seq_id();
    resp->set_scanner_id(scanner->id());
    scanner->Touch();
    MutexLock ml(mu_);
    if (!shutting_down_) scanners_.emplace(scanner->id(), scanner);
  }
}

void ScannerManager::ContinueScan(const ScanRequestPB& req, ScanResponsePB* resp, std::string* rows,
                                  std::string* indirect) {
  std::shared_ptr<Scanner> scanner = Find(req.scanner_id());
  const MonoDelta ttl = MonoDelta::FromMilliseconds(FLAGS_scanner_ttl_ms);
  if (scanner && scanner->Idle() > ttl) {
    Remove(req.scanner_id());
    if (metrics_) metrics_->scanners_expired->Increment();
    scanner.reset();
  }
  if (!scanner) {
    ScanError(TabletServerErrorPB::SCANNER_EXPIRED,
              Status::NotFound("scanner " + req.scanner_id() + " does not exist or has expired"),
              resp);
    return;
  }
  MutexLock l(scanner->mu);
  scanner->Touch();
  CountScanRequest(scanner->tablet());
  if (req.close_scanner()) {
    Remove(scanner->id());
    resp->set_has_more_results(false);
    resp->mutable_data()->set_num_rows(0);
    return;
  }
  const uint32_t last = scanner->last_call_seq_id;
  const bool repeat = req.call_seq_id() == last;
  if (!repeat && req.call_seq_id() != last + 1) {
    ScanError(TabletServerErrorPB::INVALID_SCAN_CALL_SEQ_ID,
              Status::InvalidArgument("call_seq_id " + std::to_string(req.call_seq_id()) +
                                      ", expected " + std::to_string(last + 1) + " (or " +
                                      std::to_string(last) + " to repeat the last batch)"),
              resp);
    return;
  }
  int64_t num_rows = 0;
  bool has_more = false;
  Status s = scanner->NextBatch(BatchBytes(req), repeat, rows, indirect, &num_rows, &has_more,
                                resp->mutable_last_primary_key());
  CountRows(metrics_, scanner->tablet(), scanner->scanned_in_call(), num_rows);
  if (!s.ok()) {
    rows->clear();
    indirect->clear();
    Remove(scanner->id());
    ScanError(TabletServerErrorPB::UNKNOWN_ERROR, s, resp);
    return;
  }
  scanner->last_call_seq_id = req.call_seq_id();
  resp->mutable_data()->set_num_rows(static_cast<int32_t>(num_rows));
  resp->set_has_more_results(has_more);
  if (has_more) {
    resp->set_scanner_id(scanner->id());
  } else {
    Remove(scanner->id());
  }
}

Status ScannerManager::KeepAlive(const std::string& id) {
  std::shared_ptr<Scanner> s = Find(id);
  if (!s || s->Idle() > MonoDelta::FromMilliseconds(FLAGS_scanner_ttl_ms)) {
    return Status::NotFound("scanner " + id + " does not exist or has expired");
  }
  s->Touch();
  return Status::OK();
}

size_t ScannerManager::NumScanners() const {
  MutexLock l(mu_);
  return scanners_.size();
}

std::vector<ScannerInfo> ScannerManager::ListScanners() const {
  std::vector<std::shared_ptr<Scanner>> all;
  {
    MutexLock l(mu_);
    for (const auto& [id, s] : scanners_) all.push_back(s);
  }
  std::vector<ScannerInfo> out;
  for (const auto& s : all) {
    // A scanner busy in a call is listed from its last quiet state next time.
    if (!s->mu.TryLock()) continue;
    out.push_back(s->Info());
    s->mu.Unlock();
  }
  return out;
}

}  // namespace nyala::tserver
