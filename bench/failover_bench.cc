// failover-bench: how long writes stop when a tablet's leader dies. Starts a
// MiniCluster of one nyala-master and 3 nyala-tservers with the daemons' default flags
// (election timeout included), creates a table of one tablet with 3 replicas and keeps
// a write load on it: --threads client threads, each upserting one row at a time with
// an AUTO_FLUSH_SYNC session, back to back. Then, --kills times:
//
//   1. waits until the cluster is stable: the master lists 3 live tablet servers and
//      reports every replica of the tablet as LEADER or FOLLOWER, one of them leader,
//      the same leader for --settle_ms, during which the writers acknowledged at least
//      --settle_writes writes (so a restarted follower has had that long to catch up:
//      GetTableLocations gives roles, not log indexes, so catching up is not checked);
//   2. asks the master which server leads the tablet (GetTableLocations) and kills it
//      with SIGKILL;
//   3. waits for the first write *invoked after the kill* to be acknowledged (a write
//      in flight at the kill does not count: it may be acknowledged by the old leader
//      just before it dies). Its failover time runs from just before the signal to that
//      acknowledgement; a write counts as invoked after the kill if it started after
//      the killed process was reaped;
//   4. restarts the killed server (same ports and data).
//
//   failover-bench [--kills=20] [--threads=1] [--keep_dir] [--tserver_flags="..."]
//
// It prints one line per kill, then the median and maximum; the last two lines are
//   failover median: X ms
//   failover max: Y ms
// The cluster lives in a temporary directory, removed at the end unless --keep_dir
// (the daemons' logs are there: cluster/master/master.log names each new leader and its
// term as reported; cluster/ts<i>/ts<i>.log has the writes each replica refused).
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "nyala/client.h"
#include "test/client_itest_util.h"

DEFINE_int32(kills, 20, "Leaders to kill, one after the other.");
DEFINE_int32(threads, 1, "Writer threads, each with its own AUTO_FLUSH_SYNC session.");
DEFINE_int32(settle_ms, 2000,
             "Before each kill: how long the leader must stay the same, with writes going "
             "on, after the cluster looks stable.");
DEFINE_int32(settle_writes, 100, "Before each kill: writes acknowledged during --settle_ms.");
DEFINE_int32(write_timeout_ms, 30000, "Session timeout of each write.");
DEFINE_int32(failover_timeout_ms, 60000,
             "Give up on a kill when no write invoked after it is acknowledged this long.");
DEFINE_int32(stable_timeout_ms, 120000, "Give up when the cluster is not stable this long.");
DEFINE_string(tserver_flags, "",
              "Extra flags for the tablet servers, space-separated (default: none, the "
              "daemons' defaults).");
DEFINE_bool(keep_dir, false, "Keep the cluster's directory (daemon logs) and print its path.");

namespace nyala::client {
namespace {

constexpr int kServers = 3;
constexpr char kTable[] = "failover_bench";

// The writers' shared record of acknowledgements, and the one measurement armed at a
// time: the first acknowledgement of a write invoked at or after `invoked_after`.
class AckTracker {
 public:
  // Arms a new measurement; writes invoked at or after `invoked_after` count.
  void Arm(MonoTime invoked_after) {
    MutexLock l(mu_);
    armed_ = true;
    invoked_after_ = invoked_after;
    first_ack_ = MonoTime();
    have_ack_ = false;
    longest_write_ = MonoDelta();
    failures_ = 0;
  }
  // A write invoked at `invoked`, finished at `done`, acknowledged if `ok`.
  void Record(MonoTime invoked, MonoTime done, const Status& s) {
    acked_.fetch_add(s.ok() ? 1 : 0);
    MutexLock l(mu_);
    if (!armed_) return;
    longest_write_ = std::max(longest_write_, done - invoked);
    if (!s.ok()) {
      failures_++;
      last_error_ = s.ToString();
      return;
    }
    if (!have_ack_ && invoked >= invoked_after_) {
      have_ack_ = true;
      first_ack_ = done;
      cv_.notify_all();
    }
  }
  // Waits up to `timeout` for the armed measurement; false if none came.
  bool WaitFirstAck(MonoDelta timeout, MonoTime* ack) {
    UniqueLock l(mu_);
    const bool got = cv_.wait_for(l, std::chrono::nanoseconds(timeout.ToNanoseconds()),
                                  [this]() REQUIRES(mu_) { return have_ack_; });
    if (got) *ack = first_ack_;
    return got;
  }
  // Ends the measurement; the longest write and the failures seen while armed.
  void Disarm(MonoDelta* longest, int64_t* failures, std::string* last_error) {
    MutexLock l(mu_);
    armed_ = false;
    *longest = longest_write_;
    *failures = failures_;
    *last_error = last_error_;
  }
  int64_t acked() const { return acked_.load(); }

