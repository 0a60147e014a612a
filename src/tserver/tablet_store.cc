#include "tserver/tablet_store.h"
#include "common/status.h"

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <rocksdb/cache.h>
#include <rocksdb/compaction_filter.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <set>

#include "common/flag_tags.h"
#include "common/metrics.h"
#include "tserver/tablet_metadata.pb.h"

DEFINE_int64(block_cache_capacity_mb, 512,
             "RocksDB block cache shared by every data dir of the tablet server, in MiB.");
DEFINE_int64(row_cache_capacity_mb, 128,
             "RocksDB row cache shared by every data dir of the tablet server, in MiB (0 "
             "disables). It keeps the rows that point lookups (Get, and the existence checks of "
             "writes) found in SST files, so a repeated lookup skips the index and data block "
             "searches. Scans do not use it.");
DEFINE_int32(rocksdb_write_buffer_mb, 64, "Size of one RocksDB memtable of the rows, in MiB.");
DEFINE_int32(rocksdb_db_write_buffer_mb, 1024,
             "Memtable memory of all the tablets of one data dir, in MiB (each tablet has "
             "memtables of its own, up to --rocksdb_write_buffer_mb each). When reached, the "
             "tablet with the oldest memtable flushes. The WAL kept for unflushed memtables "
             "is held to twice this.");
DEFINE_int32(rocksdb_max_write_buffers, 3,
             "Memtables of the rows that may exist at once (one active, the rest flushing).");
DEFINE_int32(rocksdb_max_background_jobs, 4, "RocksDB flush and compaction threads per data dir.");
DEFINE_int32(rocksdb_bloom_bits_per_key, 10,
             "Bits per key of the bloom filter of each row SST file (0 disables), for Get and "
             "the existence checks of writes.");
DEFINE_double(rocksdb_memtable_bloom_ratio, 0.02,
              "Fraction of the memtable size given to a whole-key bloom filter (0 disables); "
              "makes lookups of absent keys (inserts) cheap.");
DEFINE_int32(rocksdb_block_size_bytes, 8192, "Target size of an SST data block, in bytes.");
DEFINE_string(rocksdb_compression, "lz4",
              "Compression of row SST files: none, snappy, lz4 or zstd (falls back to none "
              "when this RocksDB build lacks it).");
DEFINE_bool(rocksdb_compress_level0, true,
            "Also compress level-0 SST files (memtable flushes). On: rows inserted in key "
            "order reach the last level by trivial moves, compressed once. Off: flushes skip "
            "compression and the first compaction compresses their rows, which saves CPU "
            "when inserts come in random key order (their level-0 files are compacted "
            "anyway).");
DEFINE_int32(rocksdb_max_open_files, -1, "Open SST files kept per data dir (-1: all).");
DEFINE_bool(fsync_writes, false,
            "Also fsync RocksDB's WAL on every apply of a write. Not needed for durability: "
            "a write is acknowledged only once the consensus log holding it is synced on a "
            "majority of replicas (--log_fsync), and a restart replays that log.");
DEFINE_bool(unsafe_apply_without_rocksdb_wal, false,
            "For tests and benchmarks only, NOT CRASH-SAFE: applies skip RocksDB's WAL while the "
            "durable-index reporter still reports them durable after a WAL sync, so a crash "
            "loses applied rows whose log entries were let go. bench/apply-wal.sh compares "
            "the cost of the WAL with it (docs/storage-format.md has the figures)");
TAG_FLAG(unsafe_apply_without_rocksdb_wal, unsafe);
TAG_FLAG(unsafe_apply_without_rocksdb_wal, hidden);

namespace nyala::tserver {

namespace {

constexpr char kMetaCfName[] = "meta";
constexpr char kRequestsCfName[] = "requests";
constexpr char kRowsCfPrefix[] = "rows-";  // + the tablet seq in decimal
constexpr char kTabletMetaPrefix[] = "tablet/";
constexpr char kNextSeqKey[] = "next_tablet_seq";
std::string AppliedStateKey(uint64_t seq) { return "applied/" + TabletPrefix(seq); }

// The one place a rocksdb::Status becomes a nyala Status.
Status FromRocks(const rocksdb::Status& s, const char* context = nullptr) {
  if (s.ok()) return Status::OK();
  std::string msg = context ? std::string(context) + ": " + s.ToString() : s.ToString();
  switch (s.code()) {
    case rocksdb::Status::kNotFound:
      return Status::NotFound(msg);
    case rocksdb::Status::kCorruption:
      return Status::Corruption(msg);
    case rocksdb::Status::kNotSupported:
      return Status::NotSupported(msg);
    case rocksdb::Status::kInvalidArgument:
      return Status::InvalidArgument(msg);
    case rocksdb::Status::kIOError:
      return Status::IOError(msg);
    case rocksdb::Status::kBusy:
    case rocksdb::Status::kTryAgain:
      return Status::ServiceUnavailable(msg);
    case rocksdb::Status::kTimedOut:
      return Status::TimedOut(msg);
    case rocksdb::Status::kIncomplete:
      return Status::Incomplete(msg);
    case rocksdb::Status::kAborted:
      return Status::Aborted(msg);
    case rocksdb::Status::kShutdownInProgress:
      return Status::ServiceUnavailable(msg);
    default:
      return Status::RuntimeError(msg);
  }
}

inline rocksdb::Slice ToRocks(Slice s) { return rocksdb::Slice(s.cdata(), s.size()); }
inline Slice FromRocksSlice(const rocksdb::Slice& s) { return Slice(s.data(), s.size()); }

rocksdb::CompressionType CompressionFromFlag() {
  rocksdb::CompressionType want = rocksdb::kNoCompression;
  const std::string& f = FLAGS_rocksdb_compression;
  if (f == "snappy") want = rocksdb::kSnappyCompression;
  if (f == "lz4") want = rocksdb::kLZ4Compression;
  if (f == "zstd") want = rocksdb::kZSTD;
  if (want == rocksdb::kNoCompression) return want;
  auto supported = rocksdb::GetSupportedCompressions();
  if (std::find(supported.begin(), supported.end(), want) == supported.end()) {
    LOG(WARNING) << "--rocksdb_compression=" << f
                 << " is not supported by this RocksDB; using none";
    return rocksdb::kNoCompression;
  }
  return want;
}

// One block cache for every store of the process.
std::shared_ptr<rocksdb::Cache> SharedBlockCache() {
  static std::shared_ptr<rocksdb::Cache> cache = rocksdb::NewLRUCache(
      static_cast<size_t>(std::max<int64_t>(FLAGS_block_cache_capacity_mb, 1)) << 20);
  return cache;
}

// One row cache for every store of the process; null when disabled.
const std::shared_ptr<rocksdb::Cache>& SharedRowCache() {
  static const std::shared_ptr<rocksdb::Cache> cache =
      FLAGS_row_cache_capacity_mb > 0
          ? rocksdb::NewLRUCache(static_cast<size_t>(FLAGS_row_cache_capacity_mb) << 20)
          : nullptr;
  return cache;
}

}  // namespace

size_t RowsMemtableShareBytes(size_t families) {
  const size_t most = static_cast<size_t>(std::max(FLAGS_rocksdb_write_buffer_mb, 1)) << 20;
  const size_t budget = static_cast<size_t>(std::max(FLAGS_rocksdb_db_write_buffer_mb, 1)) << 20;
  return std::min(most, budget / std::max<size_t>(families, 1));
}

namespace {

// The options of a rows family, in a store that will hold `families` of them.
//
// The rows memtables of a dir share --rocksdb_db_write_buffer_mb, so with many tablets
// the average memtable is far smaller than the --rocksdb_write_buffer_mb one tablet
// may fill. Two things RocksDB sizes by write_buffer_size cost memory in every
// memtable, empty or not: the memtable bloom filter (allocated and zeroed when the
// memtable is made: 1.3 MiB at 64 MiB x 0.02) and the memtable arena's block (1 MiB,
// counted against the shared budget as soon as anything is allocated from it). Both
// are sized here by a family's share of the budget instead (RowsMemtableShareBytes),
// so 1,000 idle tablets cost a few dozen KiB each rather than 1.3 MiB; a store with
// at most budget / write_buffer families (16 at the defaults) is unchanged. A hot
// tablet among idle ones still fills memtables of --rocksdb_write_buffer_mb, with a
// bloom filter that has fewer bits per key than with few tablets.
// Rewrites a rows family's values through the function its RowValueRewriter gave for
// this compaction.
class RowsCompactionFilter : public rocksdb::CompactionFilter {
 public:
  explicit RowsCompactionFilter(RowValueRewriter::Fn fn) : fn_(std::move(fn)) {}
  bool Filter(int, const rocksdb::Slice&, const rocksdb::Slice& value, std::string* new_value,
              bool* value_changed) const override {
    *value_changed = fn_(Slice(value.data(), value.size()), new_value);
    return false;  // never removes a row
  }
  const char* Name() const override { return "nyala.RowsCompactionFilter"; }

