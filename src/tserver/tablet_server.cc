#include "tserver/tablet_server.h"
#include "common/result.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "consensus/peer_id.h"
#include "consensus/runtime.h"
#include "tserver/heartbeater.h"
#include "tserver/request_tracker.h"
#include "tserver/scanners.h"
#include "tserver/tablet_copy_client.h"
#include "tserver/tablet_copy_requester.h"
#include "tserver/tablet_copy_runner.h"
#include "tserver/tablet_copy_service.h"
#include "tserver/tablet_copy_source.h"
#include "tserver/tablet_manager.h"
#include "tserver/tablet_service.h"
#include "tserver/tserver_metrics.h"

DEFINE_string(tserver_master_addrs, "127.0.0.1:7051",
              "Comma-separated host:port addresses of the masters this tablet server "
              "heartbeats to (a missing port is 7051).");

DEFINE_int32(tablet_copy_timeout_sec, 3600,
             "How long a tablet copy this server fetches may take before it is given up (the "
             "tablet's leader then asks for another).");
DEFINE_string(fs_wal_dir, "",
              "Directory of the tablet server's consensus log, shared by every tablet "
              "replica on the server (default: <first --fs_data_dirs>/wal). Put it on a "
              "fast disk: every write waits for its fdatasync (see --log_fsync).");

namespace nyala::tserver {

int64_t DiskBytesUnder(const std::string& dir, const std::string& exclude) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path skip = exclude.empty() ? fs::path() : fs::path(exclude).lexically_normal();
  int64_t bytes = 0;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!skip.empty() && it->path().lexically_normal() == skip) {
      it.disable_recursion_pending();
      continue;
    }
    struct stat st;
    if (lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      bytes += static_cast<int64_t>(st.st_blocks) * 512;
    }
  }
  return bytes;
}

TabletServer::TabletServer(server::ServerBaseOptions options, std::vector<rpc::HostPort> masters)
    : ServerBase(std::move(options)), masters_(std::move(masters)) {}

TabletServer::~TabletServer() { Shutdown(); }

server::ServerBaseOptions TabletServer::OptionsFromFlags() {
  return server::ServerBaseOptions::FromFlags("tserver", kDefaultRpcPort);
}

Result<std::vector<rpc::HostPort>> TabletServer::MasterAddrsFromFlags() {
  auto r = rpc::HostPort::ParseList(FLAGS_tserver_master_addrs, kDefaultMasterPort);
  if (!r.ok()) return r.status().CloneAndPrepend("--tserver_master_addrs");
  return r;
}

