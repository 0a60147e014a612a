// tablet-bench: the tablet server's data path on the seed schema
// (key INT64, a INT32, b STRING, c STRING, d INT32; strings of 32 bytes).
//
// The tablets run as in a tablet server: each is a Raft group of one on a consensus
// runtime whose shared log (in <--bench_dir>/wal) is fdatasynced before each write is
// applied (--log_fsync, default true), so a write costs what it costs in production.
//
// In-process (no RPC):
//   insert     --rows rows in Write blocks of --batch_rows through Tablet::Write, the
//              code the Write RPC runs (decode, row locks, existence MultiGet, the
//              command appended to the consensus log and synced, then applied as one
//              WriteBatch), alternating in --rounds rounds with
//   bare       the same storage keys and row values put with plain WriteBatches into
//              a second store opened with the same RocksDB options (WAL on, no sync,
//              no consensus log). Prints `write ratio vs bare RocksDB: X` (tablet
//              rows/s / bare rows/s).
//   get        Tablet::Get of one random key, and of 100 random keys, per call
//   scan       a full scan of the tablet through the ScannerManager (1 MiB batches)
// Reads come from SST files through the block cache (--flush_before_reads).
// RPC (a server messenger with the tablet service and a client messenger, loopback;
// --server_cpu / --client_cpu pin them):
//   write      rows/s of Write RPCs of --batch_rows rows, one in flight
//   get        µs per one-key Get RPC and per key of 100-key Get RPCs
//   cpu        server-thread CPU per one-key Get vs per one-row Scan (an equality
//              predicate on the key), from the CPU clocks of the server's threads
//              only, one call in flight and then --cpu_in_flight calls at once;
//              prints `get/scan server CPU ratio: X` (and `..., N in flight: X`).
//              With one call in flight, most of a call's server CPU is the kernel
//              waking the server's thread and then the client (~40 us on the 2-vCPU
//              VM, the same for both methods: both run on the reactor thread, the
//              Get in its fast path, the sync Scan inline, --rpc_inline_calls);
//              with calls in flight the threads stay
//              awake and the ratio is of the calls' own work, which is what the
//              "Get < half a one-row Scan" target is about. Gets are answered from
//              the RocksDB row cache once warm (--row_cache_capacity_mb=0 turns it
//              off); the scans' blocks come from the block cache.
// Every figure is the run's own; take the median of 3 runs (bench/README.md).
#include <dirent.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "common/key_encoding.h"
#include "common/metrics.h"
#include "common/row_encoding.h"
#include "common/row_operations.h"
#include "common/status.h"
#include "nyala/monotime.h"
#include "rpc/messenger.h"
#include "rpc/rpc_controller.h"
#include "tserver/request_tracker.h"
#include "tserver/scanners.h"
#include "tserver/tablet.h"
#include "tserver/tablet_manager.h"
#include "tserver/tablet_manager_test_util.h"
#include "tserver/tablet_service.h"
#include "tserver/tablet_store.h"
#include "tserver/tserver.proxy.h"
#include "tserver/tserver_metrics.h"
#include "tserver/tserver_test_util.h"

DECLARE_int64(row_cache_capacity_mb);
DECLARE_bool(log_fsync);

DEFINE_int64(rows, 1000000, "Rows inserted in-process (half through the tablet, half bare).");
DEFINE_int32(batch_rows, 1000, "Rows per Write block / WriteBatch.");
DEFINE_int32(rounds, 4, "Alternating rounds of tablet and bare inserts (A B A B ...).");
DEFINE_bool(random_keys, false, "Insert keys in random order instead of ascending.");
DEFINE_int32(get_ops, 100000, "In-process single-key Gets (and a tenth as many 100-key Gets).");
DEFINE_int64(rpc_rows, 200000, "Rows written over RPC.");
DEFINE_int32(rpc_get_ops, 20000, "One-key Get RPCs (and as many one-row Scan RPCs for CPU).");
DEFINE_bool(rpc, true, "Also run the RPC-level figures.");
DEFINE_bool(flush_before_reads, true,
            "Flush the tablets' memtables before the reads (in-process and RPC), so they read "
            "SST files through the block cache, as on a server whose tablets outgrow their "
            "memtables; false reads tablets whose every row is still in a memtable.");
