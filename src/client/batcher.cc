#include <glog/logging.h>

#include "client/batcher.h"

#include <algorithm>

#include "client/client-internal.h"
#include "client/error_collector.h"
#include "client/write_rpc.h"
#include "common/row_operations.h"
#include "common/status.h"

namespace nyala::client::internal {

namespace {

// Orders buffers by partition-key start, against a key.
bool KeyBeforeStart(Slice key, const TabletBuffer* b) {
  return key.compare(Slice(b->tablet->partition.partition_key_start)) < 0;
}

bool SameTable(const Table& a, const Table& b) { return &a == &b || a.id() == b.id(); }

// A new operation equal to the one encoded as (`type`, `row`) with `tag`, for the error
// collector.
std::unique_ptr<WriteOperation> RebuildOp(const Table& table, RowOpType type, const RowView& row,
                                          int64_t tag) {
  std::unique_ptr<WriteOperation> op;
  switch (type) {
    case RowOpType::kInsert:
      op = table.NewInsert();
      break;
    case RowOpType::kUpsert:
      op = table.NewUpsert();
      break;
    case RowOpType::kUpdate:
      op = table.NewUpdate();
      break;
    case RowOpType::kDelete:
      op = table.NewDelete();
      break;
    case RowOpType::kInsertIgnore:
      op = table.NewInsertIgnore();
      break;
    case RowOpType::kUpdateIgnore:
      op = table.NewUpdateIgnore();
      break;
    case RowOpType::kDeleteIgnore:
      op = table.NewDeleteIgnore();
      break;
    default:
      LOG(DFATAL) << "not a write operation in a write block";
      op = table.NewInsert();
      break;
  }
  Row* r = op->mutable_row();
  for (int i = 0; i < table.schema().num_columns(); i++) {
    const Cell& c = row.cell(i);
    if (c.has_value() && IsVariableLength(c.type())) {
      r->SetUnchecked(i, Cell::VarLen(c.type(), r->arena()->Copy(c.slice_value())));
    } else {
      r->SetUnchecked(i, c);  // decoded against this schema: the type is the column's
    }
  }
  op->set_tag(tag);
  return op;
}

}  // namespace

size_t EstimateOpSize(const RowView& row) {
  const Schema& s = row.schema();
  size_t size = 1 + 2 * ((s.num_columns() + 7) / 8);
  for (int i = 0; i < s.num_columns(); i++) {
    const Cell& c = row.cell(i);
    if (!c.has_value()) continue;
    size += IsVariableLength(c.type()) ? c.slice_value().size() + 4
                                       : size_t(GetTypeInfo(c.type()).fixed_size);
  }
  return size;
}

Batcher::Batcher(ClientData* client, ErrorCollector* errors) : client_(client), errors_(errors) {}
Batcher::~Batcher() = default;

Batcher::TableIndex* Batcher::IndexOf(const std::string& table_id) {
  for (TableIndex& index : indexes_) {
    if (index.table_id == table_id) return &index;
  }
  indexes_.push_back(TableIndex{table_id, {}});
  return &indexes_.back();
}

TabletBuffer* Batcher::BufferFor(const Table& table, TabletPtr tablet) {
  TableIndex* index = IndexOf(table.id());
  const Slice start(tablet->partition.partition_key_start);
  auto it = std::upper_bound(index->by_start.begin(), index->by_start.end(), start, KeyBeforeStart);
  if (it != index->by_start.begin() && (*std::prev(it))->tablet->tablet_id == tablet->tablet_id) {
    return *std::prev(it);
  }
  buffers_.push_back(std::make_unique<TabletBuffer>(std::move(tablet), table.shared_from_this()));
  TabletBuffer* b = buffers_.back().get();
  index->by_start.insert(it, b);
  return b;
}

TabletBuffer* Batcher::FindBuffer(const Table& table, Slice partition_key) {
  if (last_ && SameTable(*last_->table, table) &&
      last_->tablet->partition.ContainsPartitionKey(partition_key)) {
    return last_;
  }
  TableIndex* index = IndexOf(table.id());
  auto it = std::upper_bound(index->by_start.begin(), index->by_start.end(), partition_key,
                             KeyBeforeStart);
  if (it != index->by_start.begin() &&
      (*std::prev(it))->tablet->partition.ContainsPartitionKey(partition_key)) {
    return last_ = *std::prev(it);
  }
  TabletPtr tablet = client_->meta_cache()->LookupFast(table.id(), partition_key);
  if (!tablet) return nullptr;
  return last_ = BufferFor(table, std::move(tablet));
}

Status Batcher::Add(std::unique_ptr<WriteOperation> op, Slice partition_key) {
  TabletBuffer* b = unplaced_.empty() ? FindBuffer(op->table(), partition_key) : nullptr;
  size_t added;
  if (b) {
    const size_t before = b->encoder.encoded_size();
    RETURN_NOT_OK(b->encoder.Add(op->type(), op->row().view()));
    b->AddTag(op->tag());
    added = b->encoder.encoded_size() - before;
    op.reset();  // encoded: the operation object is no longer needed
  } else {
    added = EstimateOpSize(op->row().view());
    unplaced_.push_back(InFlightOp{std::move(op), partition_key.ToString(), nullptr, Status()});
  }
  if (num_ops_ == 0) first_op_time_ = MonoTime::Now();
  num_ops_++;
  buffer_bytes_ += added;
  return Status::OK();
}

void Batcher::Flush(MonoTime deadline, DoneCallback done) {
  deadline_ = deadline;
  done_ = std::move(done);
  self_ = shared_from_this();  // released by Finish()
  if (num_ops_ == 0) return Finish();
  if (unplaced_.empty()) return SendAll();
  // Cache hits are answered here; misses go to the master, merged per range.
  // The extra count keeps LookupFinished from firing before the loop ends.
  pending_lookups_.store(1);
  MetaCache* cache = client_->meta_cache();
  std::vector<size_t> misses;
  for (size_t i = 0; i < unplaced_.size(); i++) {
    InFlightOp& op = unplaced_[i];
    op.tablet = cache->LookupFast(op.op->table().id(), op.partition_key);
    if (!op.tablet) misses.push_back(i);
  }
  pending_lookups_.fetch_add(static_cast<int>(misses.size()));
  for (size_t i : misses) {
    cache->LookupTablet(unplaced_[i].op->table().id(), unplaced_[i].partition_key, deadline_,
                        LookupMode::kExact,
                        [this, i](Result<TabletPtr> r) { OnLookupDone(i, std::move(r)); });
  }
  LookupFinished();
}

void Batcher::OnLookupDone(size_t idx, Result<TabletPtr> r) {
  InFlightOp& op = unplaced_[idx];
  if (r.ok()) {
    op.tablet = *r;
  } else if (IsNoCoveringTablet(r.status())) {
    op.status =
        Status::NotFound("no tablet covers the row's partition key (no range partition for it)");
  } else {
    op.status = r.status().CloneAndPrepend("looking up the row's tablet");
  }
  LookupFinished();
}

void Batcher::LookupFinished() {
  if (pending_lookups_.fetch_sub(1) != 1) return;
  // Every tablet is known: encode the operations after those encoded by Add().
  for (InFlightOp& op : unplaced_) {
    if (!op.status.ok()) continue;
    if (!op.tablet) {
      op.status = Status::NotFound("no tablet covers the row's partition key");
      continue;
    }
    TabletBuffer* b = BufferFor(op.op->table(), op.tablet);
    op.status = b->encoder.Add(op.op->type(), op.op->row().view());
    if (op.status.ok()) {
      b->AddTag(op.op->tag());
      op.op.reset();
    }
  }
  SendAll();
}

void Batcher::SendAll() {
  for (auto& b : buffers_) {
    if (b->encoder.num_rows() == 0) continue;
    rpcs_.push_back(std::make_unique<WriteRpc>(this, b.get()));
  }
  num_rpcs_ = static_cast<int>(rpcs_.size());
  if (rpcs_.empty()) return Finish();
  pending_rpcs_.store(num_rpcs_);
  // Copy the pointers first: the last response may finish the batcher.
  std::vector<WriteRpc*> to_send;
  to_send.reserve(rpcs_.size());
  for (auto& r : rpcs_) to_send.push_back(r.get());
  for (WriteRpc* r : to_send) r->Send();
}

void Batcher::RpcFinished() {
  if (pending_rpcs_.fetch_sub(1) == 1) Finish();
}

void Batcher::Finish() {
  Status first_error;
  int failed = 0;
  int timed_out = 0;
  auto add_error = [&](std::unique_ptr<WriteOperation> op, Status s) {
    if (first_error.ok()) first_error = s;
    failed++;
    if (s.IsTimedOut()) timed_out++;
    errors_->Add(std::move(op), std::move(s));
  };
  for (auto& rpc : rpcs_) {
    if (rpc->failed_all().ok() && rpc->row_errors().empty()) continue;
    // Rebuild the failed operations from the block (errors are rare; rows are not
    // decoded once the collector is full).
    DecodedRowOps rows;
    const Table& table = rpc->table();
    const bool rebuild =
        !errors_->full() &&
        DecodeRowOperations(rpc->block(), table.schema(), RowBlockKind::kWrites, &rows).ok();
    const TabletBuffer& buffer = rpc->buffer();
    auto op_of = [&](int row) -> std::unique_ptr<WriteOperation> {
      if (errors_->full()) return nullptr;  // dropped (and counted as overflow) anyway
      if (rebuild && row >= 0 && size_t(row) < rows.size()) {
        return RebuildOp(table, rows[row].type, rows[row].row, buffer.TagOf(row));
      }
      LOG(DFATAL) << "cannot rebuild row " << row << " of our own write block";
      auto op = table.NewInsert();
      op->set_tag(buffer.TagOf(row));
      return op;
    };
    if (!rpc->failed_all().ok()) {
      for (int i = 0; i < rpc->num_rows(); i++) add_error(op_of(i), rpc->failed_all());
    } else {
      for (const auto& [row, status] : rpc->row_errors()) add_error(op_of(row), status);
    }
  }
  for (InFlightOp& op : unplaced_) {
    if (!op.status.ok()) add_error(std::move(op.op), std::move(op.status));
  }
  num_failed_ = failed;
  num_timed_out_ = timed_out;
  // Free the operations and blocks (they hold their tables) before anyone is told.
  unplaced_.clear();
  rpcs_.clear();
  buffers_.clear();
  indexes_.clear();
  last_ = nullptr;
  if (failed > 1) {
    first_error = Status::IOError(std::to_string(failed) + " operations failed",
                                  "first: " + first_error.ToString());
  }
  DoneCallback done = std::move(done_);
  std::shared_ptr<Batcher> self = std::move(self_);
  done(first_error);
  // `self` may be the last reference: the batcher goes away on return.
}

}  // namespace nyala::client::internal
