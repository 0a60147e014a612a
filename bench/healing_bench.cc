// healing-bench: how long the master takes to heal every tablet after a tablet server
// dies for good, phase by phase, and what healing costs a foreground write load.
//
// Each run starts a MiniCluster (one nyala-master, 4 nyala-tservers, heartbeats every
// --heartbeat_interval_ms: the daemons' default) with the master's
// --follower_unavailable_considered_failed_sec set to --failed_after_sec, creates a
// table of --tablets hash tablets of 3 replicas and loads --tablet_mb MiB into each
// (rows of an INT64 key and 1,000 random bytes: incompressible). Then --writers client
// threads upsert small rows (one row per AUTO_FLUSH_SYNC write, random keys of their
// own): --settle_sec unmeasured, then --baseline_sec; the tablet server holding the
// most replicas is killed with SIGKILL and not restarted. Every --poll_ms the bench
// asks the master for each tablet's replacement step (ListTablets) and the live tablet
// servers for their copies (ListTablets), until every tablet again has 3 voters on
// live servers, no learner and no replacement under way; the writers go on for
// --after_sec more.
//
// It prints, from the kill, when each phase was over for the last tablet:
//   detect    the master shows its first replacement (it can start none before the
//             failure timeout, counted from the server's last heartbeat)
//   copy      the last learner's copy installed (its server lists the tablet READY)
//   catch up  the last learner caught up (the master promotes it)
//   promote   the last learner promoted (the master removes the dead voter)
//   remove    every tablet healed
// and each phase's median and longest length per tablet ("queue": from the first
// replacement to the tablet's own ADD_LEARNER, waiting for
// --max_concurrent_tablet_copies), to --poll_ms resolution (a step is given the time
// halfway between the poll that first saw it and the one before; one shorter than a
// poll may take 0). Then the foreground writes per second, with their p99 latency:
// before the kill; from the kill to the first learner; while healing (first learner to
// healed), split in "copying", while some learner was being added or copied (from its
// ADD_LEARNER to its server listing it READY), and the rest; and after. And the ratios
// of the rate while healing and while copying to the rate before, and of the rate while
// copying to the rest of healing: the same live servers, interleaved in time, so the
// least disturbed by other work on the machine.
//
//   healing-bench [--tablets=100 --tablet_mb=10] [--failed_after_sec=10]
//                 [--rate_limits=0,20,50,100 --runs=3] [--tserver_flag=--x=y ...]
//                 [--master_flag=--x=y ...] [--keep_dir]
//
// --rate_limits runs each value of the tablet servers' --tablet_copy_rate_limit_mb
// (MiB/s, 0 = off) on a fresh cluster, --runs rounds in turn (A B C, A B C, ...), and
// ends with a table of each value's medians. --tserver_flag and --master_flag may be
// repeated. The clusters live in a temporary directory, removed at the end unless
// --keep_dir. With --verify (default) the dead server is unregistered after healing
// and `nyala cluster ksck --checksum_scan` must exit 0.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "common/result.h"
#include "nyala/client.h"
#include "test/mini_cluster.h"

DEFINE_int32(tablets, 100, "Tablets of the table (hash buckets), 3 replicas each.");
DEFINE_int32(tablet_mb, 10, "MiB of rows loaded into each tablet before the kill.");
DEFINE_int32(failed_after_sec, 10,
             "The master's --follower_unavailable_considered_failed_sec (300 by default).");
DEFINE_int32(heartbeat_interval_ms, 1000, "The tablet servers' --heartbeat_interval_ms.");
DEFINE_int32(writers, 4, "Foreground writer threads, each with an AUTO_FLUSH_SYNC session.");
DEFINE_int32(write_bytes, 100, "Payload bytes of each foreground upsert.");
DEFINE_int32(settle_sec, 10,
             "Seconds of foreground writes after the load and before the baseline, not measured "
             "(the load's memtable flushes and compactions settle).");
DEFINE_int32(baseline_sec, 20, "Seconds of foreground writes measured before the kill.");
DEFINE_int32(after_sec, 5, "Seconds of foreground writes measured after healing.");
DEFINE_int32(load_threads, 4, "Threads loading the table, 1 MiB per flush.");
DEFINE_int32(poll_ms, 200, "How often the master and the tablet servers are asked.");
DEFINE_int32(heal_timeout_sec, 1800,
             "Give up when the table is not healed this long after the kill.");
