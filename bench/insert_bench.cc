// insert-bench: the flush-watermark experiment (and, with --compare_replicas, the replication one).
// Loads --rows rows of (key INT64, a INT32, b STRING, c STRING, d INT32), strings ~32 bytes on
// average, through --threads clients (each its own Client and one AUTO_FLUSH_BACKGROUND session),
// then loads the same rows into a bare in-process RocksDB with WriteBatches of 1000 (WAL on, no
// sync) in the same run, and prints both and their ratio, with the CPU each side used per row
// (client process; tablet server processes when this run started them; the bare load's process
// CPU).
//
//   insert-bench --rows=400000 --threads=1 --flush_watermark=0.5 [--rounds=3] [--pin]
//   insert-bench --replicas=3 [--rounds=3]
//   insert-bench --compare_replicas=3 --rounds=5
//
// Without --master_addresses it starts its own nyala-master and --replicas
// nyala-tservers in a temporary directory (removed at the end), a fresh cluster per
// round, and creates the table with --replicas replicas. --rounds=N repeats (client
// load, bare load) N times, one after the other, and prints the medians; the ratio
// printed is the median of the per-round ratios. --pin runs the daemons on CPU 0 and
// this process on CPU 1.
//
// --compare_replicas=R (R > 1) is the replication experiment: each round loads the
// same rows into (a) a table of 1 replica on a fresh 1-tserver cluster and (b) a table
// of R replicas on a fresh R-tserver cluster, one after the other (the order alternates
// between rounds: a b, b a, a b, ...), with the daemons' defaults (consensus log
// fdatasync'ed before each ack). It prints, for each, rows/s and the tablet servers'
// CPU per row per replica: the CPU of every tablet server process during the load,
// summed, divided by rows and by the replica count; then the per-round ratio
// (b)/(a) of that figure, and its median over the rounds as the last line:
//   per-replica tserver CPU per row, RF3 vs RF1: 1.23
// The bare RocksDB load is not run in this mode.
//
// Tablet server CPU (every mode) is read from /proc/<pid>/stat (10 ms ticks), from the
// load's start until the servers are idle again (at most one tick in 250 ms, at most
// 5 s after the load): followers may still be applying when the last write is
// acknowledged, and that work belongs to the load. --compare_replicas prints how much
// of it came after the load.
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
#include "common/key_encoding.h"
#include "common/result.h"
#include "common/row_encoding.h"
#include "nyala/client.h"
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
DEFINE_int32(replicas, 1,
             "Replicas of the table; the cluster this run starts has as many tablet servers.");
DEFINE_int32(compare_replicas, 0,
             "R > 1: in every round, load a 1-replica table on a 1-tserver cluster and an "
             "R-replica table on an R-tserver cluster (order alternating between rounds), "
             "and compare the tablet servers' CPU per row per replica. Ignores --replicas, "
             "--master_addresses and the bare RocksDB load.");
DEFINE_validator(replicas, [](const char*, int32_t v) { return v >= 1; });
DEFINE_validator(compare_replicas, [](const char*, int32_t v) { return v == 0 || v > 1; });

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
  int replicas = 1;
  int64_t elapsed_ms = 0;
  int64_t client_cpu_us = 0;  // this process, all threads
  // Every tablet server's CPU, summed, when this run started them: from the load's
  // start until the servers are idle again (followers may still be applying when the
  // last write is acknowledged); server_drain_cpu_us of it came after the load.
  int64_t server_cpu_us = -1;
  int64_t server_drain_cpu_us = 0;

  double rows_per_s() const {
    return double(FLAGS_rows) * 1000.0 / double(std::max<int64_t>(elapsed_ms, 1));
  }
  // Tablet server CPU per row (all servers), and per row and replica, in µs.
  double server_us_per_row() const { return double(server_cpu_us) / double(FLAGS_rows); }
  double server_us_per_row_replica() const { return server_us_per_row() / replicas; }
  double client_us_per_row() const { return double(client_cpu_us) / double(FLAGS_rows); }
};

