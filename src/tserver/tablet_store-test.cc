// TabletStore's column families: one rows family per tablet, what Open does with
// families no metadata names, and with a store of the older one-family layout; and
// the row cache's answers.
// RocksDB is used directly only to fabricate the stores a crash or an older build
// leaves behind.
#include "tserver/tablet_store.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "tserver/tablet_manager.h"
#include "tserver/tablet_manager_test_util.h"
#include "tserver/tablet_metadata.pb.h"
#include "tserver/tserver_test_util.h"

namespace nyala::tserver {
namespace {

std::vector<std::string> Families(const std::string& path) {
  std::vector<std::string> names;
  EXPECT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
  std::sort(names.begin(), names.end());
  return names;
}

int NumSstFiles(const std::string& path) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(path))
    n += e.path().extension() == ".sst";
  return n;
}

bool HasFamily(const std::string& path, const std::string& name) {
  const std::vector<std::string> names = Families(path);
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Opens the database at `path` with all its families, runs `fn`, closes it.
void WithRawDb(
    const std::string& path,
    const std::function<void(rocksdb::DB*, std::vector<rocksdb::ColumnFamilyHandle*>&)>& fn) {
  rocksdb::Options opts;
  opts.create_if_missing = true;
  std::vector<std::string> names;
  if (!rocksdb::DB::ListColumnFamilies(opts, path, &names).ok()) {
    names = {rocksdb::kDefaultColumnFamilyName};
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const std::string& n : names) cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(opts, path, cfs, &handles, &db).ok());
  fn(db, handles);
  for (auto* h : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  ASSERT_TRUE(db->Close().ok());
  delete db;
}

class TabletStoreTest : public NyalaTest {
 protected:
  std::string path() const { return test_dir() + "/store"; }

  // Creates tablet `id` in a store at path() and returns its seq.
  uint64_t CreateTablet(TabletStore* store, const std::string& id) {
    TabletMetadataPB meta;
    meta.set_tablet_id(id);
    EXPECT_OK(store->CreateTabletMetadata(&meta));
    return meta.seq();
  }
};

TEST_F(TabletStoreTest, EachTabletHasItsOwnRowsFamily) {
  uint64_t a = 0, b = 0;
  {
    auto opened = TabletStore::Open(path(), nullptr);
    ASSERT_OK(opened.status());
    std::unique_ptr<TabletStore> store = std::move(opened).value();
    a = CreateTablet(store.get(), "a");
    b = CreateTablet(store.get(), "b");
    ASSERT_NE(a, b);
    std::shared_ptr<TabletRows> ra = store->Rows(a), rb = store->Rows(b);
    ASSERT_NE(ra, nullptr);
    ASSERT_NE(rb, nullptr);
    // The same key in two tablets: two rows, each visible only in its tablet.
    StoreWriteBatch batch;
    batch.Put(*ra, "k", "in a");
    batch.Put(*rb, "k", "in b");
    ASSERT_OK(store->Write(&batch));
    StoreMultiGet got;
    const Slice key("k");
    store->MultiGet(*ra, nullptr, 1, &key, true, &got);
    ASSERT_TRUE(got.found(0));
    EXPECT_EQ(got.value(0).ToString(), "in a");
    got.Clear();
    // Dropping a drops its family, its files, and nothing of b's.
    ASSERT_OK(store->Flush());
    const int files_before = NumSstFiles(path());
    ra.reset();
    ASSERT_OK(store->DropTablet(a, "a"));
    EXPECT_EQ(store->Rows(a), nullptr);
    EXPECT_EQ(NumSstFiles(path()), files_before - 1);
    store->MultiGet(*rb, nullptr, 1, &key, true, &got);
    ASSERT_TRUE(got.found(0));
    EXPECT_EQ(got.value(0).ToString(), "in b");
    got.Clear();
    // Dropping again (finishing an interrupted delete) is harmless.
    ASSERT_OK(store->DropTablet(a, "a"));
  }
  EXPECT_FALSE(HasFamily(path(), "rows-" + std::to_string(a)));
  EXPECT_TRUE(HasFamily(path(), "rows-" + std::to_string(b)));
  auto store = TabletStore::Open(path(), nullptr);
  ASSERT_OK(store.status());
  EXPECT_EQ((*store)->Rows(a), nullptr);
  EXPECT_NE((*store)->Rows(b), nullptr);
}

TEST_F(TabletStoreTest, RowCacheServesLookupsAndNeverAStaleRow) {
  // The row cache (--row_cache_capacity_mb, on by default) keeps what lookups found in
  // SST files. Newer versions in the memtable or in newer files, deletes and
  // snapshots must all win over a cached row.
  auto opened = TabletStore::Open(path(), nullptr);
  ASSERT_OK(opened.status());
  std::unique_ptr<TabletStore> store = std::move(opened).value();
  std::shared_ptr<TabletRows> rows = store->Rows(CreateTablet(store.get(), "t"));
  ASSERT_NE(rows, nullptr);
  const Slice key("k");
  auto put = [&](const std::string& value) {
    StoreWriteBatch batch;
    batch.Put(*rows, key, value);
    ASSERT_OK(store->Write(&batch));
  };
  // What the three lookup paths find for `key` ("" when absent): a one-key lookup (a
  // RocksDB Get), a batch of two (a MultiGet; the second key is never stored) and the
  // memory-only lookup of the reactor's fast path. All three must agree.
  auto lookup = [&](const StoreSnapshot* snap = nullptr) {
    const Slice keys[2] = {key, Slice("never-stored")};
    std::string found[3];
    for (int path = 0; path < 3; path++) {
      StoreMultiGet got;
      store->MultiGet(*rows, snap, path == 1 ? 2 : 1, keys, true, &got, path == 2);
      EXPECT_TRUE(got.status().ok()) << "path " << path << ": " << got.status().ToString();
      if (path == 1) {
        EXPECT_FALSE(got.found(1));
      }
      found[path] = got.found(0) ? got.value(0).ToString() : "";
      got.Clear();
    }
    EXPECT_EQ(found[0], found[1]) << "MultiGet disagrees with Get";
    EXPECT_EQ(found[0], found[2]) << "the memory-only lookup disagrees with Get";
    return found[0];
  };
  put("v1");
  ASSERT_OK(store->Flush());
  const int64_t usage_before = TabletStore::RowCacheUsage();
  EXPECT_EQ(lookup(), "v1");
  EXPECT_GT(TabletStore::RowCacheUsage(), usage_before) << "the row found was not cached";
  std::unique_ptr<StoreSnapshot> snap = store->GetSnapshot();
  put("v2");  // in the memtable, above the cached row of the first file
  EXPECT_EQ(lookup(), "v2");
  ASSERT_OK(store->Flush());  // now in a newer file
  EXPECT_EQ(lookup(), "v2");
  EXPECT_EQ(lookup(snap.get()), "v1");
  snap.reset();
  StoreWriteBatch del;
  del.Delete(*rows, key);
  ASSERT_OK(store->Write(&del));
  EXPECT_EQ(lookup(), "");
  ASSERT_OK(store->Flush());
  EXPECT_EQ(lookup(), "");
}

TEST_F(TabletStoreTest, OpenDropsFamiliesNoMetadataNames) {
  uint64_t a = 0, b = 0;
  {
    auto store = TabletStore::Open(path(), nullptr);
    ASSERT_OK(store.status());
    a = CreateTablet(store->get(), "a");
    b = CreateTablet(store->get(), "b");
  }
  // b's metadata gone, its family left (damage, or a store edited by hand): a family
  // below the next seq that no metadata names belongs to no tablet.
  WithRawDb(path(), [](rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*>& handles) {
    for (auto* h : handles) {
      if (h->GetName() == "meta") {
        ASSERT_TRUE(db->Delete(rocksdb::WriteOptions(), h, "tablet/b").ok());
      }
    }
  });
  {
    auto store = TabletStore::Open(path(), nullptr);
    ASSERT_OK(store.status());
    EXPECT_EQ((*store)->Rows(b), nullptr);
    EXPECT_NE((*store)->Rows(a), nullptr);
    // Seqs are never reused: the next tablet takes a seq above b's.
    EXPECT_GT(CreateTablet(store->get(), "c"), b);
  }
  EXPECT_FALSE(HasFamily(path(), "rows-" + std::to_string(b)));
  EXPECT_TRUE(HasFamily(path(), "rows-" + std::to_string(a)));
}

TEST_F(TabletStoreTest, FamiliesAreMadeAheadAFewAtATime) {
  // RocksDB rewrites its OPTIONS file, which lists every family, on each creation
  // call: families are made several at a time, and the spares survive a restart.
  auto rows_families = [&] {
    int n = 0;
    for (const std::string& f : Families(path())) n += f.rfind("rows-", 0) == 0;
    return n;
  };
  {
    auto store = TabletStore::Open(path(), nullptr);
    ASSERT_OK(store.status());
    EXPECT_EQ(CreateTablet(store->get(), "t0"), 1u);
  }
  const int after_first = rows_families();
  EXPECT_GT(after_first, 1);  // spares made with the first tablet
  {
    auto store = TabletStore::Open(path(), nullptr);
    ASSERT_OK(store.status());
    const uint64_t seq = CreateTablet(store->get(), "t1");
    EXPECT_EQ(seq, 2u);
    EXPECT_NE((*store)->Rows(seq), nullptr);
    EXPECT_EQ(rows_families(), after_first);  // a spare, not a new family
    for (int i = 2; i < 100; i++) CreateTablet(store->get(), "t" + std::to_string(i));
    for (uint64_t s = 1; s <= 100; s++) EXPECT_NE((*store)->Rows(s), nullptr) << s;
    // At most a quarter more families than tablets, and at least 8 spares' worth.
    EXPECT_GE(rows_families(), 100);
    EXPECT_LE(rows_families(), 100 + 8 + 100 / 4);
    // A spare holds no rows: a tablet starts empty.
    std::unique_ptr<StoreIterator> it =
        (*store)->NewIterator(*(*store)->Rows(100), nullptr, "", "");
    it->SeekToFirst();
    EXPECT_FALSE(it->Valid());
  }
}

TEST_F(TabletStoreTest, IdleTabletsHoldLittleMemtableMemory) {
  // An empty memtable holds its bloom filter and, once anything is allocated in it,
  // an arena block; both are sized by a family's share of the dir's memtable budget,
  // not by the most one memtable may hold (64 MiB: 1.3 MiB of bloom filter each).
  EXPECT_EQ(RowsMemtableShareBytes(1), size_t{64} << 20);
  EXPECT_EQ(RowsMemtableShareBytes(16), size_t{64} << 20);
  EXPECT_EQ(RowsMemtableShareBytes(1024), size_t{1} << 20);
  constexpr int kTablets = 400;
  {
    auto store = TabletStore::Open(path(), nullptr);
    ASSERT_OK(store.status());
    for (int i = 0; i < kTablets; i++) CreateTablet(store->get(), "t" + std::to_string(i));
    // Made while the store grew: the first families got larger shares.
    EXPECT_LT((*store)->MemtableMemoryBytes() / kTablets, 256 << 10);
  }
  // Reopened, every family gets the share of a store of this many families.
  auto store = TabletStore::Open(path(), nullptr);
  ASSERT_OK(store.status());
  EXPECT_LT((*store)->MemtableMemoryBytes() / kTablets, 64 << 10);
  // A tablet that takes writes still works (its rows, and a lookup of an absent key).
  std::shared_ptr<TabletRows> rows = (*store)->Rows(1);
  ASSERT_NE(rows, nullptr);
  StoreWriteBatch batch;
  batch.Put(*rows, "k1", "v1");
  ASSERT_OK((*store)->Write(&batch));
  std::unique_ptr<StoreIterator> it = (*store)->NewIterator(*rows, nullptr, "", "");
  it->SeekToFirst();
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->key().ToString(), "k1");
  EXPECT_EQ(it->value().ToString(), "v1");
}

