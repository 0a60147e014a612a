// Tests of tablet storage without RPC: every write operation and row error,
// duplicate keys in one block, Get, scans with every predicate kind against an
// in-memory filter of the same rows, scanner snapshots, call_seq_id and expiry,
// tablet creation/deletion and restart of the store, write responses stored for
// retries across a restart.
#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "common/coding.h"
#include "common/row_block.h"
#include "common/test_util.h"
#include "common/wire_protocol.h"
#include "tserver/request_tracker.h"
#include "tserver/scanners.h"
#include "tserver/tablet.h"
#include "tserver/tablet_manager.h"
#include "tserver/tablet_manager_test_util.h"
#include "tserver/tablet_store.h"
#include "tserver/tserver_metrics.h"
#include "tserver/tserver_test_util.h"

DECLARE_int32(scanner_ttl_ms);
DECLARE_int32(write_dedup_ttl_ms);

namespace nyala::tserver {
namespace {

using namespace testing;  // NOLINT(build/namespaces)

// The projection a response describes, rebuilt from the table schema (a projection
// has no key columns, so it is not a valid table SchemaPB on its own).
Result<Schema> ProjectionOf(const Schema& schema, const SchemaPB& pb) {
  std::vector<std::string> names;
  for (const auto& c : pb.columns()) names.push_back(c.name());
  return schema.Project(names);
}

class TabletTest : public NyalaTest {
 protected:
  void SetUp() override {
    NyalaTest::SetUp();
    schema_ = SeedSchema();
    metrics_ = std::make_unique<TServerMetrics>(&registry_);
    ASSERT_NO_FATAL_FAILURE(OpenManager());
    ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  }
  void TearDown() override {
    scanners_.reset();
    mgr_ = nullptr;
    server_.reset();
    NyalaTest::TearDown();
  }
  // Opens the tablets as a tablet server does (a restart when they were open): every
  // tablet a Raft group of one, with its log in the test's dir. `tracker` (which must
  // outlive the manager) gets the stored request records; null: one of its own.
  void OpenManager(RequestTracker* tracker = nullptr) {
    scanners_.reset();
    mgr_ = nullptr;
    server_.reset();
    TestTabletManager::Options opts;
    opts.data_dir = test_dir();
    opts.metrics = metrics_.get();
    opts.tracker = tracker;
    auto server = TestTabletManager::Start(std::move(opts));
    ASSERT_OK(server.status());
    server_ = std::move(*server);
    mgr_ = server_->manager();
    scanners_ = std::make_unique<ScannerManager>(metrics_.get());
  }
  void CreateTablet(const std::string& id) {
    TabletServerErrorPB::Code code;
    ASSERT_OK(mgr_->CreateTablet(MakeCreateTablet(id, schema_), &code));
  }
  std::shared_ptr<Tablet> T(const std::string& id = "t1") { return mgr_->Lookup(id); }

  WriteResponsePB Write(const WriteRequestPB& req, const std::string& id = "t1") {
    WriteResponsePB resp;
    T(id)->Write(req, &resp);
    return resp;
  }
  WriteResponsePB WriteOps(const std::vector<std::pair<RowOpType, const Row*>>& ops) {
    return Write(MakeWrite("t1", schema_, ops));
  }
  void InsertSeed(int64_t first, int64_t n, const std::string& id = "t1") {
    WriteResponsePB resp = Write(MakeSeedWrite(id, schema_, first, n), id);
    ASSERT_FALSE(resp.has_error()) << resp.ShortDebugString();
    ASSERT_EQ(resp.per_row_errors_size(), 0) << resp.ShortDebugString();
    ASSERT_EQ(resp.rows_applied(), n);
  }

  // Reads row `k` with Get; false if absent.
  bool GetRow(int64_t k, std::vector<Value>* out, const std::string& id = "t1") {
    GetRequestPB req;
    req.set_tablet_id(id);
    req.add_keys(EncodedKey(schema_, k));
    GetResponsePB resp;
    std::string rows, indirect;
    T(id)->Get(req, &resp, &rows, &indirect);
    EXPECT_FALSE(resp.has_error()) << resp.ShortDebugString();
    EXPECT_FALSE(resp.has_projection()) << "every column: the caller has the schema";
    if (!resp.found(0)) return false;
    RowBlock block;
    EXPECT_OK(RowBlock::Parse(&schema_, 1, rows, indirect, &block));
    out->clear();
    for (int c = 0; c < schema_.num_columns(); c++) out->emplace_back(block.cell(0, c));
    return true;
  }

  // Starts scan `ns` of t1 in batches of `batch_bytes`: the first batch's response,
  // its rows in `rows` and `indirect`.
  ScanResponsePB StartScan(NewScanRequestPB ns, uint32_t batch_bytes, std::string* rows,
                           std::string* indirect) {
    ScanRequestPB req;
    *req.mutable_new_scan_request() = std::move(ns);
    req.mutable_new_scan_request()->set_tablet_id("t1");
    req.set_batch_size_bytes(batch_bytes);
    ScanResponsePB resp;
    scanners_->StartScan(T(), req, &resp, rows, indirect);
    return resp;
  }

  // Runs a whole scan; returns the keys of the rows in order (and checks each row
  // is the seed row when `check_seed`).
  std::vector<int64_t> ScanKeys(NewScanRequestPB ns, uint32_t batch_bytes = 0,
                                bool check_seed = true, int* num_batches = nullptr) {
    std::vector<int64_t> keys;
    std::string rows, indirect;
    ScanResponsePB resp = StartScan(std::move(ns), batch_bytes, &rows, &indirect);
    int batches = 0;
    for (int i = 0; i < 100000; i++) {
      EXPECT_FALSE(resp.has_error()) << resp.ShortDebugString();
      if (resp.has_error()) break;
      batches++;
      auto proj = ProjectionOf(
          schema_, resp.projection().columns_size() ? resp.projection() : projection_pb_);
      if (resp.projection().columns_size()) projection_pb_ = resp.projection();
      EXPECT_OK(proj.status());
      RowBlock block;
      EXPECT_OK(RowBlock::Parse(&*proj, resp.data().num_rows(), rows, indirect, &block));
      std::vector<Cell> cells(proj->num_columns());
      for (int r = 0; r < block.num_rows(); r++) {
        block.GetRow(r, cells.data());
        keys.push_back(cells[0].int_value());
        if (check_seed && proj->num_columns() == schema_.num_columns()) {
          EXPECT_TRUE(MatchesSeedRow(cells.data(), cells[0].int_value())) << cells[0].int_value();
        }
      }
      if (!resp.has_more_results()) break;
      ScanRequestPB next;
      next.set_scanner_id(resp.scanner_id());
      next.set_call_seq_id(batches);
      next.set_batch_size_bytes(batch_bytes);
      resp.Clear();
      scanners_->ContinueScan(next, &resp, &rows, &indirect);
    }
    if (num_batches) *num_batches = batches;
    return keys;
  }

