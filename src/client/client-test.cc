// Client unit tests against a fake master and a fake tablet server on loopback:
// row building and type checks, the meta cache (prefetch, expiry, invalidation,
// merged lookups), batching per tablet, flush modes and write retries.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "client/client-internal.h"
#include "client/error_collector.h"
#include "client/fake_cluster_test_util.h"
#include "client/latch.h"
#include "client/session.h"
#include "client/write_errors_test_util.h"
#include "common/status.h"
#include "common/test_util.h"
#include "nyala/client.h"

namespace nyala::client {
namespace {

using internal::LookupMode;
using internal::TabletPtr;

class ClientTest : public NyalaTest {
 protected:
  void SetUp() override {
    NyalaTest::SetUp();
    // (key INT64, v STRING NULLABLE, n INT32), hash-partitioned into 4 buckets by key.
    auto schema = SchemaBuilder()
                      .AddKeyColumn("key", DataType::kInt64)
                      .AddColumn("v", DataType::kString, /*nullable=*/true)
                      .AddColumn("n", DataType::kInt32, false, Value(Cell::Int32(7)))
                      .Build();
    ASSERT_OK(schema.status());
    table_.schema = *schema;
    auto ps = PartitionSchema::Create(table_.schema, {HashDimension{{"key"}, kBuckets, 0}}, {});
    ASSERT_OK(ps.status());
    table_.partition_schema = *ps;
    auto parts = ps->CreatePartitions(std::vector<std::string>{},
                                      std::vector<std::pair<std::string, std::string>>{});
    ASSERT_OK(parts.status());
    table_.partitions = *parts;

    rpc::MessengerOptions opts;
    opts.name = "fake";
    opts.num_reactors = 1;
    auto m = rpc::Messenger::Create(opts);
    ASSERT_OK(m.status());
    server_ = *m;
    auto master = std::make_unique<test::FakeMasterService>(&table_, &ts_addr_);
    auto ts = std::make_unique<test::FakeTabletService>(&table_);
    master_ = master.get();
    ts_ = ts.get();
    ASSERT_OK(server_->RegisterService(std::move(master), 2, 100));
    ASSERT_OK(server_->RegisterService(std::move(ts), 4, 100));
    ASSERT_OK(server_->AddListener(rpc::Sockaddr::Loopback(0), &addr_));
    ts_addr_ = addr_;

    auto c = ClientBuilder()
                 .add_master_server_addr(addr_.ToString())
                 .default_rpc_timeout(MonoDelta::FromSeconds(10))
                 .Build();
    ASSERT_OK(c.status());
    client_ = *c;
    auto t = client_->OpenTable("t");
    ASSERT_OK(t.status());
    table = *t;
  }
  void TearDown() override {
    table.reset();
    client_.reset();
    if (server_) server_->Shutdown();
    NyalaTest::TearDown();
  }

  std::unique_ptr<WriteOperation> Insert(int64_t key) {
    auto op = table->NewInsert();
    CHECK_OK(op->Set("key", Cell::Int64(key)));
    CHECK_OK(op->Set("v", Cell::String("value-" + std::to_string(key))));
    return op;
  }
  internal::MetaCache* cache() { return internal::DataOf(*client_)->meta_cache(); }
  std::string PartitionKeyOf(int64_t key) {
    Row row = table->NewRow();
    CHECK_OK(row.Set("key", Cell::Int64(key)));
    std::string pk;
    CHECK_OK(table->partition_schema().EncodePartitionKey(row, &pk));
    return pk;
  }
  int TotalRows() {
    MutexLock l(ts_->mu);
    int n = 0;
    for (auto& [t, r] : ts_->rows_per_tablet) n += r;
    return n;
  }

