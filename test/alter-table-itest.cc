// Alter table on real daemons (a master and three tablet servers, RF 3): every kind
// of step under a write, scan and Get load with a leader change in the middle; a
// replica down during an alteration catching up with it; a client holding the old
// schema; a master killed in the middle of carrying an alteration to the tablets; a
// column dropped and added again under its name.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/test_util.h"
#include "test/client_itest_util.h"
#include "tserver/tserver_admin.proxy.h"

namespace nyala::client::itest {
namespace {

constexpr int64_t kRangeEnd = 1'000'000;

class AlterTableITest : public NyalaTest {
 protected:
  void StartCluster(std::vector<std::string> tserver_flags = {}) {
    cluster_ = std::make_unique<ClientTestCluster>(test_dir(), 3, std::move(tserver_flags));
    ASSERT_OK(cluster_->Start());
    client_ = cluster_->client();
  }
  void TearDown() override {
    client_.reset();
    if (cluster_) EXPECT_OK(cluster_->Shutdown());
    NyalaTest::TearDown();
  }

  // (key INT64, v INT64, s STRING NULLABLE), HASH(key) 2 buckets, RANGE(key)
  // [0, kRangeEnd), RF 3.
  std::shared_ptr<Table> CreateTable(const std::string& name) {
    auto schema = SchemaBuilder()
                      .AddKeyColumn("key", DataType::kInt64)
                      .AddColumn("v", DataType::kInt64)
                      .AddColumn("s", DataType::kString, true)
                      .Build();
    EXPECT_OK(schema.status());
    auto creator = client_->NewTableCreator();
    creator->table_name(name).schema(*schema).num_replicas(3).add_hash_partitions({"key"}, 2);
    creator->set_range_partition_columns({"key"});
    Row lo = creator->NewRow(), hi = creator->NewRow();
    EXPECT_OK(lo.Set("key", Cell::Int64(0)));
    EXPECT_OK(hi.Set("key", Cell::Int64(kRangeEnd)));
    creator->add_range_partition(lo, hi);
    EXPECT_OK(creator->Create());
    auto t = client_->OpenTable(name);
    EXPECT_OK(t.status());
    return t.ok() ? *t : nullptr;
  }

  Row Key(const Table& t, int64_t k) {
    Row r = t.NewRow();
    EXPECT_OK(r.Set("key", Cell::Int64(k)));
    return r;
  }

  // Every row (all columns, as strings by column name) through a fresh Table.
  std::map<int64_t, std::map<std::string, std::string>> ScanRows(const std::string& name) {
    std::map<int64_t, std::map<std::string, std::string>> rows;
    auto t = client_->OpenTable(name);
    EXPECT_OK(t.status());
    if (!t.ok()) return rows;
    Scanner scanner(*t);
    EXPECT_OK(scanner.SetTimeout(MonoDelta::FromSeconds(30)));
    EXPECT_OK(scanner.Open());
    for (int n = 0; scanner.HasMoreRows() && n < 100000; n++) {
      ScanBatch batch;
      Status s = scanner.NextBatch(&batch);
      EXPECT_OK(s);
      if (!s.ok()) break;
      const Schema& proj = batch.projection_schema();
      for (int r = 0; r < batch.num_rows(); r++) {
        auto& row = rows[*batch.row(r).GetInt64("key")];
        for (int c = 0; c < proj.num_columns(); c++) {
          row[proj.column(c).name()] = batch.row(r).cell(c).ToString();
        }
      }
    }
    return rows;
  }

  // Asks the leader of every tablet of `name` to hand leadership to another voter.
  void StepDownLeaders(const std::string& name) {
    auto tablets = client_->ListTabletsOfTable(name);
    ASSERT_OK(tablets.status());
    for (const TabletInfo& t : *tablets) {
      for (const ReplicaInfo& r : t.replicas) {
        if (!r.is_leader) continue;
        test::ExternalDaemon* ts = cluster_->TserverAt(r.rpc_address);
        ASSERT_NE(ts, nullptr) << r.rpc_address;
        int idx = 0;
        while (cluster_->tserver(idx) != ts) idx++;
        tserver::LeaderStepDownRequestPB req;
        req.set_tablet_id(t.tablet_id);
        tserver::LeaderStepDownResponsePB resp;
        rpc::RpcController rpc;
        rpc.set_timeout(MonoDelta::FromSeconds(10));
        ASSERT_OK(cluster_->mini_cluster()->tserver_admin_proxy(idx).LeaderStepDown(req, &resp,
                                                                                  &rpc));
        EXPECT_FALSE(resp.has_error()) << resp.ShortDebugString();
      }
    }
  }