  // A write with a request id as the Write RPC runs it: tracker, tablet, tracker.
  // Returns the response the client would get.
  WriteResponsePB TrackedWrite(RequestTracker* tracker, const rpc::RequestIdPB& id,
                               const WriteRequestPB& req) {
    WriteResponsePB resp;
    const RequestTracker::Outcome outcome = tracker->Begin(id, &resp, nullptr);
    if (outcome == RequestTracker::Outcome::kAnswered) return resp;
    EXPECT_EQ(outcome, RequestTracker::Outcome::kNew);
    std::shared_ptr<Tablet> t = T(req.tablet_id());
    t->Write(req, &resp, &id);
    tracker->Finish(id, resp, !resp.has_error(), {t->store(), t->seq()});
    return resp;
  }
  // The request records in the (only) store, as "client/seq_no" strings.
  std::vector<std::string> StoredRequests() {
    std::vector<std::string> out;
    EXPECT_OK(mgr_->stores()[0]->ForEachRequestRecord([&](const RequestRecord& r) {
      out.push_back(r.client_id.ToString() + "/" + std::to_string(r.seq_no));
      return Status::OK();
    }));
    return out;
  }

  MetricRegistry registry_;
  std::unique_ptr<TServerMetrics> metrics_;
  Schema schema_;
  // A tracker that outlives the managers it is given to.
  RequestTracker* NewTracker() {
    trackers_.push_back(std::make_unique<RequestTracker>());
    return trackers_.back().get();
  }

