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

Result<std::shared_ptr<const TabletSchema>> TabletSchema::Make(TabletMetadataPB meta) {
  auto ts = std::make_shared<TabletSchema>();
  ASSIGN_OR_RETURN(ts->schema, Schema::FromPB(meta.schema()));
  for (const SchemaPB& pb : meta.older_schemas()) {
    Result<Schema> old = Schema::FromPB(pb);
    if (!old.ok()) return old.status().CloneAndPrepend("schema version " + std::to_string(pb.version()));
    const uint32_t v = old->version();
    auto t = RowValueTranslation::Create(std::make_shared<const Schema>(std::move(old).value()),
                                         ts->schema);
    if (!t.ok()) return t.status();
    if (!ts->older.emplace(v, std::move(t).value()).second) {
      return Status::InvalidArgument("schema version " + std::to_string(v) + " is listed twice");
    }
  }
  std::vector<int> all(ts->schema.num_columns());
  for (int i = 0; i < ts->schema.num_columns(); i++) all[i] = i;
  ts->full_projection = BuildProjection(ts->schema, std::move(all));
  ts->meta = std::move(meta);
  return std::shared_ptr<const TabletSchema>(std::move(ts));
}

Result<std::shared_ptr<const Projection>> TabletSchema::MakeProjection(
    const google::protobuf::RepeatedPtrField<std::string>& names) const {
  if (names.empty()) return full_projection;
  std::vector<int> idxs;
  idxs.reserve(names.size());
  std::vector<bool> seen(schema.num_columns());
  for (const std::string& n : names) {
    const int i = schema.FindColumn(n);
    if (i < 0) {
      return Status::NotFound("column '" + n + "' is not in tablet " + meta.tablet_id() +
                              " (schema version " + std::to_string(schema.version()) + ")");
    }
    if (seen[i]) return Status::InvalidArgument("column '" + n + "' projected twice");
    seen[i] = true;
    idxs.push_back(i);
  }
  return BuildProjection(schema, std::move(idxs));
}

Status TabletSchema::DecodeValue(Slice value, Row* row) const {
  // The version is the value's first varint: one byte below 128.
  const uint32_t v = schema.version();
  if (!value.empty() && v < 128 && static_cast<uint8_t>(value[0]) == v) [[likely]] {
    return DecodeRowValue(value, row);
  }
  ASSIGN_OR_RETURN(uint32_t stored, RowValueSchemaVersion(value));
  if (stored >= v) return DecodeRowValue(value, row);
  auto it = older.find(stored);
  if (it == older.end()) {
    return Status::Corruption("row value of schema version " + std::to_string(stored) +
                              ", which tablet " + meta.tablet_id() + " never had");
  }
  return it->second.Decode(value, row);
}

Status TabletSchema::DecodeStoredRow(Slice storage_key, Slice value, bool decode_key,
                                     Row* row) const {
  if (decode_key) {
    DCHECK_GE(storage_key.size(), kTabletPrefixSize);
    storage_key.remove_prefix(kTabletPrefixSize);
    RETURN_NOT_OK(DecodeKey(schema, storage_key, row->mutable_cells(), row->arena()));
  }
  return DecodeValue(value, row);
}

bool TabletSchema::RewriteToCurrent(Slice value, std::string* out) const {
  const uint32_t v = schema.version();
  if (!value.empty() && v < 128 && static_cast<uint8_t>(value[0]) == v) return false;
  Result<uint32_t> stored = RowValueSchemaVersion(value);
  if (!stored.ok() || *stored >= v) return false;
  auto it = older.find(*stored);
  if (it == older.end()) return false;
  Row row(&schema);
  if (!it->second.Decode(value, &row).ok()) return false;
  out->clear();
  return EncodeRowValue(row.view(), out).ok();
}

void TabletSchemaRewriter::Advance(std::shared_ptr<const TabletSchema> next) {
  MutexLock l(mu_);
  retired_.push_back(current_);
  current_ = std::move(next);
}

RowValueRewriter::Fn TabletSchemaRewriter::ForCompaction() const {
  MutexLock l(mu_);
  std::erase_if(retired_, [](const std::weak_ptr<const TabletSchema>& w) { return w.expired(); });
  if (!retired_.empty() || current_->older.empty()) return nullptr;
  return [cur = current_](Slice value, std::string* out) {
    return cur->RewriteToCurrent(value, out);
  };
}

Tablet::Tablet(TabletMetadataPB meta, TabletStore* store, RowLocks* locks, TServerMetrics* metrics)
    : meta_(std::move(meta)),
      store_(store),
      locks_(locks),
      metrics_(metrics),
      tablet_metrics_(metrics ? std::make_unique<TabletMetrics>(
                                    metrics->registry, meta_.tablet_id(), meta_.table_name())
                              : nullptr),
      replica_(std::make_unique<TabletReplica>(meta_.tablet_id(), this, metrics)) {
  schema_version_.store(meta_.schema().version());
}

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
  ASSIGN_OR_RETURN(std::shared_ptr<const TabletSchema> ts, TabletSchema::Make(t->meta_));
  ASSIGN_OR_RETURN(t->partition_schema_,
                   PartitionSchema::FromPB(t->meta_.partition_schema(), ts->schema));
  t->schema_version_.store(ts->schema.version());
  t->rewriter_ = std::make_shared<TabletSchemaRewriter>(ts);
  store->SetRowValueRewriter(*t->rows_, t->rewriter_);
  MutexLock l(t->schema_mu_);
  t->schema_ = std::move(ts);
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

TabletMetadataPB Tablet::metadata() const {
  MutexLock l(schema_mu_);
  return schema_ ? schema_->meta : meta_;
}

std::shared_ptr<const TabletSchema> Tablet::tablet_schema() const {
  MutexLock l(schema_mu_);
  return schema_;
}

Status Tablet::CheckClientSchema(const TabletSchema& ts, const SchemaPB& pb,
                                 TabletServerErrorPB::Code* code) const {
  const Schema& schema = ts.schema;
  if (pb.version() < schema.version()) {
    *code = TabletServerErrorPB::TABLET_HAS_A_NEWER_SCHEMA;
    return Status::InvalidArgument("the request's schema version " + std::to_string(pb.version()) +
                                       " is older than tablet " + tablet_id() + "'s " +
                                       std::to_string(schema.version()),
                                   "refresh the table's schema and retry");
  }
  if (pb.version() > schema.version()) {
    *code = TabletServerErrorPB::TABLET_SCHEMA_BEHIND;
    return Status::ServiceUnavailable("tablet " + tablet_id() + " has not applied schema version " +
                                          std::to_string(pb.version()) + " yet (it has " +
                                          std::to_string(schema.version()) + ")",
                                      "retry shortly");
  }
  *code = TabletServerErrorPB::MISMATCHED_SCHEMA;
  if (pb.columns_size() != schema.num_columns()) {
    return Status::InvalidArgument("request schema has " + std::to_string(pb.columns_size()) +
                                   " columns, tablet " + tablet_id() + " has " +
                                   std::to_string(schema.num_columns()));
  }
  for (int i = 0; i < schema.num_columns(); i++) {
    const ColumnSchemaPB& c = pb.columns(i);
    const ColumnSchema& mine = schema.column(i);
    if (c.name() != mine.name() || c.type() != DataTypeToPB(mine.type()) ||
        c.is_key() != schema.is_key_column(i) || c.is_nullable() != mine.is_nullable()) {
      return Status::InvalidArgument("request schema column " + std::to_string(i) + " ('" +
                                     c.name() + "') does not match the tablet's " +
                                     mine.ToString());
    }
  }
  return Status::OK();
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
