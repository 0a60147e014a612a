// Tablet::Write: the write path described in tablet.h.
#include <glog/logging.h>

#include <algorithm>
#include <mutex>

#include "common/arena.h"
#include "common/key_encoding.h"
#include "common/monotime.h"
#include "common/row_encoding.h"
#include "common/row_operations.h"
#include "common/wire_protocol.h"
#include "tserver/row_locks.h"
#include "tserver/tablet.h"
#include "tserver/tablet_store.h"
#include "tserver/tserver_metrics.h"

namespace nyala::tserver {

namespace {

// One distinct storage key of a write and what the operations so far did to it.
struct KeySlot {
  Slice key;
  bool needs_read = false;  // some operation depends on the stored row
  bool exists = false;
  bool duplicated = false;  // more than one operation on this key
  Slice value;              // the current row value, when exists (and needed)
};

// Buffers reused by every write of one thread, so the hot path allocates nothing
// per row once they have grown.
struct WriteScratch {
  DecodedRowOps ops;
  std::string keys;               // every storage key, back to back
  std::vector<uint32_t> key_end;  // per op: end offset of its key in `keys` (0: invalid op)
  std::vector<uint32_t> order;    // valid op indexes sorted by key
  std::vector<uint32_t> slot_of;  // per op: index into slots
  std::vector<KeySlot> slots;
  std::vector<Slice> key_of;  // per op: its storage key
  std::vector<Slice> read_keys;
  std::vector<uint32_t> read_slots;
  std::string value;
  std::string record_key;  // the request's record, when it has a request id
  std::string record_value;
  Arena arena;  // values of duplicated keys, which later operations may read
  RowLockSet locks;
  StoreWriteBatch batch;
  StoreMultiGet reads;