 private:
  const RowValueRewriter::Fn fn_;
};

}  // namespace

// The store's compaction filters: one per compaction of a rows family that has a
// RowValueRewriter willing to rewrite this time, none otherwise (RocksDB then reads
// the values through no filter at all).
class RowsCompactionFilterFactory : public rocksdb::CompactionFilterFactory {
 public:
  void Set(uint32_t cf_id, std::weak_ptr<const RowValueRewriter> r) {
    MutexLock l(mu_);
    std::erase_if(rewriters_, [](const auto& e) { return e.second.expired(); });
    rewriters_[cf_id] = std::move(r);
  }
  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
      const rocksdb::CompactionFilter::Context& context) override {
    std::shared_ptr<const RowValueRewriter> r;
    {
      MutexLock l(mu_);
      auto it = rewriters_.find(context.column_family_id);
      if (it == rewriters_.end()) return nullptr;
      r = it->second.lock();
    }
    if (!r) return nullptr;  // its tablet is gone
    RowValueRewriter::Fn fn = r->ForCompaction();
    if (!fn) return nullptr;
    return std::make_unique<RowsCompactionFilter>(std::move(fn));
  }
  const char* Name() const override { return "nyala.RowsCompactionFilterFactory"; }

 private:
  Mutex mu_;
  // Weak: a tablet's rewriter goes with the tablet.
  std::unordered_map<uint32_t, std::weak_ptr<const RowValueRewriter>> rewriters_ GUARDED_BY(mu_);
};

void TabletStore::SetRowValueRewriter(const TabletRows& rows,
                                      std::weak_ptr<const RowValueRewriter> rewriter) {
  filters_->Set(rows.cf_->GetID(), std::move(rewriter));
}