  static constexpr int kBuckets = 4;
  test::FakeTable table_;
  rpc::Sockaddr addr_, ts_addr_;
  std::shared_ptr<rpc::Messenger> server_;
  test::FakeMasterService* master_ = nullptr;
  test::FakeTabletService* ts_ = nullptr;
  std::shared_ptr<Client> client_;
  std::shared_ptr<Table> table;
};

TEST_F(ClientTest, SchemaBuilderRejectsKeyAfterValue) {
  auto s =
      SchemaBuilder().AddColumn("v", DataType::kInt32).AddKeyColumn("k", DataType::kInt64).Build();
  EXPECT_TRUE(s.status().IsInvalidArgument()) << s.status().ToString();
  EXPECT_TRUE(
      SchemaBuilder().AddColumn("v", DataType::kInt32).Build().status().IsInvalidArgument());
}

TEST_F(ClientTest, OpenTableUnknownIsNotFound) {
  auto t = client_->OpenTable("nope");
  EXPECT_TRUE(t.status().IsNotFound()) << t.status().ToString();
}

TEST_F(ClientTest, SetChecksTypesAtSetTime) {
  auto op = table->NewInsert();
  EXPECT_TRUE(op->Set("key", Cell::Int32(1)).IsInvalidArgument());  // INT64 column
  EXPECT_FALSE(op->Set("nope", Cell::Int64(1)).ok());               // unknown column
  EXPECT_FALSE(op->Set(17, Cell::Int64(1)).ok());                   // bad index
  EXPECT_TRUE(op->SetNull("n").IsInvalidArgument());                // NOT NULL column
  EXPECT_OK(op->SetNull("v"));
  EXPECT_OK(op->Set(0, Cell::Int64(5)));
  EXPECT_EQ(op->row().cell(0).int_value(), 5);
}

TEST_F(ClientTest, SnapshotScansAreRefused) {
  Scanner scanner(table);
  EXPECT_TRUE(scanner.SetReadMode(Scanner::ReadMode::kReadAtSnapshot).IsNotSupported());
  EXPECT_OK(scanner.SetReadMode(Scanner::ReadMode::kReadLatest));
}

TEST_F(ClientTest, PredicatesAreTypeChecked) {
  EXPECT_TRUE(
      table->NewComparisonPredicate("key", ColumnPredicate::CompareOp::kEqual, Cell::String("x"))
          .status()
          .IsInvalidArgument());
  EXPECT_FALSE(table->NewIsNullPredicate("missing").ok());
  EXPECT_OK(table->NewInListPredicate("n", {Cell::Int32(1), Cell::Int32(2)}).status());
  EXPECT_TRUE(table->NewInListPredicate("n", {Cell::Int64(1)}).status().IsInvalidArgument());
  EXPECT_OK(table->NewIsNotNullPredicate("v").status());
}

TEST_F(ClientTest, ApplyRejectsIncompleteRows) {
  auto session = client_->NewSession();
  auto op = table->NewInsert();  // no key
  EXPECT_TRUE(session->Apply(std::move(op)).IsInvalidArgument());
  auto upd = table->NewUpdate();  // key only: nothing to update
  ASSERT_OK(upd->Set("key", Cell::Int64(1)));
  EXPECT_TRUE(session->Apply(std::move(upd)).IsInvalidArgument());
  auto del = table->NewDelete();  // a delete carries the key only
  ASSERT_OK(del->Set("key", Cell::Int64(1)));
  ASSERT_OK(del->Set("n", Cell::Int32(1)));
  EXPECT_TRUE(session->Apply(std::move(del)).IsInvalidArgument());
  EXPECT_EQ(ts_->write_calls.load(), 0);
}

TEST_F(ClientTest, MetaCachePrefetchesFollowingTablets) {
  const MonoTime deadline = MonoTime::Now() + MonoDelta::FromSeconds(10);
  auto first = cache()->LookupTabletSync(table->id(), "", deadline, LookupMode::kExact);
  ASSERT_OK(first.status());
  EXPECT_EQ((*first)->tablet_id, "tablet-0");
  EXPECT_EQ(master_->locations_calls.load(), 1);
  for (int k = 0; k < 100; k++) {
    auto t =
        cache()->LookupTabletSync(table->id(), PartitionKeyOf(k), deadline, LookupMode::kExact);
    ASSERT_OK(t.status());
    EXPECT_TRUE((*t)->partition.ContainsPartitionKey(PartitionKeyOf(k)));
  }
  EXPECT_EQ(master_->locations_calls.load(), 1);  // all 4 tablets came with the first answer
}

TEST_F(ClientTest, MetaCacheInvalidationAsksMasterAgain) {
  const MonoTime deadline = MonoTime::Now() + MonoDelta::FromSeconds(10);
  auto t = cache()->LookupTabletSync(table->id(), PartitionKeyOf(1), deadline, LookupMode::kExact);
  ASSERT_OK(t.status());
  const int before = master_->locations_calls.load();
  cache()->InvalidateTablet(table->id(), (*t)->tablet_id);
  EXPECT_EQ(cache()->LookupFast(table->id(), PartitionKeyOf(1)), nullptr);
  ASSERT_OK(cache()
                ->LookupTabletSync(table->id(), PartitionKeyOf(1), deadline, LookupMode::kExact)
                .status());
  EXPECT_EQ(master_->locations_calls.load(), before + 1);
  // Other tablets stayed cached.
  const std::string other = (*t)->tablet_id == "tablet-3" ? "tablet-0" : "tablet-3";
  EXPECT_NE(
      cache()->LookupFast(table->id(), table_.partitions[other.back() - '0'].partition_key_start),
      nullptr);
}

TEST_F(ClientTest, MetaCacheEntriesExpireOnMasterTtl) {
  master_->ttl_ms = 20;
  const MonoTime deadline = MonoTime::Now() + MonoDelta::FromSeconds(10);
  ASSERT_OK(cache()->LookupTabletSync(table->id(), "", deadline, LookupMode::kExact).status());
  EXPECT_NE(cache()->LookupFast(table->id(), ""), nullptr);
  // Once the TTL passes, the entry is no longer used.
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(5),
                    [&] { ASSERT_EQ(cache()->LookupFast(table->id(), ""), nullptr); });
  master_->ttl_ms = 300000;
  ASSERT_OK(cache()->LookupTabletSync(table->id(), "", deadline, LookupMode::kExact).status());
  EXPECT_EQ(master_->locations_calls.load(), 2);
}

TEST_F(ClientTest, ConcurrentLookupsOfOneRangeAreMerged) {
  master_->locations_gate.Close();
  const MonoTime deadline = MonoTime::Now() + MonoDelta::FromSeconds(10);
  constexpr int kLookups = 50;
  internal::CountDownLatch done(kLookups);
  std::atomic<int> ok{0};
  // The first lookup, for the smallest key, is in flight; the rest wait for it.
  cache()->LookupTablet(table->id(), "", deadline, LookupMode::kExact, [&](Result<TabletPtr> r) {
    ok += r.ok();
    done.CountDown();
  });
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(5),
                    [&] { ASSERT_EQ(master_->locations_calls.load(), 1); });
  for (int i = 1; i < kLookups; i++) {
    cache()->LookupTablet(table->id(), PartitionKeyOf(i), deadline, LookupMode::kExact,
                          [&](Result<TabletPtr> r) {
                            ok += r.ok();
                            done.CountDown();
                          });
  }
  master_->locations_gate.Open();
  done.Wait();
  EXPECT_EQ(ok.load(), kLookups);
  EXPECT_EQ(master_->locations_calls.load(), 1);
}