Status TabletServer::Init() {
  RETURN_NOT_OK(ServerBase::Init());
  tmetrics_ = std::make_unique<TServerMetrics>(metrics());
  tablets_ = std::make_unique<TabletManager>(fs()->data_dirs(), tmetrics_.get());
  RETURN_NOT_OK(tablets_->Open());
  tracker_ = std::make_unique<RequestTracker>();
  RETURN_NOT_OK(tablets_->LoadRequestRecords(tracker_.get()));
  consensus::RuntimeOptions ro;
  ro.metrics = metrics();
  ro.server_id = consensus::PeerIdFromUuid(uuid());
  ro.messenger = messenger();
  ro.log = consensus::LogOptions::FromFlags(
      FLAGS_fs_wal_dir.empty() ? fs()->data_dirs().front() + "/wal" : FLAGS_fs_wal_dir);
  consensus::RecoveryReport report;
  ASSIGN_OR_RETURN(consensus_, consensus::ConsensusRuntime::Start(ro, &report));
  LOG(INFO) << "consensus log " << ro.log.dir << ": " << report.ToString();
  {
    TabletCopyRequester::Options o;
    o.self_uuid = uuid();
    o.self_address = [this]() -> std::pair<std::string, uint32_t> {
      const std::vector<rpc::HostPort> self = advertised_rpc_addresses();
      if (self.empty()) return {"", 0};
      return {self.front().host(), self.front().port()};
    };
    o.messenger = messenger();
    o.tablets = tablets_.get();
    copy_requester_ = std::make_unique<TabletCopyRequester>(std::move(o));
    tablets_->set_copy_needed(
        [r = copy_requester_.get()](const std::string& tablet_id, const std::string& peer,
                                    uint64_t index) { r->CopyNeeded(tablet_id, peer, index); });
  }
  RETURN_NOT_OK(tablets_->StartReplication(consensus_.get(), tracker_.get(), uuid()));
  {
    const std::string root = fs()->data_dirs().front();
    ASSIGN_OR_RETURN(
        copy_source_,
        TabletCopySourceManager::Create(
            root + "/copy-sessions",
            [tablets = tablets_.get()](const std::string& tablet_id, const std::string& dir,
                                       TabletCopySnapshot* out) {
              return tablets->ExportForCopy(tablet_id, dir, &out->files, &out->superblock);
            },
            TabletCopySourceOptions{MonoDelta(), metrics()}));
    RETURN_NOT_OK(
        messenger()->RegisterService(std::make_unique<TabletCopyServiceImpl>(copy_source_.get())));
    TabletCopyRunner::Options o;
    o.tablets = tablets_.get();
    o.tracker = tracker_.get();
    o.self_uuid = uuid();
    o.staging_root = root + "/copies-in-progress";
    o.download = [m = messenger(), self = uuid()](
                     const std::string& source, const std::string& tablet_id,
                     const std::string& staging_dir, TabletCopyProgress* progress,
                     const std::atomic<bool>* cancelled, std::string* superblock) -> Status {
      ASSIGN_OR_RETURN(rpc::Sockaddr addr, rpc::ResolveAddress(source));
      TabletCopyClientOptions co;
      co.deadline = MonoTime::Now() + MonoDelta::FromSeconds(FLAGS_tablet_copy_timeout_sec);
      co.cancelled = cancelled;
      TabletCopyDownload out;
      RETURN_NOT_OK(DownloadTabletCopy(m, addr, tablet_id, self, staging_dir, co, progress, &out));
      *superblock = std::move(out.superblock);
      return Status::OK();
    };
    copy_runner_ = std::make_unique<TabletCopyRunner>(std::move(o));
    TabletCopyRunner* runner = copy_runner_.get();
    metrics()->RegisterFunctionCounter(
        "tablet_copies_done_total", "Tablet copies this server fetched and installed", {},
        [runner] { return runner->copies_done(); }, this);
    metrics()->RegisterFunctionCounter(
        "tablet_copies_failed_total", "Tablet copies this server fetched that failed", {},
        [runner] { return runner->copies_failed(); }, this);
    metrics()->RegisterFunctionGauge(
        "tablet_copies_running", "Tablet copies this server is fetching now", {},
        [runner] { return int64_t(runner->RunningCopies().size()); }, this);
    metrics()->RegisterFunctionGauge(
        "tablet_copies_requested",
        "Copies this server asked other servers to fetch from it, not yet done", {},
        [r = copy_requester_.get()] { return int64_t(r->NumPending()); }, this);
  }
  RegisterConsensusGauges();
  // Disk use, computed on each read (a directory walk: cheap for RocksDB's and the
  // log's few large files).
  const std::string wal_dir = ro.log.dir;
  wal_dir_ = wal_dir;
  for (const std::string& dir : fs()->data_dirs()) {
    metrics()->RegisterFunctionGauge(
        "tserver_data_dir_bytes",
        "Bytes on disk under a data dir (RocksDB files and metadata; the WAL dir excluded)",
        {{"dir", dir}}, [dir, wal_dir] { return DiskBytesUnder(dir, wal_dir); }, this);
  }
  metrics()->RegisterFunctionGauge(
      "tserver_wal_dir_bytes", "Bytes on disk under the consensus log dir (--fs_wal_dir)",
      {{"dir", wal_dir}}, [wal_dir] { return DiskBytesUnder(wal_dir, ""); }, this);
  scanners_ = std::make_unique<ScannerManager>(tmetrics_.get());
  TabletServiceDeps deps;
  deps.tablets = tablets_.get();
  deps.scanners = scanners_.get();
  deps.tracker = tracker_.get();
  deps.metrics = tmetrics_.get();
  RETURN_NOT_OK(messenger()->RegisterService(std::make_unique<TabletServiceImpl>(deps)));
  RETURN_NOT_OK(messenger()->RegisterService(std::make_unique<TabletAdminServiceImpl>(
      tablets_.get(), uuid(), tmetrics_.get(), copy_runner_.get())));
  metrics()->RegisterFunctionGauge(
      "tserver_tablets", "Tablets hosted", {},
      [this] { return static_cast<int64_t>(tablets_->NumTablets()); }, this);
  metrics()->RegisterFunctionGauge(
      "tserver_open_scanners", "Scanners kept for continuations", {},
      [this] { return static_cast<int64_t>(scanners_->NumScanners()); }, this);
  return Status::OK();
}

