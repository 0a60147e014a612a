// Tablet::Write: the write path described in tablet.h.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <mutex>

#include "common/flag_tags.h"
#include "common/key_encoding.h"
#include "common/row_encoding.h"
#include "common/row_operations.h"
#include "common/status.h"
#include "common/wire_protocol.h"
#include "nyala/arena.h"
#include "nyala/monotime.h"
#include "tserver/row_locks.h"
#include "tserver/tablet.h"
#include "tserver/tablet_store.h"
#include "tserver/tserver_metrics.h"
#include "tserver/write_command.h"
#include "tserver/write_trace.h"

DEFINE_int32(tablet_transaction_memory_limit_mb, 64,
             "MiB of row operations the writes of one tablet in flight may carry (taken and not "
             "yet replicated, applied and answered). Past it the tablet refuses new writes with "
             "THROTTLED, before they take any row lock, until some finish, and the client "
             "retries them; a write is always taken when none is in flight. Writes wait for "
             "replication without a thread, so this, not the service threads, bounds the "
             "writes in flight");
TAG_FLAG(tablet_transaction_memory_limit_mb, runtime);
DEFINE_validator(tablet_transaction_memory_limit_mb, [](const char*, int32_t v) { return v > 0; });

namespace nyala::tserver {

// Rows each kind of operation wrote or skipped, for the response and the metrics.
struct WriteCounts {
  int64_t inserted = 0, upserted = 0, updated = 0, deleted = 0, ignored = 0, errors = 0;
  int64_t applied() const { return inserted + upserted + updated + deleted; }
};

// One distinct storage key of a write and what the operations so far did to it.
struct WriteKeySlot {
  Slice key;
  bool needs_read = false;  // some operation depends on the stored row
  bool exists = false;
  bool duplicated = false;  // more than one operation on this key
  Slice value;              // the current row value, when exists (and needed)
};

namespace {

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

// Holds a write's row locks for a scope: every way out of it unlocks them.
class RowLockGuard {
 public:
  RowLockGuard(RowLockSet* set, RowLocks* locks) : set_(set) { set_->Lock(locks); }
  ~RowLockGuard() { set_->Release(); }
  RowLockGuard(const RowLockGuard&) = delete;
  RowLockGuard& operator=(const RowLockGuard&) = delete;

 private:
  RowLockSet* const set_;
};

}  // namespace

// Buffers reused by every write of one thread, so the hot path allocates nothing
// per row once they have grown.
struct WriteScratch {
  DecodedRowOps ops;
  std::string keys;               // every storage key, back to back
  std::vector<uint32_t> key_end;  // per op: end offset of its key in `keys` (0: invalid op)
  std::vector<uint32_t> order;    // valid op indexes sorted by key
  std::vector<uint32_t> slot_of;  // per op: index into slots
  std::vector<WriteKeySlot> slots;
  std::vector<Slice> key_of;  // per op: its storage key
  std::vector<Slice> read_keys;
  std::vector<uint32_t> read_slots;
  std::string value;
  // The write's row changes as replicas apply them (EncodeRowChange), then the whole
  // command (write_command.h).
  std::string changes;
  uint32_t num_changes = 0;
  Arena arena;  // values of duplicated keys, which later operations may read
  RowLockSet locks;
  StoreMultiGet reads;
  // The tablet's schema the write started with.
  std::shared_ptr<const TabletSchema> ts;
  // A stored row being merged with an update: made on the write's first merge, with
  // the write's schema, and dropped with the write.
  std::unique_ptr<Row> merge;
  // A stored row was newer than `ts`.
  bool schema_raced = false;

  WriteCounts counts;
  // What AdmitWrite charged the write, released when it ends.
  int64_t admitted_bytes = 0;

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
    changes.clear();
    num_changes = 0;
    merge.reset();
    schema_raced = false;
    counts = WriteCounts();
  }
};

namespace {
// A put (value) or delete (null) of `storage_key`, without its tablet prefix: each
// replica stores under its own seq.
void AppendRowChange(Slice storage_key, const Slice* value, WriteScratch* w) {
  storage_key.remove_prefix(kTabletPrefixSize);
  EncodeRowChange(storage_key, value, &w->changes);
  w->num_changes++;
}

WriteScratch* ThreadScratch() {
  thread_local WriteScratch scratch;
  return &scratch;
}
}  // namespace