DEFINE_int32(cpu_in_flight, 16,
             "Calls in flight for the under-load server-CPU figure of Get vs one-row Scan "
             "(0 skips it).");
DEFINE_int32(server_cpu, -1,
             "Pin the RPC part's server threads (reactor, service threads) to this CPU (-1: "
             "unpinned). bench/README.md's single-client figures: --server_cpu=0 "
             "--client_cpu=1, and both on 0 for a second row.");
DEFINE_int32(client_cpu, -1, "Pin the RPC part's client (the calling thread) to this CPU.");
DEFINE_string(bench_dir, "", "Directory for the stores (default: a new one under /tmp, removed).");

namespace nyala::tserver {
namespace {

using bench::PinCurrentThread;

using namespace testing;  // NOLINT(build/namespaces)

double Seconds(MonoTime start) { return (MonoTime::Now() - start).ToSeconds(); }

// Keys for `n` rows starting at `first`: ascending, or a fixed random permutation.
std::vector<int64_t> KeyOrder(int64_t first, int64_t n, uint64_t seed) {
  std::vector<int64_t> keys(n);
  for (int64_t i = 0; i < n; i++) keys[i] = first + i;
  if (FLAGS_random_keys) std::shuffle(keys.begin(), keys.end(), std::mt19937_64(seed));
  return keys;
}

WriteRequestPB BuildWrite(const std::string& tablet_id, const Schema& schema, const int64_t* keys,
                          int n) {
  WriteRequestPB req;
  req.set_tablet_id(tablet_id);
  schema.ToPB(req.mutable_schema());
  RowOperationsEncoder enc(&schema);
  Row row(&schema);
  for (int i = 0; i < n; i++) {
    SeedRow r = MakeSeedRow(keys[i], false);
    FillRow(r, &row);
    CHECK_OK(enc.Add(RowOpType::kInsert, row.view()));
  }
  enc.Finish(req.mutable_row_operations());
  return req;
}

// The storage keys and values the tablet would write for `keys`.
void BuildBare(uint64_t seq, const Schema& schema, const int64_t* keys, int n,
               std::vector<std::string>* ks, std::vector<std::string>* vs) {
  ks->resize(n);
  vs->resize(n);
  Row row(&schema);
  for (int i = 0; i < n; i++) {
    SeedRow r = MakeSeedRow(keys[i], false);
    FillRow(r, &row);
    (*ks)[i] = TabletPrefix(seq);
    EncodeKey(schema, row.view().cells(), &(*ks)[i]);
    (*vs)[i].clear();
    CHECK_OK(EncodeRowValue(row.view(), &(*vs)[i]));
  }
}

// CPU seconds used so far by this process's threads whose name starts with one of
// `prefixes`, read from each thread's CPU clock: the scheduler's exact run time, where
// /proc's utime and stime are sampled at timer ticks (10 ms), too coarse for
// threads that run for microseconds at a time.
double ThreadsCpuSeconds(const std::vector<std::string>& prefixes) {
  double total = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm_file(entry.path() / "comm");
    std::string comm;
    std::getline(comm_file, comm);
    bool match = false;
    for (const auto& p : prefixes) match |= comm.rfind(p, 0) == 0;
    if (!match) continue;
    const pid_t tid = static_cast<pid_t>(std::stol(entry.path().filename().string()));
    // The clock id glibc's pthread_getcpuclockid() makes: per-thread, scheduler time.
    const clockid_t clock = static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6);
    timespec ts;
    if (clock_gettime(clock, &ts) != 0) continue;  // the thread just exited
    total += double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
  }
  return total;
}

struct Env {
  std::string dir;
  MetricRegistry registry;
  std::unique_ptr<TServerMetrics> metrics;
  // The manager, its consensus runtime and request tracker, as a tablet server has them.
  std::unique_ptr<TestTabletManager> server;
  TabletManager* tablets = nullptr;  // server's
  std::unique_ptr<ScannerManager> scanners;
  Schema schema = SeedSchema(false);
};

