// Tests of schema changes on a tablet (a Raft group of one, real RocksDB and log):
// rows written under each version read through the newest one, writes built
// against another version are refused with the codes the client acts on, the change
// survives a restart, and refused changes leave the tablet as it was.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/row_block.h"
#include "common/test_util.h"
#include "tserver/scanners.h"
#include "tserver/tablet.h"
#include "tserver/tablet_manager.h"
#include "tserver/tablet_manager_test_util.h"
#include "tserver/tserver_test_util.h"

namespace nyala::tserver {
namespace {

using namespace testing;  // NOLINT(build/namespaces)
using C = ColumnSchema;

class TabletAlterTest : public NyalaTest {
 protected:
  void SetUp() override {
    NyalaTest::SetUp();
    v0_ = SeedSchema();  // key 0, a 1, b 2, c 3, d 4
    ASSERT_NO_FATAL_FAILURE(Open());
    TabletServerErrorPB::Code code;
    ASSERT_OK(mgr_->CreateTablet(MakeCreateTablet("t1", v0_), &code));
  }
  void TearDown() override {
    scanners_.reset();
    server_.reset();
    NyalaTest::TearDown();
  }
  void Open() {
    scanners_.reset();
    server_.reset();
    TestTabletManager::Options opts;
    opts.data_dir = test_dir();
    auto s = TestTabletManager::Start(std::move(opts));
    ASSERT_OK(s.status());
    server_ = std::move(*s);
    mgr_ = server_->manager();
    scanners_ = std::make_unique<ScannerManager>(nullptr);
  }
  std::shared_ptr<Tablet> T() { return mgr_->Lookup("t1"); }

  AlterSchemaResponsePB Alter(const Schema& schema, const std::string& new_name = "") {
    AlterSchemaRequestPB req;
    req.set_tablet_id("t1");
    schema.ToPB(req.mutable_schema());
    req.set_new_table_name(new_name);
    AlterSchemaResponsePB resp;
    Mutex mu;
    CondVar cv;
    bool done = false;
    T()->AlterSchemaAsync(req, &resp, [&] {
      MutexLock l(mu);
      done = true;
      cv.notify_all();
    });
    UniqueLock l(mu);
    EXPECT_TRUE(cv.wait_for(l, std::chrono::seconds(30),
                            [&]() NO_THREAD_SAFETY_ANALYSIS { return done; }));
    return resp;
  }

  WriteResponsePB Write(const WriteRequestPB& req) {
    WriteResponsePB resp;
    T()->Write(req, &resp);
    return resp;
  }

  // Every row of the tablet through a scan (all columns), by key, as strings per
  // column name; and the columns the scan returned.
  std::map<int64_t, std::map<std::string, std::string>> ScanAll(std::vector<std::string>* cols) {
    std::map<int64_t, std::map<std::string, std::string>> out;
    ScanRequestPB req;
    req.mutable_new_scan_request()->set_tablet_id("t1");
    req.set_batch_size_bytes(1 << 20);
    ScanResponsePB resp;
    std::string rows, indirect;
    scanners_->StartScan(T(), req, &resp, &rows, &indirect);
    EXPECT_FALSE(resp.has_error()) << resp.ShortDebugString();
    EXPECT_FALSE(resp.has_more_results());
    Schema full = T()->tablet_schema()->schema;
    std::vector<std::string> names;
    for (const auto& c : resp.projection().columns()) names.push_back(c.name());
    auto proj = full.Project(names);
    EXPECT_OK(proj.status());
    if (!proj.ok()) return out;
    RowBlock block;
    EXPECT_OK(RowBlock::Parse(&*proj, resp.data().num_rows(), rows, indirect, &block));
    std::vector<Cell> cells(proj->num_columns());
    for (int r = 0; r < block.num_rows(); r++) {
      block.GetRow(r, cells.data());
      auto& row = out[cells[0].int_value()];
      for (int c = 0; c < proj->num_columns(); c++) row[names[c]] = cells[c].ToString();
    }
    if (cols) *cols = names;
    return out;
  }

