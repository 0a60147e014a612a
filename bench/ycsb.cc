// ycsb: a YCSB-style driver for Nyala. Reads YCSB workload property files and
// prints YCSB's report lines, so runs read like the published ones.
//
//   ycsb load -P bench/ycsb/workloadc -p recordcount=1000000 -threads 8 -p master_addresses=H:P
//   ycsb run  -P bench/ycsb/workloadc -p operationcount=1000000 -threads 100
//        -p requestdistribution=zipfian -p use_get_api=true -p master_addresses=H:P
//
// The properties are listed in kUsage below (`ycsb --help` prints it).
#include <glog/logging.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <thread>

#include "common/histogram.h"
#include "common/result.h"
#include "nyala/client.h"

namespace nyala::client::ycsb {
namespace {

constexpr const char* kUsage =
    R"(usage: ycsb load|run -P workloadfile [-p name=value]... [-threads N]
       ycsb --help

load creates the table (dropping one of the same name) and inserts recordcount
records; run runs the workload's operation mix against it. -P reads a YCSB workload
property file (bench/ycsb/workload[a-f]); -p sets one property, overriding the file
(later settings win). -threads N client threads (default 1). Prints YCSB's report
lines ([OVERALL], Throughput(ops/sec), ...).

YCSB CoreWorkload properties:
  recordcount                records loaded, and the key space of run (1000)
  operationcount             operations of run, split over the threads (1000)
  maxexecutiontime           seconds after which run stops even if operationcount is
                             not reached (0: no limit)
  readproportion, updateproportion, insertproportion, scanproportion,
  readmodifywriteproportion  the operation mix (0.95, 0.05, 0, 0, 0)
  requestdistribution        uniform, zipfian or latest (uniform)
  maxscanlength              longest scan, in rows (100)
  fieldcount, fieldlength    non-key columns and their length in bytes (10, 100)
  table                      the table's name (usertable)
Nyala's:
  master_addresses           the master(s), host:port,... (127.0.0.1:7051)
  num_replicas               load: replicas of each tablet (1); the cluster needs that
                             many live tablet servers
  num_tablets                load: hash buckets of the key (4)
  write_timeout_ms           deadline of each batch of writes from when it is sent,
                             retries included (0: the client's RPC timeout, 10 s)
  use_get_api                run: true reads by the Get RPC, false by a one-row Scan
                             (true)
  share_gets                 true: concurrent one-key Gets of a tablet share one RPC
                             (the client's default); false: one RPC each (true)
  client_reactors            the client's reactor threads (2)
)";

using Props = std::map<std::string, std::string>;

std::string Get(const Props& p, const std::string& k, const std::string& def) {
  auto it = p.find(k);
  return it == p.end() ? def : it->second;
}
double GetD(const Props& p, const std::string& k, double def) {
  auto it = p.find(k);
  return it == p.end() ? def : std::stod(it->second);
}
int64_t GetI(const Props& p, const std::string& k, int64_t def) {
  auto it = p.find(k);
  return it == p.end() ? def : std::stoll(it->second);
}

Status ReadPropertyFile(const std::string& path, Props* props) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read property file", path);
  std::string line;
  while (std::getline(in, line)) {
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t\r"));
      s.erase(s.find_last_not_of(" \t\r") + 1);
      return s;
    };
    (*props)[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  return Status::OK();
}

// YCSB's FNV-1a over the 8 bytes of `v`, made non-negative.
uint64_t FnvHash64(uint64_t v) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (int i = 0; i < 8; i++) {
    h ^= v & 0xff;
    v >>= 8;
    h *= 1099511628211ull;
  }
  return h & 0x7fffffffffffffffull;
}

std::string KeyOf(uint64_t keynum) { return "user" + std::to_string(FnvHash64(keynum)); }

// YCSB's ScrambledZipfianGenerator: a Zipfian (theta 0.99) over a huge item space,
// hashed onto [0, n).
class ScrambledZipfian {
 public:
  static constexpr double kTheta = 0.99;
  static constexpr uint64_t kItems = 10000000000ull;
  static constexpr double kZetan = 26.46902820178302;

  ScrambledZipfian() {
    zeta2_ = 1 + std::pow(0.5, kTheta);
    alpha_ = 1.0 / (1.0 - kTheta);
    eta_ = (1 - std::pow(2.0 / double(kItems), 1 - kTheta)) / (1 - zeta2_ / kZetan);
  }
  uint64_t Next(std::mt19937_64* rng, uint64_t n) const {
    double u = std::uniform_real_distribution<double>(0, 1)(*rng);
    double uz = u * kZetan;
    uint64_t v;
    if (uz < 1.0) {
      v = 0;
    } else if (uz < zeta2_) {
      v = 1;
    } else {
      v = uint64_t(double(kItems) * std::pow(eta_ * u - eta_ + 1, alpha_));
    }
    return FnvHash64(v) % n;
  }