TEST_F(TabletStoreTest, RefusesAStoreOfTheOneFamilyLayout) {
  // An older build kept every tablet's rows in the default family.
  WithRawDb(path(), [](rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*>&) {
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), TabletPrefix(1) + "k", "v").ok());
  });
  auto store = TabletStore::Open(path(), nullptr);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(store.status().IsNotSupported()) << store.status().ToString();
  EXPECT_NE(store.status().ToString().find("default column family"), std::string::npos)
      << store.status().ToString();
}

TEST_F(TabletStoreTest, MetadataWithoutItsFamilyMakesAFailedTablet) {
  const Schema schema = testing::SeedSchema();
  uint64_t seq = 0;
  testing::TestTabletManager::Options opts;
  opts.data_dir = test_dir();
  {
    auto server = testing::TestTabletManager::Start(opts);
    ASSERT_OK(server.status());
    TabletManager& mgr = *(*server)->manager();
    TabletServerErrorPB::Code code;
    ASSERT_OK(mgr.CreateTablet(testing::MakeCreateTablet("t", schema), &code));
    seq = mgr.Lookup("t")->seq();
  }
  const std::string store_path = test_dir() + "/tablets";
  WithRawDb(store_path, [&](rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*>& handles) {
    for (auto* h : handles) {
      if (h->GetName() == "rows-" + std::to_string(seq)) {
        ASSERT_TRUE(db->DropColumnFamily(h).ok());
      }
    }
  });
  auto server = testing::TestTabletManager::Start(opts);
  ASSERT_OK(server.status());
  std::shared_ptr<Tablet> t = (*server)->manager()->Lookup("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->state(), TabletState::kFailed);
  WriteResponsePB resp;
  t->Write(testing::MakeSeedWrite("t", schema, 0, 1), &resp);
  EXPECT_TRUE(resp.has_error());
  EXPECT_EQ(t->OnDiskSize(), 0);
}

// A tablet's rows, request records and applied state, exported from one store and
// imported into another as a copy: the rows keep their source's key prefix in a
// family of the new seq, the records get the new seq, and the next seq moves on.
TEST_F(TabletStoreTest, ACopyExportedFromOneStoreImportsIntoAnother) {
  auto src = TabletStore::Open(path(), nullptr);
  ASSERT_OK(src.status());
  // Two tablets, so the copied one's seq (2) differs from the one it gets (1).
  CreateTablet(src->get(), "other");
  const uint64_t seq = CreateTablet(src->get(), "t1");
  std::shared_ptr<TabletRows> rows = (*src)->Rows(seq);
  ASSERT_NE(rows, nullptr);
  StoreWriteBatch batch;
  for (int i = 0; i < 100; i++) {
    batch.Put(*rows, TabletPrefix(seq) + "key" + std::to_string(1000 + i), "v" + std::to_string(i));
  }
  std::string record_key, record_value;
  AppendRequestRecordKey(seq, "client", 7, &record_key);
  AppendRequestRecordHeader(/*write_time_micros=*/123, /*first_incomplete_seq_no=*/5,
                            &record_value);
  (*src)->PutRequestRecord(&batch, record_key, record_value);
  (*src)->PutAppliedState(&batch, seq, "applied-42");
  ASSERT_OK((*src)->Write(&batch));
  // A row that reaches the export through its own flush (still in the memtable).
  batch.Clear();
  batch.Put(*rows, TabletPrefix(seq) + "key9999", "last");
  ASSERT_OK((*src)->FlushRows(*rows));
  ASSERT_OK((*src)->Write(&batch));

  const std::string dir = test_dir() + "/export";
  TabletCopySuperblockPB sb;
  ASSERT_OK((*src)->ExportRows(*rows, dir, &sb));
  ASSERT_GE(sb.sst_files_size(), 1);
  EXPECT_FALSE(sb.comparator().empty());
  for (const CopiedSstFilePB& f : sb.sst_files()) {
    EXPECT_EQ(f.name().find('/'), std::string::npos) << f.name();
    EXPECT_EQ(std::filesystem::file_size(dir + "/" + f.name()), f.size());
  }
  std::vector<std::pair<std::string, std::string>> records;
  auto snap = (*src)->GetSnapshot();
  ASSERT_OK((*src)->ForEachRequestRecordOf(seq, snap.get(), [&](Slice k, Slice v) {
    records.emplace_back(k.ToString(), v.ToString());
    return Status::OK();
  }));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].first, record_key.substr(kTabletPrefixSize));
  auto applied = (*src)->GetAppliedStateAt(seq, *snap);
  ASSERT_OK(applied.status());
  EXPECT_EQ(*applied, "applied-42");

  auto dst = TabletStore::Open(test_dir() + "/dst", nullptr);
  ASSERT_OK(dst.status());
  TabletMetadataPB meta;
  meta.set_tablet_id("t1");
  meta.set_row_key_prefix(seq);
  ASSERT_OK((*dst)->ImportTablet(&meta, dir, sb, records, *applied));
  EXPECT_EQ(meta.seq(), 1u);
  EXPECT_EQ(NumSstFiles(dir), 0) << "the files were moved into the store";
  std::shared_ptr<TabletRows> copied = (*dst)->Rows(meta.seq());
  ASSERT_NE(copied, nullptr);
  auto it = (*dst)->NewIterator(*copied, nullptr, TabletPrefix(seq), TabletPrefix(seq + 1));
  int n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) n++;
  ASSERT_OK(it->status());
  EXPECT_EQ(n, 101);
  auto dst_applied = (*dst)->GetAppliedState(meta.seq());
  ASSERT_OK(dst_applied.status());
  EXPECT_EQ(*dst_applied, "applied-42");
  int found = 0;
  ASSERT_OK((*dst)->ForEachRequestRecord([&](const RequestRecord& r) {
    EXPECT_EQ(r.tablet_seq, meta.seq());
    EXPECT_EQ(r.client_id.ToString(), "client");
    EXPECT_EQ(r.seq_no, 7);
    EXPECT_EQ(r.first_incomplete_seq_no, 5);
    found++;
    return Status::OK();
  }));
  EXPECT_EQ(found, 1);
  // The copy survives a restart, and the next tablet gets the next seq.
  copied.reset();
  it.reset();
  dst->reset();
  dst = TabletStore::Open(test_dir() + "/dst", nullptr);
  ASSERT_OK(dst.status());
  std::vector<TabletMetadataPB> metas;
  ASSERT_OK((*dst)->LoadTabletMetadata(&metas));
  ASSERT_EQ(metas.size(), 1u);
  EXPECT_EQ(metas[0].row_key_prefix(), seq);
  ASSERT_NE((*dst)->Rows(metas[0].seq()), nullptr);
  EXPECT_EQ(CreateTablet(dst->get(), "next"), metas[0].seq() + 1);
}