  Schema v0_;
  std::unique_ptr<TestTabletManager> server_;
  TabletManager* mgr_ = nullptr;
  std::unique_ptr<ScannerManager> scanners_;
};

// v1: 'a' dropped, 'b' renamed 'bee', 'e' added NOT NULL with default 7, 'f' added
// nullable.
Schema V1() {
  std::vector<C> cols = {C("key", DataType::kInt64, false, Value(), 0),
                         C("bee", DataType::kString, false, Value(), 2),
                         C("c", DataType::kString, true, Value(), 3),
                         C("d", DataType::kInt32, true, Value(), 4),
                         C("e", DataType::kInt64, false, Value(Cell::Int64(7)), 5),
                         C("f", DataType::kString, true, Value(), 6)};
  cols[4].set_read_default(Value(Cell::Int64(7)));
  return Schema::Create(cols, 1, 1).value();
}

TEST_F(TabletAlterTest, RowsOfEveryVersionReadThroughTheNewest) {
  ASSERT_FALSE(Write(MakeSeedWrite("t1", v0_, 0, 50)).has_error());
  const Schema v1 = V1();
  AlterSchemaResponsePB r = Alter(v1, "renamed_table");
  ASSERT_FALSE(r.has_error()) << r.ShortDebugString();
  EXPECT_EQ(r.schema_version(), 1u);
  EXPECT_EQ(T()->schema_version(), 1u);
  EXPECT_EQ(T()->metadata().table_name(), "renamed_table");
  ASSERT_EQ(T()->metadata().older_schemas_size(), 1);

  // A write built against version 0 is refused: the client refreshes.
  WriteResponsePB w = Write(MakeSeedWrite("t1", v0_, 100, 1));
  EXPECT_EQ(w.error().code(), TabletServerErrorPB::TABLET_HAS_A_NEWER_SCHEMA) << w.ShortDebugString();
  // One against a version the tablet does not have yet: retry later.
  Schema v9 = Schema::Create(v1.columns(), 1, 9).value();
  w = Write(MakeWrite("t1", v9, {}));
  EXPECT_EQ(w.error().code(), TabletServerErrorPB::TABLET_SCHEMA_BEHIND) << w.ShortDebugString();

  // Under version 1: an update of an old row and a new row.
  Row upd(&v1);
  ASSERT_OK(upd.Set(0, Cell::Int64(5)));
  ASSERT_OK(upd.Set(4, Cell::Int64(100)));
  ASSERT_OK(upd.Set(5, Cell::String("eff")));
  Row ins(&v1);
  ASSERT_OK(ins.Set(0, Cell::Int64(200)));
  ASSERT_OK(ins.Set(1, Cell::String("new")));
  w = Write(MakeWrite("t1", v1, {{RowOpType::kUpdate, &upd}, {RowOpType::kInsert, &ins}}));
  ASSERT_FALSE(w.has_error()) << w.ShortDebugString();
  ASSERT_EQ(w.per_row_errors_size(), 0) << w.ShortDebugString();

  auto check = [&] {
    std::vector<std::string> cols;
    auto rows = ScanAll(&cols);
    EXPECT_EQ(cols, (std::vector<std::string>{"key", "bee", "c", "d", "e", "f"}));
    ASSERT_EQ(rows.size(), 51u);
    const SeedRow s3 = MakeSeedRow(3);
    EXPECT_EQ(rows[3]["bee"], "\"" + s3.b + "\"");
    EXPECT_EQ(rows[3]["e"], "7");  // the read default
    EXPECT_EQ(rows[3]["f"], "NULL");
    EXPECT_EQ(rows[5]["e"], "100");
    EXPECT_EQ(rows[5]["f"], "\"eff\"");
    EXPECT_EQ(rows[5]["bee"], "\"" + MakeSeedRow(5).b + "\"");  // kept by the update
    EXPECT_EQ(rows[200]["e"], "7");                                // the write default
    EXPECT_EQ(rows[200]["c"], "NULL");
  };
  check();

  // A Get whose caller has version 0 is answered with the projection it needs.
  GetRequestPB g;
  g.set_tablet_id("t1");
  g.add_keys(EncodedKey(v1, 3));
  g.set_schema_version(0);
  GetResponsePB gr;
  std::string rows, indirect;
  T()->Get(g, &gr, &rows, &indirect);
  ASSERT_FALSE(gr.has_error()) << gr.ShortDebugString();
  EXPECT_EQ(gr.projection().columns_size(), 6);

  // The change is in the metadata: a restart keeps it.
  ASSERT_NO_FATAL_FAILURE(Open());
  EXPECT_EQ(T()->schema_version(), 1u);
  EXPECT_EQ(T()->metadata().table_name(), "renamed_table");
  check();
}

TEST_F(TabletAlterTest, AColumnDroppedAndAddedAgainStartsEmpty) {
  const Schema v1 = V1();
  ASSERT_FALSE(Alter(v1).has_error());
  Row row(&v1);
  ASSERT_OK(row.Set(0, Cell::Int64(1)));
  ASSERT_OK(row.Set(1, Cell::String("x")));
  ASSERT_OK(row.Set(5, Cell::String("old value")));
  ASSERT_FALSE(Write(MakeWrite("t1", v1, {{RowOpType::kInsert, &row}})).has_error());
  // v2 drops 'f'; v3 adds a new 'f' (id 7).
  std::vector<C> cols = v1.columns();
  cols.pop_back();
  const Schema v2 = Schema::Create(cols, 1, 2).value();
  ASSERT_FALSE(Alter(v2).has_error());
  cols.push_back(C("f", DataType::kString, true, Value(), 7));
  const Schema v3 = Schema::Create(cols, 1, 3).value();
  ASSERT_FALSE(Alter(v3).has_error());
  auto rows = ScanAll(nullptr);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[1]["f"], "NULL");
  EXPECT_EQ(T()->metadata().older_schemas_size(), 3);
}

TEST_F(TabletAlterTest, RefusedAndRepeatedChangesLeaveTheTabletAsItWas) {
  // The key cannot change.
  std::vector<C> cols = v0_.columns();
  cols[0] = C("key", DataType::kInt32, false, Value(), 0);
  AlterSchemaResponsePB r = Alter(Schema::Create(cols, 1, 1).value());
  EXPECT_EQ(r.error().code(), TabletServerErrorPB::INVALID_SCHEMA) << r.ShortDebugString();
  EXPECT_NE(r.error().status().message().find("primary key cannot change"), std::string::npos);
  // Nor a column's type.
  cols = v0_.columns();
  cols[1] = C("a", DataType::kInt64, false, Value(), 1);
  r = Alter(Schema::Create(cols, 1, 1).value());
  EXPECT_EQ(r.error().code(), TabletServerErrorPB::INVALID_SCHEMA) << r.ShortDebugString();
  // An added NOT NULL column needs a value for the rows already there.
  cols = v0_.columns();
  cols.push_back(C("z", DataType::kInt32, false, Value(Cell::Int32(1)), 9));
  r = Alter(Schema::Create(cols, 1, 1).value());
  EXPECT_EQ(r.error().code(), TabletServerErrorPB::INVALID_SCHEMA) << r.ShortDebugString();
  EXPECT_EQ(T()->schema_version(), 0u);
  EXPECT_EQ(T()->metadata().older_schemas_size(), 0);

  // Applied, then asked again (a retry): answered with the version it has.
  ASSERT_FALSE(Alter(V1()).has_error());
  r = Alter(V1());
  EXPECT_FALSE(r.has_error()) << r.ShortDebugString();
  EXPECT_EQ(r.schema_version(), 1u);
  EXPECT_EQ(T()->metadata().older_schemas_size(), 1);
}

// The schema versions of the values stored in t1's rows family, by count.
std::map<uint32_t, int> StoredVersions(Tablet* t) {
  std::map<uint32_t, int> out;
  auto snap = t->GetSnapshot();
  auto it = t->NewIterator(snap.get(), KeyRange());
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    out[RowValueSchemaVersion(it->value()).value()]++;
  }
  EXPECT_OK(it->status());
  return out;
}