 private:
  double zeta2_, alpha_, eta_;
};

struct OpStats {
  Histogram latency_us{60LL * 1000 * 1000};
  std::atomic<int64_t> ok{0};
  std::atomic<int64_t> failed{0};
};

class Driver {
 public:
  explicit Driver(Props p) : props_(std::move(p)) {}

  Status Init() {
    std::string masters = Get(props_, "master_addresses", "127.0.0.1:7051");
    ASSIGN_OR_RETURN(client_,
                     ClientBuilder()
                         .add_master_server_addr(masters)
                         .num_reactors(int(GetI(props_, "client_reactors", 2)))
                         .share_concurrent_gets(Get(props_, "share_gets", "true") == "true")
                         .Build());
    table_name_ = Get(props_, "table", "usertable");
    fieldcount_ = int(GetI(props_, "fieldcount", 10));
    fieldlength_ = int(GetI(props_, "fieldlength", 100));
    recordcount_ = GetI(props_, "recordcount", 1000);
    return Status::OK();
  }

  Status Load(int threads) {
    ASSIGN_OR_RETURN(bool exists, client_->TableExists(table_name_));
    if (exists) RETURN_NOT_OK(client_->DeleteTable(table_name_));
    SchemaBuilder sb;
    sb.AddKeyColumn("key", DataType::kString);
    for (int f = 0; f < fieldcount_; f++)
      sb.AddColumn("field" + std::to_string(f), DataType::kString);
    ASSIGN_OR_RETURN(Schema schema, sb.Build());
    auto creator = client_->NewTableCreator();
    creator->table_name(table_name_)
        .schema(schema)
        .num_replicas(int(GetI(props_, "num_replicas", 1)));
    creator->add_hash_partitions({"key"}, int32_t(GetI(props_, "num_tablets", 4)));
    RETURN_NOT_OK(creator->Create());
    ASSIGN_OR_RETURN(table_, client_->OpenTable(table_name_));
    OpStats& st = stats_["INSERT"];
    return RunThreads(threads, recordcount_, [&](int t, int64_t first, int64_t last) {
      auto session = NewSession();
      CHECK_OK(session->SetFlushMode(Session::FlushMode::kAutoFlushBackground));
      std::mt19937_64 rng(t + 1);
      for (int64_t k = first; k < last; k++) {
        const int64_t t0 = GetMonoTimeMicros();
        Status s = session->Apply(NewRow(RowOpType::kInsert, k, &rng));
        st.latency_us.Increment(GetMonoTimeMicros() - t0);
        (s.ok() ? st.ok : st.failed)++;
      }
      Status s = session->Flush();
      if (!s.ok()) LOG(ERROR) << s.ToString();
      ReportWriteErrors(session.get(), &st);
    });
  }

  Status Run(int threads) {
    ASSIGN_OR_RETURN(table_, client_->OpenTable(table_name_));
    const double read = GetD(props_, "readproportion", 0.95);
    const double update = GetD(props_, "updateproportion", 0.05);
    const double insert = GetD(props_, "insertproportion", 0);
    const double scan = GetD(props_, "scanproportion", 0);
    const double rmw = GetD(props_, "readmodifywriteproportion", 0);
    const double total = read + update + insert + scan + rmw;
    const std::string dist = Get(props_, "requestdistribution", "uniform");
    const bool use_get = Get(props_, "use_get_api", "true") == "true";
    const int64_t maxscan = GetI(props_, "maxscanlength", 100);
    next_insert_ = recordcount_;
    const int64_t max_seconds = GetI(props_, "maxexecutiontime", 0);
    const int64_t deadline_us = max_seconds > 0 ? GetMonoTimeMicros() + max_seconds * 1000 * 1000
                                                : std::numeric_limits<int64_t>::max();
    ScrambledZipfian zipf;
    return RunThreads(
        threads, GetI(props_, "operationcount", 1000), [&](int t, int64_t first, int64_t last) {
          auto session = NewSession();
          std::mt19937_64 rng(1000 + t);
          std::uniform_real_distribution<double> coin(0, total);
          auto choose_key = [&]() -> uint64_t {
            const uint64_t n = uint64_t(next_insert_.load());
            if (dist == "uniform") return rng() % n;
            if (dist == "latest") return n - 1 - std::min<uint64_t>(zipf.Next(&rng, n), n - 1);
            return zipf.Next(&rng, n);
          };
          for (int64_t i = first; i < last; i++) {
            double c = coin(rng);
            const char* name;
            const int64_t t0 = GetMonoTimeMicros();
            if (t0 >= deadline_us) break;
            Status s;
            if ((c -= read) < 0) {
              name = "READ";
              s = Read(KeyOf(choose_key()), use_get);
            } else if ((c -= update) < 0) {
              name = "UPDATE";
              s = session->Apply(NewRow(RowOpType::kUpdate, choose_key(), &rng, 1));
            } else if ((c -= insert) < 0) {
              name = "INSERT";
              s = session->Apply(NewRow(RowOpType::kInsert, next_insert_.fetch_add(1), &rng));
            } else if ((c -= scan) < 0) {
              name = "SCAN";
              s = Scan(KeyOf(choose_key()), 1 + int64_t(rng() % uint64_t(maxscan)));
            } else {
              name = "READ-MODIFY-WRITE";
              uint64_t k = choose_key();
              s = Read(KeyOf(k), use_get);
              if (s.ok()) s = session->Apply(NewRow(RowOpType::kUpdate, k, &rng, 1));
            }
            OpStats& st = stats_.at(name);
            st.latency_us.Increment(GetMonoTimeMicros() - t0);
            (s.ok() ? st.ok : st.failed)++;
          }
        });
  }

