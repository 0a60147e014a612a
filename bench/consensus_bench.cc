// consensus-bench: three replicas (--replicas) of Raft groups in one process, each
// server with its own messenger, shared log (fdatasync on) and consensus runtime, over
// loopback RPC.
//
// In one run it measures, in this order:
//   1. the rate of append + fdatasync in three files at once (the three logs share
//      one disk here);
//   2. commits/s and commit latency (proposal to applied on the leader) of one group
//      at 1, 16 and 256 proposals in flight, --repetitions times each; each run comes
//      right after a measurement of the disk's bare append + fdatasync rate in --dir
//      (the pattern of the log: into a preallocated file unless
//      --log_preallocate_segments=false) and of the loopback round trip of an empty
//      MultiUpdate call, and the ratios the targets are on are medians of those pairs
//      (the machine's speed drifts within a run); at 1 in flight also of the disk's
//      floor for a commit when the replicas' logs share it (MeasureMajorityDurableUs:
//      one append + fdatasync per replica, issued together, until a majority is
//      durable);
//   3. the process's CPU with --idle_groups idle groups on every server, once they
//      have quiesced, and the same with quiescence off for comparison.
// Its last lines are the figures the targets are checked on:
//   p50 commit latency at 1 in flight vs (fdatasync + round trip): L
//   commits/s vs fdatasync/s at 256 in flight: R
//   idle CPU with 1000 groups: P% of a core
// The idle figure is the whole process: three servers, each hosting a replica of
// every group.
#include <fcntl.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "nyala/monotime.h"
#include "common/mutex.h"
#include "consensus/consensus.proxy.h"
#include "consensus/runtime.h"
#include "rpc/messenger.h"
#include "rpc/rpc_controller.h"

DEFINE_string(dir, "", "Directory for the logs and the fdatasync probe (default: a fresh "
                       "directory under $TMPDIR, removed at the end)");
DEFINE_int32(payload_bytes, 100, "Bytes of data per proposal");
DEFINE_int32(replicas, 3,
             "Replicas of each group, one server each (1: a group of one, whose log is "
             "alone on the disk and which commits without a round trip)");
DEFINE_double(seconds, 3, "Measured seconds per point (after a half-second warm-up)");
DEFINE_int32(repetitions, 3, "Runs per point; the median is printed");
DEFINE_int32(idle_groups, 1000, "Groups for the idle-CPU measurement");
DEFINE_double(idle_seconds, 10, "Seconds the idle CPU is measured over");
DEFINE_string(in_flight, "1,16,256", "Proposals in flight at each measured point");
DEFINE_int32(durable_every, 10000,
             "The state machine reports its applied state durable every this many "
             "entries, as a tablet does when it flushes (the log and the group then let "
             "go of the entries below it); 0: never, and every entry stays in memory "
             "and on disk for the whole run");
DEFINE_bool(disk_probe_only, false,
            "Measure the disk alone and exit: one append + fdatasync in one file, in "
            "--replicas files at once, and the floor of a commit (a majority of those "
            "durable), each as a mean in microseconds over --seconds (bench/write-stages.sh "
            "prints it beside the log's syncs under load)");
DEFINE_bool(compare_without_quiescence, true,
            "Also measure the idle CPU with quiescence off (side by side)");

