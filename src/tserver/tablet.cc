#include "tserver/tablet.h"
#include "common/result.h"

#include <glog/logging.h>

#include <algorithm>

#include "common/key_encoding.h"
#include "common/row_encoding.h"
#include "common/wire_protocol.h"
#include "tserver/row_locks.h"
#include "tserver/tablet_store.h"
#include "tserver/tserver_metrics.h"

namespace nyala::tserver {

const char* TabletStateName(TabletState state) {
  switch (state) {
    case TabletState::kRunning:
      return "RUNNING";
    case TabletState::kFailed:
      return "FAILED";
    case TabletState::kDeleted:
      return "DELETED";
    case TabletState::kTombstoned:
      return "TOMBSTONED";
  }
  return "UNKNOWN";
}

void SetError(TabletServerErrorPB::Code code, const Status& status, TabletServerErrorPB* pb) {
  pb->set_code(code);
  StatusToPB(status, pb->mutable_status());
}

namespace {

std::shared_ptr<const Projection> BuildProjection(const Schema& schema, std::vector<int> idxs) {
  std::vector<std::string> names;
  names.reserve(idxs.size());
  for (int i : idxs) names.push_back(schema.column(i).name());
  auto p = std::make_shared<Projection>();
  auto projected = schema.Project(names);
  CHECK(projected.ok()) << projected.status().ToString();  // names came from the schema
  p->schema = std::move(projected).value();
  for (int i : idxs) p->needs_key |= schema.is_key_column(i);
  p->source_index = std::move(idxs);
  p->schema.ToPB(&p->schema_pb);
  return p;
}

}  // namespace

Tablet::Tablet(TabletMetadataPB meta, TabletStore* store, RowLocks* locks, TServerMetrics* metrics)
    : meta_(std::move(meta)),
      store_(store),
      locks_(locks),
      metrics_(metrics),
      tablet_metrics_(metrics ? std::make_unique<TabletMetrics>(
                                    metrics->registry, meta_.tablet_id(), meta_.table_name())
                              : nullptr),
      replica_(std::make_unique<TabletReplica>(meta_.tablet_id(), this, metrics)) {}

Tablet::~Tablet() = default;

Result<std::shared_ptr<Tablet>> Tablet::Open(TabletMetadataPB meta, TabletStore* store,
                                             RowLocks* locks, TServerMetrics* metrics) {
  std::shared_ptr<Tablet> t(new Tablet(std::move(meta), store, locks, metrics));
  t->rows_ = store->Rows(t->seq());
  if (!t->rows_) {
    return Status::Corruption("tablet " + t->tablet_id() + " (seq " + std::to_string(t->seq()) +
                              ") has metadata but no rows column family in " + store->path());
  }
  {
    std::unique_ptr<StoreIterator> last = store->NewIterator(
        *t->rows_, nullptr, TabletPrefix(t->row_prefix()), TabletPrefix(t->row_prefix() + 1));
    last->SeekToLast();
    RETURN_NOT_OK_PREPEND(last->status(), "reading the last row of tablet " + t->tablet_id());
    MutexLock l(t->key_bound_mu_);
    if (last->Valid()) t->key_bound_ = last->key().ToString();
  }
  ASSIGN_OR_RETURN(t->schema_, Schema::FromPB(t->meta_.schema()));
  ASSIGN_OR_RETURN(t->partition_schema_,
                   PartitionSchema::FromPB(t->meta_.partition_schema(), t->schema_));
  std::vector<int> all(t->schema_.num_columns());
  for (int i = 0; i < t->schema_.num_columns(); i++) all[i] = i;
  t->full_projection_ = BuildProjection(t->schema_, std::move(all));
  return t;
}

std::shared_ptr<Tablet> Tablet::Failed(TabletMetadataPB meta, Status error, TabletStore* store,
                                       RowLocks* locks, TServerMetrics* metrics) {
  std::shared_ptr<Tablet> t(new Tablet(std::move(meta), store, locks, metrics));
  t->failure_ = std::move(error);
  t->state_.store(TabletState::kFailed);
  return t;
}

std::shared_ptr<Tablet> Tablet::Tombstone(TabletMetadataPB meta, TabletStore* store,
                                          RowLocks* locks, TServerMetrics* metrics) {
  std::shared_ptr<Tablet> t(new Tablet(std::move(meta), store, locks, metrics));
  t->state_.store(TabletState::kTombstoned);
  return t;
}

bool Tablet::CheckRunning(TabletServerErrorPB* error) const {
  switch (state()) {
    case TabletState::kRunning:
      return true;
    case TabletState::kTombstoned:
      SetError(TabletServerErrorPB::TABLET_NOT_FOUND,
               Status::NotFound("tablet " + tablet_id() +
                                " was removed from this server (a tombstone is left)"),
               error);
      return false;
    case TabletState::kDeleted:
      SetError(TabletServerErrorPB::TABLET_NOT_FOUND,
               Status::NotFound("tablet " + tablet_id() + " was deleted"), error);
      return false;
    case TabletState::kFailed:
      SetError(TabletServerErrorPB::TABLET_FAILED,
               Status::IllegalState("tablet " + tablet_id() + " failed: " + failure_.ToString()),
               error);
      return false;
  }
  return false;
}

Status Tablet::CheckClientSchema(const SchemaPB& pb) const {
  if (pb.columns_size() != schema_.num_columns()) {
    return Status::InvalidArgument("request schema has " + std::to_string(pb.columns_size()) +
                                   " columns, tablet " + tablet_id() + " has " +
                                   std::to_string(schema_.num_columns()));
  }
  for (int i = 0; i < schema_.num_columns(); i++) {
    const ColumnSchemaPB& c = pb.columns(i);
    const ColumnSchema& mine = schema_.column(i);
    if (c.name() != mine.name() || c.type() != DataTypeToPB(mine.type()) ||
        c.is_key() != schema_.is_key_column(i) || c.is_nullable() != mine.is_nullable()) {
      return Status::InvalidArgument("request schema column " + std::to_string(i) + " ('" +
                                     c.name() + "') does not match the tablet's " +
                                     mine.ToString());
    }
  }
  return Status::OK();
}

Result<std::shared_ptr<const Projection>> Tablet::MakeProjection(
    const google::protobuf::RepeatedPtrField<std::string>& names) const {
  if (names.empty()) return full_projection_;
  std::vector<int> idxs;
  idxs.reserve(names.size());
  std::vector<bool> seen(schema_.num_columns());
  for (const std::string& n : names) {
    const int i = schema_.FindColumn(n);
    if (i < 0)
      return Status::NotFound("projected column '" + n + "' is not in tablet " + tablet_id());
    if (seen[i]) return Status::InvalidArgument("column '" + n + "' projected twice");
    seen[i] = true;
    idxs.push_back(i);
  }
  return BuildProjection(schema_, std::move(idxs));
}

std::unique_ptr<StoreSnapshot> Tablet::GetSnapshot() const { return store_->GetSnapshot(); }

std::unique_ptr<StoreIterator> Tablet::NewIterator(const StoreSnapshot* snapshot,
                                                   const KeyRange& range) const {
  std::string lower = TabletPrefix(row_prefix());
  lower.append(range.start);
  std::string upper;
  if (range.stop.empty()) {
    upper = TabletPrefix(row_prefix() + 1);
  } else {
    upper = TabletPrefix(row_prefix());
    upper.append(range.stop);
  }
  DCHECK(rows_) << "an iterator over a failed tablet";
  return store_->NewIterator(*rows_, snapshot, std::move(lower), std::move(upper));
}

Status Tablet::DecodeStoredRow(Slice storage_key, Slice value, bool decode_key, Row* row) const {
  if (decode_key) {
    DCHECK_GE(storage_key.size(), kTabletPrefixSize);
    storage_key.remove_prefix(kTabletPrefixSize);
    RETURN_NOT_OK(DecodeKey(schema_, storage_key, row->mutable_cells(), row->arena()));
  }
  return DecodeRowValue(value, row);
}

void Tablet::MarkDeleted() {
  {
    ExclusiveLock l(ops_mu_);
    state_.store(TabletState::kDeleted, std::memory_order_release);
  }
  // Proposed writes finish once their group stopped (the caller stopped it first).
  UniqueLock l(writes_mu_);
  writes_cv_.wait(l, [this]() REQUIRES(writes_mu_) { return writes_in_flight_ == 0; });
}

int64_t Tablet::OnDiskSize() const { return rows_ ? store_->ApproximateSize(*rows_) : 0; }

int64_t Tablet::LiveRowEstimate() const { return rows_ ? store_->EstimateLiveRows(*rows_) : 0; }

bool Tablet::ReportedStats(Stats* out) const {
  MutexLock l(stats_mu_);
  if (!has_stats_) return false;
  *out = stats_;
  return true;
}

bool Tablet::MeasureStats() {
  const Stats now{OnDiskSize(), LiveRowEstimate()};
  MutexLock l(stats_mu_);
  const bool changed = !has_stats_ || now.on_disk_size != stats_.on_disk_size ||
                       now.live_row_count != stats_.live_row_count;
  has_stats_ = true;
  stats_ = now;
  return changed;
}

Result<std::string> Tablet::LoadAppliedState() {
  Result<std::string> v = store_->GetAppliedState(seq());
  if (!v.ok()) return v.status().CloneAndPrepend("tablet " + tablet_id() + ": applied state");
  return v;
}

Status Tablet::StoreAppliedState(Slice applied_state) {
  StoreWriteBatch batch;
  store_->PutAppliedState(&batch, seq(), applied_state);
  return store_->Write(&batch);
}

Status Tablet::SyncApplied() { return store_->SyncWal(); }

void Tablet::Fail(const Status& error) {
  DCHECK_EQ(int(state()), int(TabletState::kRunning));
  failure_ = error;
  state_.store(TabletState::kFailed, std::memory_order_release);
}

}  // namespace nyala::tserver