namespace {

rocksdb::ColumnFamilyOptions RowsCfOptions(
    size_t families, const std::shared_ptr<rocksdb::CompactionFilterFactory>& filters) {
  rocksdb::ColumnFamilyOptions o;
  o.compaction_filter_factory = filters;
  o.write_buffer_size = static_cast<size_t>(FLAGS_rocksdb_write_buffer_mb) << 20;
  o.max_write_buffer_number = FLAGS_rocksdb_max_write_buffers;
  const size_t share = RowsMemtableShareBytes(families);
  // RocksDB's own default is 1/8 of write_buffer_size, at most 1 MiB; a multiple of
  // 4 KiB, at least 64 KiB.
  o.arena_block_size =
      std::clamp<size_t>((share / 8) & ~size_t{4095}, size_t{64} << 10, size_t{1} << 20);
  o.compression = CompressionFromFlag();
  o.bottommost_compression = o.compression;
  o.compression_per_level.assign(size_t(std::max(o.num_levels, 1)), o.compression);
  if (!FLAGS_rocksdb_compress_level0) o.compression_per_level[0] = rocksdb::kNoCompression;
  o.level_compaction_dynamic_level_bytes = true;
  o.memtable_prefix_bloom_size_ratio = FLAGS_rocksdb_memtable_bloom_ratio *
                                       static_cast<double>(share) /
                                       static_cast<double>(o.write_buffer_size);
  o.memtable_whole_key_filtering = FLAGS_rocksdb_memtable_bloom_ratio > 0;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = SharedBlockCache();
  t.block_size = FLAGS_rocksdb_block_size_bytes;
  if (FLAGS_rocksdb_bloom_bits_per_key > 0) {
    t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(FLAGS_rocksdb_bloom_bits_per_key));
    t.whole_key_filtering = true;
  }
  t.format_version = 5;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

rocksdb::ColumnFamilyOptions MetaCfOptions() {
  rocksdb::ColumnFamilyOptions o;
  o.write_buffer_size = 4 << 20;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = SharedBlockCache();
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

// The tablet seq of a request record key, as the memtable's insert-hint prefix. Only
// record keys are in the domain: RocksDB 7.8 (ours) also applies the hints when it
// inserts a range tombstone, into another skiplist (later versions restrict them to
// point keys), which corrupts the memtable; the 8-byte start key of DropTablet's
// DeleteRange must get no hint.
class RecordTabletPrefix : public rocksdb::SliceTransform {
 public:
  static constexpr size_t kMinRecordKeySize = kTabletPrefixSize + 4 + 8;
  const char* Name() const override { return "nyala.RecordTabletPrefix"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    return rocksdb::Slice(key.data(), kTabletPrefixSize);
  }
  bool InDomain(const rocksdb::Slice& key) const override {
    return key.size() >= kMinRecordKeySize;
  }
};

rocksdb::ColumnFamilyOptions RequestsCfOptions() {
  // Small records, written with the rows, read only at start-up.
  rocksdb::ColumnFamilyOptions o;
  o.write_buffer_size = 8 << 20;
  o.max_write_buffer_number = 2;
  // Each write puts its record and deletes a client's previous one, which sorts
  // just before the last insert, not after it: without a hint every such insert
  // searches the memtable skiplist from the top (measured: ~4 us of a 1-row write).
  // One insert position kept per tablet makes both short local moves.
  o.memtable_insert_with_hint_prefix_extractor = std::make_shared<RecordTabletPrefix>();
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = SharedBlockCache();
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

constexpr uint64_t kSignBit = uint64_t{1} << 63;

}  // namespace

// ---- Request records --------------------------------------------------------------

void AppendRequestRecordKey(uint64_t tablet_seq, Slice client_id, int64_t seq_no,
                            std::string* dst) {
  AppendTabletPrefix(tablet_seq, dst);
  PutFixed32BE(dst, static_cast<uint32_t>(client_id.size()));
  dst->append(client_id.cdata(), client_id.size());
  PutFixed64BE(dst, static_cast<uint64_t>(seq_no) ^ kSignBit);
}

void AppendRequestRecordHeader(int64_t write_time_micros, int64_t first_incomplete_seq_no,
                               std::string* dst) {
  dst->push_back(static_cast<char>(kRequestRecordVersion));
  PutFixed64BE(dst, static_cast<uint64_t>(write_time_micros));
  PutFixed64BE(dst, static_cast<uint64_t>(first_incomplete_seq_no) ^ kSignBit);
}

Status DecodeRequestRecord(Slice key, Slice value, RequestRecord* out) {
  auto bytes = [](Slice s) { return s.data(); };
  if (key.size() < kTabletPrefixSize + 4 + 8) {
    return Status::Corruption("request record key too short");
  }
  out->tablet_seq = DecodeFixed64BE(bytes(key));
  key.remove_prefix(kTabletPrefixSize);
  const uint32_t len = DecodeFixed32BE(bytes(key));
  key.remove_prefix(4);
  if (key.size() != size_t{len} + 8) return Status::Corruption("bad request record key length");
  out->client_id = Slice(key.data(), len);
  key.remove_prefix(len);
  out->seq_no = static_cast<int64_t>(DecodeFixed64BE(bytes(key)) ^ kSignBit);
  if (value.size() < kRequestRecordHeaderSize) {
    return Status::Corruption("request record value too short");
  }
  if (value[0] != kRequestRecordVersion) {
    return Status::Corruption("unknown request record version " + std::to_string(value[0]));
  }
  value.remove_prefix(1);
  out->write_time_micros = static_cast<int64_t>(DecodeFixed64BE(bytes(value)));
  value.remove_prefix(8);
  out->first_incomplete_seq_no = static_cast<int64_t>(DecodeFixed64BE(bytes(value)) ^ kSignBit);
  value.remove_prefix(8);
  out->response = value;
  return Status::OK();
}

// ---- TabletRows -------------------------------------------------------------------

TabletRows::~TabletRows() {
  WARN_NOT_OK(FromRocks(db_->DestroyColumnFamilyHandle(cf_)), "closing a rows column family");
}

// ---- StoreWriteBatch --------------------------------------------------------------

StoreWriteBatch::StoreWriteBatch() : rep_(std::make_unique<rocksdb::WriteBatch>()) {}
StoreWriteBatch::~StoreWriteBatch() = default;
void StoreWriteBatch::Put(const TabletRows& rows, Slice key, Slice value) {
  // Cannot fail for keys and values below 4 GiB.
  rocksdb::Status s = rep_->Put(rows.cf_, ToRocks(key), ToRocks(value));
  DCHECK(s.ok()) << s.ToString();
}
void StoreWriteBatch::Delete(const TabletRows& rows, Slice key) {
  rocksdb::Status s = rep_->Delete(rows.cf_, ToRocks(key));
  DCHECK(s.ok()) << s.ToString();
}
void StoreWriteBatch::Clear() { rep_->Clear(); }
int StoreWriteBatch::Count() const { return static_cast<int>(rep_->Count()); }
size_t StoreWriteBatch::ByteSize() const { return rep_->GetDataSize(); }

// ---- StoreSnapshot ----------------------------------------------------------------

StoreSnapshot::~StoreSnapshot() { db_->ReleaseSnapshot(snap_); }

// ---- StoreMultiGet ----------------------------------------------------------------

struct StoreMultiGet::Rep {
  std::vector<rocksdb::PinnableSlice> values;
  std::vector<rocksdb::Status> statuses;
};
StoreMultiGet::StoreMultiGet() : rep_(std::make_unique<Rep>()) {}
StoreMultiGet::~StoreMultiGet() = default;
bool StoreMultiGet::found(size_t i) const { return rep_->statuses[i].ok(); }
Slice StoreMultiGet::value(size_t i) const { return FromRocksSlice(rep_->values[i]); }
void StoreMultiGet::Clear() {
  for (size_t i = 0; i < size_; i++) rep_->values[i].Reset();
  size_ = 0;
}

// ---- StoreIterator ----------------------------------------------------------------

struct StoreIterator::Bounds {
  rocksdb::Slice lower;
  rocksdb::Slice upper;
};
StoreIterator::~StoreIterator() = default;
void StoreIterator::Seek(Slice key) { it_->Seek(ToRocks(key)); }
void StoreIterator::SeekToFirst() { it_->SeekToFirst(); }
void StoreIterator::SeekToLast() { it_->SeekToLast(); }
bool StoreIterator::Valid() const { return it_->Valid(); }
void StoreIterator::Next() { it_->Next(); }
Slice StoreIterator::key() const { return FromRocksSlice(it_->key()); }
Slice StoreIterator::value() const { return FromRocksSlice(it_->value()); }
Status StoreIterator::status() const { return FromRocks(it_->status(), "iterator"); }

// ---- TabletStore ------------------------------------------------------------------

TabletStore::TabletStore(std::string path, MetricRegistry* metrics)
    : path_(std::move(path)),
      metrics_(metrics),
      filters_(std::make_shared<RowsCompactionFilterFactory>()) {}

Result<std::unique_ptr<TabletStore>> TabletStore::Open(const std::string& path,
                                                       MetricRegistry* metrics) {
  std::unique_ptr<TabletStore> store(new TabletStore(path, metrics));
  RETURN_NOT_OK_PREPEND(store->OpenDb(), "cannot open tablet store " + path);
  if (metrics) store->RegisterMetrics();
  return store;
}

Status TabletStore::OpenDb() {
  rocksdb::DBOptions opts;
  opts.create_if_missing = true;
  opts.create_missing_column_families = true;
  opts.max_background_jobs = FLAGS_rocksdb_max_background_jobs;
  opts.max_open_files = FLAGS_rocksdb_max_open_files;
  opts.bytes_per_sync = 1 << 20;
  opts.wal_bytes_per_sync = 1 << 20;
  opts.keep_log_file_num = 5;
  opts.db_write_buffer_size = static_cast<size_t>(FLAGS_rocksdb_db_write_buffer_mb) << 20;
  opts.max_total_wal_size = 2 * opts.db_write_buffer_size;
  opts.row_cache = SharedRowCache();
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, MetaCfOptions()},
      {kMetaCfName, MetaCfOptions()},
      {kRequestsCfName, RequestsCfOptions()},
  };
  // The tablets' rows families (none in a new store).
  std::vector<std::string> names;
  if (rocksdb::DB::ListColumnFamilies(opts, path_, &names).ok()) {
    size_t families = 0;
    for (const std::string& name : names) families += name.rfind(kRowsCfPrefix, 0) == 0;
    const rocksdb::ColumnFamilyOptions rows_options = RowsCfOptions(families, filters_);
    for (const std::string& name : names) {
      if (name.rfind(kRowsCfPrefix, 0) == 0) cfs.emplace_back(name, rows_options);
    }
    // RocksDB opens each family's SST files with max_file_opening_threads threads
    // (16 by default) that it starts and joins per family, files or not: with 1,000
    // families that was 16,000 threads and most of a 6 s open. Many families hold few
    // files each, so fewer threads per family lose nothing.
    opts.max_file_opening_threads =
        static_cast<int>(std::clamp<size_t>(256 / std::max<size_t>(families, 1), 1, 16));
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  RETURN_NOT_OK(FromRocks(rocksdb::DB::Open(opts, path_, cfs, &handles, &db), "open"));
  db_.reset(db);
  default_cf_ = handles[0];
  meta_cf_ = handles[1];
  requests_cf_ = handles[2];
  MutexLock sl(seq_mu_);
  std::string v;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), meta_cf_, kNextSeqKey, &v);
  Status status;
  if (s.ok() && v.size() == 8) {
    next_seq_ = DecodeFixed64BE(reinterpret_cast<const uint8_t*>(v.data()));
  } else if (s.ok()) {
    status = Status::Corruption("bad " + std::string(kNextSeqKey) + " record");
  } else if (!s.IsNotFound()) {
    status = FromRocks(s, "reading next tablet seq");
  }
  // Families at or above the next seq were made ahead of their tablets (spares);
  // the others belong to tablets, or are orphans CheckFamilies drops.
  for (size_t i = 3; i < handles.size(); i++) {
    const std::string& name = cfs[i].name;
    uint64_t seq = 0;
    const char* digits = name.c_str() + strlen(kRowsCfPrefix);
    const char* end = digits + strlen(digits);
    if (std::from_chars(digits, end, seq).ptr != end || seq == 0) {
      if (status.ok()) status = Status::Corruption("unexpected column family '" + name + "'");
      WARN_NOT_OK(FromRocks(db_->DestroyColumnFamilyHandle(handles[i])), "closing " + name);
      continue;
    }
    auto rows = std::shared_ptr<TabletRows>(new TabletRows(db_.get(), handles[i], seq));
    if (seq >= next_seq_) {
      spares_[seq] = std::move(rows);
    } else {
      MutexLock l(rows_mu_);
      rows_[seq] = std::move(rows);
    }
  }
  RETURN_NOT_OK_PREPEND(status, path_);
  return CheckFamilies();
}

