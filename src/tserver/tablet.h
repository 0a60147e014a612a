// Tablet: one tablet's rows inside a TabletStore, and the operations on them that
// the RPC services call: Write (a row-operations block applied as one WriteBatch),
// Get (one MultiGet) and the pieces a scan is built from (snapshot, bounded
// iterator, row decoding, projections).
//
// Write, in order: check the tablet is running, leads (CheckLeader) and the request's
// schema matches; decode the block (malformed: the whole request fails, nothing
// written); encode each row's storage key; lock the keys' stripes (RowLocks); read
// the rows that the operations need with one MultiGet (only keys at or below the
// tablet's key bound: nothing is stored above it); apply the operations in block
// order to a per-key state, so that duplicate keys in one block behave as if applied
// one after another, collecting the row changes; replicate them with the final
// response (Replicate) and wait for the local apply, which commits one WriteBatch
// (holding also the request's record when it has a request id, the record deletions
// the store has queued and the applied index) and raises the key bound to the
// largest key written; unlock.
//
// Operation semantics (docs/storage-format.md):
//   INSERT         AlreadyPresent row error if the key exists
//   INSERT_IGNORE  nothing if the key exists
//   UPSERT         inserts, or merges the set columns into the existing row (columns
//                  not set keep their values); a row setting every column is written
//                  without reading
//   UPDATE         merges the set columns into the existing row; NotFound if none
//   UPDATE_IGNORE  nothing if the key does not exist
//   DELETE         NotFound row error if the key does not exist
//   DELETE_IGNORE  nothing if the key does not exist
// WriteResponsePB.rows_applied counts the operations that changed a row (ignored
// operations and failed rows are not counted).
//
// Replication: a tablet in a server is one replica of its tablet's Raft group, and
// owns its TabletReplica (tablet_replica.h), which holds the group and the leader
// checks and waits. A write runs the steps above up to the commit on the leader only
// (row locks and existence checks there), encodes the resulting row changes, with the
// request's id and final response, as a write command (write_command.h) and hands it
// to the replica (ReplicateAsync); every replica applies committed commands in log
// order through the tablet's ReplicaStorage side (ApplyWrite), writing the rows, the
// request record and the replica's applied state in one batch. The leader answers
// after its own apply. Get and Scan call the replica's WaitForLinearizableRead first.
//
// A write waits for its replication without a thread: WriteAsync returns once the
// command is proposed, and its row locks travel with it to the group's worker, which
// releases them and finishes the response after the apply. What bounds the writes in
// flight is memory: a tablet whose writes in flight (taken and not finished) carry more
// than --tablet_transaction_memory_limit_mb of row operations refuses new ones with
// THROTTLED, before they take any lock (the client retries), unless it has none in
// flight.
//
// Schema changes: AlterSchemaAsync (the leader) replicates a schema-change entry;
// every replica's apply writes the new metadata (the new schema, the old one kept
// in older_schemas, the table's name) with its applied state and swaps the tablet's
// TabletSchema. A write, get or scan holds the TabletSchema it started with: rows are
// encoded under its version and decoded by their own (TabletSchema::DecodeValue), so
// a write decided under the previous version and applied after the change reads
// right. A write whose request names an older schema version than the tablet's is
// refused with TABLET_HAS_A_NEWER_SCHEMA (the client refreshes and retries), a newer
// one with TABLET_SCHEMA_BEHIND; one that finds a stored row newer than the schema it
// started with (a change applied meanwhile) fails as a whole with
// TABLET_HAS_A_NEWER_SCHEMA, writing nothing.
//
// Thread-safety: every public method is thread-safe. The tablet id, seq, partition
// and partition schema never change after creation; the schema and table name change
// with schema-change entries (on the group's worker). The ReplicaStorage methods run on the group's runtime
// worker thread (LoadAppliedState: when the replica starts). A write or get that
// started before MarkDeleted() finishes before MarkDeleted() returns (a write in
// flight finishes when its group stops, so stop the group first); later ones fail
// with TABLET_NOT_FOUND.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "common/row_encoding.h"
#include "common/row_operations.h"
#include "common/rw_mutex.h"
#include "common/status.h"
#include "nyala/monotime.h"
#include "nyala/partition.h"
#include "nyala/predicate.h"
#include "nyala/row.h"
#include "nyala/schema.h"
#include "rpc/rpc_header.pb.h"
#include "tserver/tablet_metadata.pb.h"
#include "tserver/tserver_admin.pb.h"
#include "tserver/tablet_replica.h"
#include "tserver/tablet_store.h"
#include "tserver/tserver.pb.h"

