// insert-bench: the flush-watermark experiment. Loads --rows rows of
// (key INT64, a INT32, b STRING, c STRING, d INT32), strings ~32 bytes on average,
// through --threads clients (each its own Client and one AUTO_FLUSH_BACKGROUND
// session), then loads the same rows into a bare in-process RocksDB with WriteBatches
// of 1000 (WAL on, no sync) in the same run, and prints both and their ratio, with
// the CPU each side used per row (client process; tablet server process when this
// run started it; the bare load's process CPU).
//
//   insert-bench --rows=400000 --threads=1 --flush_watermark=0.5 [--rounds=3] [--pin]
//
// Without --master_addresses it starts its own nyala-master and nyala-tserver in a
// temporary directory (removed at the end), a fresh one per round. --rounds=N repeats
// (client load, bare load) N times, one after the other, and prints the medians; the
// ratio printed is the median of the per-round ratios. --pin runs the daemons on CPU 0
// and this process on CPU 1.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include "bench_util.h"
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
DEFINE_string(tserver_flags, "",
              "Extra flags for the tablet server this run starts, space-separated "
              "(e.g. \"--rocksdb_compression=zstd --fsync_writes\").");
DEFINE_bool(pin, false,
            "Pin the daemons this run starts to CPU 0 and this process (client and bare "
            "RocksDB loads) to CPU 1, as bench/README.md asks for single-client "
            "measurements.");
DEFINE_int32(rounds, 1,
             "Rounds of (client load on a fresh cluster, then the bare RocksDB load); "
             "each round's figures are printed, then their medians.");

