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
// Replication (tablet_replication.cc): a tablet in a server is one replica of its
// tablet's Raft group (consensus/raft_group.h), and the tablet is the group's state
// machine. A write runs the steps above up to the commit on the leader only (row
// locks and existence checks there), and hands the resulting row changes, with the
// request's id and final response, to the group; every replica applies them in log
// order (Apply), writing the rows, the request record and the tablet's applied index
// in one batch. The leader answers after its own apply. Get and Scan call
// WaitForLinearizableRead first. A tablet without a group (unit tests) applies its
// writes directly, through the same apply step.
//
// Thread-safety: every public method is thread-safe. The metadata, schema and seq
// never change after creation. Apply, FlushRequested and LeadershipChanged run on the
// group's runtime worker thread. A write or get that started before MarkDeleted()
// finishes before MarkDeleted() returns; later ones fail with TABLET_NOT_FOUND.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "common/monotime.h"
#include "common/mutex.h"
#include "common/partition.h"
#include "common/predicate.h"
#include "common/result.h"
#include "common/row.h"
#include "common/rw_mutex.h"
#include "common/schema.h"
#include "common/status.h"
#include "consensus/raft_group.h"
#include "rpc/rpc_header.pb.h"
#include "tserver/tablet_metadata.pb.h"
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
struct WriteKeySlot;  // tablet_write.cc
struct WriteScratch;  // tablet_write.cc

enum class TabletState { kRunning, kFailed, kDeleted };
const char* TabletStateName(TabletState state);

// The columns a Get or Scan returns: a projection schema and, for each projected
// column, its index in the tablet schema. Immutable; shared between requests.
struct Projection {
  Schema schema;
  std::vector<int> source_index;
  bool needs_key = false;  // some projected column is a key column
  SchemaPB schema_pb;
};

// Fills `pb` with `code` and `status` (master's SetError has the same shape).
void SetError(TabletServerErrorPB::Code code, const Status& status, TabletServerErrorPB* pb);

// What a replica calls into its server. Set before the tablet's group is created; the
// functions run on the group's worker thread and must not block.
class Tablet;
struct TabletReplicaHooks {
  // The uuid of the server with Raft peer id `id` ("" when unknown).
  std::function<std::string(consensus::PeerId id)> uuid_of;
  // The group's role, term or leader changed (for the next tablet report).
  std::function<void()> consensus_changed;
  // A write led by another replica was applied here: its request's final response,
  // stored as a record at (store, seq), for the server's RequestTracker, so that a
  // retry reaching this replica once it leads is answered, not applied again.
  std::function<void(const Tablet& tablet, const rpc::RequestIdPB& id,
                     const WriteResponsePB& resp)>
      applied_request;
};

class Tablet : public consensus::StateMachine {
 public:
  // A running tablet from its stored metadata; `store`, `locks` and `metrics`
  // must outlive it. Fails when the stored schema or partition schema is invalid.
  static Result<std::shared_ptr<Tablet>> Open(TabletMetadataPB meta, TabletStore* store,
                                              RowLocks* locks, TServerMetrics* metrics);
  // A tablet whose metadata could not be used, kept to report it FAILED.
  static std::shared_ptr<Tablet> Failed(TabletMetadataPB meta, Status error, TabletStore* store,
                                        RowLocks* locks, TServerMetrics* metrics);
  ~Tablet();

  const std::string& tablet_id() const { return meta_.tablet_id(); }
  const TabletMetadataPB& metadata() const { return meta_; }
  const Schema& schema() const { return schema_; }
  const PartitionSchema& partition_schema() const { return partition_schema_; }
  uint64_t seq() const { return meta_.seq(); }
  TabletStore* store() const { return store_; }
  TabletState state() const { return state_.load(std::memory_order_acquire); }
  // Why the tablet is FAILED (OK otherwise).
  const Status& failure() const { return failure_; }

  // Applies `req` (already routed to this tablet by id). Whole-request failures go
  // to resp->error and write nothing; otherwise per-row errors and rows_applied.
  // With a `request_id`, the final response is also written, in the same batch as
  // the rows, as the request's record (tablet_store.h) for RequestTracker: a
  // response without error means the record is stored.
  void Write(const WriteRequestPB& req, WriteResponsePB* resp,
             const rpc::RequestIdPB* request_id = nullptr);

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

  // The projection of `names` (empty: every column, shared). MISMATCHED_SCHEMA for
  // an unknown or repeated name.
  Result<std::shared_ptr<const Projection>> MakeProjection(
      const google::protobuf::RepeatedPtrField<std::string>& names) const;