TEST_F(ClientTest, ManualFlushSendsOneWritePerTablet) {
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kManualFlush));
  constexpr int kRows = 1000;
  for (int i = 0; i < kRows; i++) ASSERT_OK(session->Apply(Insert(i)));
  EXPECT_EQ(ts_->write_calls.load(), 0);
  EXPECT_EQ(session->CountBufferedOperations(), kRows);
  ASSERT_OK(session->Flush());
  EXPECT_EQ(ts_->write_calls.load(), kBuckets);
  MutexLock l(ts_->mu);
  ASSERT_EQ(ts_->rpcs_per_tablet.size(), size_t(kBuckets));
  int total = 0;
  for (auto& [t, n] : ts_->rpcs_per_tablet) EXPECT_EQ(n, 1) << t;
  for (auto& [t, n] : ts_->rows_per_tablet) total += n;
  EXPECT_EQ(total, kRows);
}

TEST_F(ClientTest, ManualFlushBufferFullIsAnError) {
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kManualFlush));
  ASSERT_OK(session->SetMutationBufferSpace(1000));
  Status s;
  int applied = 0;
  for (int i = 0; i < 1000 && s.ok(); i++) {
    s = session->Apply(Insert(i));
    applied += s.ok();
  }
  EXPECT_TRUE(s.IsIncomplete()) << s.ToString();
  EXPECT_GT(applied, 5);
  ASSERT_OK(session->Flush());
  EXPECT_EQ(TotalRows(), applied);
}