Status TabletStore::CheckFamilies() {
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), default_cf_));
    it->SeekToFirst();
    RETURN_NOT_OK(FromRocks(it->status(), "reading the default column family"));
    if (it->Valid()) {
      return Status::NotSupported(
          path_ +
          " holds rows in its default column family: it was written by a Nyala build "
          "that kept every tablet there, and this build keeps each tablet in a column "
          "family of its own. Start the older build on it, or move the directory away "
          "to start this tablet server empty");
    }
  }
  std::vector<TabletMetadataPB> metas;
  RETURN_NOT_OK(LoadTabletMetadata(&metas));
  std::set<uint64_t> named;
  for (const TabletMetadataPB& m : metas) named.insert(m.seq());
  std::vector<std::shared_ptr<TabletRows>> orphans;
  {
    MutexLock l(rows_mu_);
    for (auto it = rows_.begin(); it != rows_.end();) {
      if (named.count(it->first)) {
        ++it;
        continue;
      }
      orphans.push_back(std::move(it->second));
      it = rows_.erase(it);
    }
  }
  for (const auto& rows : orphans) {
    LOG(WARNING) << path_ << ": dropping the rows family of seq " << rows->seq()
                 << ", which no tablet metadata names";
    RETURN_NOT_OK(FromRocks(db_->DropColumnFamily(rows->cf_), "dropping an orphan rows family"));
  }
  return Status::OK();
}