namespace nyala::consensus {
namespace {

namespace fs = std::filesystem;

template <class T>
T CheckResult(Result<T> r) {
  CHECK(r.ok()) << r.status().ToString();
  return std::move(*r);
}

double ProcessCpuSeconds() { return bench::SelfCpuMicros() / 1e6; }

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// A new file for a probe of the disk, preallocated as the log's segments are
// (--log_preallocate_segments), else growing.
int OpenProbeFile(const std::string& dir, const std::string& path) {
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  PCHECK(fd >= 0) << path;
  const LogOptions log = LogOptions::FromFlags(dir);
  if (log.preallocate) {
    // As the log does: where the file system cannot, the file grows.
    (void)fallocate(fd, 0, 0, off_t(log.segment_size_bytes));
  }
  return fd;
}

// Appends 256 bytes and fdatasyncs, for `seconds`: syncs per second (OpenProbeFile).
double MeasureFdatasync(const std::string& dir, double seconds) {
  const std::string path = dir + "/fdatasync-probe";
  const int fd = OpenProbeFile(dir, path);
  std::string block(256, 'x');
  int64_t n = 0;
  MonoTime start = MonoTime::Now();
  MonoTime end = start + MonoDelta::FromSeconds(seconds);
  while (MonoTime::Now() < end) {
    PCHECK(write(fd, block.data(), block.size()) == ssize_t(block.size()));
    PCHECK(fdatasync(fd) == 0);
    n++;
  }
  double elapsed = (MonoTime::Now() - start).ToSeconds();
  close(fd);
  unlink(path.c_str());
  return n / elapsed;
}

// MeasureFdatasync in `streams` threads at once, each on a file of its own: the total
// rate. The three replicas' logs share one disk here, which may serialize their syncs.
double MeasureConcurrentFdatasync(const std::string& dir, int streams, double seconds) {
  std::vector<std::thread> threads;
  std::vector<double> rates(streams);
  for (int i = 0; i < streams; i++) {
    const std::string sub = dir + "/stream-" + std::to_string(i);
    fs::create_directories(sub);
    threads.emplace_back([&rates, i, sub, seconds] { rates[i] = MeasureFdatasync(sub, seconds); });
  }
  double total = 0;
  for (int i = 0; i < streams; i++) {
    threads[i].join();
    total += rates[i];
  }
  return total;
}

// The disk's floor for one commit of a group whose `streams` replica logs share it: one
// 256-byte append+fdatasync per replica, each in a file of its own (preallocated as
// the log's segments are) and on a thread of its own, all woken together (as a leader
// wakes its followers); microseconds until a majority of them is durable, p50 over the
// trials of `seconds`.
double MeasureMajorityDurableUs(const std::string& dir, int streams, double seconds) {
  struct Shared {
    Mutex mu;
    CondVar cv;
    int64_t round GUARDED_BY(mu) = 0;  // 0: not started; -1: stop
    int finished GUARDED_BY(mu) = 0;
    std::vector<MonoTime> done GUARDED_BY(mu);
  } sh;
  std::vector<std::thread> threads;
  for (int i = 0; i < streams; i++) {
    threads.emplace_back([&sh, i, dir, streams] {
      const std::string path = dir + "/majority-probe-" + std::to_string(i);
      const int fd = OpenProbeFile(dir, path);
      const std::string block(256, 'x');
      int64_t seen = 0;
      while (true) {
        {
          UniqueLock l(sh.mu);
          sh.cv.wait(l, [&]() REQUIRES(sh.mu) { return sh.round != seen; });
          if (sh.round < 0) break;
          seen = sh.round;
        }
        PCHECK(write(fd, block.data(), block.size()) == ssize_t(block.size()));
        PCHECK(fdatasync(fd) == 0);
        const MonoTime now = MonoTime::Now();
        MutexLock l(sh.mu);
        sh.done.push_back(now);
        if (++sh.finished == streams) sh.cv.notify_all();
      }
      close(fd);
      unlink(path.c_str());
    });
  }
  const size_t majority = size_t(streams) / 2 + 1;
  std::vector<double> us;
  const MonoTime end = MonoTime::Now() + MonoDelta::FromSeconds(seconds);
  while (MonoTime::Now() < end) {
    MonoTime start;
    {
      MutexLock l(sh.mu);
      sh.finished = 0;
      sh.done.clear();
      start = MonoTime::Now();
      sh.round++;
    }
    sh.cv.notify_all();
    UniqueLock l(sh.mu);
    sh.cv.wait(l, [&]() REQUIRES(sh.mu) { return sh.finished == streams; });
    std::sort(sh.done.begin(), sh.done.end());
    us.push_back((sh.done[majority - 1] - start).ToSeconds() * 1e6);
  }
  {
    MutexLock l(sh.mu);
    sh.round = -1;
  }
  sh.cv.notify_all();
  for (auto& t : threads) t.join();
  return Median(us);
}

// Counts what it applies. Its state is a count nobody reads back, so nothing needs
// writing to make it durable: every --durable_every entries it says so, as a tablet
// does after each flush, and the group and the log let go of what they no longer need.
// Apply and FlushRequested run on the group's worker thread.
class CountingStateMachine : public StateMachine {
 public:
  // Called once, right after the group is created; until then nothing is reported.
  void set_group(RaftGroup* group) { group_.store(group, std::memory_order_release); }