void RunInProcess(Env* env) {
  const Schema& schema = env->schema;
  TabletServerErrorPB::Code code;
  CHECK_OK(env->tablets->CreateTablet(MakeCreateTablet("bench", schema), &code));
  std::shared_ptr<Tablet> tablet = env->tablets->Lookup("bench");
  auto bare_store = TabletStore::Open(env->dir + "/bare", nullptr);
  CHECK_OK(bare_store.status());
  // A rows family like a tablet's, without the tablet's write path.
  TabletMetadataPB bare_meta;
  bare_meta.set_tablet_id("bare");
  CHECK_OK((*bare_store)->CreateTabletMetadata(&bare_meta));
  const uint64_t bare_seq = bare_meta.seq();
  std::shared_ptr<TabletRows> bare_family = (*bare_store)->Rows(bare_seq);

  const int64_t per_side = FLAGS_rows / 2;
  const int64_t per_round = std::max<int64_t>(FLAGS_batch_rows, per_side / FLAGS_rounds);
  std::vector<int64_t> tablet_keys = KeyOrder(0, per_side, 1);
  std::vector<int64_t> bare_keys = KeyOrder(0, per_side, 2);
  double tablet_secs = 0, bare_secs = 0;
  int64_t tablet_rows = 0, bare_rows = 0;
  StoreWriteBatch batch;
  std::vector<std::string> ks, vs;
  for (int64_t done = 0; done < per_side; done += per_round) {
    const int64_t end = std::min(per_side, done + per_round);
    // A: through the tablet's write path.
    for (int64_t i = done; i < end; i += FLAGS_batch_rows) {
      const int n = static_cast<int>(std::min<int64_t>(FLAGS_batch_rows, end - i));
      WriteRequestPB req = BuildWrite("bench", schema, &tablet_keys[i], n);
      WriteResponsePB resp;
      const MonoTime t0 = MonoTime::Now();
      tablet->Write(req, &resp);
      tablet_secs += Seconds(t0);
      CHECK(!resp.has_error() && resp.per_row_errors_size() == 0) << resp.ShortDebugString();
      tablet_rows += n;
    }
    // B: the same bytes with bare WriteBatches.
    for (int64_t i = done; i < end; i += FLAGS_batch_rows) {
      const int n = static_cast<int>(std::min<int64_t>(FLAGS_batch_rows, end - i));
      BuildBare(bare_seq, schema, &bare_keys[i], n, &ks, &vs);
      const MonoTime t0 = MonoTime::Now();
      batch.Clear();
      for (int j = 0; j < n; j++) batch.Put(*bare_family, ks[j], vs[j]);
      CHECK_OK((*bare_store)->Write(&batch));
      bare_secs += Seconds(t0);
      bare_rows += n;
    }
  }
  const double tablet_rate = tablet_rows / tablet_secs, bare_rate = bare_rows / bare_secs;
  printf("insert (tablet write path, %s keys, %d-row blocks): %lld rows in %.2f s = %.0f rows/s\n",
         FLAGS_random_keys ? "random" : "sequential", FLAGS_batch_rows,
         static_cast<long long>(tablet_rows), tablet_secs, tablet_rate);
  printf(
      "insert (bare RocksDB WriteBatch, same bytes and options): %lld rows in %.2f s = %.0f "
      "rows/s\n",
      static_cast<long long>(bare_rows), bare_secs, bare_rate);
  printf("write ratio vs bare RocksDB: %.2f\n", tablet_rate / bare_rate);
  bare_family.reset();
  bare_store->reset();

  if (FLAGS_flush_before_reads) CHECK_OK(tablet->store()->Flush());
  // Get.
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int64_t> pick(0, per_side - 1);
  {
    GetRequestPB req;
    req.set_tablet_id("bench");
    req.add_keys();
    std::string rows, indirect;
    const MonoTime t0 = MonoTime::Now();
    int found = 0;
    for (int i = 0; i < FLAGS_get_ops; i++) {
      *req.mutable_keys(0) = EncodedKey(schema, pick(rng));
      GetResponsePB resp;
      tablet->Get(req, &resp, &rows, &indirect);
      found += resp.data().num_rows();
    }
    const double s = Seconds(t0);
    CHECK_EQ(found, FLAGS_get_ops);
    printf("get, 1 key per call: %.2f us/key (%.0f keys/s)\n", s * 1e6 / FLAGS_get_ops,
           FLAGS_get_ops / s);
  }
  {
    const int calls = std::max(1, FLAGS_get_ops / 100);
    GetRequestPB req;
    req.set_tablet_id("bench");
    for (int j = 0; j < 100; j++) req.add_keys();
    std::string rows, indirect;
    const MonoTime t0 = MonoTime::Now();
    int64_t found = 0;
    for (int i = 0; i < calls; i++) {
      for (int j = 0; j < 100; j++) *req.mutable_keys(j) = EncodedKey(schema, pick(rng));
      GetResponsePB resp;
      tablet->Get(req, &resp, &rows, &indirect);
      found += resp.data().num_rows();
    }
    const double s = Seconds(t0);
    CHECK_EQ(found, int64_t{calls} * 100);
    printf("get, 100 keys per call: %.2f us/key (%.0f keys/s)\n", s * 1e6 / (calls * 100.0),
           calls * 100 / s);
  }
  // Handler work only: one-key Get vs one-row Scan (key equality), same thread.
  {
    const int ops = std::max(1, FLAGS_get_ops / 2);
    double get_s = 0, scan_s = 0;
    std::string rows, indirect;
    for (int round = 0; round < 4; round++) {
      MonoTime t0 = MonoTime::Now();
      for (int i = 0; i < ops / 4; i++) {
        GetRequestPB req;
        req.set_tablet_id("bench");
        req.add_keys(EncodedKey(schema, pick(rng)));
        GetResponsePB resp;
        tablet->Get(req, &resp, &rows, &indirect);
        CHECK_EQ(resp.data().num_rows(), 1);
      }
      get_s += Seconds(t0);
      t0 = MonoTime::Now();
      for (int i = 0; i < ops / 4; i++) {
        ScanRequestPB req;
        auto* ns = req.mutable_new_scan_request();
        ns->set_tablet_id("bench");
        auto* p = ns->add_predicates();
        p->set_column("key");
        p->mutable_equality()->set_value(EncodeCellValue(Cell::Int64(pick(rng))));
        ScanResponsePB resp;
        env->scanners->StartScan(tablet, req, &resp, &rows, &indirect);
        CHECK_EQ(resp.data().num_rows(), 1);
      }
      scan_s += Seconds(t0);
    }
    const int n = 4 * (ops / 4);
    printf("handler work, one-key Get: %.2f us; one-row Scan: %.2f us; ratio %.2f\n",
           get_s * 1e6 / n, scan_s * 1e6 / n, get_s / scan_s);
  }
  // Scan.
  {
    ScanRequestPB req;
    req.mutable_new_scan_request()->set_tablet_id("bench");
    ScanResponsePB resp;
    std::string rows, indirect;
    const MonoTime t0 = MonoTime::Now();
    env->scanners->StartScan(tablet, req, &resp, &rows, &indirect);
    int64_t total = resp.data().num_rows();
    uint32_t seq = 0;
    while (resp.has_more_results()) {
      ScanRequestPB next;
      next.set_scanner_id(resp.scanner_id());
      next.set_call_seq_id(++seq);
      resp.Clear();
      env->scanners->ContinueScan(next, &resp, &rows, &indirect);
      CHECK(!resp.has_error()) << resp.ShortDebugString();
      total += resp.data().num_rows();
    }
    const double s = Seconds(t0);
    CHECK_EQ(total, per_side);
    printf("scan, all columns, 1 MiB batches: %lld rows in %.3f s = %.0f rows/s\n",
           static_cast<long long>(total), s, total / s);
  }
}