  std::vector<std::unique_ptr<RequestTracker>> trackers_;  // before server_: outlives it
  std::unique_ptr<TestTabletManager> server_;
  TabletManager* mgr_ = nullptr;  // server_'s
  std::unique_ptr<ScannerManager> scanners_;
  SchemaPB projection_pb_;
};

rpc::RequestIdPB RequestId(const std::string& client, int64_t seq, int64_t first_incomplete) {
  rpc::RequestIdPB id;
  id.set_client_id(client);
  id.set_seq_no(seq);
  id.set_first_incomplete_seq_no(first_incomplete);
  return id;
}

// A row holding its own copy of `r`'s strings.
Row SeedRowOf(const Schema* schema, const SeedRow& r) {
  Row borrowed(schema);
  FillRow(r, &borrowed);
  Row owned(borrowed);  // copying a Row copies its strings
  return owned;
}

// A row block holding one INSERT that sets only column `a` (no key): it parses but
// is a row error.
RowOperationsPB BlockWithoutKey() {
  RowOperationsPB pb;
  std::string rows;
  PutVarint64(&rows, 5);  // columns
  PutVarint64(&rows, 1);  // rows
  rows.push_back(static_cast<char>(RowOpType::kInsert));
  rows.push_back(0x02);  // isset: column 1 (a)
  rows.push_back(0x00);  // nulls
  PutFixedLE<int32_t>(&rows, 42);
  pb.set_rows(rows);
  return pb;
}

TEST_F(TabletTest, EveryOperationAndRowError) {
  ASSERT_NO_FATAL_FAILURE(InsertSeed(0, 3));
  Row dup = SeedRowOf(&schema_, MakeSeedRow(1));
  Row new_row = SeedRowOf(&schema_, MakeSeedRow(10));
  Row update(&schema_);
  ASSERT_OK(update.Set(0, Cell::Int64(2)));
  ASSERT_OK(update.Set(1, Cell::Int32(-5)));
  Row update_missing(&schema_);
  ASSERT_OK(update_missing.Set(0, Cell::Int64(99)));
  ASSERT_OK(update_missing.Set(1, Cell::Int32(1)));
  // UPSERT must set every NOT NULL column; the nullable c and d are left out.
  Row upsert_partial(&schema_);
  ASSERT_OK(upsert_partial.Set(0, Cell::Int64(0)));
  ASSERT_OK(upsert_partial.Set(1, Cell::Int32(1234)));
  ASSERT_OK(upsert_partial.Set(2, Cell::String("upserted")));
  Row upsert_new = SeedRowOf(&schema_, MakeSeedRow(11));
  Row del(&schema_);
  ASSERT_OK(del.Set(0, Cell::Int64(1)));
  Row del_missing(&schema_);
  ASSERT_OK(del_missing.Set(0, Cell::Int64(98)));

  WriteResponsePB resp = WriteOps({
      {RowOpType::kInsert, &dup},                   // 0: ALREADY_PRESENT
      {RowOpType::kInsertIgnore, &dup},             // 1: ignored
      {RowOpType::kInsert, &new_row},               // 2
      {RowOpType::kUpdate, &update},                // 3
      {RowOpType::kUpdate, &update_missing},        // 4: NOT_FOUND
      {RowOpType::kUpdateIgnore, &update_missing},  // 5: ignored
      {RowOpType::kUpsert, &upsert_partial},        // 6: merges into row 0
      {RowOpType::kUpsert, &upsert_new},            // 7
      {RowOpType::kDelete, &del},                   // 8
      {RowOpType::kDelete, &del_missing},           // 9: NOT_FOUND
      {RowOpType::kDeleteIgnore, &del_missing},     // 10: ignored
  });
  ASSERT_FALSE(resp.has_error()) << resp.ShortDebugString();
  ASSERT_EQ(resp.per_row_errors_size(), 3) << resp.ShortDebugString();
  EXPECT_EQ(resp.per_row_errors(0).row_index(), 0);
  EXPECT_TRUE(StatusFromPB(resp.per_row_errors(0).error()).IsAlreadyPresent());
  EXPECT_EQ(resp.per_row_errors(1).row_index(), 4);
  EXPECT_TRUE(StatusFromPB(resp.per_row_errors(1).error()).IsNotFound());
  EXPECT_EQ(resp.per_row_errors(2).row_index(), 9);
  EXPECT_TRUE(StatusFromPB(resp.per_row_errors(2).error()).IsNotFound());
  EXPECT_EQ(resp.rows_applied(), 5);

  std::vector<Value> v;
  ASSERT_TRUE(GetRow(10, &v));
  ASSERT_TRUE(GetRow(2, &v));
  EXPECT_EQ(v[1].cell().int_value(), -5);                             // updated
  EXPECT_EQ(v[2].cell().slice_value().ToString(), MakeSeedRow(2).b);  // kept
  ASSERT_TRUE(GetRow(0, &v));
  EXPECT_EQ(v[1].cell().int_value(), 1234);                           // merged
  EXPECT_EQ(v[2].cell().slice_value().ToString(), "upserted");        // merged
  EXPECT_EQ(v[3].cell().slice_value().ToString(), MakeSeedRow(0).c);  // kept
  EXPECT_EQ(v[4].cell().int_value(), MakeSeedRow(0).d);               // kept
  ASSERT_TRUE(GetRow(11, &v));
  EXPECT_FALSE(GetRow(1, &v));  // deleted
  EXPECT_FALSE(GetRow(99, &v));

  // A row without its key is a row error; the others in the block still apply.
  WriteRequestPB bad;
  bad.set_tablet_id("t1");
  schema_.ToPB(bad.mutable_schema());
  *bad.mutable_row_operations() = BlockWithoutKey();
  resp = Write(bad);
  ASSERT_FALSE(resp.has_error());
  ASSERT_EQ(resp.per_row_errors_size(), 1);
  EXPECT_TRUE(StatusFromPB(resp.per_row_errors(0).error()).IsInvalidArgument());
  EXPECT_EQ(resp.rows_applied(), 0);
}

TEST_F(TabletTest, DuplicateKeysInOneBlockApplyInOrder) {
  Row first = SeedRowOf(&schema_, MakeSeedRow(5));
  Row upd(&schema_);
  ASSERT_OK(upd.Set(0, Cell::Int64(5)));
  ASSERT_OK(upd.Set(1, Cell::Int32(77)));
  Row del(&schema_);
  ASSERT_OK(del.Set(0, Cell::Int64(5)));
  SeedRow again_r = MakeSeedRow(5);
  again_r.a = 9;
  Row again = SeedRowOf(&schema_, again_r);
  WriteResponsePB resp = WriteOps({{RowOpType::kInsert, &first},
                                   {RowOpType::kUpdate, &upd},
                                   {RowOpType::kDelete, &del},
                                   {RowOpType::kUpdate, &upd},  // 3: NOT_FOUND (deleted)
                                   {RowOpType::kInsert, &again},
                                   {RowOpType::kInsert, &again},  // 5: ALREADY_PRESENT
                                   {RowOpType::kUpdate, &upd}});
  ASSERT_EQ(resp.per_row_errors_size(), 2) << resp.ShortDebugString();
  EXPECT_EQ(resp.per_row_errors(0).row_index(), 3);
  EXPECT_EQ(resp.per_row_errors(1).row_index(), 5);
  std::vector<Value> v;
  ASSERT_TRUE(GetRow(5, &v));
  EXPECT_EQ(v[1].cell().int_value(), 77);  // the last UPDATE applied on the re-insert
}

TEST_F(TabletTest, WholeRequestErrorsWriteNothing) {
  // Schema mismatch: column a declared INT64.
  auto other = Schema::Create(
      {ColumnSchema("key", DataType::kInt64), ColumnSchema("a", DataType::kInt64),
       ColumnSchema("b", DataType::kString), ColumnSchema("c", DataType::kString, true),
       ColumnSchema("d", DataType::kInt32, true)},
      1);
  ASSERT_OK(other.status());
  WriteRequestPB req = MakeSeedWrite("t1", schema_, 0, 10);
  other->ToPB(req.mutable_schema());
  WriteResponsePB resp = Write(req);
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::MISMATCHED_SCHEMA);
  // Truncated block.
  req = MakeSeedWrite("t1", schema_, 0, 10);
  req.mutable_row_operations()->mutable_rows()->resize(req.row_operations().rows().size() - 3);
  resp = Write(req);
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::INVALID_ROW_BLOCK);
  // A string pointing past the indirect data.
  req = MakeSeedWrite("t1", schema_, 0, 10);
  req.mutable_row_operations()->mutable_indirect_data()->resize(10);
  resp = Write(req);
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::INVALID_ROW_BLOCK);
  EXPECT_EQ(resp.rows_applied(), 0);
  std::vector<Value> v;
  for (int k = 0; k < 10; k++) EXPECT_FALSE(GetRow(k, &v)) << k;
}

TEST_F(TabletTest, GetReturnsFoundRowsInRequestOrder) {
  ASSERT_NO_FATAL_FAILURE(InsertSeed(0, 100));
  GetRequestPB req;
  req.set_tablet_id("t1");
  const int64_t keys[] = {50, 1000, 3, 3, 99, -1, 0};
  for (int64_t k : keys) req.add_keys(EncodedKey(schema_, k));
  req.add_projected_columns("c");
  req.add_projected_columns("key");
  GetResponsePB resp;
  std::string rows, indirect;
  T()->Get(req, &resp, &rows, &indirect);
  ASSERT_FALSE(resp.has_error());
  ASSERT_EQ(resp.found_size(), 7);
  const bool want_found[] = {true, false, true, true, true, false, true};
  std::vector<int64_t> want_keys;
  for (int i = 0; i < 7; i++) {
    EXPECT_EQ(resp.found(i), want_found[i]) << i;
    if (want_found[i]) want_keys.push_back(keys[i]);
  }
  auto proj = ProjectionOf(schema_, resp.projection());
  ASSERT_OK(proj.status());
  ASSERT_EQ(proj->num_columns(), 2);
  RowBlock block;
  ASSERT_OK(RowBlock::Parse(&*proj, resp.data().num_rows(), rows, indirect, &block));
  ASSERT_EQ(block.num_rows(), static_cast<int64_t>(want_keys.size()));
  for (size_t i = 0; i < want_keys.size(); i++) {
    EXPECT_EQ(block.cell(i, 1).int_value(), want_keys[i]);
    SeedRow r = MakeSeedRow(want_keys[i]);
    EXPECT_EQ(block.cell(i, 0).is_null(), r.c_null);
    if (!r.c_null) {
      EXPECT_EQ(block.cell(i, 0).slice_value().ToString(), r.c);
    }
  }
  // Unknown projected column.
  req.add_projected_columns("nope");
  resp.Clear();
  T()->Get(req, &resp, &rows, &indirect);
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::MISMATCHED_SCHEMA);
}

