// table-locations-bench: Kudu's GetTableLocations benchmark (table_locations-itest)
// for Nyala. It starts a real nyala-master and 3 tablet servers (real nyala-tserver
// processes through MiniCluster, or in-process fake tablet servers when that binary
// is missing or --benchmark_fake_tservers), creates one table of
// --benchmark_num_tablets tablets, and runs --benchmark_num_threads client threads,
// each with its own messenger, making synchronous GetTableLocations calls
// (max_returned_locations=1000, interned server infos) for
// --benchmark_runtime_secs. It prints the RPC queue overflows, the request rate and
// the master's server-side handler latency histogram in microseconds (read from the
// master's /rpc-latency page), in the shape of Kudu's output.
//
//   table-locations-bench --rpc_num_service_threads=5 --benchmark_num_threads=2 --compare
//
// --compare runs the cache on, then off, each on a fresh cluster, and prints the
// ratios. --table_locations_cache_capacity_mb=0 alone runs without the cache.
#include <arpa/inet.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "common/row_operations.h"
#include "common/status.h"
#include "common/test_util.h"
#include "master/master-test-util.h"
#include "master/master.proxy.h"
#include "master/master.service.h"
#include "nyala/row.h"
#include "nyala/schema.h"
#include "rpc/rpc_controller.h"
#include "test/mini_cluster.h"

DEFINE_int32(benchmark_num_tablets, 60, "Tablets of the benchmark table.");
DEFINE_int32(benchmark_num_threads, 2, "Client threads, each with its own messenger.");
DEFINE_double(benchmark_runtime_secs, 10, "Length of the measured run of each configuration.");
DEFINE_int32(table_locations_cache_capacity_mb, 64,
             "Passed to the master: its table-locations cache capacity; 0 disables the cache.");
DEFINE_bool(compare, false, "Run with the cache on, then off, and print the ratios.");
DEFINE_bool(benchmark_fake_tservers, false,
            "Use in-process fake tablet servers even when nyala-tserver is built.");
DEFINE_string(benchmark_dir, "", "Where the daemons keep their data; default: a temp dir.");
DECLARE_int32(rpc_num_service_threads);