 private:
  std::atomic<int64_t> acked_{0};
  Mutex mu_;
  CondVar cv_;
  bool armed_ GUARDED_BY(mu_) = false;
  MonoTime invoked_after_ GUARDED_BY(mu_);
  bool have_ack_ GUARDED_BY(mu_) = false;
  MonoTime first_ack_ GUARDED_BY(mu_);
  MonoDelta longest_write_ GUARDED_BY(mu_);
  int64_t failures_ GUARDED_BY(mu_) = 0;
  std::string last_error_ GUARDED_BY(mu_);
};

// --threads threads, each upserting key, key + 1, ... (its own range) back to back.
class Writers {
 public:
  Writers(std::shared_ptr<Client> client, std::shared_ptr<Table> table, AckTracker* tracker)
      : client_(std::move(client)), table_(std::move(table)), tracker_(tracker) {}
  ~Writers() { Stop(); }

  void Start(int n) {
    for (int t = 0; t < n; t++) threads_.emplace_back([this, t] { Run(t); });
  }
  void Stop() {
    stop_ = true;
    for (auto& th : threads_) th.join();
    threads_.clear();
  }

 private:
  void Run(int t) {
    auto session = client_->NewSession();
    CHECK_OK(session->SetFlushMode(Session::FlushMode::kAutoFlushSync));
    CHECK_OK(session->SetTimeout(MonoDelta::FromMilliseconds(FLAGS_write_timeout_ms)));
    for (int64_t k = int64_t(t) << 40; !stop_.load(); k++) {
      auto op = table_->NewUpsert();
      CHECK_OK(op->Set("key", Cell::Int64(k)));
      CHECK_OK(op->Set("v", Cell::Int64(k)));
      const MonoTime invoked = MonoTime::Now();
      Status s = session->Apply(std::move(op));
      tracker_->Record(invoked, MonoTime::Now(), s);
    }
  }