  // The schema version of every replica of every tablet, as each tablet server has it.
  std::map<std::string, uint32_t> ReplicaVersions() {
    std::map<std::string, uint32_t> out;
    for (int i = 0; i < cluster_->num_tservers(); i++) {
      if (!cluster_->tserver(i)->IsRunning()) continue;
      tserver::ListTabletsRequestPB req;
      tserver::ListTabletsResponsePB resp;
      rpc::RpcController rpc;
      rpc.set_timeout(MonoDelta::FromSeconds(10));
      if (!cluster_->mini_cluster()->tserver_admin_proxy(i).ListTablets(req, &resp, &rpc).ok()) {
        continue;
      }
      for (const auto& t : resp.tablets()) {
        if (t.state() != tserver::TABLET_DATA_READY) continue;
        out[std::to_string(i) + "/" + t.tablet_id()] = t.schema().version();
      }
    }
    return out;
  }

  // Waits until every replica on the running servers has schema version `v`.
  void WaitForReplicaVersions(uint32_t v, size_t min_replicas) {
    ASSERT_EVENTUALLY(MonoDelta::FromSeconds(60), ([&] {
                        const std::map<std::string, uint32_t> seen = ReplicaVersions();
                        ASSERT_GE(seen.size(), min_replicas);
                        for (const auto& [r, have] : seen) {
                          ASSERT_EQ(have, v) << "replica (server/tablet) " << r;
                        }
                      }));
  }

  std::unique_ptr<ClientTestCluster> cluster_;
  std::shared_ptr<Client> client_;
};

TEST_F(AlterTableITest, EveryStepUnderLoadWithALeaderChange) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  const std::shared_ptr<Table> old_table = CreateTable("load");
  ASSERT_TRUE(old_table);

  // Writes through the Table opened before every alteration (its schema goes stale),
  // setting key and v: never refused, whatever the steps.
  std::atomic<bool> stop{false};
  std::atomic<int64_t> next_key{0};
  Mutex mu;
  std::vector<std::string> write_errors, read_errors;
  std::set<int64_t> acked;
  std::thread writer([&] {
    auto session = client_->NewSession();
    EXPECT_OK(session->SetTimeout(MonoDelta::FromSeconds(30)));
    while (!stop.load()) {
      const int64_t k = next_key.fetch_add(1);
      auto op = old_table->NewUpsert();
      EXPECT_OK(op->Set("key", Cell::Int64(k)));
      EXPECT_OK(op->Set("v", Cell::Int64(k * 10)));
      Status s = session->Apply(std::move(op));
      MutexLock l(mu);
      if (s.ok()) {
        acked.insert(k);
      } else {
        std::vector<std::unique_ptr<WriteError>> errs;
        bool overflow;
        session->GetPendingErrors(&errs, &overflow);
        write_errors.push_back(s.ToString() +
                               (errs.empty() ? "" : ": " + errs[0]->status().ToString()));
      }
    }
  });
  // Scans and Gets of key and v through the same stale Table.
  std::atomic<int64_t> reads{0};
  std::thread reader([&] {
    while (!stop.load()) {
      Scanner scanner(old_table);
      Status s = scanner.SetProjectedColumnNames({"key", "v"});
      if (s.ok()) s = scanner.Open();
      int64_t rows = 0;
      while (s.ok() && scanner.HasMoreRows()) {
        ScanBatch batch;
        s = scanner.NextBatch(&batch);
        for (int r = 0; s.ok() && r < batch.num_rows(); r++) {
          if (*batch.row(r).GetInt64("v") != *batch.row(r).GetInt64("key") * 10) {
            s = Status::Corruption("row " + batch.row(r).ToString());
          }
          rows++;
        }
      }
      const int64_t k = next_key.load() / 2;
      if (s.ok()) {
        auto g = old_table->Get(Key(*old_table, k), {"key", "v"});
        s = g.status();
        if (s.ok() && g->found(0) && *g->row(0)->GetInt64("v") != k * 10) {
          s = Status::Corruption("Get of " + std::to_string(k) + ": " + g->row(0)->ToString());
        }
      }
      reads++;
      if (!s.ok()) {
        MutexLock l(mu);
        read_errors.push_back(s.ToString());
      }
    }
  });
  auto wait_for_writes = [&](int64_t n) {
    const int64_t target = next_key.load() + n;
    ASSERT_EVENTUALLY(MonoDelta::FromSeconds(30), [&] { ASSERT_GE(next_key.load(), target); });
  };
  auto alter = [&](const char* what, const std::function<void(TableAlterer*)>& fn,
                   const std::string& table = "load") {
    SCOPED_TRACE(what);
    auto a = client_->NewTableAlterer(table);
    fn(a.get());
    ASSERT_OK(a->Alter());
    ASSERT_FALSE(*client_->IsAlterTableInProgress(table == "load" ? "load" : table));
    ASSERT_NO_FATAL_FAILURE(wait_for_writes(200));
  };