  void Apply(const EntryPB& entry) override {
    last_applied_ = entry.index();
    if (FLAGS_durable_every > 0 && ++applied_ % uint64_t(FLAGS_durable_every) == 0) {
      ReportDurable();
    }
  }
  void FlushRequested() override { ReportDurable(); }

 private:
  void ReportDurable() {
    RaftGroup* g = group_.load(std::memory_order_acquire);
    if (g != nullptr && last_applied_ > 0) g->ReportDurable(last_applied_);
  }

  std::atomic<RaftGroup*> group_{nullptr};
  uint64_t applied_ = 0;
  uint64_t last_applied_ = 0;
};

struct Server {
  PeerId id = kNoPeer;
  std::shared_ptr<rpc::Messenger> messenger;
  std::unique_ptr<ConsensusRuntime> runtime;
  rpc::Sockaddr addr;
  std::vector<std::unique_ptr<CountingStateMachine>> sms;
  std::map<uint64_t, std::shared_ptr<RaftGroup>> groups;
};

class Cluster {
 public:
  Cluster(const std::string& dir, bool quiesce) {
    for (PeerId id = 1; id <= PeerId(FLAGS_replicas); id++) {
      Server& s = servers_[id];
      s.id = id;
      rpc::MessengerOptions mo;
      mo.name = "server-" + std::to_string(id);
      mo.num_reactors = 1;
      s.messenger = CheckResult(rpc::Messenger::Create(mo));
      CHECK(s.messenger->AddListener(rpc::Sockaddr::Loopback(0), &s.addr).ok());
      RuntimeOptions ro;
      ro.server_id = id;
      ro.messenger = s.messenger;
      ro.log = LogOptions::FromFlags(dir + "/wal-" + std::to_string(id));
      ro.quiesce_when_idle = quiesce;
      auto rt = ConsensusRuntime::Start(ro);
      CHECK(rt.ok()) << rt.status().ToString();
      s.runtime = std::move(*rt);
    }
    for (auto& [id, s] : servers_) {
      for (auto& [other, o] : servers_) {
        if (other != id) s.runtime->AddPeer(other, o.addr);
      }
    }
  }
  ~Cluster() {
    for (auto& [id, s] : servers_) s.runtime->Shutdown();
    for (auto& [id, s] : servers_) s.messenger->Shutdown();
  }

  void CreateGroup(uint64_t group) {
    for (auto& [id, s] : servers_) {
      s.sms.push_back(std::make_unique<CountingStateMachine>());
      GroupOptions g;
      g.group_id = group;
      for (PeerId id = 1; id <= PeerId(FLAGS_replicas); id++) g.voters.push_back(id);
      g.state_machine = s.sms.back().get();
      auto r = s.runtime->CreateGroup(g);
      CHECK(r.ok()) << r.status().ToString();
      s.sms.back()->set_group(r->get());
      s.groups[group] = *r;
    }
  }

  // The group's leader once it applied an entry of its term; nullptr after 60 s.
  std::shared_ptr<RaftGroup> WaitForLeader(uint64_t group) {
    MonoTime deadline = MonoTime::Now() + MonoDelta::FromSeconds(60);
    while (MonoTime::Now() < deadline) {
      for (auto& [id, s] : servers_) {
        GroupInfo info = s.groups[group]->info();
        if (info.role == RaftRole::kLeader && info.applied_index >= info.commit_index &&
            info.commit_index > 0) {
          return s.groups[group];
        }
      }
      SleepFor(MonoDelta::FromMilliseconds(10));
    }
    return nullptr;
  }

  bool AllQuiesced() {
    for (auto& [id, s] : servers_) {
      for (auto& [g, group] : s.groups) {
        if (!group->info().quiesced) return false;
      }
    }
    return true;
  }