  const std::shared_ptr<Client> client_;
  const std::shared_ptr<Table> table_;
  AckTracker* const tracker_;  // outlives this
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// What the master says about the table's (one) tablet.
struct TabletView {
  int leader = -1;    // index of the tablet server named leader, -1 if none
  int followers = 0;  // replicas reported FOLLOWER
  int live_servers = 0;
};

Status GetView(test::MiniCluster* cluster, TabletView* view) {
  *view = TabletView();
  master::GetTableLocationsRequestPB req;
  req.mutable_table()->set_table_name(kTable);
  master::GetTableLocationsResponsePB resp;
  RETURN_NOT_OK(cluster->CallMaster(&master::MasterServiceProxy::GetTableLocations, req, &resp));
  if (resp.has_error()) return test::MasterErrorToStatus(resp.error());
  if (resp.tablet_locations_size() != 1) return Status::IllegalState("expected one tablet");
  for (const auto& r : resp.tablet_locations(0).replicas()) {
    if (r.role() == master::FOLLOWER) view->followers++;
    if (r.role() != master::LEADER) continue;
    for (int i = 0; i < cluster->num_tservers(); i++) {
      if (cluster->tserver(i)->uuid() == r.ts_info().permanent_uuid()) view->leader = i;
    }
  }
  master::ListTabletServersResponsePB servers;
  RETURN_NOT_OK(cluster->ListTabletServers(&servers));
  for (const auto& s : servers.servers()) view->live_servers += s.live() ? 1 : 0;
  return Status::OK();
}

bool LooksStable(test::MiniCluster* cluster, const TabletView& v) {
  if (v.leader < 0 || v.followers != kServers - 1 || v.live_servers != kServers) return false;
  for (int i = 0; i < kServers; i++) {
    if (!cluster->tserver(i)->IsRunning()) return false;
  }
  return true;
}

// Waits until the cluster is stable (see the file comment); `leader` is its leader.
Status WaitStable(test::MiniCluster* cluster, const AckTracker& tracker, int* leader,
                  MonoDelta* took) {
  const MonoTime start = MonoTime::Now();
  const MonoTime deadline = start + MonoDelta::FromMilliseconds(FLAGS_stable_timeout_ms);
  const MonoDelta settle = MonoDelta::FromMilliseconds(FLAGS_settle_ms);
  TabletView v;
  Status last;
  int candidate = -1;
  MonoTime since;
  int64_t acked_since = 0;
  while (MonoTime::Now() < deadline) {
    last = GetView(cluster, &v);
    if (!last.ok() || !LooksStable(cluster, v) || v.leader != candidate) {
      candidate = last.ok() && LooksStable(cluster, v) ? v.leader : -1;
      since = MonoTime::Now();
      acked_since = tracker.acked();
    } else if (MonoTime::Now() - since >= settle &&
               tracker.acked() - acked_since >= FLAGS_settle_writes) {
      *leader = candidate;
      *took = MonoTime::Now() - start;
      return Status::OK();
    }
    SleepFor(MonoDelta::FromMilliseconds(50));  // polling the master
  }
  return Status::TimedOut("cluster not stable after " + std::to_string(FLAGS_stable_timeout_ms) +
                          " ms: leader " + std::to_string(v.leader) + ", " +
                          std::to_string(v.followers) + " followers, " +
                          std::to_string(v.live_servers) + " live servers, " +
                          std::to_string(tracker.acked() - acked_since) +
                          " writes acknowledged in the last window (" + last.ToString() + ")");
}

// The leader the master names once it is no longer `old` (-1 if none within 10 s).
int NewLeader(test::MiniCluster* cluster, int old) {
  const MonoTime deadline = MonoTime::Now() + MonoDelta::FromSeconds(10);
  while (MonoTime::Now() < deadline) {
    TabletView v;
    if (GetView(cluster, &v).ok() && v.leader >= 0 && v.leader != old) return v.leader;
    SleepFor(MonoDelta::FromMilliseconds(20));  // polling the master
  }
  return -1;
}

Status CreateTable(Client* client) {
  ASSIGN_OR_RETURN(Schema schema, SchemaBuilder()
                                      .AddKeyColumn("key", DataType::kInt64)
                                      .AddColumn("v", DataType::kInt64)
                                      .Build());
  auto creator = client->NewTableCreator();
  creator->table_name(kTable).schema(schema).num_replicas(kServers);
  return creator->Create();
}

// The median (the mean of the two middle values of an even count).
int64_t Median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2] + 1) / 2;
}