namespace nyala::client {
namespace {

using bench::SelfCpuMicros;

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

// Pins every thread of process `pid` (0: this one) to `cpu`; threads it creates later
// inherit the mask. Best effort: a thread that exits meanwhile is skipped.
void PinProcess(pid_t pid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const std::string dir = "/proc/" + (pid ? std::to_string(pid) : std::string("self")) + "/task";
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(dir, ec)) {
    const pid_t tid = pid_t(std::stol(task.path().filename().string()));
    if (sched_setaffinity(tid, sizeof(set), &set) != 0) {
      PLOG(WARNING) << "pinning thread " << tid << " to CPU " << cpu;
    }
  }
}

// User + system CPU of process `pid` so far, in microseconds; -1 when unknown.
int64_t ProcessCpuMicros(pid_t pid) {
  if (pid <= 0) return -1;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return -1;
  // Fields after the command (which may hold spaces): state is field 3, utime 14, stime 15.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  int64_t utime = 0, stime = 0;
  for (int f = 3; f <= 15 && rest >> field; f++) {
    if (f == 14) utime = std::stoll(field);
    if (f == 15) stime = std::stoll(field);
  }
  return (utime + stime) * 1000000 / sysconf(_SC_CLK_TCK);
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

struct LoadFigures {
  int64_t elapsed_ms = 0;
  int64_t client_cpu_us = 0;   // this process, all threads
  int64_t server_cpu_us = -1;  // the tablet server, when this run started it
};

Status LoadThroughClient(const std::string& masters, pid_t tserver_pid, LoadFigures* out) {
  ASSIGN_OR_RETURN(auto admin, ClientBuilder().add_master_server_addr(masters).Build());
  ASSIGN_OR_RETURN(bool exists, admin->TableExists(FLAGS_table_name));
  if (exists) RETURN_NOT_OK(admin->DeleteTable(FLAGS_table_name));
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
  const int64_t server_cpu0 = ProcessCpuMicros(tserver_pid);
  const int64_t client_cpu0 = SelfCpuMicros();
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
  out->elapsed_ms = (MonoTime::Now() - start).ToMilliseconds();
  out->client_cpu_us = SelfCpuMicros() - client_cpu0;
  const int64_t server_cpu1 = ProcessCpuMicros(tserver_pid);
  if (server_cpu0 >= 0 && server_cpu1 >= 0) out->server_cpu_us = server_cpu1 - server_cpu0;
  if (errors.load() > 0)
    return Status::RuntimeError(std::to_string(errors.load()) + " rows failed");
  return Status::OK();
}

Status LoadBareRocksDb(const std::string& dir, int64_t* elapsed_ms, int64_t* cpu_us) {
  ASSIGN_OR_RETURN(Schema schema, BenchSchema());
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status rs = rocksdb::DB::Open(options, dir, &raw);
  if (!rs.ok()) return Status::IOError("opening RocksDB", rs.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  const int64_t cpu0 = SelfCpuMicros();
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
  *cpu_us = SelfCpuMicros() - cpu0;
  return Status::OK();
}

struct Round {
  LoadFigures load;
  int64_t bare_ms = 0;
  int64_t bare_cpu_us = 0;
  double client_rps() const {
    return double(FLAGS_rows) * 1000.0 / double(std::max<int64_t>(load.elapsed_ms, 1));
  }
  double bare_rps() const {
    return double(FLAGS_rows) * 1000.0 / double(std::max<int64_t>(bare_ms, 1));
  }
  double ratio() const { return client_rps() / bare_rps(); }
};

// One client load (on a fresh cluster under `dir` unless --master_addresses), then
// the bare RocksDB load of the same rows.
Status RunRound(const std::string& dir, Round* r) {
  std::unique_ptr<itest::ClientTestCluster> cluster;
  std::string masters = FLAGS_master_addresses;
  if (masters.empty()) {
    std::vector<std::string> tserver_flags;
    std::istringstream words(FLAGS_tserver_flags);
    for (std::string w; words >> w;) tserver_flags.push_back(w);
    cluster = std::make_unique<itest::ClientTestCluster>(dir + "/cluster", 1, tserver_flags);
    RETURN_NOT_OK_PREPEND(cluster->Start(), "starting the cluster");
    masters = cluster->master_addr();
    if (FLAGS_pin) {
      PinProcess(cluster->master()->pid(), 0);
      PinProcess(cluster->tserver(0)->pid(), 0);
    }
  }
  Status s = LoadThroughClient(masters, cluster ? cluster->tserver(0)->pid() : -1, &r->load);
  if (cluster) WARN_NOT_OK(cluster->Shutdown(), "stopping the cluster");
  RETURN_NOT_OK_PREPEND(s, "client load");
  if (!FLAGS_skip_rocksdb) {
    RETURN_NOT_OK_PREPEND(LoadBareRocksDb(dir + "/bare-rocksdb", &r->bare_ms, &r->bare_cpu_us),
                          "bare RocksDB load");
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return Status::OK();
}

template <typename T>
T Median(std::vector<Round>& rounds, const std::function<T(const Round&)>& f) {
  std::vector<T> v;
  for (const Round& r : rounds) v.push_back(f(r));
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Main() {
  char tmpl[] = "/tmp/insert-bench-XXXXXX";
  CHECK(mkdtemp(tmpl) != nullptr);
  const std::string root = tmpl;
  const double rows = double(FLAGS_rows);
  printf("rows: %lld  threads: %d  flush_watermark: %.2f  tablets: %d\n", (long long)FLAGS_rows,
         FLAGS_threads, FLAGS_flush_watermark, FLAGS_num_tablets);
  if (FLAGS_pin) PinProcess(0, 1);
  std::vector<Round> rounds(std::max(1, FLAGS_rounds));
  for (size_t i = 0; i < rounds.size(); i++) {
    Status s = RunRound(root + "/round-" + std::to_string(i), &rounds[i]);
    if (!s.ok()) {
      fprintf(stderr, "round %zu failed: %s\n", i + 1, s.ToString().c_str());
      std::error_code ec;
      std::filesystem::remove_all(root, ec);
      return 1;
    }
    if (rounds.size() > 1) {
      const Round& r = rounds[i];
      printf("round %zu: client %lld ms (CPU per row: client %.2f us, tablet server %.2f us)",
             i + 1, (long long)r.load.elapsed_ms, double(r.load.client_cpu_us) / rows,
             double(r.load.server_cpu_us) / rows);
      if (!FLAGS_skip_rocksdb)
        printf(", bare %lld ms, ratio %.3f", (long long)r.bare_ms, r.ratio());
      printf("\n");
      fflush(stdout);
    }
  }
  if (rounds.size() > 1) printf("medians of %zu rounds:\n", rounds.size());
  const int64_t client_ms =
      Median<int64_t>(rounds, [](const Round& r) { return r.load.elapsed_ms; });
  printf("total : %lld ms\n", (long long)client_ms);
  printf("per row: %.6f ms\n", double(client_ms) / rows);
  printf("client rows/s: %.0f\n", rows * 1000.0 / double(std::max<int64_t>(client_ms, 1)));
  printf("CPU per row: client %.2f us",
         Median<int64_t>(rounds, [](const Round& r) { return r.load.client_cpu_us; }) / rows);
  if (rounds[0].load.server_cpu_us >= 0) {
    printf(", tablet server %.2f us",
           Median<int64_t>(rounds, [](const Round& r) { return r.load.server_cpu_us; }) / rows);
  }
  printf("\n");
  if (!FLAGS_skip_rocksdb) {
    const int64_t bare_ms = Median<int64_t>(rounds, [](const Round& r) { return r.bare_ms; });
    printf("bare RocksDB WriteBatch load: %lld ms, %.0f rows/s, CPU per row %.2f us\n",
           (long long)bare_ms, rows * 1000.0 / double(std::max<int64_t>(bare_ms, 1)),
           Median<int64_t>(rounds, [](const Round& r) { return r.bare_cpu_us; }) / rows);
    // The median of the per-round ratios: each is measured side by side.
    printf("ratio vs bare RocksDB: %.3f\n",
           Median<double>(rounds, [](const Round& r) { return r.ratio(); }));
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