TEST_F(ClientTest, SyncModeReturnsRowErrors) {
  auto session = client_->NewSession();
  ASSERT_OK(session->Apply(Insert(1)));
  Status s = session->Apply(Insert(1));
  EXPECT_TRUE(s.IsAlreadyPresent()) << s.ToString();
  ASSERT_EQ(session->CountPendingErrors(), 1);
  std::vector<std::unique_ptr<WriteError>> errors;
  bool overflowed = true;
  session->GetPendingErrors(&errors, &overflowed);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_FALSE(overflowed);
  EXPECT_TRUE(errors[0]->status().IsAlreadyPresent());
  EXPECT_EQ(errors[0]->failed_op().row().cell(0).int_value(), 1);
}

TEST_F(ClientTest, BackgroundRowErrorsHoldTheAppliedOperation) {
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kAutoFlushBackground));
  for (int i = 0; i < 100; i++) ASSERT_OK(session->Apply(Insert(i)));
  ASSERT_OK(session->Flush());
  for (int i = 0; i < 10; i++) ASSERT_OK(session->Apply(Insert(i)));  // duplicates
  EXPECT_TRUE(session->Flush().IsIOError());
  std::vector<std::unique_ptr<WriteError>> errors;
  bool overflowed = true;
  session->GetPendingErrors(&errors, &overflowed);
  EXPECT_FALSE(overflowed);
  ASSERT_EQ(errors.size(), 10u);
  std::set<int64_t> failed;
  for (const auto& e : errors) {
    EXPECT_TRUE(e->status().IsAlreadyPresent()) << e->status().ToString();
    const WriteOperation& op = e->failed_op();
    EXPECT_EQ(op.type(), RowOpType::kInsert);
    EXPECT_EQ(&op.table(), table.get());
    const int64_t key = op.row().cell(0).int_value();
    failed.insert(key);
    EXPECT_EQ(op.row().cell(1).slice_value().ToString(), "value-" + std::to_string(key));
    EXPECT_FALSE(op.row().IsSet(2));  // n was not set: it stays unset
  }
  EXPECT_EQ(failed.size(), 10u);
  EXPECT_EQ(*failed.begin(), 0);
  EXPECT_EQ(*failed.rbegin(), 9);
}

