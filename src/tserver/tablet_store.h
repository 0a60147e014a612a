// TabletStore: one RocksDB database (one per --fs_data_dirs entry) shared by the
// tablets placed in that dir. The only code that talks to RocksDB, with
// tablet_manager; everything else sees the nyala-typed wrappers below.
//
// Column families (docs/storage-format.md):
//   meta       "tablet/<tablet id>" -> TabletMetadataPB, "next_tablet_seq" -> 8-byte BE
//   rows-<seq> one per tablet: [8-byte BE row prefix][encoded primary key] -> row value
//              (the prefix is the tablet's seq, or a copied tablet's seq on its source)
//              (row_encoding.h). A family of its own gives each tablet its own
//              memtable and LSM tree: rows inserted in key order into several
//              tablets at once still reach the last level by trivial moves, and
//              dropping a tablet is dropping its family. Families are made a few
//              at a time, ahead of their tablets (empty spares at or above the
//              next seq).
//   requests   [8-byte BE tablet seq][4-byte BE length][client id][8-byte seq no]
//              -> [header][WriteResponsePB]: the answer of an applied write that carried
//              a request id, written in the same batch as its rows (RequestTracker)
//   default    unused (RocksDB requires it); a store whose default family holds rows
//              was written by a build before per-tablet families and is refused.
//
// Metadata writes are synchronous (fsync). Row writes go through the WAL as one
// WriteBatch each, with fsync when --fsync_writes; an acknowledged write survives
// kill -9 of the process either way. Gets, scans and sizes only ever read a tablet's
// rows family, so request records are invisible to them.
//
// Thread-safety: every method is thread-safe (RocksDB is). StoreWriteBatch,
// StoreMultiGet and StoreIterator are thread-compatible (one thread at a time).
// Snapshots, iterators, batches and TabletRows must be destroyed before their store.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/coding.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/status.h"
#include "nyala/slice.h"

namespace rocksdb {
class ColumnFamilyHandle;
class DB;
class Iterator;
class Snapshot;
class WriteBatch;
}  // namespace rocksdb

namespace nyala {
class MetricRegistry;
}

namespace nyala::tserver {

class TabletMetadataPB;
class TabletCopySuperblockPB;

constexpr size_t kTabletPrefixSize = 8;

// Appends the 8-byte big-endian storage prefix of tablet `seq`.
inline void AppendTabletPrefix(uint64_t seq, std::string* dst) { PutFixed64BE(dst, seq); }
inline std::string TabletPrefix(uint64_t seq) {
  std::string s;
  AppendTabletPrefix(seq, &s);
  return s;
}

// --- Write-request records (the requests column family).
// Key: [8-byte BE tablet seq][4-byte BE client id length][client id][8-byte BE seq no,
// sign bit flipped]. Value: [1-byte version = 1][8-byte BE wall-clock write time, us]
// [8-byte BE first_incomplete_seq_no of the request, sign bit flipped][the serialized
// WriteResponsePB]. One tablet's records are one key range, like its rows; one
// client's records of one tablet are a contiguous range in sequence-number order.
constexpr uint8_t kRequestRecordVersion = 1;
constexpr size_t kRequestRecordHeaderSize = 17;

void AppendRequestRecordKey(uint64_t tablet_seq, Slice client_id, int64_t seq_no, std::string* dst);
// Appends the value header; the caller appends the serialized response.
void AppendRequestRecordHeader(int64_t write_time_micros, int64_t first_incomplete_seq_no,
                               std::string* dst);

// A decoded record; the slices point into the key and value it came from.
struct RequestRecord {
  uint64_t tablet_seq = 0;
  Slice client_id;
  int64_t seq_no = 0;
  int64_t write_time_micros = 0;
  int64_t first_incomplete_seq_no = 0;
  Slice response;  // a serialized WriteResponsePB
};
// Corruption when `key` or `value` is not a record of the format above.
Status DecodeRequestRecord(Slice key, Slice value, RequestRecord* out);

// A rows family's share of its dir's memtable budget when the dir holds `families`
// of them: --rocksdb_db_write_buffer_mb / families, at most --rocksdb_write_buffer_mb.
// Each rows family's memtable bloom filter and arena blocks are sized by it
// (tablet_store.cc, RowsCfOptions), so idle tablets cost little memory.
size_t RowsMemtableShareBytes(size_t families);

// The rows family of one tablet (TabletStore::Rows). Shared by the store and the
// tablet; once the tablet is dropped, the family's files are deleted when the last
// holder lets go (an open scan keeps reading its snapshot until then).
class TabletRows {
 public:
  ~TabletRows();
  TabletRows(const TabletRows&) = delete;
  TabletRows& operator=(const TabletRows&) = delete;