namespace nyala {
struct DecodedRowOp;
}  // namespace nyala

namespace nyala::tserver {

class RowLocks;
class StoreIterator;
class StoreWriteBatch;
class StoreSnapshot;
class TabletRows;
class TabletStore;
struct TabletMetrics;
struct TServerMetrics;
class WriteTrace;
struct WriteCounts;   // tablet_write.cc
struct WriteKeySlot;  // tablet_write.cc
struct WriteScratch;  // tablet_write.cc

// kTombstoned: removed from its group; no rows, its consensus state kept in the log
// (TabletManager::TombstoneTablet).
enum class TabletState { kRunning, kFailed, kDeleted, kTombstoned };
const char* TabletStateName(TabletState state);

// The columns a Get or Scan returns: a projection schema and, for each projected
// column, its index in the tablet schema it was made from. Immutable; shared between
// requests.
struct Projection {
  Schema schema;
  std::vector<int> source_index;
  bool needs_key = false;  // some projected column is a key column
  SchemaPB schema_pb;
};

// A tablet's schema as of its last applied schema change, and what reading rows
// stored under its earlier versions needs. Immutable: a schema change replaces it
// whole; a write, get or scan holds the one it started with.
struct TabletSchema {
  // The metadata with this schema (and table name), as stored.
  TabletMetadataPB meta;
  Schema schema;
  std::shared_ptr<const Projection> full_projection;
  // Readers of rows stored under earlier versions, by version.
  std::map<uint32_t, RowValueTranslation> older;

  // From stored metadata: InvalidArgument when its schema or an earlier one is
  // invalid, or rows of an earlier version cannot be read through it.
  static Result<std::shared_ptr<const TabletSchema>> Make(TabletMetadataPB meta);
  // The projection of `names` (empty: every column, shared). NotFound for an unknown
  // name, InvalidArgument for a repeated one.
  Result<std::shared_ptr<const Projection>> MakeProjection(
      const google::protobuf::RepeatedPtrField<std::string>& names) const;
  // Sets the non-key columns of `row` (a row of `schema`) from a stored row value of
  // this version or an earlier one; IllegalState for a newer version, Corruption for
  // a malformed value or an unknown version.
  Status DecodeValue(Slice value, Row* row) const;
  // Decodes a stored row into `row` (a row of `schema`): the key columns from the
  // storage key when `decode_key`, the rest from `value`.
  Status DecodeStoredRow(Slice storage_key, Slice value, bool decode_key, Row* row) const;
  // A stored row value of an earlier version re-encoded under this one (the values of
  // dropped columns gone): true with `*out` set; false (nothing to do, or a value that
  // does not decode, left as it is) otherwise.
  bool RewriteToCurrent(Slice value, std::string* out) const;
};

// Rewrites values of earlier schema versions to the current one in the tablet's rows
// family's compactions, but only while no reader (a write, get, scan or checksum)
// holds an earlier TabletSchema: such a reader, which may read through a snapshot the
// compaction rewrites under it, must never meet a value newer than its schema.
// Thread-safe.
class TabletSchemaRewriter : public RowValueRewriter {
 public:
  explicit TabletSchemaRewriter(std::shared_ptr<const TabletSchema> current)
      : current_(std::move(current)) {}
  // The tablet's schema changed to `next`.
  void Advance(std::shared_ptr<const TabletSchema> next) EXCLUDES(mu_);
  Fn ForCompaction() const override EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::shared_ptr<const TabletSchema> current_ GUARDED_BY(mu_);
  mutable std::vector<std::weak_ptr<const TabletSchema>> retired_ GUARDED_BY(mu_);
};

// Fills `pb` with `code` and `status` (master's SetError has the same shape).
void SetError(TabletServerErrorPB::Code code, const Status& status, TabletServerErrorPB* pb);

class Tablet final : public ReplicaStorage {
 public:
  // A running tablet from its stored metadata; `store`, `locks` and `metrics`
  // must outlive it. Fails when the stored schema or partition schema is invalid.
  static Result<std::shared_ptr<Tablet>> Open(TabletMetadataPB meta, TabletStore* store,
                                              RowLocks* locks, TServerMetrics* metrics);
  // A tablet whose metadata could not be used, kept to report it FAILED.
  static std::shared_ptr<Tablet> Failed(TabletMetadataPB meta, Status error, TabletStore* store,
                                        RowLocks* locks, TServerMetrics* metrics);
  // A tombstone: a replica removed from its group, kept to say so (TABLET_NOT_FOUND to
  // reads and writes) until a copy replaces it or it is deleted.
  static std::shared_ptr<Tablet> Tombstone(TabletMetadataPB meta, TabletStore* store,
                                           RowLocks* locks, TServerMetrics* metrics);
  ~Tablet();

