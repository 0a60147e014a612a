// rpc-bench: RPC throughput and CPU cost, client and server in one process over
// loopback, in the spirit of Kudu's rpc-bench. The server runs the test
// CalculatorService; clients call Add (two integers in, one out).
//
//   --mode=sync      each of --client_threads threads has its own messenger and one
//                    call in flight (SyncRequest in a loop)
//   --mode=async     --async_call_concurrency call chains spread over --client_threads
//                    messengers, each call reissued from the previous one's callback
//   --mode=pingpong  the baseline: two threads exchanging 16-byte messages over a
//                    blocking loopback socket pair, one in flight (no RPC at all)
//
// Prints Reqs/sec, user/sys CPU and context switches per request (getrusage over the
// measured window, whole process: client and server) and the client-side latency
// percentiles in microseconds.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "common/histogram.h"
#include "common/status.h"
#include "nyala/monotime.h"
#include "rpc/messenger.h"
#include "rpc/proxy.h"
#include "rpc/rpc_controller.h"
#include "rpc/rtest.pb.h"
#include "rpc/rtest_service.h"

DEFINE_string(mode, "async", "sync, async or pingpong (see the file comment).");
DEFINE_int32(client_threads, 2, "Client threads (sync) or client messengers (async).");
DEFINE_int32(async_call_concurrency, 100, "Calls in flight at once in async mode.");
DEFINE_int32(server_reactors, 2, "Reactor threads of the server messenger.");
DEFINE_int32(worker_threads, 2, "Service threads running the server's handlers.");
DEFINE_bool(run_on_reactor, false,
            "Call AddInline, whose handler runs on the server's reactor thread, instead of Add.");
DEFINE_double(run_seconds, 5, "Length of the measured run, after a short warm-up.");
DEFINE_int32(payload_bytes, 0, "Bytes of payload added to each request.");
DEFINE_int32(server_cpu, -1,
             "Pin every server thread (reactors, service threads; the echo thread in pingpong "
             "mode) to this CPU. -1: no pinning. bench/README.md quotes single-client figures "
             "pinned: --server_cpu=0 --client_cpu=1, and both on 0 for a second row.");
DEFINE_int32(client_cpu, -1, "Pin every client thread (messengers, callers) to this CPU.");

namespace nyala::rpc {
namespace {

using bench::GetUsage;
using bench::PinCurrentThread;
using bench::Usage;

using rpc_test::AddRequestPB;
using rpc_test::AddResponsePB;
using rpc_test::CalculatorServiceIf;

std::string PinningDescription() {
  if (FLAGS_server_cpu < 0 && FLAGS_client_cpu < 0) return "unpinned";
  return "server on CPU " + std::to_string(FLAGS_server_cpu) + ", client on CPU " +
         std::to_string(FLAGS_client_cpu);
}

std::atomic<bool> g_stop{false};
std::atomic<bool> g_measuring{false};
// Requests done in the measured window are the latency histogram's count: the
// benchmark adds no shared counter of its own to the calls it measures.
Histogram g_latency;

// Records the latency of a call that started at `start` and returns the time now.
MonoTime Record(MonoTime start) {
  const MonoTime now = MonoTime::Now();
  if (g_measuring.load(std::memory_order_relaxed)) {
    g_latency.Increment((now - start).ToMicroseconds());
  }
  return now;
}

AddRequestPB MakeRequest() {
  AddRequestPB req;
  req.set_x(12);
  req.set_y(30);
  if (FLAGS_payload_bytes > 0) req.set_payload(std::string(FLAGS_payload_bytes, 'p'));
  return req;
}

const char* Method() {
  return FLAGS_run_on_reactor ? CalculatorServiceIf::kAddInlineMethodName
                              : CalculatorServiceIf::kAddMethodName;
}

// One async call chain: each completion records and reissues.
class Chain {
 public:
  explicit Chain(const Proxy* proxy) : proxy_(proxy), req_(MakeRequest()) {}
  // `start`: now (a chain reissues at the time its last call's latency was taken).
  void Issue(MonoTime start = MonoTime::Now()) {
    rpc_.Reset();
    rpc_.set_timeout(MonoDelta::FromSeconds(30));
    start_ = start;
    proxy_->AsyncRequest(Method(), req_, &resp_, &rpc_, [this] { OnDone(); });
  }
  std::atomic<bool> finished{false};

