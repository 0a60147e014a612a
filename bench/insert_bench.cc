// insert-bench: the flush-watermark experiment. Loads --rows rows of
// (key INT64, a INT32, b STRING, c STRING, d INT32), strings ~32 bytes on average,
// through --threads clients (each its own Client and one AUTO_FLUSH_BACKGROUND
// session), then loads the same rows into a bare in-process RocksDB with WriteBatches
// of 1000 (WAL on, no sync) in the same run, and prints both and their ratio.
//
//   insert-bench --rows=400000 --threads=1 --flush_watermark=0.5
//
// Without --master_addresses it starts its own nyala-master and nyala-tserver in a
// temporary directory (removed at the end).
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "client/client.h"
#include "common/key_encoding.h"
#include "common/row_encoding.h"
#include "test/client_itest_util.h"

DEFINE_int64(rows, 400000, "Rows to insert (the Kudu experiment used 8M).");
DEFINE_int32(threads, 1, "Writer threads, each with its own client and session.");
DEFINE_double(flush_watermark, 0.5, "Session mutation buffer flush watermark.");
DEFINE_int64(buffer_bytes, 7 * 1024 * 1024, "Session mutation buffer space.");
DEFINE_int32(num_tablets, 4, "Hash buckets of the table.");
DEFINE_string(master_addresses, "", "Use this cluster instead of starting one.");
DEFINE_string(table_name, "insert_bench", "Table to create (dropped first if present).");
DEFINE_bool(skip_rocksdb, false, "Skip the bare RocksDB load.");