  // --- Scans (see scanners.h).
  std::unique_ptr<StoreSnapshot> GetSnapshot() const;
  // Iterates the storage keys of encoded primary keys [range.start, range.stop).
  std::unique_ptr<StoreIterator> NewIterator(const StoreSnapshot* snapshot,
                                             const KeyRange& range) const;
  // Decodes a stored row into `row` (a row of schema()): the key columns from the
  // storage key when `decode_key`, the rest from `value`.
  Status DecodeStoredRow(Slice storage_key, Slice value, bool decode_key, Row* row) const;

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

  // --- Replication (tablet_replication.cc).
  // The applied index and configuration stored with the rows (0 and none for a new
  // replica), for the group's GroupOptions.
  Status LoadAppliedState(uint64_t* index, std::optional<consensus::ConfigPB>* config);
  void SetReplicaHooks(TabletReplicaHooks hooks);
  // Makes the tablet a replica of `group`, created with this tablet as its state
  // machine. Once only.
  void AttachGroup(std::shared_ptr<consensus::RaftGroup> group);
  std::shared_ptr<consensus::RaftGroup> group() const;
  // The group's state (a group of none: a lone leader at term 0).
  consensus::GroupInfo ConsensusInfo() const;
  // Fills `error` with NOT_THE_LEADER (naming the leader when known) and returns false
  // unless this replica leads and has applied every entry of earlier terms (so its
  // existence checks see every committed write).
  bool CheckLeader(TabletServerErrorPB* error) const;
  // The term this replica leads in with every earlier term's entry applied, or 0
  // (CheckLeader's condition; a tablet without a group: 1).
  uint64_t ReadyLeaderTerm() const;
  // Whether a read here is linearizable now without waiting: this replica leads
  // under its lease with its own term's first entry applied (true without a group).
  bool CanReadNow() const;
  // Waits until CheckLeader would pass: false after `timeout`.
  bool WaitUntilLeader(MonoDelta timeout) const;
  // Waits until a read here sees every write committed before the call (the leader's
  // lease, or a heartbeat round, then the apply): false with `error` set when this
  // replica does not lead or `timeout` passes first.
  bool WaitForLinearizableRead(MonoDelta timeout, TabletServerErrorPB* error) const;
  // The index of the last entry applied (any thread).
  uint64_t applied_index() const { return applied_index_.load(std::memory_order_acquire); }
  // The applied index last reported durable to the group (TabletManager's reporter).
  uint64_t reported_durable_index() const {
    return reported_durable_.load(std::memory_order_relaxed);
  }
  void set_reported_durable_index(uint64_t i) {
    reported_durable_.store(i, std::memory_order_relaxed);
  }
  // consensus::StateMachine.
  void Apply(const consensus::EntryPB& entry) override;
  void FlushRequested() override;
  void LeadershipChanged() override;
  // The group failed (its consensus log could not be written, e.g. the disk is full):
  // the tablet fails too, with that error, and says so to the master.
  void GroupFailed(const Status& error) override;
  // Counts in the server's metrics what changed since the group state last noted
  // (a new leader, term, or this replica winning or losing leadership); with
  // `count` false only notes `info` (when the group is attached).
  void NoteLeadership(const consensus::GroupInfo& info, bool count) EXCLUDES(seen_mu_);

  // The tablet's own counters; null when the tablet has no metrics (tests).
  const TabletMetrics* tablet_metrics() const { return tablet_metrics_.get(); }

