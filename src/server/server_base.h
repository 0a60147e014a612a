// ServerBase: what nyala-master and nyala-tserver share: the data dirs (FsManager,
// with the permanent uuid), the RPC messenger bound to --rpc_bind_addresses with the
// GenericService (generic_service.h: flags read and set at run time), the metric
// registry (with the process_* metrics), the web server with the default pages (/,
// /healthz, /varz, /metrics, /metrics_prometheus, /rpcz, /rates.json) and clean
// shutdown on SIGTERM/SIGINT. The home page charts the recent rates of a few counts
// (RateHistory: the daemon's own series, then RPC bytes in and out), sampled once a
// second by one thread while the daemon runs.
//
// Life cycle: construct, Init() (dirs, messenger), register services, Start()
// (listen, serve the web UI), WaitForShutdownSignal() or Shutdown().
// Thread-safety: accessors are safe from any thread after Start().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "common/status.h"
#include "nyala/monotime.h"
#include "rpc/messenger.h"
#include "rpc/sockaddr.h"
#include "server/fs_manager.h"
#include "server/rate_history.h"
#include "server/webserver.h"

namespace nyala::server {

struct ServerBaseOptions {
  std::string kind;  // "master" or "tserver": names threads, pages and the instance file
  std::vector<std::string> data_dirs;
  std::string rpc_bind_addresses;        // comma-separated host:port
  std::string rpc_advertised_addresses;  // "" = derived from the bound addresses
  std::string webserver_interface;       // "" = same host as the first RPC address
  int webserver_port = 0;                // 0 picks a free port; -1 disables the web server
  uint16_t default_rpc_port = 0;
  int num_reactors = -1;  // -1: --num_reactor_threads
  // Options from the daemon flags (--rpc_bind_addresses & co.).
  static ServerBaseOptions FromFlags(const std::string& kind, uint16_t default_rpc_port);
};

class ServerBase {
 public:
  explicit ServerBase(ServerBaseOptions options);
  virtual ~ServerBase();

  virtual Status Init();
  virtual Status Start();
  // Stops the web server and messenger. Idempotent. Subclasses stop their own parts
  // first, then call this.
  virtual void Shutdown();

  const std::string& uuid() const { return fs_->uuid(); }
  const std::shared_ptr<rpc::Messenger>& messenger() const { return messenger_; }
  MetricRegistry* metrics() { return &metrics_; }
  FsManager* fs() const { return fs_.get(); }
  Webserver* webserver() const { return webserver_.get(); }
  const std::vector<rpc::Sockaddr>& bound_rpc_addresses() const { return bound_rpc_; }
  // What clients and the master are told to use: --rpc_advertised_addresses, or the
  // bound addresses (the host's first non-loopback address for a wildcard bind).
  std::vector<rpc::HostPort> advertised_rpc_addresses() const;
  std::vector<rpc::HostPort> http_addresses() const;
  MonoTime start_time() const { return start_time_; }
  // The recent rates charted on the home page; null before Start().
  const RateHistory* rates() const { return rates_.get(); }
  int64_t start_time_wall_micros() const { return start_wall_micros_; }
  const ServerBaseOptions& options() const { return options_; }

 protected:
  // Registers the daemon's own web pages; called by Start() before the web server
  // starts serving (so the route table is never written while requests are read).
  virtual void RegisterWebPages() {}
  // Writes uuid, pid and bound addresses for --server_dump_info_path.
  Status DumpServerInfo(const std::string& path) const;
  // Adds the daemon's rows to the "/" overview table (name, HTML-escaped value).
  virtual void AddOverviewRows(std::vector<std::pair<std::string, std::string>>* rows) {}
  // Adds the daemon's series to the home page's rate charts; called by Start(). The
  // read functions run on the sampling thread until Shutdown().
  virtual void AddRateSeries(RateHistory* rates) {}

 private:
  void RegisterDefaultPages();

  const ServerBaseOptions options_;
  MetricRegistry metrics_;
  std::unique_ptr<FsManager> fs_;
  std::shared_ptr<rpc::Messenger> messenger_;
  std::unique_ptr<Webserver> webserver_;
  std::unique_ptr<RateHistory> rates_;
  std::vector<rpc::Sockaddr> bound_rpc_;
  MonoTime start_time_;
  int64_t start_wall_micros_ = 0;
  bool shut_down_ = false;
};

// Blocks SIGTERM and SIGINT in the calling thread and every thread it creates later.
// Call first thing in main().
void BlockTerminationSignals();
// Waits for SIGTERM or SIGINT (blocked by BlockTerminationSignals); returns its number.
int WaitForTerminationSignal();

// Parses the command line like gflags, but first checks the command line and every
// --flagfile for flags this program does not know, and exits with a message naming
// the flag (and the file), with the closest known flag when one is close.
// Then refuses unsafe flags (CheckUnsafeFlags) the same way, and logs a warning for
// each one --unlock_unsafe_flags let through. Also sets up glog (logs to stderr
// unless --log_dir is given).
void ParseFlagsAndInitLogging(int* argc, char*** argv, const char* usage);

// "--name=value" of every flag tagged unsafe (common/flag_tags.h) whose value differs
// from its default, sorted by name.
std::vector<std::string> UnsafeFlagsSet();
// OK when no unsafe flag is set away from its default, or --unlock_unsafe_flags is
// given; else InvalidArgument naming each such flag and --unlock_unsafe_flags.
Status CheckUnsafeFlags();

// The project's version (project() in the top-level CMakeLists.txt), e.g. "0.1.0".
extern const char* const kNyalaVersion;

}  // namespace nyala::server