// An empty tablet exports no SST file; its import makes an empty family (RocksDB
// imports no empty file list).
TEST_F(TabletStoreTest, AnEmptyTabletCopiesToo) {
  auto src = TabletStore::Open(path(), nullptr);
  ASSERT_OK(src.status());
  const uint64_t seq = CreateTablet(src->get(), "empty");
  TabletCopySuperblockPB sb;
  ASSERT_OK((*src)->ExportRows(*(*src)->Rows(seq), test_dir() + "/export", &sb));
  EXPECT_EQ(sb.sst_files_size(), 0);
  auto dst = TabletStore::Open(test_dir() + "/dst", nullptr);
  ASSERT_OK(dst.status());
  TabletMetadataPB meta;
  meta.set_tablet_id("empty");
  meta.set_row_key_prefix(seq);
  ASSERT_OK((*dst)->ImportTablet(&meta, test_dir() + "/export", sb, {}, "applied"));
  std::shared_ptr<TabletRows> rows = (*dst)->Rows(meta.seq());
  ASSERT_NE(rows, nullptr);
  auto it = (*dst)->NewIterator(*rows, nullptr, "", "");
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  auto applied = (*dst)->GetAppliedState(meta.seq());
  ASSERT_OK(applied.status());
  EXPECT_EQ(*applied, "applied");
  // The next tablet gets the next seq, and the copy survives a restart.
  EXPECT_EQ(CreateTablet(dst->get(), "next"), meta.seq() + 1);
  it.reset();
  rows.reset();
  dst->reset();
  dst = TabletStore::Open(test_dir() + "/dst", nullptr);
  ASSERT_OK(dst.status());
  EXPECT_NE((*dst)->Rows(meta.seq()), nullptr);
}