// The CPU of every process in `pids`, summed (µs); -1 when one is unknown.
int64_t SumProcessCpuMicros(const std::vector<pid_t>& pids) {
  if (pids.empty()) return -1;
  int64_t sum = 0;
  for (pid_t pid : pids) {
    const int64_t us = ProcessCpuMicros(pid);
    if (us < 0) return -1;
    sum += us;
  }
  return sum;
}

// Waits until the processes in `pids` use at most one clock tick (10 ms) of CPU in
// 250 ms, at most 5 s; returns their summed CPU then (-1 when unknown). `cpu` is their
// CPU now.
int64_t WaitUntilIdle(const std::vector<pid_t>& pids, int64_t cpu) {
  const MonoTime deadline = MonoTime::Now() + MonoDelta::FromSeconds(5);
  while (cpu >= 0 && MonoTime::Now() < deadline) {
    SleepFor(MonoDelta::FromMilliseconds(250));  // sampling other processes
    const int64_t now = SumProcessCpuMicros(pids);
    if (now < 0 || now - cpu <= 10000) return now;
    cpu = now;
  }
  return cpu;
}

// Creates the table with `replicas` replicas (dropping an old one) and loads the rows
// into it. `tserver_pids`: the tablet servers whose CPU is counted (may be empty).
Status LoadThroughClient(const std::string& masters, const std::vector<pid_t>& tserver_pids,
                         int replicas, LoadFigures* out) {
  out->replicas = replicas;
  ASSIGN_OR_RETURN(auto admin, ClientBuilder().add_master_server_addr(masters).Build());
  ASSIGN_OR_RETURN(bool exists, admin->TableExists(FLAGS_table_name));
  if (exists) RETURN_NOT_OK(admin->DeleteTable(FLAGS_table_name));
  ASSIGN_OR_RETURN(Schema schema, BenchSchema());
  auto creator = admin->NewTableCreator();
  creator->table_name(FLAGS_table_name).schema(schema).num_replicas(replicas);
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
  const int64_t server_cpu0 = SumProcessCpuMicros(tserver_pids);
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
  const int64_t server_cpu1 = SumProcessCpuMicros(tserver_pids);
  const int64_t server_cpu2 = WaitUntilIdle(tserver_pids, server_cpu1);
  if (server_cpu0 >= 0 && server_cpu2 >= 0) {
    out->server_cpu_us = server_cpu2 - server_cpu0;
    out->server_drain_cpu_us = server_cpu2 - server_cpu1;
  }
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
  double client_rps() const { return load.rows_per_s(); }
  double bare_rps() const {
    return double(FLAGS_rows) * 1000.0 / double(std::max<int64_t>(bare_ms, 1));
  }
  double ratio() const { return client_rps() / bare_rps(); }
};

std::vector<std::string> ExtraTserverFlags() {
  std::vector<std::string> flags;
  std::istringstream words(FLAGS_tserver_flags);
  for (std::string w; words >> w;) flags.push_back(w);
  return flags;
}

// One client load into a table of `replicas` replicas on a fresh cluster of `replicas`
// tablet servers under `dir` (or on --master_addresses when `use_given` and it is set).
Status RunClientLoad(const std::string& dir, int replicas, bool use_given, LoadFigures* out) {
  std::unique_ptr<itest::ClientTestCluster> cluster;
  std::string masters = use_given ? FLAGS_master_addresses : "";
  std::vector<pid_t> tserver_pids;
  if (masters.empty()) {
    cluster =
        std::make_unique<itest::ClientTestCluster>(dir + "/cluster", replicas, ExtraTserverFlags());
    RETURN_NOT_OK_PREPEND(cluster->Start(), "starting the cluster");
    masters = cluster->master_addr();
    if (FLAGS_pin) PinProcess(cluster->master()->pid(), 0);
    for (int i = 0; i < cluster->num_tservers(); i++) {
      tserver_pids.push_back(cluster->tserver(i)->pid());
      if (FLAGS_pin) PinProcess(cluster->tserver(i)->pid(), 0);
    }
  }
  Status s = LoadThroughClient(masters, tserver_pids, replicas, out);
  if (cluster) WARN_NOT_OK(cluster->Shutdown(), "stopping the cluster");
  return s.CloneAndPrepend("client load, " + std::to_string(replicas) + " replica(s)");
}