  uint64_t seq() const { return seq_; }

 private:
  friend class TabletStore;
  friend class StoreWriteBatch;
  TabletRows(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, uint64_t seq)
      : db_(db), cf_(cf), seq_(seq) {}
  rocksdb::DB* const db_;
  rocksdb::ColumnFamilyHandle* const cf_;
  const uint64_t seq_;
};

// A batch of row puts and deletes, applied atomically by TabletStore::Write.
// Reusable: Clear() keeps its buffer.
class StoreWriteBatch {
 public:
  StoreWriteBatch();
  ~StoreWriteBatch();
  StoreWriteBatch(const StoreWriteBatch&) = delete;
  StoreWriteBatch& operator=(const StoreWriteBatch&) = delete;

  void Put(const TabletRows& rows, Slice key, Slice value);
  void Delete(const TabletRows& rows, Slice key);
  void Clear();
  int Count() const;
  size_t ByteSize() const;

 private:
  friend class TabletStore;
  std::unique_ptr<rocksdb::WriteBatch> rep_;
};

// A consistent read view; released when destroyed.
class StoreSnapshot {
 public:
  ~StoreSnapshot();
  StoreSnapshot(const StoreSnapshot&) = delete;
  StoreSnapshot& operator=(const StoreSnapshot&) = delete;

 private:
  friend class TabletStore;
  StoreSnapshot(rocksdb::DB* db, const rocksdb::Snapshot* snap) : db_(db), snap_(snap) {}
  rocksdb::DB* const db_;
  const rocksdb::Snapshot* const snap_;
};

// The answers of one MultiGet; reusable across calls (keeps its buffers).
class StoreMultiGet {
 public:
  StoreMultiGet();
  ~StoreMultiGet();
  StoreMultiGet(const StoreMultiGet&) = delete;
  StoreMultiGet& operator=(const StoreMultiGet&) = delete;

  size_t size() const { return size_; }
  bool found(size_t i) const;
  // REQUIRES: found(i). Valid until the next MultiGet or destruction.
  Slice value(size_t i) const;
  // OK when every key was read (found or not); else the first read error.
  const Status& status() const { return status_; }
  // Unpins the values (call before the store may go away).
  void Clear();

 private:
  friend class TabletStore;
  struct Rep;
  std::unique_ptr<Rep> rep_;
  size_t size_ = 0;
  Status status_;
};

// An iterator over [lower, upper) of one tablet's rows.
class StoreIterator {
 public:
  ~StoreIterator();
  StoreIterator(const StoreIterator&) = delete;
  StoreIterator& operator=(const StoreIterator&) = delete;

  void Seek(Slice key);
  void SeekToFirst();
  void SeekToLast();
  bool Valid() const;
  void Next();
  // REQUIRES: Valid(). Valid until the iterator moves.
  Slice key() const;
  Slice value() const;
  // A read error, once !Valid().
  Status status() const;

 private:
  friend class TabletStore;
  StoreIterator() = default;
  std::string lower_;
  std::string upper_;
  struct Bounds;
  std::unique_ptr<Bounds> bounds_;  // rocksdb::Slices over lower_/upper_
  std::unique_ptr<rocksdb::Iterator> it_;
};

// Rewrites the stored row values of one rows family as RocksDB compacts it (a
// compaction filter: never in the write path), e.g. to drop the values of columns a
// schema change dropped. ForCompaction is called on RocksDB's background threads, and
// the function it returns on the compaction's thread: both thread-safe.
class RowValueRewriter {
 public:
  // Sets `*out` and returns true when `value` is to be stored as `*out` instead.
  using Fn = std::function<bool(Slice value, std::string* out)>;
  virtual ~RowValueRewriter() = default;
  // At the start of a compaction: how to rewrite the family's values this time (null:
  // leave them all as they are).
  virtual Fn ForCompaction() const = 0;
};

class RowsCompactionFilterFactory;

class TabletStore {
 public:
  // Opens (creating if needed) the database at `path`. Registers RocksDB gauges
  // (memtable bytes, block cache usage, pending compaction bytes, SST bytes) with
  // label dir=`path` in `metrics`, which must outlive the store (may be null).
  static Result<std::unique_ptr<TabletStore>> Open(const std::string& path,
                                                   MetricRegistry* metrics);
  // Waits for background work and closes the database.
  ~TabletStore();

  const std::string& path() const { return path_; }