namespace nyala::client {
namespace {

constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

// Row `k`'s strings: lengths 16..48 (32 on average), cheap and deterministic.
void FillString(int64_t k, int salt, std::string* s) {
  uint64_t x = uint64_t(k) * 0x9E3779B97F4A7C15ull + uint64_t(salt) * 0xBF58476D1CE4E5B9ull;
  const size_t len = 16 + (x >> 59) + ((x >> 54) & 1) * 16;
  s->resize(len);
  for (size_t i = 0; i < len; i++) {
    x ^= x >> 13;
    x *= 0xff51afd7ed558ccdull;
    (*s)[i] = kAlphabet[x % 62];
  }
}

Result<Schema> BenchSchema() {
  return SchemaBuilder()
      .AddKeyColumn("key", DataType::kInt64)
      .AddColumn("a", DataType::kInt32)
      .AddColumn("b", DataType::kString)
      .AddColumn("c", DataType::kString)
      .AddColumn("d", DataType::kInt32)
      .Build();
}

Status LoadThroughClient(const std::string& masters, int64_t* elapsed_ms) {
  ASSIGN_OR_RETURN(auto admin, ClientBuilder().add_master_server_addr(masters).Build());
  if (admin->TableExists(FLAGS_table_name)) RETURN_NOT_OK(admin->DeleteTable(FLAGS_table_name));
  ASSIGN_OR_RETURN(Schema schema, BenchSchema());
  auto creator = admin->NewTableCreator();
  creator->table_name(FLAGS_table_name).schema(schema).num_replicas(1);
  if (FLAGS_num_tablets > 1) creator->add_hash_partitions({"key"}, FLAGS_num_tablets);
  RETURN_NOT_OK(creator->Create());

  std::vector<std::shared_ptr<Client>> clients;
  std::vector<std::shared_ptr<Table>> tables;
  for (int t = 0; t < FLAGS_threads; t++) {
    ASSIGN_OR_RETURN(auto c, ClientBuilder().add_master_server_addr(masters).Build());
    ASSIGN_OR_RETURN(auto table, c->OpenTable(FLAGS_table_name));
    clients.push_back(c);
    tables.push_back(table);
  }
  std::atomic<int64_t> errors{0};
  const MonoTime start = MonoTime::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < FLAGS_threads; t++) {
    threads.emplace_back([&, t] {
      const int64_t per = FLAGS_rows / FLAGS_threads;
      const int64_t first = t * per, last = t == FLAGS_threads - 1 ? FLAGS_rows : first + per;
      auto session = clients[t]->NewSession();
      CHECK_OK(session->SetFlushMode(Session::FlushMode::kAutoFlushBackground));
      CHECK_OK(session->SetMutationBufferSpace(size_t(FLAGS_buffer_bytes)));
      CHECK_OK(session->SetMutationBufferFlushWatermark(FLAGS_flush_watermark));
      std::string b, c;
      for (int64_t k = first; k < last; k++) {
        auto op = tables[t]->NewInsert();
        FillString(k, 1, &b);
        FillString(k, 2, &c);
        CHECK_OK(op->Set(0, Cell::Int64(k)));
        CHECK_OK(op->Set(1, Cell::Int32(int32_t(k))));
        CHECK_OK(op->Set(2, Cell::String(b)));
        CHECK_OK(op->Set(3, Cell::String(c)));
        CHECK_OK(op->Set(4, Cell::Int32(int32_t(k * 3))));
        CHECK_OK(session->Apply(std::move(op)));
      }
      Status s = session->Flush();
      if (!s.ok()) LOG(ERROR) << s.ToString();
      errors += session->CountPendingErrors();
    });
  }
  for (auto& th : threads) th.join();
  *elapsed_ms = (MonoTime::Now() - start).ToMilliseconds();
  if (errors.load() > 0)
    return Status::RuntimeError(std::to_string(errors.load()) + " rows failed");
  return Status::OK();
}

Status LoadBareRocksDb(const std::string& dir, int64_t* elapsed_ms) {
  ASSIGN_OR_RETURN(Schema schema, BenchSchema());
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status rs = rocksdb::DB::Open(options, dir, &raw);
  if (!rs.ok()) return Status::IOError("opening RocksDB", rs.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  const MonoTime start = MonoTime::Now();
  rocksdb::WriteBatch batch;
  std::string b, c, key, value;
  Row row(&schema);
  for (int64_t k = 0; k < FLAGS_rows; k++) {
    FillString(k, 1, &b);
    FillString(k, 2, &c);
    row.SetUnchecked(0, Cell::Int64(k));
    row.SetUnchecked(1, Cell::Int32(int32_t(k)));
    row.SetUnchecked(2, Cell::String(b));
    row.SetUnchecked(3, Cell::String(c));
    row.SetUnchecked(4, Cell::Int32(int32_t(k * 3)));
    key.clear();
    value.clear();
    EncodeKey(schema, row.view().cells(), &key);
    RETURN_NOT_OK(EncodeRowValue(row, &value));
    batch.Put(key, value);
    if (batch.Count() == 1000 || k == FLAGS_rows - 1) {
      rs = db->Write(rocksdb::WriteOptions(), &batch);
      if (!rs.ok()) return Status::IOError("RocksDB write", rs.ToString());
      batch.Clear();
    }
  }
  *elapsed_ms = (MonoTime::Now() - start).ToMilliseconds();
  return Status::OK();
}

int Main() {
  char tmpl[] = "/tmp/insert-bench-XXXXXX";
  CHECK(mkdtemp(tmpl) != nullptr);
  const std::string root = tmpl;
  std::unique_ptr<itest::ClientTestCluster> cluster;
  std::string masters = FLAGS_master_addresses;
  if (masters.empty()) {
    cluster = std::make_unique<itest::ClientTestCluster>(root + "/cluster", 1);
    CHECK_OK(cluster->Start());
    masters = cluster->master_addr();
  }
  int64_t client_ms = 0, bare_ms = 0;
  Status s = LoadThroughClient(masters, &client_ms);
  if (!s.ok()) {
    fprintf(stderr, "load failed: %s\n", s.ToString().c_str());
    return 1;
  }
  if (cluster) cluster->Shutdown();
  printf("rows: %lld  threads: %d  flush_watermark: %.2f  tablets: %d\n", (long long)FLAGS_rows,
         FLAGS_threads, FLAGS_flush_watermark, FLAGS_num_tablets);
  printf("total : %lld ms\n", (long long)client_ms);
  printf("per row: %.6f ms\n", double(client_ms) / double(FLAGS_rows));
  printf("client rows/s: %.0f\n",
         double(FLAGS_rows) * 1000.0 / double(std::max<int64_t>(client_ms, 1)));
  if (!FLAGS_skip_rocksdb) {
    CHECK_OK(LoadBareRocksDb(root + "/bare-rocksdb", &bare_ms));
    const double bare_rps = double(FLAGS_rows) * 1000.0 / double(std::max<int64_t>(bare_ms, 1));
    const double client_rps = double(FLAGS_rows) * 1000.0 / double(std::max<int64_t>(client_ms, 1));
    printf("bare RocksDB WriteBatch load: %lld ms, %.0f rows/s\n", (long long)bare_ms, bare_rps);
    printf("ratio vs bare RocksDB: %.3f\n", client_rps / bare_rps);
  }
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  return 0;
}

}  // namespace
}  // namespace nyala::client

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = false;
  return nyala::client::Main();
}