  ASSERT_NO_FATAL_FAILURE(wait_for_writes(300));
  const int64_t before_add = next_key.load();
  ASSERT_NO_FATAL_FAILURE(alter("add", [](TableAlterer* a) {
    a->AddColumn("added", DataType::kInt64, false, Value(Cell::Int64(7)), "added under load");
  }));
  ASSERT_NO_FATAL_FAILURE(alter("rename column", [](TableAlterer* a) {
    a->RenameColumn("s", "s2");
  }));
  ASSERT_NO_FATAL_FAILURE(StepDownLeaders("load"));
  ASSERT_NO_FATAL_FAILURE(alter("default and comment", [](TableAlterer* a) {
    a->SetColumnDefault("added", Value(Cell::Int64(8))).SetColumnComment("v", "ten times key");
  }));
  const int64_t after_default = next_key.load();
  // A range partition, written at once through the stale Table: its client finds the
  // new tablets on the first miss.
  {
    Row lo = old_table->NewRow(), hi = old_table->NewRow();
    ASSERT_OK(lo.Set("key", Cell::Int64(kRangeEnd)));
    ASSERT_OK(hi.Set("key", Cell::Int64(2 * kRangeEnd)));
    ASSERT_NO_FATAL_FAILURE(alter("add range", [&](TableAlterer* a) {
      a->AddRangePartition(lo, hi);
    }));
    auto session = client_->NewSession();
    auto op = old_table->NewInsert();
    ASSERT_OK(op->Set("key", Cell::Int64(kRangeEnd + 5)));
    ASSERT_OK(op->Set("v", Cell::Int64((kRangeEnd + 5) * 10)));
    ASSERT_OK(session->Apply(std::move(op)));
  }
  ASSERT_NO_FATAL_FAILURE(alter("drop column", [](TableAlterer* a) { a->DropColumn("s2"); }));
  ASSERT_NO_FATAL_FAILURE(alter("nullable column with a default", [](TableAlterer* a) {
    a->AddColumn("opt", DataType::kString, true, Value(Cell::String("o")));
  }));
  ASSERT_NO_FATAL_FAILURE(alter("remove default, table comment", [](TableAlterer* a) {
    a->RemoveColumnDefault("opt").SetComment("altered under load");
  }));
  ASSERT_NO_FATAL_FAILURE(alter("rename table", [](TableAlterer* a) { a->RenameTo("load2"); }));
  {
    Row lo = old_table->NewRow(), hi = old_table->NewRow();
    ASSERT_OK(lo.Set("key", Cell::Int64(kRangeEnd)));
    ASSERT_OK(hi.Set("key", Cell::Int64(2 * kRangeEnd)));
    ASSERT_NO_FATAL_FAILURE(alter(
        "drop range", [&](TableAlterer* a) { a->DropRangePartition(lo, hi); }, "load2"));
  }
  stop = true;
  writer.join();
  reader.join();
  {
    MutexLock l(mu);
    LOG(INFO) << acked.size() << " writes acknowledged, " << reads.load()
              << " rounds of a scan and a Get, through the Table opened before the steps";
    EXPECT_TRUE(write_errors.empty()) << write_errors.size() << " failed, first: "
                                      << write_errors.front();
    EXPECT_TRUE(read_errors.empty()) << read_errors.size() << " failed, first: "
                                     << read_errors.front();
    EXPECT_GT(reads.load(), 5);
  }