  // --- Tablet metadata (meta column family); every write is synced.
  Status LoadTabletMetadata(std::vector<TabletMetadataPB>* out);
  // Gives `meta` a new, never-used seq and writes it, with the next seq, in one synced
  // batch. The tablet's rows family was made ahead (several at a time: see
  // docs/storage-format.md); until that batch, it is an empty spare.
  Status CreateTabletMetadata(TabletMetadataPB* meta);
  // The same for several tablets at once, with one synced write: each gets the next
  // seq in order. All or none are created.
  Status CreateTabletsMetadata(const std::vector<TabletMetadataPB*>& metas);
  // Overwrites the stored metadata of meta.tablet_id() (e.g. a tombstone).
  Status PutTabletMetadata(const TabletMetadataPB& meta);
  // The same for several tablets, in one synced batch.
  Status PutTabletsMetadata(const std::vector<const TabletMetadataPB*>& metas);
  // Adds the metadata write to `batch` (a schema change, applied with its applied
  // state; the consensus log makes it durable).
  void PutTabletMetadata(StoreWriteBatch* batch, const TabletMetadataPB& meta);
  // Drops the request records (DeleteRange) and the rows family of tablet `seq`,
  // then the metadata of `tablet_id`. Write a tombstone first so a crash in between
  // is finished later; finishing it again is harmless.
  Status DropTablet(uint64_t seq, const std::string& tablet_id);
  // DropTablet of several tablets (seq, tablet id) at once: two synced batches and one
  // DropColumnFamilies call (which rewrites RocksDB's OPTIONS file, listing every
  // family, once rather than per tablet).
  Status DropTablets(const std::vector<std::pair<uint64_t, std::string>>& tablets);

  // Drops what tablet `seq` holds (its rows family, request records and applied
  // state) but not the metadata of `tablet_id`, which the caller rewrites (a tombstone,
  // or a copy's metadata). Dropping dropped data again is harmless.
  Status DropTabletData(uint64_t seq);

  // --- Tablet copy.
  // Writes `rows`' memtable to SST files and waits (ahead of an export, so that the
  // export's own flush is short).
  Status FlushRows(const TabletRows& rows);
  // Flushes `rows` and compacts all of its files, waiting (its compaction filter
  // rewrites every value it would).
  Status CompactRows(const TabletRows& rows);
  // Exports `rows` into the new directory `dir` (RocksDB's
  // Checkpoint::ExportColumnFamily: a flush, then hard links to the family's SST files)
  // and describes its files in `out` (sst_files, comparator). Holds exactly the rows
  // written before the call: the caller keeps writes to the tablet out meanwhile if it
  // needs the export to match an applied state.
  Status ExportRows(const TabletRows& rows, const std::string& dir, TabletCopySuperblockPB* out);
  // Calls `fn` with each request record of tablet `seq` at `snapshot` (null: latest):
  // its key without the 8-byte tablet prefix, and its value.
  Status ForEachRequestRecordOf(uint64_t seq, const StoreSnapshot* snapshot,
                                const std::function<Status(Slice key, Slice value)>& fn);
  // The applied state of tablet `seq` at `snapshot` ("" when it never applied).
  Result<std::string> GetAppliedStateAt(uint64_t seq, const StoreSnapshot& snapshot);
  // Creates a tablet from a copy: `meta` gets a new seq; a rows family is imported from
  // the SST files `sst_files` describes in directory `dir` (moved in: `dir` loses them);
  // `records` (keys without the tablet prefix) get the new seq; and `meta`, the
  // records and `applied_state` are written in one synced batch. On an error nothing
  // names the tablet's new seq (an imported family left by a crash is an orphan the
  // next start drops).
  Status ImportTablet(TabletMetadataPB* meta, const std::string& dir,
                      const TabletCopySuperblockPB& sst_files,
                      const std::vector<std::pair<std::string, std::string>>& records,
                      Slice applied_state);