Status Run(const std::string& root, std::vector<int64_t>* failovers_ms) {
  std::vector<std::string> flags;
  std::istringstream words(FLAGS_tserver_flags);
  for (std::string w; words >> w;) flags.push_back(w);
  itest::ClientTestCluster cluster(root + "/cluster", kServers, flags);
  RETURN_NOT_OK_PREPEND(cluster.Start(), "starting the cluster");
  test::MiniCluster* mc = cluster.mini_cluster();
  RETURN_NOT_OK_PREPEND(CreateTable(cluster.client().get()), "creating the table");
  ASSIGN_OR_RETURN(auto writer_client, cluster.NewClient());
  ASSIGN_OR_RETURN(auto table, writer_client->OpenTable(kTable));

  AckTracker tracker;
  Writers writers(writer_client, table, &tracker);
  writers.Start(FLAGS_threads);
  Status status;
  for (int kill = 1; kill <= FLAGS_kills; kill++) {
    int leader = -1;
    MonoDelta stable_took;
    status = WaitStable(mc, tracker, &leader, &stable_took);
    if (!status.ok()) break;
    const MonoTime killed_at = MonoTime::Now();
    mc->tserver(leader)->Kill(9);
    const MonoTime reaped_at = MonoTime::Now();
    tracker.Arm(reaped_at);
    MonoTime ack;
    const bool resumed =
        tracker.WaitFirstAck(MonoDelta::FromMilliseconds(FLAGS_failover_timeout_ms), &ack);
    MonoDelta longest;
    int64_t failures = 0;
    std::string last_error;
    tracker.Disarm(&longest, &failures, &last_error);
    if (!resumed) {
      status = Status::TimedOut("kill " + std::to_string(kill) + ": no write acknowledged " +
                                std::to_string(FLAGS_failover_timeout_ms) +
                                " ms after the leader was killed; last error: " + last_error);
      break;
    }
    const int64_t ms = (ack - killed_at).ToMicroseconds() / 1000;
    failovers_ms->push_back(ms);
    const int new_leader = NewLeader(mc, leader);
    printf(
        "kill %2d: ts%d (leader) killed; first write invoked after the kill acknowledged "
        "after %lld ms (longest write meanwhile %lld ms, %lld failed); new leader ts%d; "
        "stable %.1f s before the kill\n",
        kill, leader, (long long)ms, (long long)longest.ToMilliseconds(), (long long)failures,
        new_leader, double(stable_took.ToMilliseconds()) / 1000.0);
    if (failures > 0) printf("         last write error: %s\n", last_error.c_str());
    fflush(stdout);
    const MonoTime restart_start = MonoTime::Now();
    status = mc->tserver(leader)->Restart();
    if (!status.ok()) {
      status = status.CloneAndPrepend("restarting ts" + std::to_string(leader));
      break;
    }
    printf("         ts%d restarted in %lld ms\n", leader,
           (long long)(MonoTime::Now() - restart_start).ToMilliseconds());
    fflush(stdout);
  }
  writers.Stop();
  Status down = cluster.Shutdown();
  RETURN_NOT_OK(status);
  WARN_NOT_OK(down, "stopping the cluster");
  return Status::OK();
}

int Main() {
  char tmpl[] = "/tmp/failover-bench-XXXXXX";
  CHECK(mkdtemp(tmpl) != nullptr);
  const std::string root = tmpl;
  printf(
      "failover-bench: %d tablet servers, 1 tablet of %d replicas, %d writer thread(s), "
      "%d kills, tablet server flags: %s\n",
      kServers, kServers, FLAGS_threads, FLAGS_kills,
      FLAGS_tserver_flags.empty() ? "defaults" : FLAGS_tserver_flags.c_str());
  fflush(stdout);
  std::vector<int64_t> failovers_ms;
  Status s = Run(root, &failovers_ms);
  if (FLAGS_keep_dir) {
    printf("cluster directory kept: %s\n", root.c_str());
  } else {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  if (!s.ok()) fprintf(stderr, "failover-bench: %s\n", s.ToString().c_str());
  if (failovers_ms.empty()) return 1;
  printf("failover times (ms):");
  for (int64_t ms : failovers_ms) printf(" %lld", (long long)ms);
  printf("\nkills measured: %zu\n", failovers_ms.size());
  printf("failover median: %lld ms\n", (long long)Median(failovers_ms));
  printf("failover max: %lld ms\n",
         (long long)*std::max_element(failovers_ms.begin(), failovers_ms.end()));
  return s.ok() ? 0 : 1;
}

}  // namespace
}  // namespace nyala::client

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = false;
  return nyala::client::Main();
}
