// nyala-master: the catalog, tablet-server membership, placement and
// GetTableLocations (docs/architecture.md; master.h).
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdio>

#include "master/master.h"

DECLARE_string(fs_data_dirs);

int main(int argc, char** argv) {
  using nyala::master::Master;
  nyala::server::BlockTerminationSignals();
  // The master's defaults, before the command line and flagfiles override them.
  gflags::SetCommandLineOptionWithMode(
      "rpc_bind_addresses", ("0.0.0.0:" + std::to_string(Master::kDefaultRpcPort)).c_str(),
      gflags::SET_FLAGS_DEFAULT);
  gflags::SetCommandLineOptionWithMode(
      "webserver_port", std::to_string(Master::kDefaultWebPort).c_str(), gflags::SET_FLAGS_DEFAULT);
  // Heartbeats share the service queue with clients.
  gflags::SetCommandLineOptionWithMode("rpc_service_queue_length", "100",
                                       gflags::SET_FLAGS_DEFAULT);
  nyala::server::ParseFlagsAndInitLogging(
      &argc, &argv,
      "The Nyala master.\nUsage: nyala-master --fs_data_dirs=<dirs> "
      "[--rpc_bind_addresses=<host:port>] [--flagfile=conf/master.gflags]");
  if (argc > 1) {
    fprintf(stderr, "error: unexpected argument '%s'\n", argv[1]);
    return 1;
  }
  if (FLAGS_fs_data_dirs.empty()) {
    fprintf(stderr, "error: --fs_data_dirs is required (comma-separated data directories)\n");
    return 1;
  }
  Master master(nyala::server::ServerBaseOptions::FromFlags("master", Master::kDefaultRpcPort));
  if (nyala::Status s = master.Init(); !s.ok()) {
    fprintf(stderr, "error: cannot start nyala-master: %s\n", s.ToString().c_str());
    return 1;
  }
  if (nyala::Status s = master.Start(); !s.ok()) {
    fprintf(stderr, "error: cannot start nyala-master: %s\n", s.ToString().c_str());
    return 1;
  }
  LOG(INFO) << "nyala-master " << master.uuid() << " serving";
  const int sig = nyala::server::WaitForTerminationSignal();
  LOG(INFO) << "signal " << sig << " received; shutting down";
  master.Shutdown();
  LOG(INFO) << "nyala-master stopped";
  return 0;
}