void Tablet::Write(const WriteRequestPB& req, WriteResponsePB* resp,
                   const rpc::RequestIdPB* request_id, WriteTrace* trace) {
  Mutex mu;
  CondVar cv;
  bool finished = false;
  WriteAsync(req, resp, request_id, trace, [&] {
    MutexLock l(mu);
    finished = true;
    cv.notify_all();
  });
  UniqueLock l(mu);
  cv.wait(l, [&]() NO_THREAD_SAFETY_ANALYSIS { return finished; });
}

void Tablet::WriteAsync(const WriteRequestPB& req, WriteResponsePB* resp,
                        const rpc::RequestIdPB* request_id, WriteTrace* trace,
                        std::function<void()> done) {
  DCHECK(done);
  {
    SharedLock gate(ops_mu_);
    if (CheckRunning(resp->mutable_error())) {
      resp->clear_error();
      if (tablet_metrics_) tablet_metrics_->write_requests->Increment();
      std::shared_ptr<const TabletSchema> ts = tablet_schema();
      TabletServerErrorPB::Code code;
      if (Status s = CheckClientSchema(*ts, req.schema(), &code); !s.ok()) {
        SetError(code, s, resp->mutable_error());
      } else if (TabletServerErrorPB err; !replica_->CheckLeader(&err)) {
        *resp->mutable_error() = std::move(err);
      } else if (const int64_t bytes = int64_t(req.row_operations().rows().size() +
                                               req.row_operations().indirect_data().size());
                 AdmitWrite(bytes, resp)) {
        ThreadScratch()->admitted_bytes = bytes;
        WriteLocked(req, std::move(ts), request_id, trace, resp, &done);
        if (done) EndWrite(bytes);  // not proposed
      }
    }
  }
  if (done) done();  // not proposed: final now
}

int64_t Tablet::writes_in_flight() const {
  MutexLock l(writes_mu_);
  return writes_in_flight_;
}

int64_t Tablet::write_bytes_in_flight() const {
  MutexLock l(writes_mu_);
  return write_bytes_in_flight_;
}

void Tablet::WriteLocked(const WriteRequestPB& req, std::shared_ptr<const TabletSchema> ts,
                         const rpc::RequestIdPB* request_id, WriteTrace* trace,
                         WriteResponsePB* resp, std::function<void()>* done) {
  WriteScratch* w = ThreadScratch();
  w->Reset();
  w->ts = std::move(ts);
  if (Status s = DecodeRowOperations(req.row_operations(), w->ts->schema, RowBlockKind::kWrites,
                                     &w->ops);
      !s.ok()) {
    SetError(TabletServerErrorPB::INVALID_ROW_BLOCK, s, resp->mutable_error());
    return;
  }
  BuildStorageKeys(w);
  GroupByKey(w);
  const Status s = LockReadApplyCommit(w, request_id, trace, resp, done);
  w->reads.Clear();
  w->merge.reset();
  w->ts.reset();
  if (!*done) return;  // proposed: FinishReplicated finishes it
  FinishWrite(s, w->counts, resp);
}

void Tablet::FinishWrite(const Status& s, const WriteCounts& counts, WriteResponsePB* resp) const {
  if (s.ok()) {
    CountWrittenRows(counts);
    return;
  }
  resp->clear_per_row_errors();
  resp->clear_rows_applied();
  if (s.IsIllegalState() || s.IsAborted()) {
    // Not applied: the leader changed before the write could commit here.
    if (TabletServerErrorPB err; !replica_->CheckLeader(&err)) {
      *resp->mutable_error() = std::move(err);
    } else {
      SetError(TabletServerErrorPB::NOT_THE_LEADER, s, resp->mutable_error());
    }
    resp->mutable_error()->mutable_status()->set_message(s.ToString());
  } else if (s.IsServiceUnavailable()) {
    // Leadership lost, or the group stopped, first: the write may still commit; a
    // retry with the same request id finds it applied, or applies it.
    if (TabletServerErrorPB err; !replica_->CheckLeader(&err)) {
      *resp->mutable_error() = std::move(err);
      resp->mutable_error()->mutable_status()->set_message(s.ToString());
    } else {
      SetError(TabletServerErrorPB::TABLET_NOT_RUNNING, s, resp->mutable_error());
    }
  } else {
    SetError(TabletServerErrorPB::UNKNOWN_ERROR, s, resp->mutable_error());
  }
  LOG(WARNING) << "tablet " << tablet_id() << ": write failed: " << s.ToString();
}