void TabletStore::RegisterMetrics() {
  const MetricLabels labels = {{"dir", path_}};
  auto prop = [this](const char* name) {
    return [this, name]() -> int64_t {
      uint64_t v = 0;
      db_->GetAggregatedIntProperty(name, &v);
      return static_cast<int64_t>(v);
    };
  };
  metrics_->RegisterFunctionGauge("rocksdb_memtable_bytes",
                                  "Bytes in the RocksDB memtables of this data dir", labels,
                                  prop("rocksdb.cur-size-all-mem-tables"), this);
  metrics_->RegisterFunctionGauge("rocksdb_pending_compaction_bytes",
                                  "Estimated bytes RocksDB compaction still has to rewrite", labels,
                                  prop("rocksdb.estimate-pending-compaction-bytes"), this);
  metrics_->RegisterFunctionGauge("rocksdb_live_sst_bytes",
                                  "Bytes of live SST files of this data dir", labels,
                                  prop("rocksdb.live-sst-files-size"), this);
  metrics_->RegisterFunctionGauge(
      "rocksdb_block_cache_usage_bytes", "Bytes held by the shared RocksDB block cache", {},
      [] { return static_cast<int64_t>(SharedBlockCache()->GetUsage()); }, this);
  metrics_->RegisterFunctionGauge(
      "rocksdb_block_cache_capacity_bytes", "Capacity of the shared RocksDB block cache", {},
      [] { return static_cast<int64_t>(SharedBlockCache()->GetCapacity()); }, this);
  if (SharedRowCache()) {
    metrics_->RegisterFunctionGauge("rocksdb_row_cache_usage_bytes",
                                    "Bytes held by the shared RocksDB row cache", {},
                                    [] { return RowCacheUsage(); }, this);
  }
}

int64_t TabletStore::RowCacheUsage() {
  const std::shared_ptr<rocksdb::Cache>& cache = SharedRowCache();
  return cache ? static_cast<int64_t>(cache->GetUsage()) : 0;
}

TabletStore::~TabletStore() {
  if (metrics_) metrics_->RemoveFunctionGauges(this);
  if (!db_) return;
  rocksdb::CancelAllBackgroundWork(db_.get(), /*wait=*/true);
  {
    MutexLock l(rows_mu_);
    for (const auto& [seq, rows] : rows_) {
      LOG_IF(DFATAL, rows.use_count() > 1)
          << "the rows of tablet seq " << seq << " outlive " << path_;
    }
    rows_.clear();
  }
  {
    MutexLock l(seq_mu_);
    spares_.clear();
  }
  for (auto* h : {default_cf_, meta_cf_, requests_cf_}) {
    if (h) WARN_NOT_OK(FromRocks(db_->DestroyColumnFamilyHandle(h)), "closing column family");
  }
  WARN_NOT_OK(FromRocks(db_->Close()), "closing " + path_);
  db_.reset();
}

Status TabletStore::LoadTabletMetadata(std::vector<TabletMetadataPB>* out) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta_cf_));
  const rocksdb::Slice prefix(kTabletMetaPrefix);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    TabletMetadataPB pb;
    if (!pb.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return Status::Corruption("unparseable tablet metadata under key " + it->key().ToString());
    }
    out->push_back(std::move(pb));
  }
  return FromRocks(it->status(), "reading tablet metadata");
}

std::shared_ptr<TabletRows> TabletStore::Rows(uint64_t seq) const {
  MutexLock l(rows_mu_);
  auto it = rows_.find(seq);
  return it == rows_.end() ? nullptr : it->second;
}