// Builds a random predicate on a random column of the seed schema.
ColumnPredicatePB RandomPredicate(std::mt19937_64* rng, int64_t max_key) {
  std::uniform_int_distribution<int> pick(0, 99);
  ColumnPredicatePB pb;
  const char* cols[] = {"key", "a", "b", "c", "d"};
  const int col = pick(*rng) % 5;
  pb.set_column(cols[col]);
  auto value = [&](int c) {
    const int64_t k = pick(*rng) * max_key / 100;
    SeedRow r = MakeSeedRow(k);
    switch (c) {
      case 0:
        return EncodeCellValue(Cell::Int64(k));
      case 1:
        return EncodeCellValue(Cell::Int32(r.a));
      case 2:
        return r.b;
      case 3:
        return r.c;
      default:
        return EncodeCellValue(Cell::Int32(pick(*rng)));
    }
  };
  switch (pick(*rng) % 6) {
    case 0:
      pb.mutable_equality()->set_value(value(col));
      break;
    case 1:
      pb.mutable_range()->set_lower(value(col));
      pb.mutable_range()->set_lower_inclusive(pick(*rng) % 2);
      break;
    case 2:
      pb.mutable_range()->set_upper(value(col));
      pb.mutable_range()->set_upper_inclusive(pick(*rng) % 2);
      break;
    case 3: {
      std::string a = value(col), b = value(col);
      if (b < a && col >= 2 && col <= 3) std::swap(a, b);
      pb.mutable_range()->set_lower(a);
      pb.mutable_range()->set_lower_inclusive(true);
      pb.mutable_range()->set_upper(b);
      break;
    }
    case 4:
      for (int i = 0; i < 1 + pick(*rng) % 4; i++) pb.mutable_in_list()->add_values(value(col));
      break;
    default:
      if (pick(*rng) % 2) {
        pb.mutable_is_null();
      } else {
        pb.mutable_is_not_null();
      }
      break;
  }
  return pb;
}

TEST_F(TabletTest, ScanPredicatesMatchInMemoryFilter) {
  constexpr int64_t kRows = 3000;
  ASSERT_NO_FATAL_FAILURE(InsertSeed(0, kRows));
  // The same rows in memory, as full rows of the schema.
  std::vector<Row> mem;
  std::vector<SeedRow> seeds;
  for (int64_t k = 0; k < kRows; k++) seeds.push_back(MakeSeedRow(k));
  for (const SeedRow& r : seeds) mem.push_back(SeedRowOf(&schema_, r));

  std::mt19937_64 rng(TestRandomSeed());
  for (int iter = 0; iter < 150; iter++) {
    NewScanRequestPB ns;
    std::vector<ColumnPredicate> preds;
    const int num_preds = static_cast<int>(rng() % 3);
    for (int p = 0; p < num_preds; p++) {
      ColumnPredicatePB pb = RandomPredicate(&rng, kRows);
      auto pred = ColumnPredicate::FromPB(pb, schema_);
      ASSERT_OK(pred.status());
      preds.push_back(std::move(pred).value());
      *ns.add_predicates() = pb;
    }
    int64_t start = -1, stop = -1;
    if (rng() % 4 == 0) {
      start = static_cast<int64_t>(rng() % kRows);
      ns.set_start_primary_key(EncodedKey(schema_, start));
    }
    if (rng() % 4 == 0) {
      stop = static_cast<int64_t>(rng() % kRows);
      ns.set_stop_primary_key(EncodedKey(schema_, stop));
    }
    const uint64_t limit = rng() % 5 == 0 ? rng() % 50 : 0;
    ns.set_limit(limit);
    std::vector<int64_t> want;
    for (int64_t k = 0; k < kRows; k++) {
      if (start >= 0 && k < start) continue;
      if (stop >= 0 && k >= stop) continue;
      bool pass = true;
      for (const auto& p : preds) pass = pass && p.Evaluate(mem[k].view());
      if (pass) want.push_back(k);
    }
    if (limit > 0 && want.size() > limit) want.resize(limit);
    std::string desc;
    for (const auto& p : preds) desc += p.ToString() + "; ";
    const uint32_t batch = rng() % 2 ? 0 : 1 + rng() % 4000;
    std::vector<int64_t> got = ScanKeys(ns, batch);
    ASSERT_EQ(got, want) << "iteration " << iter << ": " << desc << " start " << start << " stop "
                         << stop << " limit " << limit << " batch " << batch;
  }
  EXPECT_EQ(scanners_->NumScanners(), 0u);  // finished scans keep nothing
}

TEST_F(TabletTest, ScanKeyPrefixBoundsAndProjection) {
  ASSERT_NO_FATAL_FAILURE(InsertSeed(0, 1000));
  NewScanRequestPB ns;
  auto* p = ns.add_predicates();
  p->set_column("key");
  p->mutable_range()->set_lower(EncodeCellValue(Cell::Int64(100)));
  p->mutable_range()->set_lower_inclusive(true);
  p->mutable_range()->set_upper(EncodeCellValue(Cell::Int64(200)));
  ns.add_projected_columns("key");
  ns.add_projected_columns("d");
  const int64_t before = metrics_->rows_scanned->value();
  std::vector<int64_t> keys = ScanKeys(ns);
  ASSERT_EQ(keys.size(), 100u);
  EXPECT_EQ(keys.front(), 100);
  EXPECT_EQ(keys.back(), 199);
  // The key range became iterator bounds: only those rows were read.
  EXPECT_EQ(metrics_->rows_scanned->value() - before, 100);
}