  auto rows = ScanRows("load2");
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.count(kRangeEnd + 5), 0u) << "its range was dropped";
  std::set<std::string> columns;
  for (const auto& [name, v] : rows.begin()->second) columns.insert(name);
  EXPECT_EQ(columns, (std::set<std::string>{"key", "v", "added", "opt"}));
  MutexLock l(mu);
  for (int64_t k : acked) {
    auto it = rows.find(k);
    ASSERT_NE(it, rows.end()) << "acknowledged key " << k << " is missing";
    EXPECT_EQ(it->second["v"], std::to_string(k * 10));
    // Rows written before the column existed read its default then; later ones got
    // the default in force when they were written.
    const std::string& added = it->second["added"];
    if (k < before_add) {
      EXPECT_EQ(added, "7") << k;
    }
    if (k >= after_default) {
      EXPECT_EQ(added, "8") << k;
    }
    EXPECT_TRUE(added == "7" || added == "8") << k << ": " << added;
    const std::string& opt = it->second["opt"];
    EXPECT_TRUE(opt == "\"o\"" || opt == "NULL") << k << ": " << opt;
  }
  // Every replica, followers included, ends at the last version.
  auto t = client_->OpenTable("load2");
  ASSERT_OK(t.status());
  EXPECT_EQ((*t)->comment(), "altered under load");
  ASSERT_NO_FATAL_FAILURE(WaitForReplicaVersions((*t)->schema().version(), 6));
  EXPECT_FALSE(client_->OpenTable("load").ok());
}

TEST_F(AlterTableITest, AReplicaDownDuringAnAlterationCatchesUp) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  auto t = CreateTable("down");
  auto session = client_->NewSession();
  for (int64_t k = 0; k < 100; k++) {
    auto op = t->NewInsert();
    ASSERT_OK(op->Set("key", Cell::Int64(k)));
    ASSERT_OK(op->Set("v", Cell::Int64(k)));
    ASSERT_OK(session->Apply(std::move(op)));
  }
  ASSERT_OK(cluster_->tserver(2)->Shutdown());
  auto a = client_->NewTableAlterer("down");
  a->AddColumn("x", DataType::kString, true).DropColumn("s");
  ASSERT_OK(a->Alter());  // two of three replicas of each tablet suffice
  ASSERT_OK(cluster_->tserver(2)->Restart());
  auto now = client_->OpenTable("down");
  ASSERT_OK(now.status());
  ASSERT_NO_FATAL_FAILURE(WaitForReplicaVersions((*now)->schema().version(), 6));
  // Its rows read through the new schema on that replica too (a closest-replica scan
  // from each server in turn is not addressable; a checksum of every replica is).
  auto rows = ScanRows("down");
  ASSERT_EQ(rows.size(), 100u);
  EXPECT_EQ(rows[5]["x"], "NULL");
  EXPECT_EQ(rows[5].count("s"), 0u);
}

TEST_F(AlterTableITest, AClientWithTheOldSchemaRefreshesOrFailsClearly) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  auto stale = CreateTable("stale");
  auto other = cluster_->NewClient();
  ASSERT_OK(other.status());
  auto a = (*other)->NewTableAlterer("stale");
  a->DropColumn("s").RenameColumn("v", "w").AddColumn("d", DataType::kInt32, true);
  ASSERT_OK(a->Alter());

  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kManualFlush));
  auto ok_op = stale->NewInsert();  // 'v' is 'w' now: same column, same meaning
  ASSERT_OK(ok_op->Set("key", Cell::Int64(1)));
  ASSERT_OK(ok_op->Set("v", Cell::Int64(11)));
  ASSERT_OK(session->Apply(std::move(ok_op)));
  auto dropped_op = stale->NewInsert();  // sets a dropped column: fails alone
  ASSERT_OK(dropped_op->Set("key", Cell::Int64(2)));
  ASSERT_OK(dropped_op->Set("v", Cell::Int64(22)));
  ASSERT_OK(dropped_op->Set("s", Cell::String("gone")));
  ASSERT_OK(session->Apply(std::move(dropped_op)));
  EXPECT_FALSE(session->Flush().ok());
  std::vector<std::unique_ptr<WriteError>> errors;
  bool overflow = false;
  session->GetPendingErrors(&errors, &overflow);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]->failed_op().row().cell(0).int_value(), 2);
  EXPECT_NE(errors[0]->status().ToString().find("'s' was dropped"), std::string::npos)
      << errors[0]->status().ToString();

  // A Get of every column of the old schema: 'v' is not a column any more.
  auto g = stale->Get(Key(*stale, 1));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().ToString().find("column 'v' is not in tablet"), std::string::npos)
      << g.status().ToString();
  // Of columns that still are: answered.
  g = stale->Get(Key(*stale, 1), {"key"});
  ASSERT_OK(g.status());
  EXPECT_TRUE(g->found(0));
  // Opened again, the table reads under its new names.
  auto fresh = client_->OpenTable("stale");
  ASSERT_OK(fresh.status());
  g = (*fresh)->Get(Key(**fresh, 1));
  ASSERT_OK(g.status());
  EXPECT_EQ(*g->row(0)->GetInt64("w"), 11);
  EXPECT_TRUE(g->row(0)->IsNull(2));
}