TEST_F(TabletAlterTest, CompactionsRewriteOlderRowsOnceNoReaderNeedsThem) {
  ASSERT_FALSE(Write(MakeSeedWrite("t1", v0_, 0, 20)).has_error());
  // A reader holding version 0 across the change (a scan in progress).
  std::shared_ptr<const TabletSchema> reader = T()->tablet_schema();
  ASSERT_FALSE(Alter(V1()).has_error());
  ASSERT_OK(T()->store()->CompactRows(*T()->rows()));
  EXPECT_EQ(StoredVersions(T().get()), (std::map<uint32_t, int>{{0, 20}}))
      << "rewritten under a reader of version 0";
  // The reader still reads every value as version 0.
  Row row(&reader->schema);
  auto snap = T()->GetSnapshot();
  auto it = T()->NewIterator(snap.get(), KeyRange());
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    ASSERT_OK(reader->DecodeStoredRow(it->key(), it->value(), true, &row));
  }
  it.reset();
  snap.reset();
  reader.reset();
  ASSERT_OK(T()->store()->CompactRows(*T()->rows()));
  EXPECT_EQ(StoredVersions(T().get()), (std::map<uint32_t, int>{{1, 20}}));
  // Read as before: the dropped column's bytes are gone, the rest is the same.
  std::vector<std::string> cols;
  auto rows = ScanAll(&cols);
  ASSERT_EQ(rows.size(), 20u);
  EXPECT_EQ(rows[3]["bee"], "\"" + MakeSeedRow(3).b + "\"");
  EXPECT_EQ(rows[3]["e"], "7");
  // A checksum reads the same before and after compactions (replicas compact at their
  // own pace).
}

}  // namespace
}  // namespace nyala::tserver