namespace nyala {
namespace {

using master::GetTableLocationsRequestPB;
using master::GetTableLocationsResponsePB;

double ParseLine(const std::string& text, const std::string& prefix) {
  const size_t p = text.find(prefix);
  return p == std::string::npos ? -1 : atof(text.c_str() + p + prefix.size());
}

struct RunResult {
  double req_per_sec = 0;
  double mean_handler_us = 0;
  int64_t queue_overflows = 0;
};

// A range-partitioned table of `n` tablets: n - 1 split points.
master::CreateTableRequestPB BenchTable(int n) {
  std::vector<int64_t> splits;
  for (int i = 1; i < n; i++) splits.push_back(int64_t(i) * 1000);
  return master::MakeCreateTableRequest("bench_table", 0, true, splits);
}

Status RunOnce(int cache_mb, RunResult* result) {
  const std::string root =
      (FLAGS_benchmark_dir.empty() ? std::filesystem::temp_directory_path().string()
                                   : FLAGS_benchmark_dir) +
      "/table-locations-bench-" + std::to_string(getpid()) + "-" + std::to_string(cache_mb);
  std::filesystem::remove_all(root);
  const bool fake =
      FLAGS_benchmark_fake_tservers || !std::filesystem::exists(test::BinDir() + "/nyala-tserver");
  test::MiniClusterOptions o;
  o.root_dir = root;
  o.num_tservers = fake ? 0 : 3;
  o.master_flags = {"--rpc_num_service_threads=" + std::to_string(FLAGS_rpc_num_service_threads),
                    "--table_locations_cache_capacity_mb=" + std::to_string(cache_mb)};
  test::MiniCluster cluster(o);
  RETURN_NOT_OK(cluster.Start());
  std::vector<std::unique_ptr<master::FakeTabletServer>> fakes;
  if (fake) {
    for (int i = 0; i < 3; i++) {
      fakes.push_back(std::make_unique<master::FakeTabletServer>());
      RETURN_NOT_OK(fakes.back()->Start());
      master::TSHeartbeatResponsePB resp;
      RETURN_NOT_OK(cluster.CallMaster(&master::MasterServiceProxy::TSHeartbeat,
                                       fakes.back()->MakeHeartbeat(true, true), &resp));
    }
  }
  printf(
      "%s, master with --rpc_num_service_threads=%d --table_locations_cache_capacity_mb=%d, "
      "%d tablets, %d client threads, %.0f s\n",
      fake ? "3 fake in-process tablet servers" : "3 nyala-tserver processes",
      FLAGS_rpc_num_service_threads, cache_mb, FLAGS_benchmark_num_tablets,
      FLAGS_benchmark_num_threads, FLAGS_benchmark_runtime_secs);
  std::string table_id;
  RETURN_NOT_OK(cluster.CreateTable(BenchTable(FLAGS_benchmark_num_tablets), &table_id));
  RETURN_NOT_OK(cluster.WaitForTableRunning(table_id, MonoDelta::FromSeconds(60)));

  std::atomic<bool> stop{false};
  std::atomic<int64_t> ok_calls{0}, too_busy{0}, errors{0};
  std::vector<std::thread> threads;
  const rpc::Sockaddr master_addr = cluster.master()->rpc_addr();
  const MonoTime start = MonoTime::Now();
  for (int t = 0; t < FLAGS_benchmark_num_threads; t++) {
    threads.emplace_back([&] {
      rpc::MessengerOptions mo;
      mo.name = "bench-client";
      mo.num_reactors = 1;
      auto messenger = rpc::Messenger::Create(mo);
      CHECK_OK(messenger.status());
      master::MasterServiceProxy proxy(*messenger, master_addr);
      GetTableLocationsRequestPB req;
      req.mutable_table()->set_table_name("bench_table");
      req.set_max_returned_locations(1000);
      req.set_intern_ts_infos_in_response(true);
      GetTableLocationsResponsePB resp;
      rpc::RpcController rpc;
      while (!stop.load(std::memory_order_relaxed)) {
        rpc.Reset();
        rpc.set_timeout(MonoDelta::FromSeconds(10));
        resp.Clear();
        Status s = proxy.GetTableLocations(req, &resp, &rpc);
        if (s.ok() && !resp.has_error() &&
            resp.tablet_locations_size() == FLAGS_benchmark_num_tablets) {
          ok_calls++;
        } else if (rpc.server_too_busy()) {
          too_busy++;
        } else {
          errors++;
        }
      }
      (*messenger)->Shutdown();
    });
  }
  SleepFor(MonoDelta::FromSeconds(FLAGS_benchmark_runtime_secs));  // the measured run
  stop = true;
  for (auto& t : threads) t.join();
  const double secs = (MonoTime::Now() - start).ToSeconds();

  const std::string hist = HttpBody(HttpGet(
      cluster.master()->http_port(),
      std::string("/rpc-latency?method=") + master::MasterServiceIf::kGetTableLocationsMethodName));
  result->req_per_sec = double(ok_calls.load()) / secs;
  result->mean_handler_us = ParseLine(hist, "Mean: ");
  result->queue_overflows = int64_t(ParseLine(hist, "too_busy: "));
  printf("RPC queue overflows: %lld\n", (long long)result->queue_overflows);
  printf("GetTableLocations RPC: %.1f req/sec\n", result->req_per_sec);
  if (errors.load() > 0 || too_busy.load() > 0) {
    printf("(client saw %lld SERVER_TOO_BUSY and %lld other failures)\n",
           (long long)too_busy.load(), (long long)errors.load());
  }
  const size_t nl = hist.find('\n');
  printf("GetTableLocations handler latency (us):\n%s\n",
         nl == std::string::npos ? hist.c_str() : hist.substr(nl + 1).c_str());
  fflush(stdout);
  Status s = cluster.Shutdown();
  fakes.clear();
  std::filesystem::remove_all(root);
  return s;
}

}  // namespace
}  // namespace nyala

int main(int argc, char** argv) {
  gflags::SetCommandLineOptionWithMode("rpc_num_service_threads", "5", gflags::SET_FLAGS_DEFAULT);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = 1;
  google::InitGoogleLogging(argv[0]);
  using nyala::RunResult;
  if (!FLAGS_compare) {
    RunResult r;
    nyala::Status s = nyala::RunOnce(FLAGS_table_locations_cache_capacity_mb, &r);
    if (!s.ok()) {
      fprintf(stderr, "benchmark failed: %s\n", s.ToString().c_str());
      return 1;
    }
    return 0;
  }
  RunResult on, off;
  const int on_mb =
      FLAGS_table_locations_cache_capacity_mb > 0 ? FLAGS_table_locations_cache_capacity_mb : 64;
  printf("=== cache on ===\n");
  nyala::Status s = nyala::RunOnce(on_mb, &on);
  if (s.ok()) {
    printf("=== cache off ===\n");
    s = nyala::RunOnce(0, &off);
  }
  if (!s.ok()) {
    fprintf(stderr, "benchmark failed: %s\n", s.ToString().c_str());
    return 1;
  }
  printf("=== ratios ===\n");
  printf("mean handler time, cache off / on: %.2f (%.1f us / %.1f us)\n",
         off.mean_handler_us / on.mean_handler_us, off.mean_handler_us, on.mean_handler_us);
  printf("req/sec, cache on / off: %.2f (%.1f / %.1f)\n", on.req_per_sec / off.req_per_sec,
         on.req_per_sec, off.req_per_sec);
  return 0;
}