void Tablet::BuildStorageKeys(WriteScratch* w) const {
  const DecodedRowOps& ops = w->ops;
  const size_t n = ops.size();
  // Storage keys, back to back in one buffer.
  w->key_end.resize(n);
  w->keys.reserve(n * (kTabletPrefixSize + 16));
  for (size_t i = 0; i < n; i++) {
    if (!ops[i].error.ok()) {
      w->key_end[i] = 0;
      continue;
    }
    AppendTabletPrefix(row_prefix(), &w->keys);
    EncodeKey(w->ts->schema, ops[i].row.cells(), &w->keys);
    w->key_end[i] = static_cast<uint32_t>(w->keys.size());
    w->order.push_back(static_cast<uint32_t>(i));
  }
  // Key of op i: [start, key_end[i]) where start is the previous valid op's end.
  w->key_of.resize(n);
  uint32_t start = 0;
  for (size_t i = 0; i < n; i++) {
    if (w->key_end[i] == 0) continue;
    w->key_of[i] = Slice(w->keys.data() + start, w->key_end[i] - start);
    start = w->key_end[i];
  }
}

void Tablet::GroupByKey(WriteScratch* w) const {
  const std::vector<Slice>& key_of = w->key_of;
  // Distinct keys in key order (blocks usually arrive sorted: check first).
  auto by_key = [&](uint32_t a, uint32_t b) {
    const int c = key_of[a].compare(key_of[b]);
    return c < 0 || (c == 0 && a < b);
  };
  if (!std::is_sorted(w->order.begin(), w->order.end(), by_key)) {
    std::sort(w->order.begin(), w->order.end(), by_key);
  }
  w->slot_of.assign(w->ops.size(), UINT32_MAX);
  for (uint32_t i : w->order) {
    if (w->slots.empty() || !(w->slots.back().key == key_of[i])) {
      w->slots.emplace_back();
      w->slots.back().key = key_of[i];
    } else {
      w->slots.back().duplicated = true;
    }
    WriteKeySlot& slot = w->slots.back();
    slot.needs_read |= NeedsRead(w->ops[i]);
    w->slot_of[i] = static_cast<uint32_t>(w->slots.size() - 1);
  }
}

// A proposed write: what finishing it needs once its entry is applied (or its outcome
// is known otherwise).
struct Tablet::PendingWrite {
  RowLockSet locks;
  WriteCounts counts;
  WriteResponsePB* resp = nullptr;
  std::function<void()> done;
  int64_t bytes = 0;
};

Status Tablet::LockReadApplyCommit(WriteScratch* w, const rpc::RequestIdPB* request_id,
                                   WriteTrace* trace, WriteResponsePB* resp,
                                   std::function<void()>* done) {
  for (const WriteKeySlot& s : w->slots) w->locks.Add(*locks_, s.key);
  RowLockGuard held(&w->locks, locks_);
  if (trace) trace->Locked();
  // Leadership again, under the locks: the reads below must see every entry of earlier
  // terms applied, and what they decide is appended in this term or not at all (a
  // write that waited for the locks may find the leadership lost, or lost and regained
  // with entries of the term between not yet applied).
  const uint64_t term = replica_->ReadyLeaderTerm();
  if (term == 0) {
    return Status::IllegalState("tablet " + tablet_id() + ": leadership changed while the write "
                                "waited for its row locks");
  }
  RETURN_NOT_OK(ReadExistingRows(w));
  ApplyInBlockOrder(w, resp);
  if (w->schema_raced) {
    resp->Clear();
    w->counts = WriteCounts();
    SetError(TabletServerErrorPB::TABLET_HAS_A_NEWER_SCHEMA,
             Status::InvalidArgument("tablet " + tablet_id() +
                                         "'s schema changed while the write ran: nothing written",
                                     "refresh the table's schema and retry"),
             resp->mutable_error());
    return Status::OK();
  }
  // The response is final: it travels with the rows, to be stored as the request's
  // record when the request has an id.
  resp->set_rows_applied(w->counts.applied());
  if (w->num_changes == 0 && request_id == nullptr) return Status::OK();
  std::string command = EncodeWriteCommand(w->num_changes, w->changes, request_id, *resp);
  auto p = std::make_shared<PendingWrite>();
  p->bytes = w->admitted_bytes;
  // Replicated and applied (rows, record, key bound) before the locks go: they go with
  // the proposal, with the counts and the callback.
  p->locks.TakeFrom(&w->locks);
  p->counts = w->counts;
  p->resp = resp;
  p->done = std::move(*done);
  *done = nullptr;
  if (trace) trace->Proposed();
  replica_->ReplicateAsync(std::move(command), term, trace ? trace->proposal() : nullptr,
                           [this, p](const Status& s) { FinishReplicated(p.get(), s); });
  return Status::OK();
}