Status TabletStore::MakeSpareFamilies() {
  // A quarter of the families there are, at least kMinSpares: RocksDB rewrites (and
  // re-reads) its OPTIONS file, which lists every family, on each creation call, so
  // one call per tablet would cost time quadratic in the number of tablets.
  constexpr size_t kMinSpares = 8;
  size_t n, families;
  {
    MutexLock l(rows_mu_);
    n = std::max(kMinSpares, rows_.size() / 4);
    families = rows_.size() + spares_.size() + n;
  }
  const uint64_t first = spares_.empty() ? next_seq_ : spares_.rbegin()->first + 1;
  std::vector<std::string> names;
  for (uint64_t seq = first; seq < first + n; seq++) {
    names.push_back(kRowsCfPrefix + std::to_string(seq));
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::Status s = db_->CreateColumnFamilies(RowsCfOptions(families, filters_), names, &handles);
  // On an error, the families made before it are kept (the call returns them).
  for (size_t i = 0; i < handles.size(); i++) {
    spares_[first + i] =
        std::shared_ptr<TabletRows>(new TabletRows(db_.get(), handles[i], first + i));
  }
  return FromRocks(s, "creating rows column families");
}

Status TabletStore::CreateTabletMetadata(TabletMetadataPB* meta) {
  return CreateTabletsMetadata({meta});
}

Status TabletStore::CreateTabletsMetadata(const std::vector<TabletMetadataPB*>& metas) {
  if (metas.empty()) return Status::OK();
  MutexLock l(seq_mu_);
  const uint64_t first = next_seq_, end = next_seq_ + metas.size();
  // Spares for every seq of the batch (each call makes a quarter more families).
  while (spares_.empty() || spares_.rbegin()->first + 1 < end) {
    const size_t before = spares_.size();
    RETURN_NOT_OK(MakeSpareFamilies());
    if (spares_.size() == before) return Status::IllegalState("no rows family for a new tablet");
  }
  for (uint64_t seq = first; seq < end; seq++) {
    if (!spares_.count(seq)) return Status::IllegalState("no rows family for a new tablet");
  }
  std::string next;
  PutFixed64BE(&next, end);
  rocksdb::WriteBatch batch;
  RETURN_NOT_OK(FromRocks(batch.Put(meta_cf_, kNextSeqKey, next)));
  for (size_t i = 0; i < metas.size(); i++) {
    metas[i]->set_seq(first + i);
    RETURN_NOT_OK(FromRocks(batch.Put(meta_cf_, kTabletMetaPrefix + metas[i]->tablet_id(),
                                      metas[i]->SerializeAsString())));
  }
  rocksdb::WriteOptions wo;
  wo.sync = true;
  RETURN_NOT_OK(FromRocks(db_->Write(wo, &batch), "writing tablet metadata"));
  {
    MutexLock rl(rows_mu_);
    for (uint64_t seq = first; seq < end; seq++) rows_[seq] = std::move(spares_[seq]);
  }
  for (uint64_t seq = first; seq < end; seq++) spares_.erase(seq);
  next_seq_ = end;
  return Status::OK();
}

Status TabletStore::PutTabletMetadata(const TabletMetadataPB& meta) {
  return PutTabletsMetadata({&meta});
}

Status TabletStore::PutTabletsMetadata(const std::vector<const TabletMetadataPB*>& metas) {
  rocksdb::WriteBatch batch;
  for (const TabletMetadataPB* m : metas) {
    RETURN_NOT_OK(FromRocks(
        batch.Put(meta_cf_, kTabletMetaPrefix + m->tablet_id(), m->SerializeAsString())));
  }
  rocksdb::WriteOptions wo;
  wo.sync = true;
  return FromRocks(db_->Write(wo, &batch), "writing tablet metadata");
}

void TabletStore::PutTabletMetadata(StoreWriteBatch* batch, const TabletMetadataPB& meta) {
  rocksdb::Status s =
      batch->rep_->Put(meta_cf_, kTabletMetaPrefix + meta.tablet_id(), meta.SerializeAsString());
  DCHECK(s.ok()) << s.ToString();
}

Status TabletStore::DropTablet(uint64_t seq, const std::string& tablet_id) {
  return DropTablets({{seq, tablet_id}});
}

Status TabletStore::DropTablets(const std::vector<std::pair<uint64_t, std::string>>& tablets) {
  if (tablets.empty()) return Status::OK();
  rocksdb::WriteOptions wo;
  wo.sync = true;
  rocksdb::WriteBatch batch;
  for (const auto& [seq, id] : tablets) {
    RETURN_NOT_OK(FromRocks(batch.DeleteRange(requests_cf_, TabletPrefix(seq), TabletPrefix(seq + 1))));
    RETURN_NOT_OK(FromRocks(batch.Delete(meta_cf_, AppliedStateKey(seq))));
  }
  RETURN_NOT_OK(FromRocks(db_->Write(wo, &batch), "dropping request records"));
  // The files go once the last holder of each family (its tablet, an open scan) lets go.
  std::vector<std::shared_ptr<TabletRows>> rows;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  for (const auto& [seq, id] : tablets) {
    if (std::shared_ptr<TabletRows> r = Rows(seq)) {
      handles.push_back(r->cf_);
      rows.push_back(std::move(r));
    }
  }
  if (!handles.empty()) {
    // May drop some and fail on others; a retry (or the tombstone at the next start)
    // drops the rest, and dropping a dropped family again is harmless.
    RETURN_NOT_OK(FromRocks(db_->DropColumnFamilies(handles), "dropping the rows"));
    MutexLock l(rows_mu_);
    for (const auto& r : rows) rows_.erase(r->seq());
  }
  batch.Clear();
  for (const auto& [seq, id] : tablets) {
    RETURN_NOT_OK(FromRocks(batch.Delete(meta_cf_, kTabletMetaPrefix + id)));
  }
  return FromRocks(db_->Write(wo, &batch), "dropping tablet metadata");
}

Status TabletStore::DropTabletData(uint64_t seq) {
  rocksdb::WriteOptions wo;
  wo.sync = true;
  rocksdb::WriteBatch batch;
  RETURN_NOT_OK(
      FromRocks(batch.DeleteRange(requests_cf_, TabletPrefix(seq), TabletPrefix(seq + 1))));
  RETURN_NOT_OK(FromRocks(batch.Delete(meta_cf_, AppliedStateKey(seq))));
  RETURN_NOT_OK(FromRocks(db_->Write(wo, &batch), "dropping request records"));
  std::shared_ptr<TabletRows> r = Rows(seq);
  if (!r) return Status::OK();
  RETURN_NOT_OK(FromRocks(db_->DropColumnFamily(r->cf_), "dropping the rows"));
  MutexLock l(rows_mu_);
  rows_.erase(seq);
  return Status::OK();
}

Status TabletStore::FlushRows(const TabletRows& rows) {
  rocksdb::FlushOptions fo;
  fo.wait = true;
  return FromRocks(db_->Flush(fo, rows.cf_), "flushing a tablet's rows");
}

Status TabletStore::CompactRows(const TabletRows& rows) {
  RETURN_NOT_OK(FlushRows(rows));
  rocksdb::CompactRangeOptions co;
  co.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  return FromRocks(db_->CompactRange(co, rows.cf_, nullptr, nullptr), "compacting a tablet's rows");
}

Status TabletStore::ExportRows(const TabletRows& rows, const std::string& dir,
                               TabletCopySuperblockPB* out) {
  rocksdb::Checkpoint* raw = nullptr;
  RETURN_NOT_OK(FromRocks(rocksdb::Checkpoint::Create(db_.get(), &raw), "export"));
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  rocksdb::ExportImportFilesMetaData* raw_meta = nullptr;
  RETURN_NOT_OK(FromRocks(checkpoint->ExportColumnFamily(rows.cf_, dir, &raw_meta),
                          "exporting a tablet's rows"));
  std::unique_ptr<rocksdb::ExportImportFilesMetaData> meta(raw_meta);
  out->set_comparator(meta->db_comparator_name);
  out->clear_sst_files();
  for (const rocksdb::LiveFileMetaData& f : meta->files) {
    CopiedSstFilePB* pb = out->add_sst_files();
    std::string name = f.name;
    if (!name.empty() && name[0] == '/') name.erase(0, 1);
    pb->set_name(name);
    pb->set_level(f.level);
    pb->set_size(f.size);
    pb->set_smallest_seqno(f.smallest_seqno);
    pb->set_largest_seqno(f.largest_seqno);
    pb->set_smallest_key(f.smallestkey);
    pb->set_largest_key(f.largestkey);
  }
  return Status::OK();
}

Status TabletStore::ForEachRequestRecordOf(
    uint64_t seq, const StoreSnapshot* snapshot,
    const std::function<Status(Slice key, Slice value)>& fn) {
  const std::string lower = TabletPrefix(seq), upper = TabletPrefix(seq + 1);
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  if (snapshot) ro.snapshot = snapshot->snap_;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, requests_cf_));
  for (it->Seek(lower); it->Valid(); it->Next()) {
    Slice key = FromRocksSlice(it->key());
    key.remove_prefix(kTabletPrefixSize);
    RETURN_NOT_OK(fn(key, FromRocksSlice(it->value())));
  }
  return FromRocks(it->status(), "reading request records");
}

Result<std::string> TabletStore::GetAppliedStateAt(uint64_t seq, const StoreSnapshot& snapshot) {
  std::string v;
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot.snap_;
  rocksdb::Status s = db_->Get(ro, meta_cf_, AppliedStateKey(seq), &v);
  if (s.IsNotFound()) return std::string();
  RETURN_NOT_OK(FromRocks(s, "reading a tablet's applied index"));
  return v;
}