  Server& server(PeerId id) { return servers_[id]; }

 private:
  std::map<PeerId, Server> servers_;
};

// Median microseconds of an empty MultiUpdate from a client messenger to server 1.
double MeasureRoundTripUs(Cluster* c) {
  rpc::MessengerOptions mo;
  mo.name = "rtt-client";
  mo.num_reactors = 1;
  auto client = CheckResult(rpc::Messenger::Create(mo));
  ConsensusServiceProxy proxy(client, c->server(1).addr);
  std::vector<double> us;
  for (int i = 0; i < 1500; i++) {
    MultiUpdateRequestPB req;
    req.set_from_server(99);  // not a peer: heard from by nobody
    req.set_to_server(1);
    MultiUpdateResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(5));
    MonoTime start = MonoTime::Now();
    CHECK(proxy.MultiUpdate(req, &resp, &rpc).ok());
    if (i >= 300) us.push_back((MonoTime::Now() - start).ToSeconds() * 1e6);
  }
  client->Shutdown();
  return Median(us);
}

struct Point {
  double commits_per_sec = 0;
  double p50_us = 0;
  double p99_us = 0;
  double fsyncs_per_sec = 0;  // the leader's log
  double cpu_us_per_commit = 0;  // the whole process: three servers and the load
};

// A closed loop of `in_flight` proposals on `leader` for `seconds` after a warm-up.
Point RunLoad(RaftGroup* leader, SharedLog* leader_log, int in_flight, double seconds) {
  struct State {
    Mutex mu;
    std::vector<double> latencies_us GUARDED_BY(mu);
    std::atomic<bool> measuring{false};
    std::atomic<bool> stop{false};
    std::atomic<int> outstanding{0};
    std::atomic<uint64_t> commits{0};
    std::atomic<uint64_t> failures{0};
  };
  auto st = std::make_shared<State>();
  const std::string payload(FLAGS_payload_bytes, 'p');
  std::function<void()> issue;
  issue = [&issue, st, leader, payload] {
    MonoTime start = MonoTime::Now();
    st->outstanding++;
    leader->Propose(payload, [st, start, &issue](const Status& s, uint64_t) {
      if (!s.ok()) {
        st->failures++;
      } else if (st->measuring) {
        st->commits++;
        MutexLock l(st->mu);
        st->latencies_us.push_back((MonoTime::Now() - start).ToSeconds() * 1e6);
      }
      // The next one is out before this one counts as answered, so `issue` is in use
      // only while `outstanding` is above zero.
      if (!st->stop) issue();
      st->outstanding--;
    });
  };
  for (int i = 0; i < in_flight; i++) issue();
  SleepFor(MonoDelta::FromMilliseconds(500));
  const uint64_t fsyncs0 = leader_log->Stats().fsyncs;
  MonoTime start = MonoTime::Now();
  const double cpu0 = ProcessCpuSeconds();
  st->measuring = true;
  SleepFor(MonoDelta::FromSeconds(seconds));
  st->measuring = false;
  const double elapsed = (MonoTime::Now() - start).ToSeconds();
  const double cpu = ProcessCpuSeconds() - cpu0;
  const uint64_t fsyncs1 = leader_log->Stats().fsyncs;
  st->stop = true;
  MonoTime drain = MonoTime::Now() + MonoDelta::FromSeconds(30);
  while (st->outstanding > 0 && MonoTime::Now() < drain) SleepFor(MonoDelta::FromMilliseconds(5));
  CHECK_EQ(st->outstanding.load(), 0) << "proposals still unanswered 30 s after the load stopped";
  CHECK_EQ(st->failures.load(), 0u) << "proposals failed";
  Point p;
  p.commits_per_sec = st->commits / elapsed;
  p.fsyncs_per_sec = (fsyncs1 - fsyncs0) / elapsed;
  p.cpu_us_per_commit = st->commits ? cpu * 1e6 / st->commits : 0;
  MutexLock l(st->mu);
  std::sort(st->latencies_us.begin(), st->latencies_us.end());
  if (!st->latencies_us.empty()) {
    p.p50_us = st->latencies_us[st->latencies_us.size() / 2];
    p.p99_us = st->latencies_us[st->latencies_us.size() * 99 / 100];
  }
  return p;
}

// Process CPU, in % of one core, with `groups` idle groups on three servers.
double MeasureIdleCpu(const std::string& dir, int groups, bool quiesce) {
  Cluster c(dir, quiesce);
  MonoTime t0 = MonoTime::Now();
  for (int g = 1; g <= groups; g++) c.CreateGroup(g);
  for (int g = 1; g <= groups; g++) CHECK(c.WaitForLeader(g)) << "group " << g << ": no leader";
  if (quiesce) {
    MonoTime deadline = MonoTime::Now() + MonoDelta::FromSeconds(60);
    while (!c.AllQuiesced()) {
      CHECK(MonoTime::Now() < deadline) << "groups still not quiesced after 60 s";
      SleepFor(MonoDelta::FromMilliseconds(50));
    }
  }
  printf("  %d groups elected%s in %.1f s\n", groups, quiesce ? " and quiesced" : "",
         (MonoTime::Now() - t0).ToSeconds());
  // Let elections' stragglers settle before measuring.
  SleepFor(MonoDelta::FromSeconds(2));
  const double cpu0 = ProcessCpuSeconds();
  MonoTime start = MonoTime::Now();
  SleepFor(MonoDelta::FromSeconds(FLAGS_idle_seconds));
  const double cpu = ProcessCpuSeconds() - cpu0;
  return 100 * cpu / (MonoTime::Now() - start).ToSeconds();
}

int Run() {
  std::string dir = FLAGS_dir;
  bool remove_dir = false;
  if (dir.empty()) {
    const char* tmp = getenv("TMPDIR");
    dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/consensus-bench-" + std::to_string(getpid());
    remove_dir = true;
  }
  fs::create_directories(dir);
  if (FLAGS_disk_probe_only) {
    const double one = MeasureFdatasync(dir, FLAGS_seconds);
    const double all = MeasureConcurrentFdatasync(dir, FLAGS_replicas, FLAGS_seconds);
    const double majority = MeasureMajorityDurableUs(dir, FLAGS_replicas, FLAGS_seconds);
    printf("disk alone (%s): append+fdatasync %.0f us in 1 file, %.0f us each in %d files at "
           "once; a majority of %d durable %.0f us (p50)\n",
           dir.c_str(), 1e6 / one, 1e6 * FLAGS_replicas / all, FLAGS_replicas, FLAGS_replicas,
           majority);
    if (remove_dir) fs::remove_all(dir);
    return 0;
  }
  printf("consensus-bench: %d replica(s) over loopback, logs in %s, fdatasync on, %d-byte "
         "proposals, log segments %s; each run of a point is paired with a bare fdatasync "
         "(into a file %s) and round-trip measurement just before it, and ratios are "
         "medians of the pairs\n",
         FLAGS_replicas, dir.c_str(), FLAGS_payload_bytes,
         LogOptions::FromFlags(dir).preallocate ? "preallocated" : "not preallocated",
         LogOptions::FromFlags(dir).preallocate ? "preallocated likewise" : "growing");
  std::vector<double> concurrent;
  for (int i = 0; i < FLAGS_repetitions; i++) {
    concurrent.push_back(MeasureConcurrentFdatasync(dir, FLAGS_replicas, 1));
  }
  printf("append+fdatasync in %d file(s) at once (one per replica log): %.0f/s in total\n",
         FLAGS_replicas, Median(concurrent));

  std::map<int, double> sync_ratio;  // commits/s over fdatasync/s, median of the pairs
  double p50_ratio = 0;              // p50 at 1 in flight over (fdatasync + round trip)
  {
    Cluster c(dir + "/load", true);
    c.CreateGroup(1);
    std::shared_ptr<RaftGroup> leader = c.WaitForLeader(1);
    CHECK(leader) << "no leader elected";
    SharedLog* log = nullptr;
    for (PeerId id = 1; id <= PeerId(FLAGS_replicas); id++) {
      if (c.server(id).groups[1] == leader) log = c.server(id).runtime->log();
    }
    printf("%-9s %10s %8s %8s %9s %9s %10s %8s %9s\n", "in flight", "commits/s", "p50 us",
           "p99 us", "syncs/s", "CPU us", "fdatasync", "RTT us", "ratio");
    printf("%-9s %10s %8s %8s %9s %9s %10s %8s %9s\n", "", "", "", "", "(leader)",
           "/commit", "/s (bare)", "", "");
    std::vector<int> levels;
    for (const std::string& v : SplitCommas(FLAGS_in_flight)) levels.push_back(std::stoi(v));
    for (int in_flight : levels) {
      std::vector<double> ratios;
      // 1 in flight: against the disk's floor for a commit of replicas that share it.
      std::vector<double> majority_ratios;
      std::vector<double> majority_us;
      for (int r = 0; r < FLAGS_repetitions; r++) {
        const double fdatasync_per_sec = MeasureFdatasync(dir, 1);
        const double rtt_us = MeasureRoundTripUs(&c);
        const double majority_durable_us =
            in_flight == 1 ? MeasureMajorityDurableUs(dir, FLAGS_replicas, 1) : 0;
        Point p = RunLoad(leader.get(), log, in_flight, FLAGS_seconds);
        if (in_flight == 1) {
          majority_us.push_back(majority_durable_us);
          majority_ratios.push_back(p.p50_us / (majority_durable_us + rtt_us));
        }
        // At 1 in flight the target is on latency, elsewhere on throughput.
        const double ratio = in_flight == 1
                                 ? p.p50_us / (1e6 / fdatasync_per_sec + rtt_us)
                                 : p.commits_per_sec / fdatasync_per_sec;
        ratios.push_back(ratio);
        printf("%-9d %10.0f %8.0f %8.0f %9.0f %9.1f %10.0f %8.1f %9.2f\n", in_flight,
               p.commits_per_sec, p.p50_us, p.p99_us, p.fsyncs_per_sec, p.cpu_us_per_commit,
               fdatasync_per_sec, rtt_us, ratio);
      }
      const double median = Median(ratios);
      if (in_flight == 1) {
        p50_ratio = median;
        printf("  median: p50 = %.2f x (one fdatasync + one round trip); %.2f x (a majority "
               "of %d appends+fdatasyncs issued together durable, p50 %.0f us, + one round "
               "trip)\n",
               median, Median(majority_ratios), FLAGS_replicas, Median(majority_us));
      } else {
        sync_ratio[in_flight] = median;
        printf("  median: commits/s = %.1f x fdatasync/s\n", median);
      }
    }
  }
  if (FLAGS_idle_groups <= 0) {
    if (remove_dir) fs::remove_all(dir);
    return 0;
  }
  if (FLAGS_compare_without_quiescence) {
    const double idle_off = MeasureIdleCpu(dir + "/idle-off", FLAGS_idle_groups, false);
    printf("idle CPU with %d groups, quiescence off: %.1f%% of a core\n", FLAGS_idle_groups,
           idle_off);
  }
  const double idle = MeasureIdleCpu(dir + "/idle", FLAGS_idle_groups, true);
  if (remove_dir) fs::remove_all(dir);
  if (p50_ratio > 0) {
    printf("p50 commit latency at 1 in flight vs (fdatasync + round trip): %.2f\n", p50_ratio);
  }
  printf("commits/s vs fdatasync/s at 256 in flight: %.1f\n", sync_ratio[256]);
  printf("idle CPU with %d groups: %.2f%% of a core\n", FLAGS_idle_groups, idle);
  return 0;
}

}  // namespace
}  // namespace nyala::consensus

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "Raft commit throughput and latency, three replicas in one process over loopback with "
      "the real shared log and fdatasync; see bench/README.md");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_replicas < 1 || FLAGS_replicas > 7) {
    fprintf(stderr, "consensus-bench: --replicas must be 1 to 7, not %d\n", FLAGS_replicas);
    return 2;
  }
  google::InitGoogleLogging(argv[0]);
  FLAGS_minloglevel = 1;
  return nyala::consensus::Run();
}