TEST_F(TabletTest, ScannerSeesItsSnapshotWhileWritesContinue) {
  ASSERT_NO_FATAL_FAILURE(InsertSeed(0, 500));
  std::string rows, indirect;
  ScanResponsePB resp = StartScan(NewScanRequestPB(), 1000, &rows, &indirect);
  ASSERT_TRUE(resp.has_more_results());
  const std::string id = resp.scanner_id();
  int64_t count = resp.data().num_rows();
  // Writes after the scan started: more rows, deletes and updates.
  ASSERT_NO_FATAL_FAILURE(InsertSeed(500, 500));
  std::vector<std::pair<RowOpType, const Row*>> dels;
  std::vector<Row> del_rows;
  del_rows.reserve(100);
  for (int64_t k = 200; k < 300; k++) {
    del_rows.emplace_back(&schema_);
    ASSERT_OK(del_rows.back().Set(0, Cell::Int64(k)));
    dels.emplace_back(RowOpType::kDelete, &del_rows.back());
  }
  ASSERT_EQ(WriteOps(dels).rows_applied(), 100);
  uint32_t seq = 1;
  while (resp.has_more_results()) {
    ScanRequestPB next;
    next.set_scanner_id(id);
    next.set_call_seq_id(seq++);
    next.set_batch_size_bytes(1000);
    resp.Clear();
    scanners_->ContinueScan(next, &resp, &rows, &indirect);
    ASSERT_FALSE(resp.has_error()) << resp.ShortDebugString();
    count += resp.data().num_rows();
  }
  EXPECT_EQ(count, 500);  // exactly the rows of the snapshot
  // A new scan sees the new state.
  EXPECT_EQ(ScanKeys(NewScanRequestPB()).size(), 900u);
}

TEST_F(TabletTest, CallSeqIdRepeatsBatchesAndRejectsOthers) {
  ASSERT_NO_FATAL_FAILURE(InsertSeed(0, 300));
  std::string rows, indirect;
  ScanResponsePB resp = StartScan(NewScanRequestPB(), 2000, &rows, &indirect);
  ASSERT_TRUE(resp.has_more_results());
  const std::string id = resp.scanner_id();
  EXPECT_EQ(scanners_->NumScanners(), 1u);

  auto cont = [&](uint32_t seq, std::string* out_rows) {
    ScanRequestPB next;
    next.set_scanner_id(id);
    next.set_call_seq_id(seq);
    next.set_batch_size_bytes(2000);
    ScanResponsePB r;
    std::string ind;
    scanners_->ContinueScan(next, &r, out_rows, &ind);
    return r;
  };
  std::string b1, b1_again, b2, junk;
  ScanResponsePB r1 = cont(1, &b1);
  ASSERT_FALSE(r1.has_error());
  // The same number again: the same batch again.
  ScanResponsePB r1b = cont(1, &b1_again);
  ASSERT_FALSE(r1b.has_error());
  EXPECT_EQ(b1, b1_again);
  EXPECT_EQ(r1.last_primary_key(), r1b.last_primary_key());
  // Skipping ahead or going back is refused, and the scanner survives it.
  EXPECT_EQ(cont(3, &junk).error().code(), TabletServerErrorPB::INVALID_SCAN_CALL_SEQ_ID);
  EXPECT_EQ(cont(0, &junk).error().code(), TabletServerErrorPB::INVALID_SCAN_CALL_SEQ_ID);
  ScanResponsePB r2 = cont(2, &b2);
  ASSERT_FALSE(r2.has_error());
  EXPECT_NE(b1, b2);
  EXPECT_GT(r2.last_primary_key(), r1.last_primary_key());
  // An id that never existed.
  ScanRequestPB bogus;
  bogus.set_scanner_id("no-such-scanner");
  bogus.set_call_seq_id(1);
  ScanResponsePB br;
  scanners_->ContinueScan(bogus, &br, &rows, &indirect);
  EXPECT_EQ(br.error().code(), TabletServerErrorPB::SCANNER_EXPIRED);
  // Close.
  ScanRequestPB close;
  close.set_scanner_id(id);
  close.set_close_scanner(true);
  ScanResponsePB cr;
  scanners_->ContinueScan(close, &cr, &rows, &indirect);
  EXPECT_FALSE(cr.has_error());
  EXPECT_EQ(scanners_->NumScanners(), 0u);
}

TEST_F(TabletTest, IdleScannersExpire) {
  ASSERT_NO_FATAL_FAILURE(InsertSeed(0, 300));
  const int32_t saved_ttl = FLAGS_scanner_ttl_ms;
  // Set while no reaper thread runs (it reads the flag).
  scanners_.reset();
  FLAGS_scanner_ttl_ms = 50;
  scanners_ = std::make_unique<ScannerManager>(metrics_.get());
  std::string rows, indirect;
  ScanResponsePB resp = StartScan(NewScanRequestPB(), 1000, &rows, &indirect);
  ASSERT_TRUE(resp.has_more_results());
  const std::string id = resp.scanner_id();
  ASSERT_OK(scanners_->KeepAlive(id));
  // The reaper drops it once idle past the TTL.
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] { ASSERT_EQ(scanners_->NumScanners(), 0u); });
  EXPECT_TRUE(scanners_->KeepAlive(id).IsNotFound());
  ScanRequestPB next;
  next.set_scanner_id(id);
  next.set_call_seq_id(1);
  ScanResponsePB r;
  scanners_->ContinueScan(next, &r, &rows, &indirect);
  EXPECT_EQ(r.error().code(), TabletServerErrorPB::SCANNER_EXPIRED);
  EXPECT_GE(metrics_->scanners_expired->value(), 1);
  scanners_.reset();
  FLAGS_scanner_ttl_ms = saved_ttl;
}

TEST_F(TabletTest, CreateIsIdempotentAndConflictsAreRefused) {
  TabletServerErrorPB::Code code;
  ASSERT_OK(mgr_->CreateTablet(MakeCreateTablet("t1", schema_), &code));
  EXPECT_EQ(mgr_->NumTablets(), 1u);
  Status s = mgr_->CreateTablet(MakeCreateTablet("t1", schema_, "another_table"), &code);
  EXPECT_TRUE(s.IsAlreadyPresent()) << s.ToString();
  EXPECT_EQ(code, TabletServerErrorPB::TABLET_ALREADY_EXISTS);
  CreateTabletRequestPB bad = MakeCreateTablet("t2", schema_);
  bad.mutable_schema()->mutable_columns(0)->set_is_nullable(true);  // nullable key
  s = mgr_->CreateTablet(bad, &code);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(code, TabletServerErrorPB::INVALID_SCHEMA);
  EXPECT_EQ(mgr_->NumTablets(), 1u);
}