// One client load (on a fresh cluster under `dir` unless --master_addresses), then
// the bare RocksDB load of the same rows.
Status RunRound(const std::string& dir, Round* r) {
  RETURN_NOT_OK(RunClientLoad(dir, FLAGS_replicas, true, &r->load));
  if (!FLAGS_skip_rocksdb) {
    RETURN_NOT_OK_PREPEND(LoadBareRocksDb(dir + "/bare-rocksdb", &r->bare_ms, &r->bare_cpu_us),
                          "bare RocksDB load");
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return Status::OK();
}

// The median of f(r) over `rounds` (the upper one of an even count).
template <typename R, typename F>
auto Median(const std::vector<R>& rounds, F f) {
  std::vector<decltype(f(rounds[0]))> v;
  for (const R& r : rounds) v.push_back(f(r));
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// --compare_replicas: one round's two loads, measured one after the other.
struct ComparePair {
  LoadFigures one;   // 1 replica, 1 tablet server
  LoadFigures many;  // --compare_replicas replicas and tablet servers
  double cpu_ratio() const {
    return many.server_us_per_row_replica() / one.server_us_per_row_replica();
  }
  double rps_ratio() const { return many.rows_per_s() / one.rows_per_s(); }
};

void PrintLoad(const char* prefix, const LoadFigures& l) {
  const double drain_pct =
      100.0 * double(l.server_drain_cpu_us) / double(std::max<int64_t>(l.server_cpu_us, 1));
  printf(
      "%sRF%d: %lld ms, %.0f rows/s, tserver CPU per row %.2f us (%d server(s), %.1f%% of it "
      "after the load), per replica %.2f us, client %.2f us",
      prefix, l.replicas, (long long)l.elapsed_ms, l.rows_per_s(), l.server_us_per_row(),
      l.replicas, drain_pct, l.server_us_per_row_replica(), l.client_us_per_row());
}

int RunCompare(const std::string& root) {
  const int rf = FLAGS_compare_replicas;
  printf(
      "rows: %lld  threads: %d  flush_watermark: %.2f  tablets: %d  "
      "compare: RF1 on 1 tablet server vs RF%d on %d\n",
      (long long)FLAGS_rows, FLAGS_threads, FLAGS_flush_watermark, FLAGS_num_tablets, rf, rf);
  std::vector<ComparePair> pairs(std::max(1, FLAGS_rounds));
  for (size_t i = 0; i < pairs.size(); i++) {
    const std::string dir = root + "/round-" + std::to_string(i);
    const bool many_first = i % 2 == 1;  // a b, b a, a b, ...
    for (int step = 0; step < 2; step++) {
      const bool many = (step == 0) == many_first;
      Status s = RunClientLoad(dir + (many ? "/rf-many" : "/rf-one"), many ? rf : 1, false,
                               many ? &pairs[i].many : &pairs[i].one);
      if (!s.ok()) {
        fprintf(stderr, "round %zu failed: %s\n", i + 1, s.ToString().c_str());
        return 1;
      }
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    const ComparePair& p = pairs[i];
    printf("round %zu (%s first):\n", i + 1, many_first ? "RF>1" : "RF1");
    PrintLoad("  ", p.one);
    printf("\n");
    PrintLoad("  ", p.many);
    printf("\n  per-replica CPU ratio %.3f, rows/s ratio %.3f\n", p.cpu_ratio(), p.rps_ratio());
    fflush(stdout);
  }
  printf("medians of %zu rounds:\n", pairs.size());
  for (bool many : {false, true}) {
    auto pick = [many](const ComparePair& p) -> const LoadFigures& {
      return many ? p.many : p.one;
    };
    printf("RF%d: %.0f rows/s, tserver CPU per row %.2f us, per replica %.2f us, client %.2f us\n",
           many ? rf : 1, Median(pairs, [&](const ComparePair& p) { return pick(p).rows_per_s(); }),
           Median(pairs, [&](const ComparePair& p) { return pick(p).server_us_per_row(); }),
           Median(pairs, [&](const ComparePair& p) { return pick(p).server_us_per_row_replica(); }),
           Median(pairs, [&](const ComparePair& p) { return pick(p).client_us_per_row(); }));
  }
  // Ratios: the medians of the per-round ratios, each measured side by side.
  printf("rows/s, RF%d vs RF1: %.3f\n", rf,
         Median(pairs, [](const ComparePair& p) { return p.rps_ratio(); }));
  printf("per-replica tserver CPU per row, RF%d vs RF1: %.3f\n", rf,
         Median(pairs, [](const ComparePair& p) { return p.cpu_ratio(); }));
  return 0;
}

int RunRounds(const std::string& root) {
  const double rows = double(FLAGS_rows);
  printf("rows: %lld  threads: %d  flush_watermark: %.2f  tablets: %d  replicas: %d\n",
         (long long)FLAGS_rows, FLAGS_threads, FLAGS_flush_watermark, FLAGS_num_tablets,
         FLAGS_replicas);
  std::vector<Round> rounds(std::max(1, FLAGS_rounds));
  for (size_t i = 0; i < rounds.size(); i++) {
    Status s = RunRound(root + "/round-" + std::to_string(i), &rounds[i]);
    if (!s.ok()) {
      fprintf(stderr, "round %zu failed: %s\n", i + 1, s.ToString().c_str());
      return 1;
    }
    if (rounds.size() > 1) {
      const Round& r = rounds[i];
      printf("round %zu: client %lld ms (CPU per row: client %.2f us, tablet server %.2f us)",
             i + 1, (long long)r.load.elapsed_ms, r.load.client_us_per_row(),
             r.load.server_us_per_row());
      if (!FLAGS_skip_rocksdb)
        printf(", bare %lld ms, ratio %.3f", (long long)r.bare_ms, r.ratio());
      printf("\n");
      fflush(stdout);
    }
  }
  if (rounds.size() > 1) printf("medians of %zu rounds:\n", rounds.size());
  const int64_t client_ms = Median(rounds, [](const Round& r) { return r.load.elapsed_ms; });
  printf("total : %lld ms\n", (long long)client_ms);
  printf("per row: %.6f ms\n", double(client_ms) / rows);
  printf("client rows/s: %.0f\n", rows * 1000.0 / double(std::max<int64_t>(client_ms, 1)));
  printf("CPU per row: client %.2f us",
         Median(rounds, [](const Round& r) { return r.load.client_us_per_row(); }));
  if (rounds[0].load.server_cpu_us >= 0) {
    printf(", tablet server %.2f us",
           Median(rounds, [](const Round& r) { return r.load.server_us_per_row(); }));
    if (FLAGS_replicas > 1) {
      printf(" (%d servers; per replica %.2f us)", FLAGS_replicas,
             Median(rounds, [](const Round& r) { return r.load.server_us_per_row_replica(); }));
    }
  }
  printf("\n");
  if (!FLAGS_skip_rocksdb) {
    const int64_t bare_ms = Median(rounds, [](const Round& r) { return r.bare_ms; });
    printf("bare RocksDB WriteBatch load: %lld ms, %.0f rows/s, CPU per row %.2f us\n",
           (long long)bare_ms, rows * 1000.0 / double(std::max<int64_t>(bare_ms, 1)),
           Median(rounds, [](const Round& r) { return r.bare_cpu_us; }) / rows);
    // The median of the per-round ratios: each is measured side by side.
    printf("ratio vs bare RocksDB: %.3f\n",
           Median(rounds, [](const Round& r) { return r.ratio(); }));
  }
  return 0;
}

int Main() {
  char tmpl[] = "/tmp/insert-bench-XXXXXX";
  CHECK(mkdtemp(tmpl) != nullptr);
  const std::string root = tmpl;
  if (FLAGS_pin) PinProcess(0, 1);
  const int rc = FLAGS_compare_replicas > 1 ? RunCompare(root) : RunRounds(root);
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  return rc;
}

}  // namespace
}  // namespace nyala::client

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = false;
  return nyala::client::Main();
}