  const std::string& tablet_id() const { return meta_.tablet_id(); }
  // The tablet's metadata now (its schema and table name as of the last schema
  // change applied; for a failed or tombstoned tablet, as loaded).
  TabletMetadataPB metadata() const EXCLUDES(schema_mu_);
  // The schema now, and what reads of older rows need (null in a failed or
  // tombstoned tablet). Hold it for the length of an operation.
  std::shared_ptr<const TabletSchema> tablet_schema() const EXCLUDES(schema_mu_);
  uint32_t schema_version() const { return schema_version_.load(std::memory_order_acquire); }
  // Key columns and partitioning, which no schema change touches.
  const PartitionSchema& partition_schema() const { return partition_schema_; }
  // The tablet's number in its store: its request records and applied state are kept
  // under it.
  uint64_t seq() const { return meta_.seq(); }
  // The 8-byte prefix of its row keys: seq(), or for a tablet copied from another
  // server, the prefix it had there (TabletMetadataPB::row_key_prefix).
  uint64_t row_prefix() const {
    return meta_.row_key_prefix() != 0 ? meta_.row_key_prefix() : meta_.seq();
  }
  TabletStore* store() const { return store_; }
  // Its rows family (null in a failed tablet): tablet copy exports it.
  std::shared_ptr<TabletRows> rows() const { return rows_; }
  TabletState state() const { return state_.load(std::memory_order_acquire); }
  // Why the tablet is FAILED (OK otherwise).
  const Status& failure() const { return failure_; }

  // Applies `req` (already routed to this tablet by id). Whole-request failures go
  // to resp->error and write nothing; otherwise per-row errors and rows_applied.
  // With a `request_id`, the final response is also written, in the same batch as
  // the rows, as the request's record (tablet_store.h) for RequestTracker: a
  // response without error means the record is stored.
  // With `trace`, the write stamps its stages in it (write_trace.h). Waits for the
  // replication: WriteAsync and a wait.
  void Write(const WriteRequestPB& req, WriteResponsePB* resp,
             const rpc::RequestIdPB* request_id = nullptr, WriteTrace* trace = nullptr);
  // Write without waiting for the replication: `done` runs once `resp` is final, on the
  // calling thread before this returns (the write failed, or replicated nothing), or
  // on the tablet's group's worker (after the apply, or once the outcome is known); it
  // must not block. `req`, `resp`, `request_id` and `trace` must stay valid, and the
  // tablet alive, until `done` runs.
  void WriteAsync(const WriteRequestPB& req, WriteResponsePB* resp,
                  const rpc::RequestIdPB* request_id, WriteTrace* trace,
                  std::function<void()> done);
  // Writes admitted and not finished, and the bytes of their row operations.
  int64_t writes_in_flight() const;
  int64_t write_bytes_in_flight() const;

  // Looks up req.keys() with one MultiGet. Found rows go to `rows`/`indirect` in
  // the row-block layout of the projection (request order); resp gets found[] and
  // the projection; resp->data().num_rows() is set (the sidecar indexes are the
  // caller's). A whole-request failure goes to resp->error (nothing produced).
  // LEADER_ONLY (the default) reads linearizably, as the leader; NOT_THE_LEADER on
  // another replica. ANY_REPLICA reads the rows this replica has applied.
  void Get(const GetRequestPB& req, GetResponsePB* resp, std::string* rows, std::string* indirect);
  // Get without blocking, for the RPC reactor thread: reads only what is in memory
  // (memtables, block cache) and does not wait for the tablet's lock. Returns false,
  // with resp, rows and indirect untouched, when it would have to block; true when
  // it answered (resp as Get would fill it).
  bool TryGetWithoutBlocking(const GetRequestPB& req, GetResponsePB* resp, std::string* rows,
                             std::string* indirect);