TEST_F(TabletTest, DeleteTabletRemovesOnlyItsRows) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t2"));
  ASSERT_NO_FATAL_FAILURE(InsertSeed(0, 200, "t1"));
  ASSERT_NO_FATAL_FAILURE(InsertSeed(0, 200, "t2"));
  std::shared_ptr<Tablet> t1 = T("t1");
  const uint64_t seq1 = t1->seq();
  TabletStore* store = t1->store();
  ASSERT_NE(store->Rows(seq1), nullptr);
  ASSERT_OK(mgr_->DeleteTablet("t1"));
  EXPECT_EQ(store->Rows(seq1), nullptr);  // the rows family is dropped
  EXPECT_EQ(mgr_->Lookup("t1"), nullptr);
  EXPECT_TRUE(mgr_->DeleteTablet("t1").IsNotFound());
  // A write through a pointer taken before the delete is refused.
  WriteResponsePB resp;
  t1->Write(MakeSeedWrite("t1", schema_, 1000, 1), &resp);
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::TABLET_NOT_FOUND);
  t1.reset();
  std::vector<Value> v;
  EXPECT_TRUE(GetRow(7, &v, "t2"));
  // Re-created under the same id: a new, empty tablet with a new seq.
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  EXPECT_NE(T("t1")->seq(), seq1);
  EXPECT_FALSE(GetRow(7, &v, "t1"));
  // The report shows the delete, then the creation.
  master::TabletReportPB report;
  mgr_->BuildReport(false, 0, &report);
  EXPECT_EQ(report.updated_tablets_size(), 2);
}

TEST_F(TabletTest, AScanOpenAcrossADeleteReadsItsSnapshotToTheEnd) {
  // The scan holds the tablet, and so its rows family, which the delete drops: the
  // scan still reads every row of its snapshot, and ending it frees the family.
  ASSERT_NO_FATAL_FAILURE(InsertSeed(0, 300));
  ASSERT_OK(T()->store()->Flush());
  TabletStore* store = T()->store();
  std::string rows, indirect;
  ScanResponsePB resp = StartScan(NewScanRequestPB(), 2000, &rows, &indirect);
  ASSERT_FALSE(resp.has_error()) << resp.ShortDebugString();
  ASSERT_TRUE(resp.has_more_results());
  int64_t total = resp.data().num_rows();
  const std::string id = resp.scanner_id();
  const uint64_t seq = T()->seq();
  ASSERT_OK(mgr_->DeleteTablet("t1"));
  EXPECT_EQ(store->Rows(seq), nullptr);
  for (uint32_t call = 1; resp.has_more_results() && call < 1000; call++) {
    ScanRequestPB next;
    next.set_scanner_id(id);
    next.set_call_seq_id(call);
    next.set_batch_size_bytes(2000);
    resp.Clear();
    scanners_->ContinueScan(next, &resp, &rows, &indirect);
    ASSERT_FALSE(resp.has_error()) << resp.ShortDebugString();
    total += resp.data().num_rows();
  }
  EXPECT_EQ(total, 300);
  EXPECT_EQ(scanners_->NumScanners(), 0u);  // the scan ended: nothing holds the family
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t2"));
  ASSERT_NO_FATAL_FAILURE(InsertSeed(0, 10, "t2"));
}

TEST_F(TabletTest, RestartKeepsTabletsAndRows) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t2"));
  ASSERT_NO_FATAL_FAILURE(InsertSeed(0, 1000, "t1"));
  ASSERT_NO_FATAL_FAILURE(InsertSeed(5, 10, "t2"));
  const uint64_t seq2 = T("t2")->seq();
  // Leave a tombstone for t2, as if a delete crashed before dropping the rows.
  TabletMetadataPB tomb = T("t2")->metadata();
  tomb.set_state(TABLET_DATA_DELETED);
  ASSERT_OK(T("t2")->store()->PutTabletMetadata(tomb));
  ASSERT_NO_FATAL_FAILURE(OpenManager());
  EXPECT_EQ(mgr_->NumTablets(), 1u);
  EXPECT_EQ(mgr_->Lookup("t2"), nullptr);            // the delete was finished
  EXPECT_EQ(T("t1")->store()->Rows(seq2), nullptr);  // with its rows family
  EXPECT_EQ(ScanKeys(NewScanRequestPB()).size(), 1000u);
  std::vector<Value> v;
  ASSERT_TRUE(GetRow(999, &v));
  // Seqs are never reused.
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t3"));
  EXPECT_GT(T("t3")->seq(), seq2);
}