// Keeps `in_flight` async calls going until `total` have completed: each call's
// callback checks its answer and issues the next one.
template <typename Req, typename Resp>
using AsyncMethod = void (TabletServerServiceProxy::*)(const Req&, Resp*, rpc::RpcController*,
                                                       std::function<void()>) const;

template <typename Req, typename Resp>
void RunInFlight(const TabletServerServiceProxy& proxy, AsyncMethod<Req, Resp> method,
                 int in_flight, int64_t total,
                 const std::function<void(std::mt19937_64*, Req*)>& make,
                 const std::function<void(const Resp&)>& check) {
  struct Chain {
    std::mt19937_64 rng;
    Req req;
    Resp resp;
    rpc::RpcController ctl;
  };
  std::mutex mu;
  std::condition_variable cv;
  int64_t issued = 0, done = 0;
  std::vector<std::unique_ptr<Chain>> chains;
  std::function<void(Chain*)> issue = [&](Chain* c) {
    c->req.Clear();
    c->resp.Clear();
    make(&c->rng, &c->req);
    c->ctl.Reset();
    c->ctl.set_timeout(MonoDelta::FromSeconds(30));
    (proxy.*method)(c->req, &c->resp, &c->ctl, [&, c] {
      CHECK_OK(c->ctl.status());
      check(c->resp);
      bool again;
      {
        std::lock_guard<std::mutex> l(mu);
        done++;
        again = issued < total;
        if (again) issued++;
        if (done == total) cv.notify_all();
      }
      if (again) issue(c);
    });
  };
  {
    std::lock_guard<std::mutex> l(mu);
    issued = std::min<int64_t>(in_flight, total);
  }
  for (int64_t i = 0; i < std::min<int64_t>(in_flight, total); i++) {
    chains.push_back(std::make_unique<Chain>());
    chains.back()->rng.seed(static_cast<uint64_t>(i + 11));
  }
  for (auto& c : chains) issue(c.get());
  std::unique_lock<std::mutex> l(mu);
  cv.wait(l, [&] { return done == total; });
}

