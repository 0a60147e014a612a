// TabletStore: one RocksDB database (one per --fs_data_dirs entry) shared by the
// tablets placed in that dir. The only code that talks to RocksDB, with
// tablet_manager; everything else sees the nyala-typed wrappers below.
//
// Two column families (docs/storage-format.md):
//   meta     "tablet/<tablet id>" -> TabletMetadataPB, "next_tablet_seq" -> 8-byte BE
//   default  [8-byte BE tablet seq][encoded primary key] -> row value (row_encoding.h)
//
// Metadata writes are synchronous (fsync). Row writes go through the WAL as one
// WriteBatch each, with fsync when --fsync_writes; an acknowledged write survives
// kill -9 of the process either way.
//
// Thread-safety: every method is thread-safe (RocksDB is). StoreWriteBatch,
// StoreMultiGet and StoreIterator are thread-compatible (one thread at a time).
// Snapshots, iterators and batches must be destroyed before their store.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/coding.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/slice.h"
#include "common/status.h"

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

constexpr size_t kTabletPrefixSize = 8;

// Appends the 8-byte big-endian storage prefix of tablet `seq`.
inline void AppendTabletPrefix(uint64_t seq, std::string* dst) { PutFixed64BE(dst, seq); }
inline std::string TabletPrefix(uint64_t seq) {
  std::string s;
  AppendTabletPrefix(seq, &s);
  return s;
}

// A batch of row puts and deletes, applied atomically by TabletStore::Write.
// Reusable: Clear() keeps its buffer.
class StoreWriteBatch {
 public:
  StoreWriteBatch();
  ~StoreWriteBatch();
  StoreWriteBatch(const StoreWriteBatch&) = delete;
  StoreWriteBatch& operator=(const StoreWriteBatch&) = delete;

  void Put(Slice key, Slice value);
  void Delete(Slice key);
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

// An iterator over [lower, upper) of the rows column family.
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
  // Gives `meta` a new, never-used seq and writes it.
  Status CreateTabletMetadata(TabletMetadataPB* meta);
  // Overwrites the stored metadata of meta.tablet_id() (e.g. a tombstone).
  Status PutTabletMetadata(const TabletMetadataPB& meta);
  // Drops every row under tablet `seq` (DeleteRange), then the metadata of
  // `tablet_id`. Write a tombstone first so a crash in between is finished later.
  Status DropTablet(uint64_t seq, const std::string& tablet_id);

  // --- Rows (default column family).
  // Applies `batch` atomically through the WAL (fsync with --fsync_writes).
  Status Write(StoreWriteBatch* batch);
  // Looks up `keys[0, n)`; `snapshot` may be null (latest). `sorted` when the keys
  // are in ascending order (faster).
  void MultiGet(const StoreSnapshot* snapshot, size_t n, const Slice* keys, bool sorted,
                StoreMultiGet* out);
  std::unique_ptr<StoreSnapshot> GetSnapshot();
  // An iterator over [lower, upper) ("" upper: to the end) at `snapshot` (null: the
  // latest data when created).
  std::unique_ptr<StoreIterator> NewIterator(const StoreSnapshot* snapshot, std::string lower,
                                             std::string upper);
  // Approximate bytes on disk and in memtables for keys in [start, end).
  int64_t ApproximateSize(Slice start, Slice end);
  // Flushes memtables to SST files (clean shutdown).
  Status Flush();

 private:
  TabletStore(std::string path, MetricRegistry* metrics);
  Status OpenDb();
  void RegisterMetrics();

  const std::string path_;
  MetricRegistry* const metrics_;
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* meta_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* rows_cf_ = nullptr;

  Mutex seq_mu_;  // serializes tablet-seq allocation
  uint64_t next_seq_ GUARDED_BY(seq_mu_) = 1;
};

}  // namespace nyala::tserver