 private:
  void OnDone() {
    CHECK(rpc_.status().ok()) << rpc_.status().ToString();
    CHECK_EQ(resp_.result(), 42);
    const MonoTime now = Record(start_);
    if (g_stop.load(std::memory_order_relaxed)) {
      finished = true;
      return;
    }
    Issue(now);
  }
  const Proxy* proxy_;
  AddRequestPB req_;
  AddResponsePB resp_;
  RpcController rpc_;
  MonoTime start_;
};

std::shared_ptr<Messenger> NewMessenger(const std::string& name, int reactors) {
  MessengerOptions opts;
  opts.name = name;
  opts.num_reactors = reactors;
  auto m = Messenger::Create(opts);
  CHECK(m.ok()) << m.status().ToString();
  return *m;
}

void Measure(const std::function<void()>& start_load, const std::function<void()>& stop_load) {
  start_load();
  SleepFor(MonoDelta::FromSeconds(std::min(1.0, FLAGS_run_seconds / 5)));  // warm-up
  g_measuring = true;
  const Usage u0 = GetUsage();
  const MonoTime t0 = MonoTime::Now();
  SleepFor(MonoDelta::FromSeconds(FLAGS_run_seconds));
  g_measuring = false;
  const MonoTime t1 = MonoTime::Now();
  const Usage u1 = GetUsage();
  const int64_t reqs = g_latency.TotalCount();
  stop_load();
  const double secs = (t1 - t0).ToSeconds();
  printf("Mode: %s%s, client threads: %d, concurrency: %d, server reactors: %d, workers: %d, %s\n",
         FLAGS_mode.c_str(), FLAGS_run_on_reactor ? " (handler on reactor)" : "",
         FLAGS_client_threads,
         FLAGS_mode == "async" ? FLAGS_async_call_concurrency : FLAGS_client_threads,
         FLAGS_server_reactors, FLAGS_worker_threads, PinningDescription().c_str());
  printf("Reqs/sec: %.0f\n", reqs / secs);
  printf("User CPU per req: %.2fus\n", (u1.user_us - u0.user_us) / std::max<int64_t>(reqs, 1));
  printf("Sys CPU per req: %.2fus\n", (u1.sys_us - u0.sys_us) / std::max<int64_t>(reqs, 1));
  printf("Ctx Sw. per req: %.3f\n",
         double(u1.ctx_switches - u0.ctx_switches) / std::max<int64_t>(reqs, 1));
  printf("Latency (us):\n%s", g_latency.ToString().c_str());
}

int RunRpc() {
  PinCurrentThread(FLAGS_server_cpu);
  auto server = NewMessenger("server", FLAGS_server_reactors);
  CHECK_OK(
      server->RegisterService(std::make_unique<CalculatorService>(), FLAGS_worker_threads, 100000));
  Sockaddr addr;
  CHECK_OK(server->AddListener(Sockaddr::Loopback(0), &addr));
  PinCurrentThread(FLAGS_client_cpu);  // client messengers and caller threads

  std::vector<std::shared_ptr<Messenger>> clients;
  std::vector<std::unique_ptr<Proxy>> proxies;
  for (int i = 0; i < FLAGS_client_threads; i++) {
    clients.push_back(NewMessenger("client" + std::to_string(i), 1));
    proxies.push_back(
        std::make_unique<Proxy>(clients.back(), addr, CalculatorServiceIf::kServiceName));
  }

  std::vector<std::unique_ptr<Chain>> chains;
  std::vector<std::thread> threads;
  if (FLAGS_mode == "async") {
    for (int i = 0; i < FLAGS_async_call_concurrency; i++) {
      chains.push_back(std::make_unique<Chain>(proxies[i % proxies.size()].get()));
    }
    Measure(
        [&] {
          for (auto& c : chains) c->Issue();
        },
        [&] {
          g_stop = true;
          for (auto& c : chains) {
            while (!c->finished.load()) SleepFor(MonoDelta::FromMilliseconds(1));
          }
        });
  } else {
    Measure(
        [&] {
          for (int i = 0; i < FLAGS_client_threads; i++) {
            threads.emplace_back([&, i] {
              AddRequestPB req = MakeRequest();
              AddResponsePB resp;
              RpcController rpc;
              while (!g_stop.load(std::memory_order_relaxed)) {
                rpc.Reset();
                rpc.set_timeout(MonoDelta::FromSeconds(30));
                MonoTime start = MonoTime::Now();
                CHECK_OK(proxies[i]->SyncRequest(Method(), req, &resp, &rpc));
                Record(start);
              }
            });
          }
        },
        [&] {
          g_stop = true;
          for (auto& t : threads) t.join();
        });
  }
  for (auto& c : clients) c->Shutdown();
  server->Shutdown();
  return 0;
}

// Baseline: blocking ping-pong over a loopback TCP connection, one message in flight.
int RunPingPong() {
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  Sockaddr any = Sockaddr::Loopback(0);
  PCHECK(bind(lfd, any.addr(), any.addrlen()) == 0);
  PCHECK(listen(lfd, 1) == 0);
  sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  getsockname(lfd, reinterpret_cast<sockaddr*>(&ss), &len);
  int cfd = socket(AF_INET, SOCK_STREAM, 0);
  PCHECK(connect(cfd, reinterpret_cast<sockaddr*>(&ss), len) == 0);
  int sfd = accept(lfd, nullptr, nullptr);
  int one = 1;
  setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  auto read_full = [](int fd, char* buf, size_t n) {
    size_t got = 0;
    while (got < n) {
      ssize_t r = read(fd, buf + got, n - got);
      if (r <= 0) return false;
      got += r;
    }
    return true;
  };
  constexpr size_t kMsg = 16;
  PinCurrentThread(FLAGS_server_cpu);
  std::thread server([&] {
    char buf[kMsg];
    while (read_full(sfd, buf, kMsg)) {
      if (write(sfd, buf, kMsg) != ssize_t(kMsg)) break;
    }
  });
  std::thread client;
  PinCurrentThread(FLAGS_client_cpu);
  Measure(
      [&] {
        client = std::thread([&] {
          char buf[kMsg] = "ping";
          while (!g_stop.load(std::memory_order_relaxed)) {
            MonoTime start = MonoTime::Now();
            CHECK_EQ(write(cfd, buf, kMsg), ssize_t(kMsg));
            CHECK(read_full(cfd, buf, kMsg));
            Record(start);
          }
        });
      },
      [&] {
        g_stop = true;
        client.join();
        shutdown(cfd, SHUT_WR);
        server.join();
      });
  close(cfd);
  close(sfd);
  close(lfd);
  return 0;
}

}  // namespace
}  // namespace nyala::rpc

int main(int argc, char** argv) {
  gflags::SetUsageMessage("RPC throughput benchmark; see bench/README.md");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  FLAGS_minloglevel = 1;
  if (FLAGS_mode == "pingpong") return nyala::rpc::RunPingPong();
  if (FLAGS_mode != "sync" && FLAGS_mode != "async") {
    fprintf(stderr, "--mode must be sync, async or pingpong\n");
    return 2;
  }
  return nyala::rpc::RunRpc();
}