void Tablet::FinishReplicated(PendingWrite* p, const Status& s) {
  p->locks.Release();
  // Applied, but the apply failed: the tablet stopped (ApplyWrite's error).
  FinishWrite(s.ok() && state() == TabletState::kFailed ? failure_ : s, p->counts, p->resp);
  std::function<void()> done = std::move(p->done);
  EndWrite(p->bytes);
  done();
}

bool Tablet::AdmitWrite(int64_t bytes, WriteResponsePB* resp) {
  UniqueLock l(writes_mu_);
  const int64_t limit = int64_t{FLAGS_tablet_transaction_memory_limit_mb} << 20;
  if (writes_in_flight_ > 0 && write_bytes_in_flight_ + bytes > limit) {
    const std::string held = std::to_string(write_bytes_in_flight_);
    const int64_t n = writes_in_flight_;
    l.Unlock();
    SetError(
        TabletServerErrorPB::THROTTLED,
        Status::ServiceUnavailable(
            "tablet " + tablet_id() + ": its " + std::to_string(n) + " writes in flight hold " +
                held + " bytes, the most --tablet_transaction_memory_limit_mb allows",
            "retry once some have finished"),
        resp->mutable_error());
    return false;
  }
  writes_in_flight_++;
  write_bytes_in_flight_ += bytes;
  return true;
}

void Tablet::EndWrite(int64_t bytes) {
  MutexLock l(writes_mu_);
  writes_in_flight_--;
  write_bytes_in_flight_ -= bytes;
  if (writes_in_flight_ == 0) writes_cv_.notify_all();
}

Status Tablet::ReadExistingRows(WriteScratch* w) {
  // Keys above the tablet's key bound are stored nowhere: no read for them. (The
  // slots are in key order; every key is above an empty bound.)
  size_t first_above_bound;
  {
    MutexLock l(key_bound_mu_);
    const Slice bound(key_bound_);
    first_above_bound = static_cast<size_t>(
        std::partition_point(w->slots.begin(), w->slots.end(),
                             [&](const WriteKeySlot& s) { return s.key.compare(bound) <= 0; }) -
        w->slots.begin());
  }
  std::vector<Slice>& reads = w->read_keys;  // keys needing a read, in key order
  for (uint32_t s = 0; s < first_above_bound; s++) {
    if (!w->slots[s].needs_read) continue;
    reads.push_back(w->slots[s].key);
    w->read_slots.push_back(s);
  }
  if (reads.empty()) return Status::OK();
  store_->MultiGet(*rows_, nullptr, reads.size(), reads.data(), /*sorted=*/true, &w->reads);
  RETURN_NOT_OK(w->reads.status());
  for (size_t r = 0; r < reads.size(); r++) {
    WriteKeySlot& slot = w->slots[w->read_slots[r]];
    slot.exists = w->reads.found(r);
    if (slot.exists) slot.value = w->reads.value(r);
  }
  return Status::OK();
}