  void Report() const {
    int64_t ops = 0;
    for (const auto& [name, st] : stats_) ops += st.latency_us.TotalCount();
    printf("[OVERALL], RunTime(ms), %lld\n", (long long)runtime_ms_);
    printf("[OVERALL], Throughput(ops/sec), %.1f\n",
           double(ops) * 1000.0 / double(std::max<int64_t>(runtime_ms_, 1)));
    for (const auto& [name, st] : stats_) {
      if (st.latency_us.TotalCount() == 0) continue;
      const char* n = name.c_str();
      printf("[%s], Operations, %lld\n", n, (long long)st.latency_us.TotalCount());
      printf("[%s], AverageLatency(us), %.1f\n", n, st.latency_us.MeanValue());
      printf("[%s], MinLatency(us), %lld\n", n, (long long)st.latency_us.MinValue());
      printf("[%s], MaxLatency(us), %lld\n", n, (long long)st.latency_us.MaxValue());
      printf("[%s], 95thPercentileLatency(us), %lld\n", n,
             (long long)st.latency_us.ValueAtPercentile(95));
      printf("[%s], 99thPercentileLatency(us), %lld\n", n,
             (long long)st.latency_us.ValueAtPercentile(99));
      printf("[%s], Return=0, %lld\n", n, (long long)st.ok.load());
      if (st.failed.load() > 0) printf("[%s], Return=-1, %lld\n", n, (long long)st.failed.load());
    }
    fflush(stdout);
  }

 private:
  std::unique_ptr<WriteOperation> NewRow(RowOpType type, uint64_t keynum, std::mt19937_64* rng,
                                         int fields = -1) {
    auto op = type == RowOpType::kInsert ? table_->NewInsert() : table_->NewUpdate();
    CHECK_OK(op->Set(0, Cell::String(KeyOf(keynum))));
    std::string value(size_t(fieldlength_), 'x');
    const int n = fields < 0 ? fieldcount_ : fields;
    for (int f = 0; f < n; f++) {
      const int col = fields < 0 ? f : int((*rng)() % uint64_t(fieldcount_));
      for (char& ch : value) ch = char(' ' + (*rng)() % 95);
      CHECK_OK(op->Set(1 + col, Cell::String(value)));
    }
    return op;
  }

  std::shared_ptr<Session> NewSession() {
    auto session = client_->NewSession();
    const int64_t timeout_ms = GetI(props_, "write_timeout_ms", 0);
    if (timeout_ms > 0) CHECK_OK(session->SetTimeout(MonoDelta::FromMilliseconds(timeout_ms)));
    return session;
  }

  // Counts the session's failed writes into `st` and prints how many failed with each
  // status (on stderr, like YCSB's errors).
  static void ReportWriteErrors(Session* session, OpStats* st) {
    std::vector<std::unique_ptr<WriteError>> errors;
    bool overflowed = false;
    session->GetPendingErrors(&errors, &overflowed);
    const Session::WriteCounts counts = session->GetWriteCounts();
    st->failed += counts.failed + counts.timed_out;
    std::map<std::string, int64_t> by_status;
    for (const auto& e : errors) by_status[e->status().ToString()]++;
    for (const auto& [status, n] : by_status) {
      fprintf(stderr, "%lld writes failed: %s\n", (long long)n, status.c_str());
    }
    if (overflowed) fprintf(stderr, "(more errors were dropped)\n");
  }