Status TabletStore::ImportTablet(TabletMetadataPB* meta, const std::string& dir,
                                 const TabletCopySuperblockPB& sst_files,
                                 const std::vector<std::pair<std::string, std::string>>& records,
                                 Slice applied_state) {
  rocksdb::ExportImportFilesMetaData files;
  files.db_comparator_name = sst_files.comparator();
  for (const CopiedSstFilePB& f : sst_files.sst_files()) {
    if (f.name().empty() || f.name().find('/') != std::string::npos || f.name() == "." ||
        f.name() == "..") {
      return Status::InvalidArgument("tablet copy: bad SST file name '" + f.name() + "'");
    }
    rocksdb::LiveFileMetaData lf;
    lf.name = "/" + f.name();
    lf.relative_filename = f.name();
    lf.db_path = dir;
    lf.directory = dir;
    lf.level = f.level();
    lf.size = f.size();
    lf.smallest_seqno = f.smallest_seqno();
    lf.largest_seqno = f.largest_seqno();
    lf.smallestkey = f.smallest_key();
    lf.largestkey = f.largest_key();
    files.files.push_back(std::move(lf));
  }
  MutexLock l(seq_mu_);
  const uint64_t seq = next_seq_;
  std::string next;
  PutFixed64BE(&next, seq + 1);
  rocksdb::WriteOptions sync;
  sync.sync = true;
  std::shared_ptr<TabletRows> rows;
  if (files.files.empty()) {
    // An empty tablet (RocksDB imports no empty file list): the new seq's empty spare
    // family serves, as for a tablet created here.
    while (!spares_.count(seq)) {
      const size_t before = spares_.size();
      RETURN_NOT_OK(MakeSpareFamilies());
      if (spares_.size() == before) return Status::IllegalState("no rows family for a copy");
    }
    rows = spares_[seq];
  } else {
    // The new seq's spare family goes, and the next seq moves past it (synced) before
    // the import: a family a crash leaves behind is then below the next seq and named by
    // no metadata, an orphan the next start drops, never a spare with rows in it.
    if (auto it = spares_.find(seq); it != spares_.end()) {
      RETURN_NOT_OK(FromRocks(db_->DropColumnFamily(it->second->cf_), "dropping a spare family"));
      spares_.erase(it);
    }
    RETURN_NOT_OK(FromRocks(db_->Put(sync, meta_cf_, kNextSeqKey, next), "writing the next seq"));
    next_seq_ = seq + 1;
    size_t families;
    {
      MutexLock rl(rows_mu_);
      families = rows_.size() + spares_.size() + 1;
    }
    rocksdb::ImportColumnFamilyOptions io;
    io.move_files = true;
    rocksdb::ColumnFamilyHandle* handle = nullptr;
    RETURN_NOT_OK(FromRocks(
        db_->CreateColumnFamilyWithImport(RowsCfOptions(families, filters_),
                                          kRowsCfPrefix + std::to_string(seq), io, files, &handle),
        "importing a tablet copy's rows"));
    rows = std::shared_ptr<TabletRows>(new TabletRows(db_.get(), handle, seq));
  }
  // The metadata that names the copy, with its records and applied state, in one batch.
  meta->set_seq(seq);
  rocksdb::WriteBatch batch;
  Status s = FromRocks(batch.Put(meta_cf_, kNextSeqKey, next));
  if (s.ok()) {
    s = FromRocks(
        batch.Put(meta_cf_, kTabletMetaPrefix + meta->tablet_id(), meta->SerializeAsString()));
  }
  if (s.ok() && !applied_state.empty()) {
    s = FromRocks(batch.Put(meta_cf_, AppliedStateKey(seq), ToRocks(applied_state)));
  }
  std::string key;
  for (size_t i = 0; s.ok() && i < records.size(); i++) {
    key.clear();
    AppendTabletPrefix(seq, &key);
    key.append(records[i].first);
    s = FromRocks(batch.Put(requests_cf_, key, records[i].second));
  }
  if (s.ok()) s = FromRocks(db_->Write(sync, &batch), "writing a copied tablet's metadata");
  if (!s.ok()) {
    if (!files.files.empty()) {
      WARN_NOT_OK(FromRocks(db_->DropColumnFamily(rows->cf_)), "dropping a failed import");
    }
    return s;  // an imported `rows` closes its handle; a spare stays one
  }
  next_seq_ = seq + 1;
  spares_.erase(seq);
  MutexLock rl(rows_mu_);
  rows_[seq] = std::move(rows);
  return Status::OK();
}

Status TabletStore::Write(StoreWriteBatch* batch) {
  rocksdb::WriteOptions wo;
  wo.sync = FLAGS_fsync_writes;
  wo.disableWAL = FLAGS_unsafe_apply_without_rocksdb_wal && !wo.sync;
  return FromRocks(db_->Write(wo, batch->rep_.get()), "write");
}

void TabletStore::PutAppliedState(StoreWriteBatch* batch, uint64_t seq, Slice value) {
  rocksdb::Status s = batch->rep_->Put(meta_cf_, AppliedStateKey(seq), ToRocks(value));
  DCHECK(s.ok()) << s.ToString();
}

Result<std::string> TabletStore::GetAppliedState(uint64_t seq) {
  std::string v;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), meta_cf_, AppliedStateKey(seq), &v);
  if (s.IsNotFound()) return std::string();
  RETURN_NOT_OK(FromRocks(s, "reading a tablet's applied index"));
  return v;
}

int64_t TabletStore::MemtableMemoryBytes() {
  uint64_t v = 0;
  db_->GetAggregatedIntProperty("rocksdb.size-all-mem-tables", &v);
  return static_cast<int64_t>(v);
}

Status TabletStore::SyncWal() { return FromRocks(db_->SyncWAL(), "syncing the WAL"); }

void TabletStore::PutRequestRecord(StoreWriteBatch* batch, Slice key, Slice value) {
  rocksdb::Status s = batch->rep_->Put(requests_cf_, ToRocks(key), ToRocks(value));
  DCHECK(s.ok()) << s.ToString();
}