  // --- Rows (one column family per tablet).
  // The rows family of tablet `seq`; null when the store has none (the tablet was
  // dropped, or its metadata outlived the family: damage).
  std::shared_ptr<TabletRows> Rows(uint64_t seq) const;
  // Compactions of `rows` rewrite its values through `rewriter` from now on, while it
  // lives (its owner, the tablet, keeps it; the store does not).
  void SetRowValueRewriter(const TabletRows& rows, std::weak_ptr<const RowValueRewriter> rewriter);
  // Applies `batch` atomically through the WAL (fsync with --fsync_writes).
  Status Write(StoreWriteBatch* batch);
  // Looks up `keys[0, n)` in `rows`; `snapshot` may be null (latest). `sorted` when
  // the keys are in ascending order (faster).
  // With `memory_only`, reads only the memtables and the block cache, never the
  // disk: status() is Incomplete when some key would have needed a disk read.
  void MultiGet(const TabletRows& rows, const StoreSnapshot* snapshot, size_t n, const Slice* keys,
                bool sorted, StoreMultiGet* out, bool memory_only = false);
  std::unique_ptr<StoreSnapshot> GetSnapshot();
  // An iterator over [lower, upper) ("" upper: to the end) of `rows` at `snapshot`
  // (null: the latest data when created).
  std::unique_ptr<StoreIterator> NewIterator(const TabletRows& rows, const StoreSnapshot* snapshot,
                                             std::string lower, std::string upper);
  // Bytes held by the row cache that all stores of the process share
  // (--row_cache_capacity_mb; 0 when it is disabled).
  static int64_t RowCacheUsage();
  // Approximate bytes on disk and in memtables of `rows`.
  int64_t ApproximateSize(const TabletRows& rows);
  // Estimated live rows of `rows` (RocksDB's rocksdb.estimate-num-keys of its family:
  // exact for inserts; overwrites and deletes are subtracted only approximately until
  // compaction). Cheap: no I/O. 0 when RocksDB has no estimate.
  int64_t EstimateLiveRows(const TabletRows& rows);
  // Bytes RocksDB holds for the memtables of every family of this store, the
  // allocated arena blocks and bloom filters of empty ones included.
  int64_t MemtableMemoryBytes();
  // Writes the queued request-record deletions, then flushes memtables to SST files
  // (clean shutdown).
  Status Flush();

  // --- A replicated tablet's applied state (meta family, key "applied/" + 8-byte BE
  // seq): the index of the last Raft entry applied to its rows and the configuration
  // in effect there (TabletAppliedStatePB). Written in the apply's own batch, so rows,
  // request records and applied index are consistent after any crash.
  void PutAppliedState(StoreWriteBatch* batch, uint64_t seq, Slice value);
  // The stored value, or "" when the tablet never applied an entry.
  Result<std::string> GetAppliedState(uint64_t seq);
  // Syncs the RocksDB WAL: every write done before the call is durable after it.
  Status SyncWal();

  // --- Write-request records (requests column family; see RequestTracker).
  // Adds the record `key` -> `value` to `batch`, to be applied with its rows.
  void PutRequestRecord(StoreWriteBatch* batch, Slice key, Slice value);
  // Queues the deletion of the record of request (client_id, seq_no) of tablet
  // `tablet_seq`. Queued deletions ride along with the next row write of this store
  // (TakeRequestRecordDeletes) or are written by WriteRequestRecordDeletes() (and
  // Flush()); a crash loses them, and the next start's sweep finds the records again.
  void QueueRequestRecordDelete(uint64_t tablet_seq, Slice client_id, int64_t seq_no);
  // Moves the queued deletions into `batch`. One atomic load when there are none.
  void TakeRequestRecordDeletes(StoreWriteBatch* batch);
  // Writes the queued deletions now, in a batch of their own.
  Status WriteRequestRecordDeletes();
  // Calls `fn` on every record in key order; stops at the first error `fn` returns.
  // A record that does not decode is Corruption.
  Status ForEachRequestRecord(const std::function<Status(const RequestRecord&)>& fn);
  size_t NumQueuedRequestRecordDeletesForTests() const;

 private:
  TabletStore(std::string path, MetricRegistry* metrics);
  Status OpenDb();
  // Refuses a default family that holds rows (an older layout) and drops the rows
  // families below the next seq that no tablet metadata names (they belong to no
  // tablet: damage, or a store edited by hand). Spares are not touched.
  Status CheckFamilies();
  void RegisterMetrics();

  const std::string path_;
  MetricRegistry* const metrics_;
  // Before db_: the rows families' options hold it.
  const std::shared_ptr<RowsCompactionFilterFactory> filters_;
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* default_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* meta_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* requests_cf_ = nullptr;

  mutable Mutex rows_mu_;
  std::map<uint64_t, std::shared_ptr<TabletRows>> rows_ GUARDED_BY(rows_mu_);  // by seq

  // Keys of request records to delete with the next write.
  mutable Mutex deletes_mu_;
  std::vector<std::string> queued_deletes_ GUARDED_BY(deletes_mu_);
  std::atomic<size_t> num_queued_deletes_{0};  // queued_deletes_.size(), read without the lock

  // Makes empty rows families for the next tablets in one RocksDB call.
  Status MakeSpareFamilies() REQUIRES(seq_mu_);

  Mutex seq_mu_;  // serializes tablet-seq allocation
  uint64_t next_seq_ GUARDED_BY(seq_mu_) = 1;
  // Empty rows families made ahead for the tablets of seqs next_seq_, next_seq_ + 1, ...
  // A family at or above next_seq_ is a spare, also after a restart.
  std::map<uint64_t, std::shared_ptr<TabletRows>> spares_ GUARDED_BY(seq_mu_);
};

}  // namespace nyala::tserver