  Status Read(const std::string& key, bool use_get) {
    Row k = table_->NewRow();
    RETURN_NOT_OK(k.Set(0, Cell::String(key)));
    if (use_get) {
      ASSIGN_OR_RETURN(GetResult r, table_->Get(k));
      return r.found(0) ? Status::OK() : Status::NotFound(key);
    }
    Scanner scanner(table_);
    ASSIGN_OR_RETURN(auto pred, table_->NewComparisonPredicate(
                                    "key", ColumnPredicate::CompareOp::kEqual, Cell::String(key)));
    RETURN_NOT_OK(scanner.AddPredicate(std::move(pred)));
    RETURN_NOT_OK(scanner.SetLimit(1));
    RETURN_NOT_OK(scanner.Open());
    int64_t rows = 0;
    for (int n = 0; scanner.HasMoreRows() && n < 1000; n++) {
      ScanBatch b;
      RETURN_NOT_OK(scanner.NextBatch(&b));
      rows += b.num_rows();
    }
    return rows == 1 ? Status::OK() : Status::NotFound(key);
  }

  Status Scan(const std::string& start, int64_t limit) {
    Scanner scanner(table_);
    Row k = table_->NewRow();
    RETURN_NOT_OK(k.Set(0, Cell::String(start)));
    RETURN_NOT_OK(scanner.AddLowerBound(k));
    RETURN_NOT_OK(scanner.SetLimit(limit));
    RETURN_NOT_OK(scanner.Open());
    for (int n = 0; scanner.HasMoreRows() && n < 10000; n++) {
      ScanBatch b;
      RETURN_NOT_OK(scanner.NextBatch(&b));
    }
    return Status::OK();
  }

  Status RunThreads(int threads, int64_t count,
                    const std::function<void(int, int64_t, int64_t)>& body) {
    for (const char* n : {"READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE"}) stats_[n];
    const MonoTime start = MonoTime::Now();
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) {
      const int64_t first = count * t / threads, last = count * (t + 1) / threads;
      ts.emplace_back([&, t, first, last] { body(t, first, last); });
    }
    for (auto& th : ts) th.join();
    runtime_ms_ = (MonoTime::Now() - start).ToMilliseconds();
    return Status::OK();
  }

  Props props_;
  std::shared_ptr<Client> client_;
  std::shared_ptr<Table> table_;
  std::string table_name_;
  int fieldcount_ = 10;
  int fieldlength_ = 100;
  int64_t recordcount_ = 1000;
  std::atomic<int64_t> next_insert_{0};
  std::map<std::string, OpStats> stats_;
  int64_t runtime_ms_ = 0;
};

int Main(int argc, char** argv) {
  if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
                    std::string(argv[1]) == "help")) {
    fputs(kUsage, stdout);
    return 0;
  }
  if (argc < 2 || (std::string(argv[1]) != "load" && std::string(argv[1]) != "run")) {
    fputs(kUsage, stderr);
    return 2;
  }
  const bool load = std::string(argv[1]) == "load";
  Props props;
  int threads = 1;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (a == "-P" && i + 1 < argc) {
      Status s = ReadPropertyFile(argv[++i], &props);
      if (!s.ok()) {
        fprintf(stderr, "%s\n", s.ToString().c_str());
        return 2;
      }
    } else if (a == "-p" && i + 1 < argc) {
      std::string kv = argv[++i];
      size_t eq = kv.find('=');
      if (eq == std::string::npos) {
        fprintf(stderr, "bad -p %s\n", kv.c_str());
        return 2;
      }
      props[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else if (a == "-threads" && i + 1 < argc) {
      threads = std::max(1, atoi(argv[++i]));
    } else if (a == "-s") {
      // status reporting: accepted for YCSB compatibility
    } else {
      fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  Driver d(props);
  Status s = d.Init();
  if (s.ok()) s = load ? d.Load(threads) : d.Run(threads);
  if (!s.ok()) {
    fprintf(stderr, "ycsb %s failed: %s\n", argv[1], s.ToString().c_str());
    return 1;
  }
  d.Report();
  return 0;
}

}  // namespace
}  // namespace nyala::client::ycsb

int main(int argc, char** argv) {
  google::InitGoogleLogging(argv[0]);
  return nyala::client::ycsb::Main(argc, argv);
}