 private:
  Tablet(TabletMetadataPB meta, TabletStore* store, RowLocks* locks, TServerMetrics* metrics);
  // The write proper; REQUIRES: ops_mu_ held shared and the tablet running. Its
  // steps (tablet_write.cc), each on the thread's WriteScratch: decode the block,
  // BuildStorageKeys, GroupByKey (distinct keys in key order), then under the row
  // locks (LockReadApplyCommit) ReadExistingRows, ApplyInBlockOrder (PutRow for each
  // written row), Replicate (the apply writes rows, record and applied index); last
  // CountWrittenRows.
  void WriteLocked(const WriteRequestPB& req, const rpc::RequestIdPB* request_id,
                   WriteResponsePB* resp) REQUIRES_SHARED(ops_mu_);
  void BuildStorageKeys(WriteScratch* w) const;
  void GroupByKey(WriteScratch* w) const;
  // Locks the rows, reads, decides and replicates; the locks are released on return.
  // A failed read is returned (nothing was written), and so is Replicate's failure.
  Status LockReadApplyCommit(WriteScratch* w, const rpc::RequestIdPB* request_id,
                             WriteResponsePB* resp) REQUIRES_SHARED(ops_mu_);
  Status ReadExistingRows(WriteScratch* w) REQUIRES_SHARED(ops_mu_);
  // Per-row errors go to `resp`; the rows written go into the write's row changes.
  void ApplyInBlockOrder(WriteScratch* w, WriteResponsePB* resp) REQUIRES_SHARED(ops_mu_);
  // Adds `op`'s row (merged into the stored one when `merge_existing`) for `slot` to
  // the write's row changes.
  Status PutRow(const DecodedRowOp& op, bool merge_existing, WriteKeySlot* slot, WriteScratch* w)
      REQUIRES_SHARED(ops_mu_);
  // Hands the write's row changes and final response to the group, to be appended in
  // `term` only (the term whose state the write read), and waits for the local apply;
  // applies at once without a group. NotLeader-like failures: nothing
  // was applied; ServiceUnavailable or TimedOut: the outcome is unknown.
  Status Replicate(std::string command, uint64_t term);
  // Applies one replicated write (an encoded command) with its entry's index (0:
  // none, a tablet without a group) and whether this replica led it.
  Status ApplyWrite(Slice command, uint64_t index);
  // Stores the applied index (and the configuration) with a batch.
  void AddAppliedState(uint64_t index, StoreWriteBatch* batch);
  void CountWrittenRows(const WriteScratch& w) const;
  // OK when `pb` describes the tablet's columns (names, types, key, nullability).
  Status CheckClientSchema(const SchemaPB& pb) const;
  // Returns an error if the tablet does not take reads or writes now.
  bool CheckRunning(TabletServerErrorPB* error) const;
  // Get's body; REQUIRES: ops_mu_ held shared. Returns false (nothing produced) only
  // when `memory_only` and some key is not in memory.
  bool GetLocked(const GetRequestPB& req, GetResponsePB* resp, std::string* rows,
                 std::string* indirect, bool memory_only) REQUIRES_SHARED(ops_mu_);

  // Set at creation, never changed.
  const TabletMetadataPB meta_;
  TabletStore* const store_;
  std::shared_ptr<TabletRows> rows_;  // set by Open; null in a failed tablet
  RowLocks* const locks_;
  TServerMetrics* const metrics_;
  const std::unique_ptr<const TabletMetrics> tablet_metrics_;  // null without metrics_
  Schema schema_;
  PartitionSchema partition_schema_;
  std::shared_ptr<const Projection> full_projection_;
  // Set once, before state_ becomes kFailed (at creation, or by Apply or GroupFailed
  // on the group's worker thread); read only after state() returned kFailed.
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

  // Held shared by every write and get, exclusively by MarkDeleted().
  mutable RwMutex ops_mu_;

  // --- Replication.
  mutable Mutex group_mu_;
  std::shared_ptr<consensus::RaftGroup> group_ GUARDED_BY(group_mu_);
  TabletReplicaHooks hooks_;  // set before the group exists, then read only
  // The term of the last entry applied: the leader takes writes once it equals the
  // group's term (its own no-op applied, so is everything before it).
  std::atomic<uint64_t> applied_term_{0};
  // Notified when applied_term_ or the group's leadership changes (WaitUntilLeader).
  mutable Mutex leader_mu_;
  mutable CondVar leader_cv_;
  // Writes waiting in Replicate for their entry: told when the leadership changes.
  struct ProposalWaiter;
  std::set<ProposalWaiter*> proposals_waiting_ GUARDED_BY(leader_mu_);
  // The applied index (written by the worker thread) and the configuration in effect
  // there (worker thread only).
  std::atomic<uint64_t> applied_index_{0};
  std::atomic<uint64_t> reported_durable_{0};
  mutable Mutex stats_mu_;
  bool has_stats_ GUARDED_BY(stats_mu_) = false;
  Stats stats_ GUARDED_BY(stats_mu_);
  consensus::ConfigPB applied_config_;
  bool has_applied_config_ = false;
  std::atomic<TabletState> state_{TabletState::kRunning};
  // The group state NoteLeadership saw last.
  Mutex seen_mu_;
  consensus::RaftRole seen_role_ GUARDED_BY(seen_mu_) = consensus::RaftRole::kFollower;
  uint64_t seen_term_ GUARDED_BY(seen_mu_) = 0;
  consensus::PeerId seen_leader_ GUARDED_BY(seen_mu_) = consensus::kNoPeer;
};

}  // namespace nyala::tserver