DEFINE_string(rate_limits, "",
              "Comma-separated values of the tablet servers' --tablet_copy_rate_limit_mb "
              "(MiB/s, 0 = off), one run each; empty: the servers' default.");
DEFINE_int32(runs, 1, "Rounds over --rate_limits.");
DEFINE_string(tserver_flag, "",
              "A flag for every tablet server, e.g. --tserver_flag=--tablet_copy_rate_limit_mb=50; "
              "may be repeated.");
DEFINE_string(master_flag, "",
              "A flag for the master, e.g. --master_flag=--max_concurrent_tablet_copies=4; may "
              "be repeated.");
DEFINE_bool(verify, true,
            "After healing: unregister the dead server and require `nyala cluster ksck "
            "--checksum_scan` to exit 0.");
DEFINE_bool(keep_dir, false, "Keep the clusters' directory (daemon logs) and print its path.");

namespace nyala::client {
namespace {

constexpr int kServers = 4;
constexpr int kReplicas = 3;
constexpr int kLoadRowBytes = 1000;
constexpr char kTable[] = "healing_bench";

// The repeated --tserver_flag and --master_flag values (gflags keeps only the last).
std::vector<std::string> g_tserver_flags, g_master_flags;

uint64_t NextRandom(uint64_t* s) {  // xorshift64*
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}
void FillRandom(uint64_t* s, std::string* buf) {
  for (size_t i = 0; i + 8 <= buf->size(); i += 8) {
    const uint64_t r = NextRandom(s);
    memcpy(buf->data() + i, &r, 8);
  }
}

double Secs(MonoDelta d) { return d.ToSeconds(); }

std::string UtcNow() {
  char buf[32];
  const time_t t = time(nullptr);
  strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", gmtime(&t));
  return buf;
}

// --writers threads upserting random keys of their own until stopped; each write's
// completion time and latency.
class ForegroundWriters {
 public:
  struct Op {
    MonoTime done;
    int32_t latency_us;
    bool ok;
  };
  ForegroundWriters(std::shared_ptr<Client> client, std::shared_ptr<Table> table)
      : client_(std::move(client)), table_(std::move(table)), ops_(size_t(FLAGS_writers)) {}
  ~ForegroundWriters() { Stop(); }
  void Start() {
    for (int t = 0; t < FLAGS_writers; t++) threads_.emplace_back([this, t] { Run(t); });
  }
  void Stop() {
    stop_ = true;
    for (auto& th : threads_) th.join();
    threads_.clear();
  }
  // After Stop(): every write, by completion time.
  std::vector<Op> Ops() const {
    std::vector<Op> all;
    for (const auto& v : ops_) all.insert(all.end(), v.begin(), v.end());
    std::sort(all.begin(), all.end(), [](const Op& a, const Op& b) { return a.done < b.done; });
    return all;
  }

 private:
  void Run(int t) {
    auto session = client_->NewSession();
    CHECK_OK(session->SetFlushMode(Session::FlushMode::kAutoFlushSync));
    CHECK_OK(session->SetTimeout(MonoDelta::FromSeconds(30)));
    uint64_t rng = 0x9E3779B97F4A7C15ULL * uint64_t(t + 1);
    std::string payload(size_t(FLAGS_write_bytes), '\0');
    std::vector<Op>& ops = ops_[size_t(t)];
    ops.reserve(1 << 20);
    while (!stop_.load()) {
      FillRandom(&rng, &payload);
      auto op = table_->NewUpsert();
      // Keys of their own, above the loaded ones: 100,000 per thread, overwritten.
      CHECK_OK(
          op->Set("key", Cell::Int64((int64_t(t + 1) << 40) + int64_t(NextRandom(&rng) % 100000))));
      CHECK_OK(op->Set("payload", Cell::Binary(payload)));
      const MonoTime start = MonoTime::Now();
      const Status s = session->Apply(std::move(op));
      const MonoTime done = MonoTime::Now();
      ops.push_back(
          {done, int32_t(std::min<int64_t>((done - start).ToMicroseconds(), INT32_MAX)), s.ok()});
    }
  }