  void Reset() {
    keys.clear();
    key_end.clear();
    order.clear();
    slot_of.clear();
    slots.clear();
    key_of.clear();
    read_keys.clear();
    read_slots.clear();
    arena.Reset();
    batch.Clear();
  }
};

WriteScratch* ThreadScratch() {
  thread_local WriteScratch scratch;
  return &scratch;
}

// Whether `row` sets every non-key column (an UPSERT that needs no read).
bool SetsEveryColumn(const RowView& row) {
  for (int i = row.schema().num_key_columns(); i < row.schema().num_columns(); i++) {
    if (!row.IsSet(i)) return false;
  }
  return true;
}

bool NeedsRead(const DecodedRowOp& op) {
  return !(op.type == RowOpType::kUpsert && SetsEveryColumn(op.row));
}

void AddRowError(WriteResponsePB* resp, size_t row, const Status& s) {
  auto* e = resp->add_per_row_errors();
  e->set_row_index(static_cast<int32_t>(row));
  StatusToPB(s, e->mutable_error());
}

}  // namespace

void Tablet::Write(const WriteRequestPB& req, WriteResponsePB* resp,
                   const rpc::RequestIdPB* request_id) {
  SharedLock gate(ops_mu_);
  if (!CheckRunning(resp->mutable_error())) return;
  resp->clear_error();
  if (tablet_metrics_) tablet_metrics_->write_requests->Increment();
  if (Status s = CheckClientSchema(req.schema()); !s.ok()) {
    SetError(TabletServerErrorPB::MISMATCHED_SCHEMA, s, resp->mutable_error());
    return;
  }
  WriteLocked(req, request_id, resp);
}

void Tablet::WriteLocked(const WriteRequestPB& req, const rpc::RequestIdPB* request_id,
                         WriteResponsePB* resp) {
  WriteScratch* w = ThreadScratch();
  w->Reset();
  if (Status s = DecodeRowOperations(req.row_operations(), schema_, RowBlockKind::kWrites, &w->ops);
      !s.ok()) {
    SetError(TabletServerErrorPB::INVALID_ROW_BLOCK, s, resp->mutable_error());
    return;
  }
  const DecodedRowOps& ops = w->ops;
  const size_t n = ops.size();

  // 1. Storage keys, back to back in one buffer.
  w->key_end.resize(n);
  w->keys.reserve(n * (kTabletPrefixSize + 16));
  for (size_t i = 0; i < n; i++) {
    if (!ops[i].error.ok()) {
      w->key_end[i] = 0;
      continue;
    }
    AppendTabletPrefix(seq(), &w->keys);
    EncodeKey(schema_, ops[i].row.cells(), &w->keys);
    w->key_end[i] = static_cast<uint32_t>(w->keys.size());
    w->order.push_back(static_cast<uint32_t>(i));
  }
  // Key of op i: [start, key_end[i]) where start is the previous valid op's end.
  w->slot_of.assign(n, UINT32_MAX);
  std::vector<Slice>& key_of = w->key_of;
  key_of.resize(n);
  {
    uint32_t start = 0;
    for (size_t i = 0; i < n; i++) {
      if (w->key_end[i] == 0) continue;
      key_of[i] = Slice(w->keys.data() + start, w->key_end[i] - start);
      start = w->key_end[i];
    }
  }

  // 2. Distinct keys in key order (blocks usually arrive sorted: check first).
  auto by_key = [&](uint32_t a, uint32_t b) {
    const int c = key_of[a].compare(key_of[b]);
    return c < 0 || (c == 0 && a < b);
  };
  if (!std::is_sorted(w->order.begin(), w->order.end(), by_key)) {
    std::sort(w->order.begin(), w->order.end(), by_key);
  }
  for (uint32_t i : w->order) {
    if (w->slots.empty() || !(w->slots.back().key == key_of[i])) {
      w->slots.emplace_back();
      w->slots.back().key = key_of[i];
    } else {
      w->slots.back().duplicated = true;
    }
    KeySlot& slot = w->slots.back();
    slot.needs_read |= NeedsRead(ops[i]);
    w->slot_of[i] = static_cast<uint32_t>(w->slots.size() - 1);
  }

  // 3. Lock, then read what the operations depend on.
  for (const KeySlot& s : w->slots) w->locks.Add(*locks_, s.key);
  w->locks.Lock(locks_);
  // Keys above the tablet's key bound are stored nowhere: no read for them. (The
  // slots are in key order; every key is above an empty bound.)
  size_t first_above_bound;
  {
    MutexLock l(key_bound_mu_);
    const Slice bound(key_bound_);
    first_above_bound = static_cast<size_t>(
        std::partition_point(w->slots.begin(), w->slots.end(),
                             [&](const KeySlot& s) { return s.key.compare(bound) <= 0; }) -
        w->slots.begin());
  }
  std::vector<Slice>& reads = w->read_keys;  // keys needing a read, in key order
  for (uint32_t s = 0; s < first_above_bound; s++) {
    if (!w->slots[s].needs_read) continue;
    reads.push_back(w->slots[s].key);
    w->read_slots.push_back(s);
  }
  if (!reads.empty()) {
    store_->MultiGet(*rows_, nullptr, reads.size(), reads.data(), /*sorted=*/true, &w->reads);
    if (!w->reads.status().ok()) {
      w->locks.Release();
      w->reads.Clear();
      SetError(TabletServerErrorPB::UNKNOWN_ERROR, w->reads.status(), resp->mutable_error());
      return;
    }
    for (size_t r = 0; r < reads.size(); r++) {
      KeySlot& slot = w->slots[w->read_slots[r]];
      slot.exists = w->reads.found(r);
      if (slot.exists) slot.value = w->reads.value(r);
    }
  }

  // 4. Apply in block order.
  int64_t inserted = 0, upserted = 0, updated = 0, deleted = 0, ignored = 0, errors = 0;
  std::unique_ptr<Row> merge;  // created on the first merge
  for (size_t i = 0; i < n; i++) {
    const DecodedRowOp& op = ops[i];
    if (!op.error.ok()) {
      AddRowError(resp, i, op.error);
      errors++;
      continue;
    }
    KeySlot& slot = w->slots[w->slot_of[i]];
    const Slice key = slot.key;
    bool merge_existing = false;
    switch (op.type) {
      case RowOpType::kInsert:
      case RowOpType::kInsertIgnore:
        if (slot.exists) {
          if (op.type == RowOpType::kInsert) {
            AddRowError(resp, i, Status::AlreadyPresent("key already present"));
            errors++;
          } else {
            ignored++;
          }
          continue;
        }
        break;
      case RowOpType::kUpsert:
        merge_existing = slot.exists && !SetsEveryColumn(op.row);
        break;
      case RowOpType::kUpdate:
      case RowOpType::kUpdateIgnore:
      case RowOpType::kDelete:
      case RowOpType::kDeleteIgnore:
        if (!slot.exists) {
          if (op.type == RowOpType::kUpdate || op.type == RowOpType::kDelete) {
            AddRowError(resp, i, Status::NotFound("key not found"));
            errors++;
          } else {
            ignored++;
          }
          continue;
        }
        merge_existing = IsUpdateLike(op.type);
        break;
      default:
        LOG(DFATAL) << "not a write operation";
        continue;
    }
    if (IsDeleteLike(op.type)) {
      w->batch.Delete(*rows_, key);
      slot.exists = false;
      deleted++;
      continue;
    }
    w->value.clear();
    Status s;
    if (merge_existing) {
      if (!merge) merge = std::make_unique<Row>(&schema_);
      s = DecodeRowValue(slot.value, merge.get());
      if (s.ok()) {
        for (int c = schema_.num_key_columns(); c < schema_.num_columns(); c++) {
          if (op.row.IsSet(c)) merge->SetUnchecked(c, op.row.cell(c));
        }
        s = EncodeRowValue(merge->view(), &w->value);
      } else {
        s = s.CloneAndPrepend("stored row");
      }
    } else {
      s = EncodeRowValue(op.row, &w->value);
    }
    if (!s.ok()) {
      AddRowError(resp, i, s);
      errors++;
      continue;
    }
    w->batch.Put(*rows_, key, Slice(w->value));
    if (slot.duplicated) slot.value = w->arena.Copy(Slice(w->value));
    if (op.type == RowOpType::kUpsert) {
      upserted++;
    } else if (IsUpdateLike(op.type)) {
      updated++;
    } else {
      inserted++;
    }
    slot.exists = true;
  }

  // 5. The response is final: store it with the rows when the request has an id
  // (deletions of forgotten records first, in case one has the same key).
  resp->set_rows_applied(inserted + upserted + updated + deleted);
  store_->TakeRequestRecordDeletes(&w->batch);
  if (request_id) {
    w->record_key.clear();
    AppendRequestRecordKey(seq(), request_id->client_id(), request_id->seq_no(), &w->record_key);
    w->record_value.clear();
    AppendRequestRecordHeader(GetWallTimeMicros(), request_id->first_incomplete_seq_no(),
                              &w->record_value);
    resp->AppendToString(&w->record_value);
    store_->PutRequestRecord(&w->batch, w->record_key, w->record_value);
  }

  // 6. Commit, raise the key bound, then unlock. (Raising it even when the write
  // failed only costs later writes a read.)
  Status s = w->batch.Count() > 0 ? store_->Write(&w->batch) : Status::OK();
  if (!w->slots.empty()) {
    const Slice largest = w->slots.back().key;
    MutexLock l(key_bound_mu_);
    if (Slice(key_bound_).compare(largest) < 0) key_bound_.assign(largest.cdata(), largest.size());
  }
  w->locks.Release();
  w->reads.Clear();
  if (!s.ok()) {
    resp->clear_per_row_errors();
    resp->clear_rows_applied();
    SetError(TabletServerErrorPB::UNKNOWN_ERROR, s, resp->mutable_error());
    LOG(WARNING) << "tablet " << tablet_id() << ": write failed: " << s.ToString();
    return;
  }
  if (tablet_metrics_) {
    if (inserted) tablet_metrics_->rows_inserted->Increment(inserted);
    if (upserted) tablet_metrics_->rows_upserted->Increment(upserted);
    if (updated) tablet_metrics_->rows_updated->Increment(updated);
    if (deleted) tablet_metrics_->rows_deleted->Increment(deleted);
  }
  if (metrics_) {
    if (inserted) metrics_->rows_inserted->Increment(inserted);
    if (upserted) metrics_->rows_upserted->Increment(upserted);
    if (updated) metrics_->rows_updated->Increment(updated);
    if (deleted) metrics_->rows_deleted->Increment(deleted);
    if (ignored) metrics_->rows_ignored->Increment(ignored);
    if (errors) metrics_->write_row_errors->Increment(errors);
  }
}

}  // namespace nyala::tserver