  // Leader: replicates the change of the tablet's schema to `req.schema()` (and its
  // table's name) and runs `done` once the entry is applied here (on the group's
  // worker), or at once on the calling thread when it is refused or the tablet
  // already has that version; `resp` gets the outcome. `req` and `resp` must stay
  // valid until `done` runs.
  void AlterSchemaAsync(const AlterSchemaRequestPB& req, AlterSchemaResponsePB* resp,
                        std::function<void()> done);

  // --- Scans (see scanners.h).
  std::unique_ptr<StoreSnapshot> GetSnapshot() const;
  // Iterates the storage keys of encoded primary keys [range.start, range.stop).
  std::unique_ptr<StoreIterator> NewIterator(const StoreSnapshot* snapshot,
                                             const KeyRange& range) const;
  // Stops writes and gets (waiting for those running) and marks the tablet deleted.
  void MarkDeleted();

  // Approximate bytes of this tablet's rows on disk and in memtables.
  int64_t OnDiskSize() const;
  // Estimated live rows (TabletStore::EstimateLiveRows).
  int64_t LiveRowEstimate() const;
  // The figures measured last for tablet reports (TabletManager::UpdateTabletStats):
  // false until the first measurement. Any thread.
  struct Stats {
    int64_t on_disk_size = 0;
    int64_t live_row_count = 0;
  };
  bool ReportedStats(Stats* out) const;
  // Measures OnDiskSize and LiveRowEstimate now and keeps them for ReportedStats;
  // true when they differ from the previous measurement (or it is the first).
  bool MeasureStats();

  // This tablet's replica of its Raft group: owned by the tablet, started by the
  // tablet manager.
  TabletReplica& replica() const { return *replica_; }

  // The tablet's own counters; null when the tablet has no metrics (tests).
  const TabletMetrics* tablet_metrics() const { return tablet_metrics_.get(); }

 private:
  Tablet(TabletMetadataPB meta, TabletStore* store, RowLocks* locks, TServerMetrics* metrics);
  // The write proper; REQUIRES: ops_mu_ held shared and the tablet running. Its
  // steps (tablet_write.cc), each on the thread's WriteScratch: decode the block,
  // BuildStorageKeys, GroupByKey (distinct keys in key order), then under the row
  // locks (LockReadApplyCommit) ReadExistingRows, ApplyInBlockOrder (PutRow for each
  // written row), then the proposal (the apply writes rows, record and applied
  // index), and last FinishWrite. Takes `*done` when the write goes on
  // asynchronously (it was proposed); otherwise `resp` is final on return and `*done`
  // is the caller's to run.
  void WriteLocked(const WriteRequestPB& req, std::shared_ptr<const TabletSchema> ts,
                   const rpc::RequestIdPB* request_id, WriteTrace* trace, WriteResponsePB* resp,
                   std::function<void()>* done) REQUIRES_SHARED(ops_mu_);
  void BuildStorageKeys(WriteScratch* w) const;
  void GroupByKey(WriteScratch* w) const;
  // Locks the rows, reads, decides and proposes: then the locks and `*done` go with
  // the proposal (FinishReplicated). Otherwise the locks are released on return, and a
  // failed read (nothing written) or a refusal is returned.
  Status LockReadApplyCommit(WriteScratch* w, const rpc::RequestIdPB* request_id, WriteTrace* trace,
                             WriteResponsePB* resp, std::function<void()>* done)
      REQUIRES_SHARED(ops_mu_);
  // Counts a write in flight, charged `bytes` (its row operations), unless that would
  // pass --tablet_transaction_memory_limit_mb with others in flight: then false, with
  // THROTTLED in `resp`. Every admitted write ends with EndWrite.
  bool AdmitWrite(int64_t bytes, WriteResponsePB* resp) EXCLUDES(writes_mu_);
  void EndWrite(int64_t bytes) EXCLUDES(writes_mu_);
  struct PendingWrite;
  // The proposal of `p` has its outcome `s`: releases its locks, finishes its response
  // and runs its callback.
  void FinishReplicated(PendingWrite* p, const Status& s) EXCLUDES(writes_mu_);
  // The response of a write whose rows were decided, given how its replication ended.
  void FinishWrite(const Status& s, const WriteCounts& counts, WriteResponsePB* resp) const;
  Status ReadExistingRows(WriteScratch* w) REQUIRES_SHARED(ops_mu_);
  // Per-row errors go to `resp`; the rows written go into the write's row changes.
  void ApplyInBlockOrder(WriteScratch* w, WriteResponsePB* resp) REQUIRES_SHARED(ops_mu_);
  // Adds `op`'s row (merged into the stored one when `merge_existing`) for `slot` to
  // the write's row changes.
  Status PutRow(const DecodedRowOp& op, bool merge_existing, WriteKeySlot* slot, WriteScratch* w)
      REQUIRES_SHARED(ops_mu_);
  // ReplicaStorage (the replica's group's worker thread).
  bool Running() const override { return state() == TabletState::kRunning; }
  Status ApplyWrite(const DecodedWriteCommand& cmd, Slice applied_state) override;
  // ApplyWrite of a schema-change entry: the new metadata and the applied state in
  // one batch, then the new TabletSchema.
  Status ApplySchemaChange(const DecodedWriteCommand& cmd, Slice applied_state);
  Status StoreAppliedState(Slice applied_state) override;
  Result<std::string> LoadAppliedState() override;
  Status SyncApplied() override;
  void Fail(const Status& error) override;
  void CountWrittenRows(const WriteCounts& c) const;
  // OK when `pb` describes the columns of `ts` (version, names, types, key,
  // nullability); otherwise the error code for the client (TABLET_HAS_A_NEWER_SCHEMA,
  // TABLET_SCHEMA_BEHIND, MISMATCHED_SCHEMA) in `code`.
  Status CheckClientSchema(const TabletSchema& ts, const SchemaPB& pb,
                           TabletServerErrorPB::Code* code) const;
  // Returns an error if the tablet does not take reads or writes now.
  bool CheckRunning(TabletServerErrorPB* error) const;
  // Get's body; REQUIRES: ops_mu_ held shared. Returns false (nothing produced) only
  // when `memory_only` and some key is not in memory.
  // `attempt`: how many times a schema change applied meanwhile made it start over.
  bool GetLocked(const GetRequestPB& req, GetResponsePB* resp, std::string* rows,
                 std::string* indirect, bool memory_only, int attempt = 0)
      REQUIRES_SHARED(ops_mu_);