// A load whose duplicates sit at known input lines (key base+i at line i+2, after a
// header; keys base, base+2, ..., base+18 exist already): each error carries the tag
// (line) of its own operation and only the duplicates fail, in every flush mode,
// whether the batch encoded its rows at Apply (tablets cached) or kept them for a
// lookup at flush time (a fresh client). The session counts every outcome.
TEST_F(ClientTest, RowErrorsCarryTheTagOfTheirOperationInEveryFlushMode) {
  using Mode = Session::FlushMode;
  int64_t base = 0;
  for (Mode mode : {Mode::kAutoFlushSync, Mode::kAutoFlushBackground, Mode::kManualFlush}) {
    for (bool fresh_client : {false, true}) {
      SCOPED_TRACE("flush mode " + std::to_string(int(mode)) +
                   (fresh_client ? ", fresh client" : ", tablets cached"));
      {
        auto session = client_->NewSession();
        ASSERT_OK(session->SetFlushMode(Mode::kManualFlush));
        for (int i = 0; i < 20; i += 2) ASSERT_OK(session->Apply(Insert(base + i)));
        ASSERT_OK(session->Flush());
      }
      std::shared_ptr<Client> c = client_;
      if (fresh_client) {
        auto built = ClientBuilder().add_master_server_addr(addr_.ToString()).Build();
        ASSERT_OK(built.status());
        c = *built;
      }
      auto t = c->OpenTable("t");
      ASSERT_OK(t.status());
      auto session = c->NewSession();
      ASSERT_OK(session->SetFlushMode(mode));
      for (int i = 0; i < 20; i++) {
        auto op = (*t)->NewInsert();
        ASSERT_OK(op->Set("key", Cell::Int64(base + i)));
        op->set_tag(i + 2);
        Status s = session->Apply(std::move(op));
        if (mode == Mode::kAutoFlushSync) {
          EXPECT_EQ(s.IsAlreadyPresent(), i % 2 == 0) << i << ": " << s.ToString();
        } else {
          ASSERT_OK(s);
        }
      }
      Status flushed = session->Flush();
      if (mode == Mode::kAutoFlushSync) {
        EXPECT_OK(flushed);  // nothing was buffered
      } else {
        EXPECT_TRUE(flushed.IsIOError()) << flushed.ToString();
      }
      ExpectDuplicatesAtEvenLines(session.get(), base);
      base += 100;
    }
  }
}

// The counts include the errors the collector had no room for.
TEST_F(ClientTest, WriteCountsIncludeErrorsTheCollectorDropped) {
  constexpr int kRows = int(internal::ErrorCollector::kMaxErrors) + 5;
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kManualFlush));
  for (int i = 0; i < kRows; i++) ASSERT_OK(session->Apply(Insert(i)));
  ASSERT_OK(session->Flush());
  for (int i = 0; i < kRows + 7; i++) ASSERT_OK(session->Apply(Insert(i)));  // 7 new keys
  EXPECT_TRUE(session->Flush().IsIOError());
  EXPECT_EQ(session->CountPendingErrors(), int(internal::ErrorCollector::kMaxErrors));
  std::vector<std::unique_ptr<WriteError>> errors;
  bool overflowed = false;
  session->GetPendingErrors(&errors, &overflowed);
  EXPECT_TRUE(overflowed);
  const Session::WriteCounts counts = session->GetWriteCounts();
  EXPECT_EQ(counts.succeeded, kRows + 7);
  EXPECT_EQ(counts.failed, kRows);
  EXPECT_EQ(counts.timed_out, 0);
  EXPECT_EQ(TotalRows(), 2 * kRows + 7);  // every row reached the fake server
}

// A batch that times out fails every row with TimedOut (outcome unknown): each error
// keeps its operation's tag, and the rows are counted as timed out, not as failed.
TEST_F(ClientTest, TimedOutRowsKeepTheirTagsAndAreCountedApart) {
  ts_->too_busy_left = 1000000;
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kManualFlush));
  ASSERT_OK(session->SetTimeout(MonoDelta::FromMilliseconds(300)));
  for (int i = 0; i < 6; i++) {
    auto op = Insert(i);
    op->set_tag(1000 + i);
    ASSERT_OK(session->Apply(std::move(op)));
  }
  EXPECT_TRUE(session->Flush().IsIOError());
  ts_->too_busy_left = 0;
  std::vector<std::unique_ptr<WriteError>> errors;
  bool overflowed = true;
  session->GetPendingErrors(&errors, &overflowed);
  ASSERT_EQ(errors.size(), 6u);
  std::set<int64_t> tags;
  for (const auto& e : errors) {
    EXPECT_TRUE(e->status().IsTimedOut()) << e->status().ToString();
    EXPECT_EQ(e->failed_op().tag(), 1000 + e->failed_op().row().cell(0).int_value());
    tags.insert(e->failed_op().tag());
  }
  EXPECT_EQ(tags.size(), 6u);
  const Session::WriteCounts counts = session->GetWriteCounts();
  EXPECT_EQ(counts.succeeded, 0);
  EXPECT_EQ(counts.failed, 0);
  EXPECT_EQ(counts.timed_out, 6);
}