  const std::shared_ptr<Client> client_;
  const std::shared_ptr<Table> table_;
  std::atomic<bool> stop_{false};
  std::vector<std::vector<Op>> ops_;  // one per thread, read after Stop()
  std::vector<std::thread> threads_;
};

// Acknowledged writes per second in [from, to) and their p99 latency (ms).
struct WindowRate {
  double seconds = 0;  // the window's length
  double per_sec = 0;
  double p99_ms = 0;
  int64_t failed = 0;
};
// The same over the union of `windows` ([from, to) each).
WindowRate RateIn(const std::vector<ForegroundWriters::Op>& ops,
                  std::vector<std::pair<MonoTime, MonoTime>> windows) {
  WindowRate r;
  std::sort(windows.begin(), windows.end());
  std::vector<std::pair<MonoTime, MonoTime>> merged;
  for (const auto& w : windows) {
    if (!(w.first < w.second)) continue;
    if (!merged.empty() && !(merged.back().second < w.first)) {
      merged.back().second = std::max(merged.back().second, w.second);
    } else {
      merged.push_back(w);
    }
  }
  MonoDelta length;
  for (const auto& w : merged) length = length + (w.second - w.first);
  if (merged.empty()) return r;
  std::vector<int32_t> lat;
  size_t i = 0;  // ops are by completion time
  for (const auto& op : ops) {
    while (i < merged.size() && !(op.done < merged[i].second)) i++;
    if (i == merged.size()) break;
    if (op.done < merged[i].first) continue;
    if (!op.ok) {
      r.failed++;
      continue;
    }
    lat.push_back(op.latency_us);
  }
  r.seconds = Secs(length);
  r.per_sec = double(lat.size()) / r.seconds;
  if (!lat.empty()) {
    std::sort(lat.begin(), lat.end());
    r.p99_ms = lat[std::min(lat.size() - 1, lat.size() * 99 / 100)] / 1000.0;
  }
  return r;
}

// The parts of [from, to) outside every one of `windows`.
std::vector<std::pair<MonoTime, MonoTime>> Complement(
    std::vector<std::pair<MonoTime, MonoTime>> windows, MonoTime from, MonoTime to) {
  std::sort(windows.begin(), windows.end());
  std::vector<std::pair<MonoTime, MonoTime>> out;
  MonoTime at = from;
  for (const auto& w : windows) {
    if (at < w.first) out.emplace_back(at, std::min(w.first, to));
    at = std::max(at, w.second);
    if (!(at < to)) break;
  }
  if (at < to) out.emplace_back(at, to);
  return out;
}

// One tablet the killed server held: when each step of its replacement was first seen.
struct Track {
  std::string new_uuid;
  MonoTime adding, copy_done, promoting, removing, done;
};

// What one run measured; times in seconds from the kill.
struct RunResult {
  int rate_limit = -1;  // -1: the servers' default
  double load_s = 0, loaded_mib = 0;
  int replaced = 0;
  double replaced_mib = 0;
  double detect = 0, first_add = 0, copy = 0, catch_up = 0, promote = 0, healed = 0;
  // Per tablet, median and max lengths of: queue, copy, catch up, promote, remove.
  double median[5] = {}, max[5] = {};
  // Foreground writes: before the kill, from the kill to the first learner, from there
  // to healed, while some learner was being added or copied (a part of healing), after.
  // "quiet": the rest of healing, no learner being added or copied.
  WindowRate before, failover, healing, copying, quiet, after;
  int ksck = -1;
  std::string loadavg;  // /proc/loadavg at the start
};

double MedianD(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

class HealingRun {
 public:
  HealingRun(std::string root, int rate_limit) : root_(std::move(root)) {
    result_.rate_limit = rate_limit;
  }

  Status Run(RunResult* out) {
    {
      std::ifstream in("/proc/loadavg");
      std::string one, five, fifteen;
      in >> one >> five >> fifteen;
      result_.loadavg = one + " " + five + " " + fifteen;
    }
    RETURN_NOT_OK_PREPEND(StartCluster(), "starting the cluster");
    RETURN_NOT_OK_PREPEND(Load(), "loading");
    ASSIGN_OR_RETURN(auto writer_client,
                     ClientBuilder().add_master_server_addr(cluster_->master_addr()).Build());
    ASSIGN_OR_RETURN(auto table, writer_client->OpenTable(kTable));
    ForegroundWriters writers(writer_client, table);
    writers.Start();
    SleepFor(MonoDelta::FromSeconds(FLAGS_settle_sec));  // not measured
    const MonoTime baseline_start = MonoTime::Now();
    SleepFor(MonoDelta::FromSeconds(FLAGS_baseline_sec));  // the baseline's length
    Status s = KillAndWatch();
    const MonoTime after_start = MonoTime::Now();
    if (s.ok()) SleepFor(MonoDelta::FromSeconds(FLAGS_after_sec));  // the after window
    const MonoTime after_end = MonoTime::Now();
    writers.Stop();
    RETURN_NOT_OK(s);
    const auto ops = writers.Ops();
    const MonoTime first_add = killed_ + MonoDelta::FromSeconds(result_.first_add);
    result_.before = RateIn(ops, {{baseline_start, killed_}});
    result_.failover = RateIn(ops, {{killed_, first_add}});
    result_.healing = RateIn(ops, {{first_add, healed_}});
    std::vector<std::pair<MonoTime, MonoTime>> copying;
    for (const auto& [id, tr] : tracks_) copying.emplace_back(tr.adding, tr.copy_done);
    result_.copying = RateIn(ops, copying);
    result_.quiet = RateIn(ops, Complement(copying, first_add, healed_));
    result_.after = RateIn(ops, {{after_start, after_end}});
    if (FLAGS_verify) result_.ksck = Verify();
    *out = result_;
    Status down = cluster_->Shutdown();
    WARN_NOT_OK(down, "stopping the cluster");
    return Status::OK();
  }

 private:
  Status StartCluster() {
    test::MiniClusterOptions o;
    o.root_dir = root_;
    o.num_tservers = kServers;
    o.heartbeat_interval_ms = FLAGS_heartbeat_interval_ms;
    // The master also calls the dead server dead (60 s by default) by the end, so that
    // --verify can unregister it.
    o.master_flags = {
        "--follower_unavailable_considered_failed_sec=" + std::to_string(FLAGS_failed_after_sec),
        "--tserver_unresponsive_timeout_ms=" +
            std::to_string(std::min(60, FLAGS_failed_after_sec) * 1000)};
    for (const auto& f : g_master_flags) o.master_flags.push_back(f);
    o.tserver_flags = g_tserver_flags;
    if (result_.rate_limit >= 0) {
      o.tserver_flags.push_back("--tablet_copy_rate_limit_mb=" +
                                std::to_string(result_.rate_limit));
    }
    cluster_ = std::make_unique<test::MiniCluster>(o);
    RETURN_NOT_OK(cluster_->Start());
    ASSIGN_OR_RETURN(client_,
                     ClientBuilder().add_master_server_addr(cluster_->master_addr()).Build());
    ASSIGN_OR_RETURN(Schema schema, SchemaBuilder()
                                        .AddKeyColumn("key", DataType::kInt64)
                                        .AddColumn("payload", DataType::kBinary)
                                        .Build());
    auto creator = client_->NewTableCreator();
    creator->table_name(kTable).schema(schema).num_replicas(kReplicas);
    creator->add_hash_partitions({"key"}, FLAGS_tablets);
    return creator->Create();
  }

  // --tablet_mb MiB per tablet, keys 0..rows-1, --load_threads sessions.
  Status Load() {
    ASSIGN_OR_RETURN(auto table, client_->OpenTable(kTable));
    const int64_t rows = int64_t(FLAGS_tablets) * FLAGS_tablet_mb * (1 << 20) / kLoadRowBytes;
    const MonoTime start = MonoTime::Now();
    std::vector<std::thread> threads;
    std::vector<Status> statuses(static_cast<size_t>(FLAGS_load_threads));
    for (int t = 0; t < FLAGS_load_threads; t++) {
      threads.emplace_back([&, t] {
        statuses[size_t(t)] = [&]() -> Status {
          auto session = client_->NewSession();
          RETURN_NOT_OK(session->SetFlushMode(Session::FlushMode::kManualFlush));
          RETURN_NOT_OK(session->SetTimeout(MonoDelta::FromSeconds(60)));
          uint64_t rng = 0xD1B54A32D192ED03ULL * uint64_t(t + 1);
          std::string payload(kLoadRowBytes, '\0');
          int in_batch = 0;
          for (int64_t k = t; k < rows; k += FLAGS_load_threads) {
            FillRandom(&rng, &payload);
            auto op = table->NewUpsert();
            RETURN_NOT_OK(op->Set("key", Cell::Int64(k)));
            RETURN_NOT_OK(op->Set("payload", Cell::Binary(payload)));
            RETURN_NOT_OK(session->Apply(std::move(op)));
            if (++in_batch == (1 << 20) / kLoadRowBytes) {
              RETURN_NOT_OK(session->Flush());
              in_batch = 0;
            }
          }
          return session->Flush();
        }();
      });
    }
    for (auto& th : threads) th.join();
    for (const Status& s : statuses) RETURN_NOT_OK(s);
    result_.load_s = Secs(MonoTime::Now() - start);
    result_.loaded_mib = double(rows) * kLoadRowBytes / (1 << 20);
    return Status::OK();
  }

  Result<master::ListTabletsResponsePB> MasterTablets() {
    master::ListTabletsRequestPB req;
    req.mutable_table()->set_table_name(kTable);
    master::ListTabletsResponsePB resp;
    RETURN_NOT_OK(cluster_->CallMaster(&master::MasterServiceProxy::ListTablets, req, &resp));
    if (resp.has_error()) return test::MasterErrorToStatus(resp.error());
    return resp;
  }

  // Healed: a leader, kReplicas voters on live servers other than `dead_`, no learner,
  // no replacement.
  bool Healed(const master::ListTabletsResponsePB::TabletPB& t) const {
    if (t.has_replacement() || t.leader_uuid().empty()) return false;
    int voters = 0;
    for (const auto& r : t.replicas()) {
      if (r.role() == master::LEARNER || r.ts_uuid() == dead_ || !r.ts_live()) return false;
      voters++;
    }
    return voters == kReplicas;
  }

  // Waits for every tablet's leader and its figures; picks the server with the most
  // replicas, the tablets it holds and their size.
  Status ChooseVictim() {
    const MonoTime deadline = MonoTime::Now() + MonoDelta::FromSeconds(60);
    master::GetTableStatisticsResponsePB stats;
    for (;;) {
      master::GetTableStatisticsRequestPB req;
      req.mutable_table()->set_table_name(kTable);
      stats.Clear();
      RETURN_NOT_OK(
          cluster_->CallMaster(&master::MasterServiceProxy::GetTableStatistics, req, &stats));
      ASSIGN_OR_RETURN(auto listed, MasterTablets());
      bool leaders = true;
      for (const auto& t : listed.tablets()) leaders &= !t.leader_uuid().empty();
      if (leaders && !stats.has_error() && stats.tablets_without_stats() == 0) {
        std::map<std::string, int> load;
        for (const auto& t : listed.tablets()) {
          for (const auto& r : t.replicas()) load[r.ts_uuid()]++;
        }
        for (int i = 0; i < kServers; i++) {
          if (victim_ < 0 ||
              load[cluster_->tserver(i)->uuid()] > load[cluster_->tserver(victim_)->uuid()]) {
            victim_ = i;
          }
        }
        dead_ = cluster_->tserver(victim_)->uuid();
        std::map<std::string, int64_t> size;
        for (const auto& t : stats.tablets()) size[t.tablet_id()] = t.on_disk_size();
        for (const auto& t : listed.tablets()) {
          for (const auto& r : t.replicas()) {
            if (r.ts_uuid() != dead_) continue;
            tracks_[t.tablet_id()] = Track();
            result_.replaced_mib += double(size[t.tablet_id()]) / (1 << 20);
          }
        }
        result_.replaced = int(tracks_.size());
        return Status::OK();
      }
      if (MonoTime::Now() > deadline) return Status::TimedOut("tablets without leaders or figures");
      SleepFor(MonoDelta::FromMilliseconds(200));  // polling the master
    }
  }

  // One poll: the master's replacement steps and the new servers' copies. A step first
  // seen now happened since the last poll: it is given the time halfway.
  Status Poll(MonoTime polled, bool* healed) {
    const MonoTime now =
        last_poll_ + MonoDelta::FromNanoseconds((polled - last_poll_).ToNanoseconds() / 2);
    last_poll_ = polled;
    ASSIGN_OR_RETURN(auto listed, MasterTablets());
    *healed = true;
    for (const auto& t : listed.tablets()) {
      const bool ok = Healed(t);
      *healed &= ok;
      auto it = tracks_.find(t.tablet_id());
      if (it == tracks_.end()) continue;
      Track& tr = it->second;
      if (t.has_replacement()) {
        if (!detected_.Initialized()) detected_ = now;
        const auto& r = t.replacement();
        if (!r.new_uuid().empty()) tr.new_uuid = r.new_uuid();
        auto first = [&](MonoTime* at) {
          if (!at->Initialized()) *at = now;
        };
        switch (r.step()) {
          case master::ReplacementPB::ADDING_LEARNER:
            // Not yet while it only chooses a server ("" then).
            if (!r.new_uuid().empty()) first(&tr.adding);
            break;
          case master::ReplacementPB::PROMOTING:
            first(&tr.promoting);
            break;
          case master::ReplacementPB::REMOVING:
            first(&tr.removing);
            break;
          default:
            break;
        }
      }
      for (const auto& r : t.replicas()) {
        if (r.role() != master::LEARNER) continue;
        if (tr.new_uuid.empty()) tr.new_uuid = r.ts_uuid();
        if (!tr.adding.Initialized()) tr.adding = now;
      }
      if (ok && !tr.done.Initialized()) tr.done = now;
    }
    if (*healed) healed_ = now;
    // A copy is over once the learner's server lists the tablet READY with no copy.
    for (int i = 0; i < kServers; i++) {
      if (i == victim_) continue;
      tserver::ListTabletsResponsePB resp;
      rpc::RpcController rpc;
      rpc.set_timeout(MonoDelta::FromSeconds(5));
      if (!cluster_->tserver_admin_proxy(i).ListTablets({}, &resp, &rpc).ok()) continue;
      const std::string& uuid = cluster_->tserver(i)->uuid();
      for (const auto& t : resp.tablets()) {
        auto it = tracks_.find(t.tablet_id());
        if (it == tracks_.end() || it->second.new_uuid != uuid) continue;
        if (t.state() == tserver::TABLET_DATA_READY && !t.has_copy() &&
            !it->second.copy_done.Initialized()) {
          it->second.copy_done = now;
        }
      }
    }
    return Status::OK();
  }

  Status KillAndWatch() {
    RETURN_NOT_OK_PREPEND(ChooseVictim(), "choosing the server to kill");
    killed_ = MonoTime::Now();
    last_poll_ = killed_;
    cluster_->tserver(victim_)->Kill(9);
    const MonoTime deadline = killed_ + MonoDelta::FromSeconds(FLAGS_heal_timeout_sec);
    bool healed = false;
    while (!healed) {
      const MonoTime now = MonoTime::Now();
      if (now > deadline) {
        return Status::TimedOut("not healed " + std::to_string(FLAGS_heal_timeout_sec) +
                                " s after the kill");
      }
      Status s = Poll(now, &healed);
      if (!s.ok()) LOG(WARNING) << "poll: " << s.ToString();
      if (!healed) SleepFor(MonoDelta::FromMilliseconds(FLAGS_poll_ms));  // polling
    }
    Summarize();
    return Status::OK();
  }

  // Phases per tablet; a step not seen took less than a poll: it gets the next one's time.
  void Summarize() {
    std::vector<double> lengths[5];
    MonoTime first_add = healed_, copy, promoting, removing;
    for (auto& [id, tr] : tracks_) {
      if (!tr.done.Initialized()) tr.done = healed_;
      if (!tr.removing.Initialized()) tr.removing = tr.done;
      if (!tr.promoting.Initialized()) tr.promoting = tr.removing;
      if (!tr.copy_done.Initialized() || tr.promoting < tr.copy_done) tr.copy_done = tr.promoting;
      if (!tr.adding.Initialized() || tr.copy_done < tr.adding) tr.adding = tr.copy_done;
      first_add = std::min(first_add, tr.adding);
      copy = std::max(copy, tr.copy_done);
      promoting = std::max(promoting, tr.promoting);
      removing = std::max(removing, tr.removing);
      const MonoTime detected = detected_.Initialized() ? detected_ : tr.adding;
      lengths[0].push_back(Secs(tr.adding - std::min(detected, tr.adding)));
      lengths[1].push_back(Secs(tr.copy_done - tr.adding));
      lengths[2].push_back(Secs(tr.promoting - tr.copy_done));
      lengths[3].push_back(Secs(tr.removing - tr.promoting));
      lengths[4].push_back(Secs(tr.done - tr.removing));
    }
    auto since = [&](MonoTime t) { return Secs(t - killed_); };
    result_.detect = since(detected_.Initialized() ? detected_ : first_add);
    result_.first_add = since(first_add);
    result_.copy = since(copy);
    result_.catch_up = since(promoting);
    result_.promote = since(removing);
    result_.healed = since(healed_);
    for (int p = 0; p < 5; p++) {
      result_.median[p] = MedianD(lengths[p]);
      result_.max[p] =
          lengths[p].empty() ? 0 : *std::max_element(lengths[p].begin(), lengths[p].end());
    }
  }

  // Unregisters the dead server and runs ksck --checksum_scan; its exit code.
  int Verify() {
    const std::string bin = test::BinDir() + "/nyala ";
    const std::string m = cluster_->master_addr();
    auto run = [](const std::string& cmd) {
      const int st = system((cmd + " > /dev/null 2>&1").c_str());
      return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    };
    for (int i = 0; i < 120 && run(bin + "tserver unregister " + m + " " + dead_) != 0; i++) {
      SleepFor(MonoDelta::FromSeconds(1));  // until the master calls it dead
    }
    int code = -1;
    for (int i = 0; i < 10 && code != 0; i++) {
      code = run(bin + "cluster ksck " + m + " --checksum_scan");
    }
    return code;
  }

  const std::string root_;
  std::unique_ptr<test::MiniCluster> cluster_;
  std::shared_ptr<Client> client_;
  int victim_ = -1;
  std::string dead_;
  std::map<std::string, Track> tracks_;  // tablets the killed server held
  MonoTime killed_, detected_, healed_, last_poll_;
  RunResult result_;
};

std::string LimitName(int limit) {
  return limit < 0 ? "default" : limit == 0 ? "off" : std::to_string(limit) + " MiB/s";
}

void PrintRun(int run, const RunResult& r) {
  static const char* kPhases[] = {"queue", "copy", "catch up", "promote", "remove"};
  printf(
      "run %d, copy rate limit %s (load average %s at the start): loaded %.0f MiB in %.1f s "
      "(%.1f MiB/s); killed a server holding %d replicas (%.0f MiB)\n",
      run, LimitName(r.rate_limit).c_str(), r.loadavg.c_str(), r.loaded_mib, r.load_s,
      r.loaded_mib / r.load_s, r.replaced, r.replaced_mib);
  printf(
      "  from the kill: detect %.1f s (failure timeout %d s), first learner %.1f s, last copy "
      "%.1f s, last caught up %.1f s, last promoted %.1f s, healed %.1f s\n",
      r.detect, FLAGS_failed_after_sec, r.first_add, r.copy, r.catch_up, r.promote, r.healed);
  printf("  per tablet (median / max s):");
  for (int p = 0; p < 5; p++)
    printf(" %s %.1f / %.1f%s", kPhases[p], r.median[p], r.max[p], p < 4 ? "," : "\n");
  printf("  copied %.1f MiB/s (first learner to last copy)\n",
         r.replaced_mib / std::max(0.001, r.copy - r.first_add));
  auto pct = [](const WindowRate& a, const WindowRate& b) {
    return 100.0 * a.per_sec / std::max(1.0, b.per_sec);
  };
  printf(
      "  foreground writes/s (p99 ms): before %.0f (%.1f), kill to first learner %.0f (%.1f), "
      "healing %.0f (%.1f): copying %.1f s %.0f (%.1f), the rest %.1f s %.0f (%.1f); after "
      "%.0f (%.1f)\n",
      r.before.per_sec, r.before.p99_ms, r.failover.per_sec, r.failover.p99_ms, r.healing.per_sec,
      r.healing.p99_ms, r.copying.seconds, r.copying.per_sec, r.copying.p99_ms, r.quiet.seconds,
      r.quiet.per_sec, r.quiet.p99_ms, r.after.per_sec, r.after.p99_ms);
  printf(
      "  healing/before %.0f%%, copying/before %.0f%%, copying/rest %.0f%%, healing/after "
      "%.0f%%; failed writes %lld\n",
      pct(r.healing, r.before), pct(r.copying, r.before), pct(r.copying, r.quiet),
      pct(r.healing, r.after),
      (long long)(r.before.failed + r.failover.failed + r.healing.failed + r.after.failed));
  if (FLAGS_verify) printf("  ksck --checksum_scan after healing: exit %d\n", r.ksck);
  fflush(stdout);
}

int Main() {
  std::vector<int> limits;
  std::istringstream in(FLAGS_rate_limits);
  for (std::string v; std::getline(in, v, ',');) {
    if (!v.empty()) limits.push_back(std::stoi(v));
  }
  if (limits.empty()) limits.push_back(-1);
  char tmpl[] = "/tmp/healing-bench-XXXXXX";
  CHECK(mkdtemp(tmpl) != nullptr);
  const std::string root = tmpl;
  std::string extra;
  for (const auto& f : g_tserver_flags) extra += " " + f;
  for (const auto& f : g_master_flags) extra += " master:" + f;
  printf(
      "healing-bench %s UTC: %d tablet servers, %d tablets of %d MiB, %d replicas; failure "
      "timeout %d s; heartbeats %d ms; %d foreground writers; %d run(s) of each copy rate "
      "limit; extra flags:%s\n",
      UtcNow().c_str(), kServers, FLAGS_tablets, FLAGS_tablet_mb, kReplicas, FLAGS_failed_after_sec,
      FLAGS_heartbeat_interval_ms, FLAGS_writers, FLAGS_runs,
      extra.empty() ? " none" : extra.c_str());
  fflush(stdout);
  std::map<int, std::vector<RunResult>> results;
  int failures = 0, n = 0;
  for (int round = 0; round < FLAGS_runs; round++) {
    for (int limit : limits) {
      n++;
      const std::string dir = root + "/run" + std::to_string(n);
      RunResult r;
      Status s = HealingRun(dir, limit).Run(&r);
      if (!s.ok()) {
        failures++;
        printf("run %d, copy rate limit %s: FAILED: %s\n", n, LimitName(limit).c_str(),
               s.ToString().c_str());
        fflush(stdout);
      } else {
        PrintRun(n, r);
        results[limit].push_back(r);
      }
      if (!FLAGS_keep_dir) {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
      }
    }
  }
  printf("\nmedians (%s UTC)\n", UtcNow().c_str());
  printf(
      "| copy rate limit | runs | detect s | last copy s | healed s | copy MiB/s | "
      "writes/s before | healing | healing/before | copying/before | copying/rest | "
      "p99 ms before / healing / copying |\n");
  printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  auto pct = [](const WindowRate& a, const WindowRate& b) {
    return 100.0 * a.per_sec / std::max(1.0, b.per_sec);
  };
  for (int limit : limits) {
    const auto& rs = results[limit];
    if (rs.empty()) continue;
    auto med = [&](const std::function<double(const RunResult&)>& f) {
      std::vector<double> v;
      for (const auto& r : rs) v.push_back(f(r));
      return MedianD(v);
    };
    printf(
        "| %s | %zu | %.1f | %.1f | %.1f | %.1f | %.0f | %.0f | %.0f%% | %.0f%% | %.0f%% | "
        "%.1f / %.1f / %.1f |\n",
        LimitName(limit).c_str(), rs.size(), med([](auto& r) { return r.detect; }),
        med([](auto& r) { return r.copy; }), med([](auto& r) { return r.healed; }),
        med([](auto& r) { return r.replaced_mib / std::max(0.001, r.copy - r.first_add); }),
        med([](auto& r) { return r.before.per_sec; }),
        med([](auto& r) { return r.healing.per_sec; }),
        med([&](auto& r) { return pct(r.healing, r.before); }),
        med([&](auto& r) { return pct(r.copying, r.before); }),
        med([&](auto& r) { return pct(r.copying, r.quiet); }),
        med([](auto& r) { return r.before.p99_ms; }), med([](auto& r) { return r.healing.p99_ms; }),
        med([](auto& r) { return r.copying.p99_ms; }));
  }
  if (FLAGS_keep_dir)
    printf("clusters kept under %s\n", root.c_str());
  else {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace nyala::client

int main(int argc, char** argv) {
  // --tserver_flag and --master_flag may be repeated: taken out before gflags, which
  // would keep only the last of each.
  std::vector<char*> rest;
  for (int i = 0; i < argc; i++) {
    const std::string a = argv[i];
    bool taken = false;
    for (const auto& [name, list] :
         {std::pair{std::string("tserver_flag="), &nyala::client::g_tserver_flags},
          std::pair{std::string("master_flag="), &nyala::client::g_master_flags}}) {
      for (const std::string dash : {"--", "-"}) {
        if (i > 0 && a.rfind(dash + name, 0) == 0) {
          list->push_back(a.substr(dash.size() + name.size()));
          taken = true;
          break;
        }
      }
      if (taken) break;
    }
    if (!taken) rest.push_back(argv[i]);
  }
  int n = int(rest.size());
  char** args = rest.data();
  gflags::ParseCommandLineFlags(&n, &args, true);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = false;
  return nyala::client::Main();
}
