// TabletStore's column families: one rows family per tablet, what Open does with
// families no metadata names, and with a store of the older one-family layout.
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
  EXPECT_EQ(Families(path()),
            (std::vector<std::string>{"default", "meta", "requests", "rows-" + std::to_string(b)}));
  auto store = TabletStore::Open(path(), nullptr);
  ASSERT_OK(store.status());
  EXPECT_EQ((*store)->Rows(a), nullptr);
  EXPECT_NE((*store)->Rows(b), nullptr);
}

TEST_F(TabletStoreTest, OpenDropsFamiliesNoMetadataNames) {
  uint64_t a = 0;
  {
    auto store = TabletStore::Open(path(), nullptr);
    ASSERT_OK(store.status());
    a = CreateTablet(store->get(), "a");
  }
  // A crash between creating a family and writing its tablet's metadata.
  WithRawDb(path(), [](rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*>& handles) {
    rocksdb::ColumnFamilyHandle* h = nullptr;
    ASSERT_TRUE(db->CreateColumnFamily(rocksdb::ColumnFamilyOptions(), "rows-77", &h).ok());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), h, "k", "v").ok());
    handles.push_back(h);
  });
  {
    auto store = TabletStore::Open(path(), nullptr);
    ASSERT_OK(store.status());
    EXPECT_EQ((*store)->Rows(77), nullptr);
    EXPECT_NE((*store)->Rows(a), nullptr);
  }
  EXPECT_EQ(Families(path()),
            (std::vector<std::string>{"default", "meta", "requests", "rows-" + std::to_string(a)}));
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
  {
    TabletManager mgr({test_dir()}, nullptr);
    ASSERT_OK(mgr.Open());
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
  TabletManager mgr({test_dir()}, nullptr);
  ASSERT_OK(mgr.Open());
  std::shared_ptr<Tablet> t = mgr.Lookup("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->state(), TabletState::kFailed);
  WriteResponsePB resp;
  t->Write(testing::MakeSeedWrite("t", schema, 0, 1), &resp);
  EXPECT_TRUE(resp.has_error());
  EXPECT_EQ(t->OnDiskSize(), 0);
}

}  // namespace
}  // namespace nyala::tserver
