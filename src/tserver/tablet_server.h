// TabletServer: the nyala-tserver daemon. On top of ServerBase (data dirs and
// uuid, messenger, web server, metrics) it owns the tablets (TabletManager, one
// RocksDB per data dir), the scanners, the write-retry tracker, the two RPC
// services, the heartbeater and the /tablets and /scans pages.
//
// Life cycle: Init() (dirs, stores, the write-retry tracker restored from the
// stores' request records, the consensus runtime over the shared log in
// --fs_wal_dir with every tablet's Raft group, services), Start() (listen, web UI,
// heartbeats), Shutdown() (stop heartbeating, stop the consensus runtime (writes
// waiting for it fail with an unknown outcome), stop accepting and drain calls, drop
// scanners, flush and close RocksDB). Shutdown is idempotent and also run by the
// destructor.
//
// Thread-safety: the accessors are safe from any thread between Init and Shutdown.
#pragma once

#include <memory>
#include <vector>

#include "rpc/sockaddr.h"
#include "server/server_base.h"

namespace nyala::consensus {
class ConsensusRuntime;
}

namespace nyala::tserver {

class Heartbeater;
class RequestTracker;
class ScannerManager;
class TabletCopyRequester;
class TabletCopyRunner;
class TabletCopySourceManager;
class TabletManager;
struct TServerMetrics;

// Bytes allocated on disk (st_blocks, as du counts) by the files under `dir`, not
// following symlinks, skipping the tree at `exclude` ("" = none; the WAL dir inside
// the first data dir). Files vanishing during the walk are skipped.
int64_t DiskBytesUnder(const std::string& dir, const std::string& exclude);

class TabletServer : public server::ServerBase {
 public:
  static constexpr uint16_t kDefaultRpcPort = 7050;
  static constexpr int kDefaultWebPort = 8050;
  static constexpr uint16_t kDefaultMasterPort = 7051;

  // `masters` may be empty (no heartbeats; tests).
  TabletServer(server::ServerBaseOptions options, std::vector<rpc::HostPort> masters);
  ~TabletServer() override;

  // The options and master addresses from the daemon flags (--tserver_master_addrs).
  static server::ServerBaseOptions OptionsFromFlags();
  static Result<std::vector<rpc::HostPort>> MasterAddrsFromFlags();

  Status Init() override;
  Status Start() override;
  void Shutdown() override;

  TabletManager* tablet_manager() const { return tablets_.get(); }
  ScannerManager* scanner_manager() const { return scanners_.get(); }
  RequestTracker* request_tracker() const { return tracker_.get(); }
  Heartbeater* heartbeater() const { return heartbeater_.get(); }
  consensus::ConsensusRuntime* consensus() const { return consensus_.get(); }
  TabletCopyRunner* copy_runner() const { return copy_runner_.get(); }
  TabletCopyRequester* copy_requester() const { return copy_requester_.get(); }

 protected:
  void AddOverviewRows(std::vector<std::pair<std::string, std::string>>* rows) override;
  void AddRateSeries(server::RateHistory* rates) override;

 private:
  void RegisterWebPages() override;  // tserver_web.cc
  // Gauges of the consensus log and runtime, and of the replicas.
  void RegisterConsensusGauges();

  const std::vector<rpc::HostPort> masters_;
  std::string wal_dir_;  // set by Init()
  std::unique_ptr<TServerMetrics> tmetrics_;
  std::unique_ptr<TabletManager> tablets_;
  std::unique_ptr<ScannerManager> scanners_;
  std::unique_ptr<RequestTracker> tracker_;
  std::unique_ptr<Heartbeater> heartbeater_;
  std::unique_ptr<consensus::ConsensusRuntime> consensus_;
  // Tablet copy: sessions this server serves, copies it fetches, copies it asks for.
  std::unique_ptr<TabletCopySourceManager> copy_source_;
  std::unique_ptr<TabletCopyRunner> copy_runner_;
  std::unique_ptr<TabletCopyRequester> copy_requester_;
  bool shut_down_ = false;
};

}  // namespace nyala::tserver