// An import that fails leaves nothing that names its seq: no metadata, no family.
TEST_F(TabletStoreTest, AFailedImportLeavesNoTablet) {
  auto store = TabletStore::Open(path(), nullptr);
  ASSERT_OK(store.status());
  TabletCopySuperblockPB sb;
  CopiedSstFilePB* f = sb.add_sst_files();
  f->set_name("000042.sst");  // not there
  f->set_size(100);
  sb.set_comparator("leveldb.BytewiseComparator");
  TabletMetadataPB meta;
  meta.set_tablet_id("t1");
  EXPECT_FALSE((*store)->ImportTablet(&meta, test_dir() + "/nothing", sb, {}, "x").ok());
  f->set_name("../etc/passwd");
  EXPECT_TRUE((*store)->ImportTablet(&meta, test_dir(), sb, {}, "x").IsInvalidArgument());
  std::vector<TabletMetadataPB> metas;
  ASSERT_OK((*store)->LoadTabletMetadata(&metas));
  EXPECT_TRUE(metas.empty());
  store->reset();
  for (const std::string& name : Families(path())) {
    EXPECT_NE(name.rfind("rows-", 0), 0u) << name << " names no tablet; Open drops it";
  }
}

// DropTabletData drops the rows, records and applied state but keeps the metadata.
TEST_F(TabletStoreTest, DropTabletDataKeepsTheMetadata) {
  auto store = TabletStore::Open(path(), nullptr);
  ASSERT_OK(store.status());
  const uint64_t seq = CreateTablet(store->get(), "t1");
  StoreWriteBatch batch;
  std::string record_key;
  AppendRequestRecordKey(seq, "client", 1, &record_key);
  (*store)->PutRequestRecord(&batch, record_key, "v");
  (*store)->PutAppliedState(&batch, seq, "applied");
  ASSERT_OK((*store)->Write(&batch));
  ASSERT_OK((*store)->DropTabletData(seq));
  EXPECT_EQ((*store)->Rows(seq), nullptr);
  auto applied = (*store)->GetAppliedState(seq);
  ASSERT_OK(applied.status());
  EXPECT_EQ(*applied, "");
  int records = 0;
  ASSERT_OK((*store)->ForEachRequestRecord([&](const RequestRecord&) {
    records++;
    return Status::OK();
  }));
  EXPECT_EQ(records, 0);
  std::vector<TabletMetadataPB> metas;
  ASSERT_OK((*store)->LoadTabletMetadata(&metas));
  EXPECT_EQ(metas.size(), 1u);
  ASSERT_OK((*store)->DropTabletData(seq));  // again: harmless
}

}  // namespace
}  // namespace nyala::tserver