void TabletStore::QueueRequestRecordDelete(uint64_t tablet_seq, Slice client_id, int64_t seq_no) {
  std::string key;
  AppendRequestRecordKey(tablet_seq, client_id, seq_no, &key);
  MutexLock l(deletes_mu_);
  queued_deletes_.push_back(std::move(key));
  num_queued_deletes_.store(queued_deletes_.size(), std::memory_order_relaxed);
}

void TabletStore::TakeRequestRecordDeletes(StoreWriteBatch* batch) {
  if (num_queued_deletes_.load(std::memory_order_relaxed) == 0) return;
  std::vector<std::string> keys;
  {
    MutexLock l(deletes_mu_);
    keys.swap(queued_deletes_);
    num_queued_deletes_.store(0, std::memory_order_relaxed);
  }
  for (const std::string& k : keys) {
    rocksdb::Status s = batch->rep_->Delete(requests_cf_, k);
    DCHECK(s.ok()) << s.ToString();
  }
}

Status TabletStore::WriteRequestRecordDeletes() {
  StoreWriteBatch batch;
  TakeRequestRecordDeletes(&batch);
  if (batch.Count() == 0) return Status::OK();
  return Write(&batch);
}

Status TabletStore::ForEachRequestRecord(const std::function<Status(const RequestRecord&)>& fn) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), requests_cf_));
  RequestRecord r;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    RETURN_NOT_OK_PREPEND(
        DecodeRequestRecord(FromRocksSlice(it->key()), FromRocksSlice(it->value()), &r), path_);
    RETURN_NOT_OK(fn(r));
  }
  return FromRocks(it->status(), "reading request records");
}

size_t TabletStore::NumQueuedRequestRecordDeletesForTests() const {
  MutexLock l(deletes_mu_);
  return queued_deletes_.size();
}

void TabletStore::MultiGet(const TabletRows& rows, const StoreSnapshot* snapshot, size_t n,
                           const Slice* keys, bool sorted, StoreMultiGet* out, bool memory_only) {
  StoreMultiGet::Rep* rep = out->rep_.get();
  if (rep->values.size() < n) {
    rep->values.resize(n);
    rep->statuses.resize(n);
  }
  for (size_t i = 0; i < n; i++) rep->values[i].Reset();
  out->size_ = n;
  out->status_ = Status::OK();
  if (n == 0) return;
  rocksdb::ReadOptions ro;
  if (snapshot) ro.snapshot = snapshot->snap_;
  if (memory_only) ro.read_tier = rocksdb::kBlockCacheTier;
  if (memory_only || n == 1) {
    // Key by key with Get: for memory_only, because RocksDB 7.8's batched MultiGet
    // ignores read_tier and reads the disk (Get answers Incomplete instead); for one
    // key, because MultiGet's batching costs ~2k instructions more than a Get
    // (callgrind: ~15% of a one-key lookup from the block cache).
    for (size_t i = 0; i < n; i++) {
      rep->statuses[i] = db_->Get(ro, rows.cf_, ToRocks(keys[i]), &rep->values[i]);
    }
  } else {
    // rocksdb::Slice and nyala::Slice differ in type only; convert on the stack in
    // chunks.
    constexpr size_t kChunk = 128;
    rocksdb::Slice rkeys[kChunk];
    for (size_t base = 0; base < n; base += kChunk) {
      const size_t m = std::min(kChunk, n - base);
      for (size_t i = 0; i < m; i++) rkeys[i] = ToRocks(keys[base + i]);
      db_->MultiGet(ro, rows.cf_, m, rkeys, rep->values.data() + base,
                    rep->statuses.data() + base, sorted);
    }
  }
  for (size_t i = 0; i < n; i++) {
    const rocksdb::Status& s = rep->statuses[i];
    if (!s.ok() && !s.IsNotFound()) {
      out->status_ = FromRocks(s, "multiget");
      break;
    }
  }
}

std::unique_ptr<StoreSnapshot> TabletStore::GetSnapshot() {
  return std::unique_ptr<StoreSnapshot>(new StoreSnapshot(db_.get(), db_->GetSnapshot()));
}

std::unique_ptr<StoreIterator> TabletStore::NewIterator(const TabletRows& rows,
                                                        const StoreSnapshot* snapshot,
                                                        std::string lower, std::string upper) {
  std::unique_ptr<StoreIterator> it(new StoreIterator());
  it->lower_ = std::move(lower);
  it->upper_ = std::move(upper);
  it->bounds_ = std::make_unique<StoreIterator::Bounds>();
  it->bounds_->lower = rocksdb::Slice(it->lower_);
  it->bounds_->upper = rocksdb::Slice(it->upper_);
  rocksdb::ReadOptions ro;
  if (snapshot) ro.snapshot = snapshot->snap_;
  ro.iterate_lower_bound = &it->bounds_->lower;
  if (!it->upper_.empty()) ro.iterate_upper_bound = &it->bounds_->upper;
  it->it_.reset(db_->NewIterator(ro, rows.cf_));
  return it;
}

int64_t TabletStore::ApproximateSize(const TabletRows& rows) {
  // Every key of the family: its tablet's prefix is 8 bytes, whichever it is.
  const std::string start(kTabletPrefixSize, '\0'), end(kTabletPrefixSize + 1, '\xff');
  rocksdb::Range range(start, end);
  rocksdb::SizeApproximationOptions o;
  o.include_memtables = true;
  o.include_files = true;
  uint64_t size = 0;
  rocksdb::Status s = db_->GetApproximateSizes(o, rows.cf_, &range, 1, &size);
  return s.ok() ? static_cast<int64_t>(size) : 0;
}

int64_t TabletStore::EstimateLiveRows(const TabletRows& rows) {
  uint64_t n = 0;
  if (!db_->GetIntProperty(rows.cf_, "rocksdb.estimate-num-keys", &n)) return 0;
  return static_cast<int64_t>(n);
}

Status TabletStore::Flush() {
  WARN_NOT_OK(WriteRequestRecordDeletes(), path_ + ": deleting forgotten request records");
  rocksdb::FlushOptions fo;
  fo.wait = true;
  std::vector<rocksdb::ColumnFamilyHandle*> cfs = {meta_cf_, requests_cf_};
  std::vector<std::shared_ptr<TabletRows>> rows;  // kept alive while flushing
  {
    MutexLock l(rows_mu_);
    for (const auto& [seq, r] : rows_) {
      cfs.push_back(r->cf_);
      rows.push_back(r);
    }
  }
  return FromRocks(db_->Flush(fo, cfs), "flush");
}

}  // namespace nyala::tserver