TEST_F(ClientTest, OperationsKeepApplyOrderWhenLookedUpAtFlush) {
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kManualFlush));
  auto del = [&](int64_t key) {
    auto op = table->NewDelete();
    CHECK_OK(op->Set("key", Cell::Int64(key)));
    return op;
  };
  // Nothing cached yet: key 1's tablet is looked up at flush time.
  ASSERT_OK(session->Apply(Insert(1)));
  // Now every tablet is cached, but the later operations must still follow the first.
  ASSERT_OK(cache()
                ->LookupTabletSync(table->id(), "", MonoTime::Now() + MonoDelta::FromSeconds(5),
                                   LookupMode::kExact)
                .status());
  ASSERT_OK(session->Apply(del(1)));
  ASSERT_OK(session->Apply(Insert(1)));
  ASSERT_OK(session->Apply(Insert(2)));
  ASSERT_OK(session->Flush());
  // A batch that starts with everything cached: encoded as applied.
  ASSERT_OK(session->Apply(del(1)));
  ASSERT_OK(session->Apply(Insert(3)));
  ASSERT_OK(session->Apply(del(3)));
  ASSERT_OK(session->Flush());

  auto ops_of = [&](int64_t key) {
    std::vector<RowOpType> types;
    MutexLock l(ts_->mu);
    for (auto& [tablet, ops] : ts_->ops_per_tablet) {
      for (auto& [type, k] : ops) {
        if (k == std::to_string(key)) types.push_back(type);
      }
    }
    return types;
  };
  EXPECT_EQ(ops_of(1), (std::vector<RowOpType>{RowOpType::kInsert, RowOpType::kDelete,
                                               RowOpType::kInsert, RowOpType::kDelete}));
  EXPECT_EQ(ops_of(2), std::vector<RowOpType>{RowOpType::kInsert});
  EXPECT_EQ(ops_of(3), (std::vector<RowOpType>{RowOpType::kInsert, RowOpType::kDelete}));
  EXPECT_EQ(session->CountPendingErrors(), 0);
}

TEST_F(ClientTest, BackgroundFlushBlocksWhenAllBuffersInFlight) {
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kAutoFlushBackground));
  ASSERT_OK(session->SetMutationBufferSpace(2000));
  ASSERT_OK(session->SetMutationBufferMaxNum(2));
  ts_->write_gate.Close();
  constexpr int kRows = 2000;
  std::atomic<int> applied{0};
  std::thread writer([&] {
    for (int i = 0; i < kRows; i++) {
      CHECK_OK(session->Apply(Insert(i)));
      applied++;
    }
  });
  // One batch reaches the server and is held there; the writer fills the next
  // buffer and must then wait.
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] { ASSERT_GE(ts_->write_calls.load(), 1); });
  SleepFor(MonoDelta::FromMilliseconds(200));  // give a non-blocking Apply time to run ahead
  const int stuck_at = applied.load();
  EXPECT_LT(stuck_at, kRows);
  EXPECT_LE(session->data_for_tests()->NumBatchesInFlightForTests(), 1);
  ts_->write_gate.Open();
  writer.join();
  ASSERT_OK(session->Flush());
  EXPECT_EQ(TotalRows(), kRows);  // nothing dropped
  EXPECT_EQ(session->CountPendingErrors(), 0);
}

TEST_F(ClientTest, BackgroundFlushIntervalSendsPartialBuffer) {
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kAutoFlushBackground));
  ASSERT_OK(session->SetFlushInterval(MonoDelta::FromMilliseconds(50)));
  ASSERT_OK(session->Apply(Insert(42)));  // far below the watermark
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(5), [&] { ASSERT_EQ(TotalRows(), 1); });
}

TEST_F(ClientTest, BackgroundWatermarkTriggersFlush) {
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kAutoFlushBackground));
  ASSERT_OK(session->SetFlushInterval(MonoDelta::FromSeconds(100)));  // timer out of the way
  ASSERT_OK(session->SetMutationBufferSpace(10000));
  ASSERT_OK(session->SetMutationBufferFlushWatermark(0.1));
  for (int i = 0; i < 100; i++) ASSERT_OK(session->Apply(Insert(i)));
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(5), [&] { ASSERT_GT(TotalRows(), 0); });
  ASSERT_OK(session->Flush());
  EXPECT_EQ(TotalRows(), 100);
}