TEST_F(AlterTableITest, TheMasterFinishesAnAlterationAfterItsCrash) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  auto t = CreateTable("crash");
  // The tablet servers stopped: the alteration is recorded, but no tablet has it.
  for (int i = 0; i < 3; i++) ASSERT_EQ(kill(cluster_->tserver(i)->pid(), SIGSTOP), 0);
  auto a = client_->NewTableAlterer("crash");
  a->AddColumn("later", DataType::kInt64, true).wait(false);
  Status s = a->Alter();
  for (int i = 0; i < 3 && !s.ok(); i++) kill(cluster_->tserver(i)->pid(), SIGCONT);
  ASSERT_OK(s);
  EXPECT_TRUE(*client_->IsAlterTableInProgress("crash"));
  cluster_->master()->Kill(SIGKILL);
  ASSERT_OK(cluster_->master()->Restart());
  for (int i = 0; i < 3; i++) ASSERT_EQ(kill(cluster_->tserver(i)->pid(), SIGCONT), 0);
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(60), [&] {
    auto in_progress = client_->IsAlterTableInProgress("crash");
    ASSERT_OK(in_progress.status());
    ASSERT_FALSE(*in_progress);
  });
  auto now = client_->OpenTable("crash");
  ASSERT_OK(now.status());
  EXPECT_EQ((*now)->schema().version(), 1u);
  ASSERT_NO_FATAL_FAILURE(WaitForReplicaVersions(1, 6));
  auto session = client_->NewSession();
  auto op = (*now)->NewInsert();
  ASSERT_OK(op->Set("key", Cell::Int64(3)));
  ASSERT_OK(op->Set("v", Cell::Int64(3)));
  ASSERT_OK(op->Set("later", Cell::Int64(33)));
  ASSERT_OK(session->Apply(std::move(op)));
  EXPECT_EQ(ScanRows("crash")[3]["later"], "33");
}

TEST_F(AlterTableITest, AColumnDroppedAndAddedAgainDoesNotBringOldValuesBack) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  auto t = CreateTable("readd");
  auto session = client_->NewSession();
  auto op = t->NewInsert();
  ASSERT_OK(op->Set("key", Cell::Int64(1)));
  ASSERT_OK(op->Set("v", Cell::Int64(1)));
  ASSERT_OK(op->Set("s", Cell::String("old value")));
  ASSERT_OK(session->Apply(std::move(op)));
  auto drop = client_->NewTableAlterer("readd");
  ASSERT_OK(drop->DropColumn("s").Alter());
  auto add = client_->NewTableAlterer("readd");
  ASSERT_OK(add->AddColumn("s", DataType::kString, true).Alter());
  EXPECT_EQ(ScanRows("readd")[1]["s"], "NULL");
}

// A table deleted while a scan of it runs: the scan's next batch fails at once,
// saying so, instead of retrying until its timeout.
TEST_F(AlterTableITest, AScanOfATableDeletedMeanwhileFailsAtOnce) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  auto t = CreateTable("gone");
  auto session = client_->NewSession();
  ASSERT_OK(session->SetFlushMode(Session::FlushMode::kManualFlush));
  for (int64_t k = 0; k < 2000; k++) {
    auto op = t->NewInsert();
    ASSERT_OK(op->Set("key", Cell::Int64(k)));
    ASSERT_OK(op->Set("v", Cell::Int64(k)));
    ASSERT_OK(op->Set("s", Cell::String(std::string(100, 'x'))));
    ASSERT_OK(session->Apply(std::move(op)));
  }
  ASSERT_OK(session->Flush());
  Scanner scanner(t);
  ASSERT_OK(scanner.SetBatchSizeBytes(1024));
  ASSERT_OK(scanner.SetTimeout(MonoDelta::FromSeconds(30)));
  ASSERT_OK(scanner.Open());
  ScanBatch batch;
  ASSERT_OK(scanner.NextBatch(&batch));
  ASSERT_OK(client_->DeleteTable("gone"));
  const MonoTime start = MonoTime::Now();
  Status s;
  for (int i = 0; i < 10000 && s.ok() && scanner.HasMoreRows(); i++) s = scanner.NextBatch(&batch);
  ASSERT_FALSE(s.ok()) << "the scan of a deleted table went on";
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(s.ToString().find("was deleted"), std::string::npos) << s.ToString();
  EXPECT_LT((MonoTime::Now() - start).ToSeconds(), 10) << s.ToString();
}

}  // namespace
}  // namespace nyala::client::itest