void Tablet::ApplyInBlockOrder(WriteScratch* w, WriteResponsePB* resp) {
  WriteCounts& c = w->counts;
  for (size_t i = 0; i < w->ops.size(); i++) {
    const DecodedRowOp& op = w->ops[i];
    if (!op.error.ok()) {
      AddRowError(resp, i, op.error);
      c.errors++;
      continue;
    }
    WriteKeySlot& slot = w->slots[w->slot_of[i]];
    bool merge_existing = false;
    switch (op.type) {
      case RowOpType::kInsert:
      case RowOpType::kInsertIgnore:
        if (slot.exists) {
          if (op.type == RowOpType::kInsert) {
            AddRowError(resp, i, Status::AlreadyPresent("key already present"));
            c.errors++;
          } else {
            c.ignored++;
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
            c.errors++;
          } else {
            c.ignored++;
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
      AppendRowChange(slot.key, nullptr, w);
      slot.exists = false;
      c.deleted++;
      continue;
    }
    if (Status s = PutRow(op, merge_existing, &slot, w); !s.ok()) {
      AddRowError(resp, i, s);
      c.errors++;
      continue;
    }
    if (op.type == RowOpType::kUpsert) {
      c.upserted++;
    } else if (IsUpdateLike(op.type)) {
      c.updated++;
    } else {
      c.inserted++;
    }
  }
}

Status Tablet::PutRow(const DecodedRowOp& op, bool merge_existing, WriteKeySlot* slot,
                      WriteScratch* w) {
  w->value.clear();
  if (merge_existing) {
    const Schema& schema = w->ts->schema;
    if (!w->merge) w->merge = std::make_unique<Row>(&schema);
    Row* merge = w->merge.get();
    if (Status s = w->ts->DecodeValue(slot->value, merge); !s.ok()) {
      // A row stored under a newer schema than this write's (a change applied since
      // it began): the whole write is refused (LockReadApplyCommit).
      if (s.IsIllegalState()) w->schema_raced = true;
      return s.CloneAndPrepend("stored row");
    }
    for (int c = schema.num_key_columns(); c < schema.num_columns(); c++) {
      if (op.row.IsSet(c)) merge->SetUnchecked(c, op.row.cell(c));
    }
    RETURN_NOT_OK(EncodeRowValue(merge->view(), &w->value));
  } else {
    RETURN_NOT_OK(EncodeRowValue(op.row, &w->value));
  }
  const Slice value(w->value);
  AppendRowChange(slot->key, &value, w);
  if (slot->duplicated) slot->value = w->arena.Copy(Slice(w->value));
  slot->exists = true;
  return Status::OK();
}

Status Tablet::ApplyWrite(const DecodedWriteCommand& cmd, Slice applied_state) {
  if (cmd.is_schema_change) return ApplySchemaChange(cmd, applied_state);
  thread_local StoreWriteBatch batch;
  batch.Clear();
  std::string key, largest;
  for (const DecodedWriteCommand::Change& c : cmd.changes) {
    key = TabletPrefix(row_prefix());
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
  store_->PutAppliedState(&batch, seq(), applied_state);
  RETURN_NOT_OK(store_->Write(&batch));
  if (!largest.empty()) {
    MutexLock l(key_bound_mu_);
    if (Slice(key_bound_).compare(Slice(largest)) < 0) key_bound_ = largest;
  }
  return Status::OK();
}

void Tablet::CountWrittenRows(const WriteCounts& c) const {
  if (tablet_metrics_) {
    if (c.inserted) tablet_metrics_->rows_inserted->Increment(c.inserted);
    if (c.upserted) tablet_metrics_->rows_upserted->Increment(c.upserted);
    if (c.updated) tablet_metrics_->rows_updated->Increment(c.updated);
    if (c.deleted) tablet_metrics_->rows_deleted->Increment(c.deleted);
  }
  if (metrics_) {
    if (c.inserted) metrics_->rows_inserted->Increment(c.inserted);
    if (c.upserted) metrics_->rows_upserted->Increment(c.upserted);
    if (c.updated) metrics_->rows_updated->Increment(c.updated);
    if (c.deleted) metrics_->rows_deleted->Increment(c.deleted);
    if (c.ignored) metrics_->rows_ignored->Increment(c.ignored);
    if (c.errors) metrics_->write_row_errors->Increment(c.errors);
  }
}

}  // namespace nyala::tserver
