// nyala-tserver: the tablet server daemon. See docs/architecture.md and
// tablet_server.h.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdio>

#include "common/flag_tags.h"
#include "tserver/tablet_server.h"

DECLARE_string(rpc_bind_addresses);
DECLARE_int32(webserver_port);
DECLARE_string(fs_data_dirs);

int main(int argc, char** argv) {
  using nyala::tserver::TabletServer;
  nyala::server::BlockTerminationSignals();
  gflags::SetCommandLineOptionWithMode(
      "rpc_bind_addresses", ("0.0.0.0:" + std::to_string(TabletServer::kDefaultRpcPort)).c_str(),
      gflags::SET_FLAGS_DEFAULT);
  gflags::SetCommandLineOptionWithMode("webserver_port",
                                       std::to_string(TabletServer::kDefaultWebPort).c_str(),
                                       gflags::SET_FLAGS_DEFAULT);
  nyala::server::ParseFlagsAndInitLogging(
      &argc, &argv,
      "The Nyala tablet server.\nUsage: nyala-tserver --fs_data_dirs=<dirs> "
      "[--tserver_master_addrs=<host:port,...>] [--flagfile=conf/tserver.gflags]");
  if (FLAGS_fs_data_dirs.empty()) {
    fprintf(stderr, "error: --fs_data_dirs is required (comma-separated data directories)\n");
    return 1;
  }
  auto masters = TabletServer::MasterAddrsFromFlags();
  if (!masters.ok()) {
    fprintf(stderr, "error: %s\n", masters.status().ToString().c_str());
    return 1;
  }
  TabletServer server(TabletServer::OptionsFromFlags(), *masters);
  if (nyala::Status s = server.Init(); !s.ok()) {
    fprintf(stderr, "error: cannot start nyala-tserver: %s\n", s.ToString().c_str());
    return 1;
  }
  if (nyala::Status s = server.Start(); !s.ok()) {
    fprintf(stderr, "error: cannot start nyala-tserver: %s\n", s.ToString().c_str());
    return 1;
  }
  LOG(INFO) << "nyala-tserver " << server.uuid() << " serving";
  const int sig = nyala::server::WaitForTerminationSignal();
  LOG(INFO) << "signal " << sig << " received; shutting down";
  server.Shutdown();
  return 0;
}