void RunRpc(Env* env) {
  const Schema& schema = env->schema;
  if (FLAGS_server_cpu >= 0 || FLAGS_client_cpu >= 0) {
    printf("rpc part: server threads on CPU %d, client on CPU %d (-1: unpinned)\n",
           FLAGS_server_cpu, FLAGS_client_cpu);
  }
  PinCurrentThread(FLAGS_server_cpu);  // the server's reactor and service threads
  TabletServerErrorPB::Code code;
  CHECK_OK(env->tablets->CreateTablet(MakeCreateTablet("rpc", schema), &code));
  rpc::MessengerOptions so;
  so.name = "srv";
  so.num_reactors = 1;
  so.metrics = &env->registry;
  auto server = rpc::Messenger::Create(so);
  CHECK_OK(server.status());
  TabletServiceDeps deps{env->tablets, env->scanners.get(), env->server->tracker(),
                         env->metrics.get()};
  CHECK_OK((*server)->RegisterService(std::make_unique<TabletServiceImpl>(deps), 2, 100));
  rpc::Sockaddr addr;
  CHECK_OK((*server)->AddListener(rpc::Sockaddr::Loopback(0), &addr));
  PinCurrentThread(FLAGS_client_cpu);  // the client's messenger and this calling thread
  rpc::MessengerOptions co;
  co.name = "cli";
  co.num_reactors = 1;
  auto client = rpc::Messenger::Create(co);
  CHECK_OK(client.status());
  TabletServerServiceProxy proxy(*client, addr);
  auto call = [&](auto method, const auto& req, auto* resp, rpc::RpcController* ctl) {
    ctl->Reset();
    ctl->set_timeout(MonoDelta::FromSeconds(30));
    CHECK_OK((proxy.*method)(req, resp, ctl));
  };

  // Write.
  {
    std::vector<int64_t> keys = KeyOrder(0, FLAGS_rpc_rows, 4);
    double secs = 0;
    rpc::RpcController ctl;
    for (int64_t i = 0; i < FLAGS_rpc_rows; i += FLAGS_batch_rows) {
      const int n = static_cast<int>(std::min<int64_t>(FLAGS_batch_rows, FLAGS_rpc_rows - i));
      WriteRequestPB req = BuildWrite("rpc", schema, &keys[i], n);
      WriteResponsePB resp;
      const MonoTime t0 = MonoTime::Now();
      call(&TabletServerServiceProxy::Write, req, &resp, &ctl);
      secs += Seconds(t0);
      CHECK(!resp.has_error() && resp.per_row_errors_size() == 0) << resp.ShortDebugString();
    }
    printf("rpc write, %d-row blocks, 1 in flight: %.0f rows/s\n", FLAGS_batch_rows,
           FLAGS_rpc_rows / secs);
  }
  if (FLAGS_flush_before_reads) {
    // Reads then come from SST files through the block cache, as on a server whose
    // tablets hold more rows than their memtables.
    CHECK_OK(env->tablets->Lookup("rpc")->store()->Flush());
  }
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int64_t> pick(0, FLAGS_rpc_rows - 1);
  // Get.
  {
    GetRequestPB req;
    req.set_tablet_id("rpc");
    req.add_keys();
    rpc::RpcController ctl;
    const MonoTime t0 = MonoTime::Now();
    for (int i = 0; i < FLAGS_rpc_get_ops; i++) {
      *req.mutable_keys(0) = EncodedKey(schema, pick(rng));
      GetResponsePB resp;
      call(&TabletServerServiceProxy::Get, req, &resp, &ctl);
      CHECK_EQ(resp.data().num_rows(), 1);
    }
    const double s = Seconds(t0);
    printf("rpc get, 1 key per call: %.1f us/call (%.0f calls/s)\n", s * 1e6 / FLAGS_rpc_get_ops,
           FLAGS_rpc_get_ops / s);
    const int calls = std::max(1, FLAGS_rpc_get_ops / 10);
    req.clear_keys();
    for (int j = 0; j < 100; j++) req.add_keys();
    const MonoTime t1 = MonoTime::Now();
    for (int i = 0; i < calls; i++) {
      for (int j = 0; j < 100; j++) *req.mutable_keys(j) = EncodedKey(schema, pick(rng));
      GetResponsePB resp;
      call(&TabletServerServiceProxy::Get, req, &resp, &ctl);
      CHECK_EQ(resp.data().num_rows(), 100);
    }
    const double s1 = Seconds(t1);
    printf("rpc get, 100 keys per call: %.2f us/key\n", s1 * 1e6 / (calls * 100.0));
  }
  // Server CPU: one-key Get vs one-row Scan, A B A B; the same requests one at a time
  // and --cpu_in_flight at once.
  const std::vector<std::string> server_threads = {"srv-", "svc-TabletSe"};
  const int64_t max_key = FLAGS_rpc_rows - 1;
  auto make_get = [&](std::mt19937_64* rng, GetRequestPB* req) {
    req->set_tablet_id("rpc");
    req->add_keys(EncodedKey(schema, std::uniform_int_distribution<int64_t>(0, max_key)(*rng)));
  };
  auto check_get = [](const GetResponsePB& resp) { CHECK_EQ(resp.data().num_rows(), 1); };
  auto make_scan = [&](std::mt19937_64* rng, ScanRequestPB* req) {
    auto* ns = req->mutable_new_scan_request();
    ns->set_tablet_id("rpc");
    auto* p = ns->add_predicates();
    p->set_column("key");
    const int64_t k = std::uniform_int_distribution<int64_t>(0, max_key)(*rng);
    p->mutable_equality()->set_value(EncodeCellValue(Cell::Int64(k)));
  };
  auto check_scan = [](const ScanResponsePB& resp) {
    CHECK_EQ(resp.data().num_rows(), 1);
    CHECK(!resp.has_more_results());
  };
  {
    double get_cpu = 0, scan_cpu = 0;
    int64_t gets = 0, scans = 0;
    rpc::RpcController ctl;
    const int per_round = std::max(1, FLAGS_rpc_get_ops / 4);
    for (int round = 0; round < 4; round++) {
      double c0 = ThreadsCpuSeconds(server_threads);
      for (int i = 0; i < per_round; i++) {
        GetRequestPB req;
        make_get(&rng, &req);
        GetResponsePB resp;
        call(&TabletServerServiceProxy::Get, req, &resp, &ctl);
        check_get(resp);
      }
      double c1 = ThreadsCpuSeconds(server_threads);
      get_cpu += c1 - c0;
      gets += per_round;
      for (int i = 0; i < per_round; i++) {
        ScanRequestPB req;
        make_scan(&rng, &req);
        ScanResponsePB resp;
        call(&TabletServerServiceProxy::Scan, req, &resp, &ctl);
        check_scan(resp);
      }
      scan_cpu += ThreadsCpuSeconds(server_threads) - c1;
      scans += per_round;
    }
    printf("server CPU per one-key Get: %.1f us; per one-row Scan: %.1f us\n", get_cpu * 1e6 / gets,
           scan_cpu * 1e6 / scans);
    printf("get/scan server CPU ratio: %.2f (one call in flight: mostly thread wakeups, the "
           "same for both; see the file comment)\n",
           (get_cpu / gets) / (scan_cpu / scans));
  }
  // The same under load: --cpu_in_flight calls at once, so the server's threads
  // rarely sleep between calls and each call's own work shows, not the wakeups.
  if (FLAGS_cpu_in_flight > 0) {
    const int64_t per_round = std::max(1, FLAGS_rpc_get_ops);
    double get_cpu = 0, scan_cpu = 0;
    double get_secs = 0, scan_secs = 0;
    for (int round = 0; round < 4; round++) {
      double c0 = ThreadsCpuSeconds(server_threads);
      MonoTime t0 = MonoTime::Now();
      RunInFlight<GetRequestPB, GetResponsePB>(proxy, &TabletServerServiceProxy::GetAsync,
                                               FLAGS_cpu_in_flight, per_round, make_get, check_get);
      get_secs += Seconds(t0);
      double c1 = ThreadsCpuSeconds(server_threads);
      get_cpu += c1 - c0;
      t0 = MonoTime::Now();
      RunInFlight<ScanRequestPB, ScanResponsePB>(proxy, &TabletServerServiceProxy::ScanAsync,
                                                 FLAGS_cpu_in_flight, per_round, make_scan,
                                                 check_scan);
      scan_secs += Seconds(t0);
      scan_cpu += ThreadsCpuSeconds(server_threads) - c1;
    }
    const double calls = 4.0 * double(per_round);
    printf(
        "%d in flight: server CPU per one-key Get: %.1f us (%.0f calls/s); per one-row Scan: "
        "%.1f us (%.0f calls/s)\n",
        FLAGS_cpu_in_flight, get_cpu * 1e6 / calls, calls / get_secs, scan_cpu * 1e6 / calls,
        calls / scan_secs);
    printf("get/scan server CPU ratio, %d in flight: %.2f (target < 0.5)\n", FLAGS_cpu_in_flight,
           get_cpu / scan_cpu);
  }
  printf("row cache (--row_cache_capacity_mb=%lld): %.1f MiB in use\n",
         static_cast<long long>(FLAGS_row_cache_capacity_mb),
         double(TabletStore::RowCacheUsage()) / (1 << 20));
  (*client)->Shutdown();
  (*server)->Shutdown();
}

}  // namespace
}  // namespace nyala::tserver

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = 1;
  google::InitGoogleLogging(argv[0]);
  using namespace nyala::tserver;  // NOLINT(build/namespaces)
  Env env;
  bool remove_dir = false;
  if (FLAGS_bench_dir.empty()) {
    char tmpl[] = "/tmp/tablet-bench-XXXXXX";
    CHECK(mkdtemp(tmpl)) << "mkdtemp";
    env.dir = tmpl;
    remove_dir = true;
  } else {
    env.dir = FLAGS_bench_dir;
    std::filesystem::create_directories(env.dir);
  }
  env.metrics = std::make_unique<TServerMetrics>(&env.registry);
  {
    TestTabletManager::Options opts;
    opts.data_dir = env.dir;
    opts.metrics = env.metrics.get();
    auto server = TestTabletManager::Start(std::move(opts));
    CHECK_OK(server.status());
    env.server = std::move(*server);
    env.tablets = env.server->manager();
  }
  printf("tablets: Raft groups of one, consensus log in %s, fdatasync %s (--log_fsync)\n",
         env.server->wal_dir().c_str(), FLAGS_log_fsync ? "on" : "OFF");
  env.scanners = std::make_unique<ScannerManager>(env.metrics.get());
  const nyala::MonoTime t0 = nyala::MonoTime::Now();
  RunInProcess(&env);
  if (FLAGS_rpc) RunRpc(&env);
  env.scanners.reset();
  env.tablets = nullptr;
  env.server.reset();
  if (remove_dir) std::filesystem::remove_all(env.dir);
  printf("total run time: %.1f s\n", (nyala::MonoTime::Now() - t0).ToSeconds());
  return 0;
}