TEST_F(TabletTest, ConcurrentCreatesAndDeletesAreGroupedAndDurable) {
  // Creates (and deletes) that arrive together are written together, one synced
  // metadata write per batch: each tablet still gets a seq of its own, is there after
  // a restart, and each delete is finished.
  constexpr int kThreads = 8, kPerThread = 16, kTablets = kThreads * kPerThread;
  auto id = [](int i) { return "c" + std::to_string(i); };
  auto in_parallel = [&](const std::function<Status(int)>& fn) {
    std::atomic<int> failed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
      threads.emplace_back([&, t] {
        for (int i = t * kPerThread; i < (t + 1) * kPerThread; i++) {
          Status s = fn(i);
          if (!s.ok()) {
            failed++;
            ADD_FAILURE() << id(i) << ": " << s.ToString();
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    return failed.load();
  };
  EXPECT_EQ(0, in_parallel([&](int i) {
              TabletServerErrorPB::Code code;
              return mgr_->CreateTablet(MakeCreateTablet(id(i), schema_), &code);
            }));
  ASSERT_EQ(mgr_->NumTablets(), 1u + kTablets);
  std::map<std::string, uint64_t> seqs;
  std::set<uint64_t> distinct = {T("t1")->seq()};
  for (int i = 0; i < kTablets; i++) {
    seqs[id(i)] = T(id(i))->seq();
    distinct.insert(seqs[id(i)]);
  }
  EXPECT_EQ(distinct.size(), 1u + kTablets);
  // The same creates again: identical, so nothing to do.
  EXPECT_EQ(0, in_parallel([&](int i) {
              TabletServerErrorPB::Code code;
              return mgr_->CreateTablet(MakeCreateTablet(id(i), schema_), &code);
            }));
  ASSERT_NO_FATAL_FAILURE(InsertSeed(0, 10, id(5)));
  ASSERT_NO_FATAL_FAILURE(OpenManager());  // a restart
  ASSERT_EQ(mgr_->NumTablets(), 1u + kTablets);
  for (int i = 0; i < kTablets; i++) EXPECT_EQ(T(id(i))->seq(), seqs[id(i)]) << id(i);
  std::vector<Value> v;
  EXPECT_TRUE(GetRow(5, &v, id(5)));
  // Delete the even ones, concurrently; a second delete of one is NotFound.
  EXPECT_EQ(0, in_parallel([&](int i) {
              return i % 2 ? Status::OK() : mgr_->DeleteTablet(id(i));
            }));
  EXPECT_TRUE(mgr_->DeleteTablet(id(0)).IsNotFound());
  TabletStore* store = T("t1")->store();
  for (int i = 0; i < kTablets; i += 2) EXPECT_EQ(store->Rows(seqs[id(i)]), nullptr) << id(i);
  ASSERT_NO_FATAL_FAILURE(OpenManager());
  EXPECT_EQ(mgr_->NumTablets(), 1u + kTablets / 2);
  for (int i = 0; i < kTablets; i++) EXPECT_EQ(mgr_->Lookup(id(i)) == nullptr, i % 2 == 0) << id(i);
  EXPECT_TRUE(GetRow(5, &v, id(5)));
  // Seqs are never reused.
  ASSERT_NO_FATAL_FAILURE(CreateTablet("after"));
  EXPECT_GT(T("after")->seq(), *distinct.rbegin());
}

TEST_F(TabletTest, GetWithoutBlockingDeclinesOnlyWhenItNeedsTheDisk) {
  ASSERT_NO_FATAL_FAILURE(InsertSeed(0, 100));
  GetRequestPB req;
  req.set_tablet_id("t1");
  req.add_keys(EncodedKey(schema_, 42));
  auto try_get = [&](GetResponsePB* resp) {
    std::string rows, indirect;
    return T()->TryGetWithoutBlocking(req, resp, &rows, &indirect);
  };
  GetResponsePB resp;
  ASSERT_TRUE(try_get(&resp));  // in the memtable
  ASSERT_EQ(resp.found_size(), 1);
  EXPECT_TRUE(resp.found(0));
  // Flushed, then restarted: the row is in an SST file whose blocks are not cached.
  ASSERT_OK(T()->store()->Flush());
  ASSERT_NO_FATAL_FAILURE(OpenManager());
  resp.Clear();
  EXPECT_FALSE(try_get(&resp));
  EXPECT_EQ(resp.found_size(), 0);
  std::vector<Value> v;
  ASSERT_TRUE(GetRow(42, &v));  // the blocking Get reads it, and caches its block
  resp.Clear();
  ASSERT_TRUE(try_get(&resp));
  EXPECT_TRUE(resp.found(0));
  EXPECT_EQ(resp.data().num_rows(), 1);
}

TEST_F(TabletTest, KeysAboveTheLargestStoredKeyAreReadOnlyWhenTheyMightExist) {
  // Keys above every stored key skip their existence read (the tablet's key bound);
  // whatever is at or below the bound is still read, also after a restart.
  auto applied_and_errors = [&](int64_t first, int64_t n) {
    WriteResponsePB r = Write(MakeSeedWrite("t1", schema_, first, n));
    EXPECT_FALSE(r.has_error()) << r.ShortDebugString();
    return std::make_pair(r.rows_applied(), r.per_row_errors_size());
  };
  ASSERT_NO_FATAL_FAILURE(InsertSeed(100, 10));  // 100..109
  EXPECT_EQ(applied_and_errors(109, 1), std::make_pair(int64_t{0}, 1));
  EXPECT_EQ(applied_and_errors(100, 1), std::make_pair(int64_t{0}, 1));
  EXPECT_EQ(applied_and_errors(50, 10), std::make_pair(int64_t{10}, 0));  // below: absent
  EXPECT_EQ(applied_and_errors(105, 10), std::make_pair(int64_t{5}, 5));  // 105..109 exist
  Row update_above(&schema_);
  ASSERT_OK(update_above.Set(0, Cell::Int64(500)));
  ASSERT_OK(update_above.Set(1, Cell::Int32(1)));
  WriteResponsePB r = WriteOps({{RowOpType::kUpdate, &update_above}});
  ASSERT_EQ(r.per_row_errors_size(), 1);
  EXPECT_TRUE(StatusFromPB(r.per_row_errors(0).error()).IsNotFound());
  // Deleting the largest row keeps the bound; inserting it again works once.
  Row del(&schema_);
  ASSERT_OK(del.Set(0, Cell::Int64(114)));
  r = WriteOps({{RowOpType::kDelete, &del}});
  EXPECT_EQ(r.rows_applied(), 1);
  EXPECT_EQ(applied_and_errors(114, 1), std::make_pair(int64_t{1}, 0));
  EXPECT_EQ(applied_and_errors(114, 1), std::make_pair(int64_t{0}, 1));
  // After a restart the bound is the last stored key.
  ASSERT_NO_FATAL_FAILURE(OpenManager());
  EXPECT_EQ(applied_and_errors(114, 1), std::make_pair(int64_t{0}, 1));
  EXPECT_EQ(applied_and_errors(113, 3), std::make_pair(int64_t{1}, 2));  // 115 is new
  std::vector<Value> v;
  EXPECT_TRUE(GetRow(115, &v));
}

TEST_F(TabletTest, ConcurrentInsertsOfTheSameKeysSucceedOnce) {
  constexpr int kThreads = 4, kKeys = 200;
  std::atomic<int> applied{0}, already{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&] {
      for (int k = 0; k < kKeys; k += 10) {
        WriteResponsePB resp = Write(MakeSeedWrite("t1", schema_, k, 10));
        applied += static_cast<int>(resp.rows_applied());
        already += resp.per_row_errors_size();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(applied.load(), kKeys);
  EXPECT_EQ(already.load(), kKeys * (kThreads - 1));
}

TEST_F(TabletTest, RetryAfterRestartGetsTheStoredResponse) {
  const rpc::RequestIdPB id = RequestId("client-a", 1, 1);
  const WriteRequestPB req = MakeSeedWrite("t1", schema_, 0, 10);
  RequestTracker* tracker = server_->tracker();  // the one the manager's applies tell
  WriteResponsePB first = TrackedWrite(tracker, id, req);
  ASSERT_FALSE(first.has_error()) << first.ShortDebugString();
  ASSERT_EQ(first.rows_applied(), 10);

  // Restart: a new store and a tracker that knows only what the store kept (the
  // manager loads the records into it).
  tracker = NewTracker();
  ASSERT_NO_FATAL_FAILURE(OpenManager(tracker));
  EXPECT_EQ(tracker->NumResponsesForTests(), 1u);
  WriteResponsePB retry;
  ASSERT_EQ(tracker->Begin(id, &retry, nullptr), RequestTracker::Outcome::kAnswered);
  EXPECT_EQ(retry.rows_applied(), 10);
  EXPECT_EQ(retry.per_row_errors_size(), 0);  // not ALREADY_PRESENT
  EXPECT_EQ(retry.SerializeAsString(), first.SerializeAsString());
  // The rows were written once, and the record is invisible to scans and gets.
  EXPECT_EQ(ScanKeys(NewScanRequestPB()), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  std::vector<Value> v;
  EXPECT_FALSE(GetRow(10, &v));

  // A response with row errors is stored as it was, too.
  const rpc::RequestIdPB id2 = RequestId("client-a", 2, 2);
  WriteResponsePB dup = TrackedWrite(tracker, id2, MakeSeedWrite("t1", schema_, 8, 4));
  ASSERT_EQ(dup.rows_applied(), 2);
  ASSERT_EQ(dup.per_row_errors_size(), 2);
  tracker = NewTracker();
  ASSERT_NO_FATAL_FAILURE(OpenManager(tracker));
  ASSERT_EQ(tracker->Begin(id2, &retry, nullptr), RequestTracker::Outcome::kAnswered);
  EXPECT_EQ(retry.SerializeAsString(), dup.SerializeAsString());
  // Request 1 was below client-a's first incomplete number: forgotten, its record gone.
  EXPECT_EQ(tracker->Begin(id, &retry, nullptr), RequestTracker::Outcome::kStale);
  EXPECT_EQ(StoredRequests(), std::vector<std::string>{"client-a/2"});
  EXPECT_EQ(ScanKeys(NewScanRequestPB()).size(), 12u);
}

TEST_F(TabletTest, RequestRecordsAreCollected) {
  RequestTracker& tracker = *server_->tracker();  // the one the manager's applies tell
  for (int64_t seq = 1; seq <= 3; seq++) {
    // The client has the answers below `seq`.
    WriteResponsePB r =
        TrackedWrite(&tracker, RequestId("c", seq, seq), MakeSeedWrite("t1", schema_, seq * 10, 1));
    ASSERT_EQ(r.rows_applied(), 1);
  }
  // Each write took the deletion its Begin() queued: only the last record is left.
  EXPECT_EQ(StoredRequests(), std::vector<std::string>{"c/3"});
  EXPECT_EQ(mgr_->stores()[0]->NumQueuedRequestRecordDeletesForTests(), 0u);

  // A record older than --write_dedup_ttl_ms (as if written long before a restart)
  // is not restored, and deleted.
  TabletStore* store = mgr_->stores()[0].get();
  std::string key, value;
  AppendRequestRecordKey(T()->seq(), "old-client", 5, &key);
  AppendRequestRecordHeader(GetWallTimeMicros() - 2000LL * FLAGS_write_dedup_ttl_ms, 5, &value);
  WriteResponsePB old_resp;
  old_resp.set_rows_applied(1);
  old_resp.AppendToString(&value);
  StoreWriteBatch batch;
  store->PutRequestRecord(&batch, key, value);
  ASSERT_OK(store->Write(&batch));
  EXPECT_EQ(StoredRequests(), (std::vector<std::string>{"c/3", "old-client/5"}));
  RequestTracker& restarted = *NewTracker();
  ASSERT_NO_FATAL_FAILURE(OpenManager(&restarted));
  EXPECT_EQ(StoredRequests(), std::vector<std::string>{"c/3"});
  EXPECT_EQ(restarted.NumClientsForTests(), 1u);
  WriteResponsePB resp;
  EXPECT_EQ(restarted.Begin(RequestId("old-client", 5, 5), &resp, nullptr),
            RequestTracker::Outcome::kNew);
}

TEST_F(TabletTest, DeletingATabletDeletesItsRequestRecords) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t2"));
  RequestTracker& tracker = *server_->tracker();  // the one the manager's applies tell
  WriteResponsePB r1 =
      TrackedWrite(&tracker, RequestId("c", 1, 1), MakeSeedWrite("t1", schema_, 0, 5));
  WriteResponsePB r2 =
      TrackedWrite(&tracker, RequestId("c", 2, 1), MakeSeedWrite("t2", schema_, 0, 5));
  ASSERT_EQ(r1.rows_applied() + r2.rows_applied(), 10);
  EXPECT_EQ(StoredRequests().size(), 2u);
  ASSERT_OK(mgr_->DeleteTablet("t1"));
  EXPECT_EQ(StoredRequests(), std::vector<std::string>{"c/2"});
  // A response of row errors only is stored; a whole-request failure is not (a
  // retry runs again).
  WriteResponsePB dup =
      TrackedWrite(&tracker, RequestId("c", 3, 1), MakeSeedWrite("t2", schema_, 0, 1));
  ASSERT_EQ(dup.rows_applied(), 0);
  ASSERT_EQ(dup.per_row_errors_size(), 1);
  WriteRequestPB bad = MakeSeedWrite("t2", schema_, 100, 1);
  bad.mutable_schema()->mutable_columns(1)->set_type(nyala::STRING);
  WriteResponsePB refused = TrackedWrite(&tracker, RequestId("c", 4, 1), bad);
  EXPECT_EQ(refused.error().code(), TabletServerErrorPB::MISMATCHED_SCHEMA);
  EXPECT_EQ(StoredRequests(), (std::vector<std::string>{"c/2", "c/3"}));
  WriteResponsePB resp;
  EXPECT_EQ(tracker.Begin(RequestId("c", 4, 1), &resp, nullptr), RequestTracker::Outcome::kNew);
}

}  // namespace
}  // namespace nyala::tserver