  // Set at creation, never changed (its schema and table name are those at creation
  // or load: the current ones are in schema_).
  const TabletMetadataPB meta_;
  TabletStore* const store_;
  std::shared_ptr<TabletRows> rows_;  // set by Open; null in a failed tablet
  RowLocks* const locks_;
  TServerMetrics* const metrics_;
  const std::unique_ptr<const TabletMetrics> tablet_metrics_;  // null without metrics_
  PartitionSchema partition_schema_;
  // Replaced whole by a schema change (on the group's worker); null in a failed or
  // tombstoned tablet.
  mutable Mutex schema_mu_;
  std::shared_ptr<const TabletSchema> schema_ GUARDED_BY(schema_mu_);
  std::atomic<uint32_t> schema_version_{0};
  // Registered with the store for the rows family (null in a failed tablet): rewrites
  // row values of earlier versions in compactions, once no reader holds an earlier
  // TabletSchema.
  std::shared_ptr<TabletSchemaRewriter> rewriter_;
  // Set once, before state_ becomes kFailed (at creation, or by Fail() on the group's
  // worker thread); read only after state() returned kFailed.
  Status failure_;

  // An upper bound of the tablet's storage keys: no row is stored above it, so the
  // existence reads of keys above it are skipped (rows inserted in key order, as
  // time-series tables get them, read nothing; like Kudu's rowset key bounds). Set
  // from the last stored key at Open; a write raises it to its largest key before it
  // releases its row locks, so whoever locks a key next sees a bound at or above it.
  // Empty while no row is stored (a storage key is never empty: it starts with the
  // tablet's seq).
  mutable Mutex key_bound_mu_;
  std::string key_bound_ GUARDED_BY(key_bound_mu_);

  // Held shared by every write (until it is proposed) and get, exclusively by
  // MarkDeleted().
  mutable RwMutex ops_mu_;
  // Writes admitted and not finished (MarkDeleted waits for none).
  mutable Mutex writes_mu_;
  CondVar writes_cv_;
  int64_t writes_in_flight_ GUARDED_BY(writes_mu_) = 0;
  int64_t write_bytes_in_flight_ GUARDED_BY(writes_mu_) = 0;

  mutable Mutex stats_mu_;
  bool has_stats_ GUARDED_BY(stats_mu_) = false;
  Stats stats_ GUARDED_BY(stats_mu_);
  std::atomic<TabletState> state_{TabletState::kRunning};
  // Last: it borrows the tablet as its storage.
  const std::unique_ptr<TabletReplica> replica_;
};

}  // namespace nyala::tserver