TEST_F(ClientTest, TooBusyIsRetriedWithTheSameRequestId) {
  ts_->too_busy_left = 3;
  auto session = client_->NewSession();
  ASSERT_OK(session->Apply(Insert(5)));
  EXPECT_EQ(TotalRows(), 1);
  MutexLock l(ts_->mu);
  ASSERT_EQ(ts_->request_ids.size(), 4u);
  for (const auto& id : ts_->request_ids) {
    EXPECT_EQ(id.client_id(), ts_->request_ids[0].client_id());
    EXPECT_EQ(id.seq_no(), ts_->request_ids[0].seq_no());
  }
  EXPECT_EQ(ts_->request_ids[3].attempt_no(), 3);
}

TEST_F(ClientTest, TabletNotFoundRefreshesLocations) {
  auto session = client_->NewSession();
  ASSERT_OK(session->Apply(Insert(1)));
  // Every tablet cached (one answer holds all four).
  ASSERT_OK(cache()
                ->LookupTabletSync(table->id(), "", MonoTime::Now() + MonoDelta::FromSeconds(5),
                                   LookupMode::kExact)
                .status());
  const int before = master_->locations_calls.load();
  ts_->not_found_left = 1;
  ASSERT_OK(session->Apply(Insert(2)));
  EXPECT_EQ(TotalRows(), 2);
  EXPECT_EQ(master_->locations_calls.load(), before + 1);
}

TEST_F(ClientTest, WriteTimesOutWhenServerStaysBusy) {
  ts_->too_busy_left = 1000000;
  auto session = client_->NewSession();
  ASSERT_OK(session->SetTimeout(MonoDelta::FromMilliseconds(300)));
  Status s = session->Apply(Insert(1));
  EXPECT_TRUE(s.IsTimedOut()) << s.ToString();
  EXPECT_EQ(TotalRows(), 0);
}

TEST(TimerQueueTest, RunsTasksInDueOrder) {
  internal::TimerQueue q;
  Mutex mu;
  std::vector<int> order;
  internal::CountDownLatch latch(3);
  for (int i : {30, 10, 20}) {
    q.Schedule(MonoDelta::FromMilliseconds(i), [&, i] {
      MutexLock l(mu);
      order.push_back(i);
      latch.CountDown();
    });
  }
  latch.Wait();
  EXPECT_EQ(order, (std::vector<int>{10, 20, 30}));
}

// Threads of this process, from /proc/self/status.
int NumThreads() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

// A task may drop the last reference to the client that owns the queue (a session's
// flush timer does): the queue is destroyed on its own thread, which must then finish
// without touching the freed queue (ASan reports it if it does).
TEST(TimerQueueTest, ATaskMayDestroyTheQueue) {
  struct CountOnDestroy {
    internal::CountDownLatch* latch;
    ~CountOnDestroy() { latch->CountDown(); }
  };
  internal::CountDownLatch captures_released(1);
  const int threads_before = NumThreads();
  auto* q = new internal::TimerQueue;
  bool ran_after = false;
  q->Schedule(MonoDelta::FromMilliseconds(50), [&ran_after] { ran_after = true; });
  auto guard = std::make_shared<CountOnDestroy>(CountOnDestroy{&captures_released});
  q->Schedule(MonoDelta(), [q, guard] { delete q; });
  guard.reset();
  captures_released.Wait();  // the task has returned and its captures are gone
  EXPECT_FALSE(ran_after);   // tasks not yet due are dropped with the queue
  // The detached thread must get to its end (it reads the queue's state on the way).
  MonoTime deadline = MonoTime::Now() + MonoDelta::FromSeconds(10);
  while (NumThreads() > threads_before && MonoTime::Now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_LE(NumThreads(), threads_before);
}

}  // namespace
}  // namespace nyala::client