void TabletServer::RegisterConsensusGauges() {
  consensus::ConsensusRuntime* rt = consensus_.get();
  MetricRegistry* m = metrics();
  auto log_stat = [rt](uint64_t consensus::LogStats::*field) {
    return [rt, field] { return int64_t(rt->log()->Stats().*field); };
  };
  m->RegisterFunctionCounter("consensus_log_written_bytes_total",
                             "Bytes written to the consensus log", {},
                             log_stat(&consensus::LogStats::bytes), this);
  m->RegisterFunctionCounter("consensus_log_syncs_total", "fdatasyncs of the consensus log", {},
                             log_stat(&consensus::LogStats::fsyncs), this);
  m->RegisterFunctionGauge("consensus_log_segments", "Live consensus log segments", {},
                           log_stat(&consensus::LogStats::segments_live), this);
  auto rt_stat = [rt](uint64_t consensus::RuntimeStats::*field) {
    return [rt, field] { return int64_t(rt->Stats().*field); };
  };
  m->RegisterFunctionCounter("consensus_calls_sent_total",
                             "MultiUpdate calls sent to other servers", {},
                             rt_stat(&consensus::RuntimeStats::calls_sent), this);
  m->RegisterFunctionCounter("consensus_messages_sent_total", "Raft messages sent", {},
                             rt_stat(&consensus::RuntimeStats::messages_sent), this);
  m->RegisterFunctionCounter("consensus_messages_dropped_total",
                             "Raft messages dropped (unknown group, full outbox, failed call)", {},
                             rt_stat(&consensus::RuntimeStats::messages_dropped), this);
  m->RegisterFunctionCounter(
      "consensus_messages_refused_total",
      "Raft messages refused as invalid for their group (each is logged with the tablet and "
      "the sender)",
      {}, rt_stat(&consensus::RuntimeStats::messages_refused), this);
  m->RegisterFunctionCounter(
      "consensus_entries_read_back_total",
      "Raft log entries read back from the log on disk for followers behind the in-memory log", {},
      rt_stat(&consensus::RuntimeStats::entries_read_back), this);
  m->RegisterFunctionGauge(
      "tserver_replicas_leading", "Tablet replicas on this server that lead their group", {},
      [this] {
        int64_t n = 0;
        for (const auto& t : tablets_->GetTablets()) {
          if (auto g = t->replica().group(); g && g->leader_term() != 0) n++;
        }
        return n;
      },
      this);
  m->RegisterFunctionGauge(
      "tserver_writes_in_flight",
      "Writes taken and not yet answered, over every tablet (most wait for their replication)",
      {},
      [this] {
        int64_t n = 0;
        for (const auto& t : tablets_->GetTablets()) n += t->writes_in_flight();
        return n;
      },
      this);
  m->RegisterFunctionGauge(
      "tserver_max_apply_lag", "Largest committed-but-not-applied entry count of any replica", {},
      [this] {
        int64_t lag = 0;
        for (const auto& t : tablets_->GetTablets()) {
          std::shared_ptr<consensus::RaftGroup> g = t->replica().group();
          if (!g) continue;
          const consensus::GroupInfo info = g->info();
          lag = std::max(lag, int64_t(info.commit_index) - int64_t(info.applied_index));
        }
        return lag;
      },
      this);
}

Status TabletServer::Start() {
  RETURN_NOT_OK(ServerBase::Start());
  if (!masters_.empty()) {
    HeartbeaterOptions ho;
    ho.masters = masters_;
    ho.instance.set_permanent_uuid(uuid());
    ho.instance.set_instance_seqno(start_time_wall_micros());
    ho.fill_registration = [this](master::TSRegistrationPB* reg) {
      for (const auto& hp : advertised_rpc_addresses()) {
        auto* a = reg->add_rpc_addresses();
        a->set_host(hp.host());
        a->set_port(hp.port());
      }
      for (const auto& hp : http_addresses()) {
        auto* a = reg->add_http_addresses();
        a->set_host(hp.host());
        a->set_port(hp.port());
      }
      reg->set_software_version(server::kNyalaVersion);
      reg->set_start_time_micros(start_time_wall_micros());
    };
    heartbeater_ =
        std::make_unique<Heartbeater>(std::move(ho), messenger(), tablets_.get(), metrics());
    tablets_->set_change_callback([hb = heartbeater_.get()] { hb->TriggerASAP(); });
    heartbeater_->Start();
  }
  return Status::OK();
}

void TabletServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (tablets_) tablets_->set_change_callback(nullptr);
  if (heartbeater_) heartbeater_->Stop();
  // Copies stop first: running downloads are cancelled, installs finish.
  if (copy_requester_) copy_requester_->Shutdown();
  if (copy_runner_) copy_runner_->Shutdown();
  if (copy_source_) copy_source_->Shutdown();
  // Writes waiting for their groups get an unknown outcome (the client retries with
  // the same request id); the services then drain.
  if (consensus_) consensus_->Shutdown();
  metrics()->RemoveFunctionGauges(this);
  // Answers the admin calls queued for the tablet manager's admin thread first.
  if (tablets_) tablets_->StopAdminThread();
  ServerBase::Shutdown();  // web UI, then the messenger: stops accepting, drains calls
  if (scanners_) scanners_->Shutdown();
  if (tablets_) tablets_->Shutdown();  // flushes RocksDB
  LOG(INFO) << "tablet server " << (fs() ? uuid() : "") << " shut down";
}

}  // namespace nyala::tserver
