// ExternalDaemon: one nyala-master or nyala-tserver run as a real child process for
// integration tests and benchmarks. Ports are picked at run time (the daemon binds
// port 0 and reports what it got through --server_dump_info_path); a restart reuses
// the same ports and data dir. The destructor kills a process still running, by PID.
//
// Thread-compatible: drive one daemon from one thread.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "nyala/monotime.h"
#include "rpc/sockaddr.h"

namespace nyala::test {

// Directory of the built binaries (build/bin), for tests.
std::string BinDir();

struct ExternalDaemonOptions {
  std::string binary;              // e.g. BinDir() + "/nyala-tserver"
  std::string name;                // for messages and the log file name
  std::string root_dir;            // data/, log and info file live under it
  std::vector<std::string> flags;  // extra --flag=value arguments
  MonoDelta start_timeout = MonoDelta::FromSeconds(30);
};

class ExternalDaemon {
 public:
  explicit ExternalDaemon(ExternalDaemonOptions opts);
  ~ExternalDaemon();

  // Starts the process and waits until it has written its info file. On failure the
  // status includes the end of its log.
  Status Start();
  // Stops with SIGTERM, waits for exit (SIGKILL after `grace`); returns the exit status
  // as an error unless it exited 0.
  Status Shutdown(MonoDelta grace = MonoDelta::FromSeconds(15));
  // Sends `sig` (default SIGKILL) and reaps the process.
  void Kill(int sig = 9);
  // Start() again with the same data dir and ports.
  Status Restart();
  // False once the process has exited; how it ended is then in ExitDescription().
  bool IsRunning();
  // "exited with status N" or "killed by signal N (name)" for a process IsRunning found
  // gone; empty otherwise.
  const std::string& ExitDescription() const { return exit_description_; }

  pid_t pid() const { return pid_; }
  const std::string& uuid() const { return uuid_; }
  const rpc::Sockaddr& rpc_addr() const { return rpc_addr_; }
  int http_port() const { return http_port_; }
  const std::string& data_dir() const { return data_dir_; }
  const std::string& log_path() const { return log_path_; }
  // The last `max_bytes` of the log.
  std::string LogTail(size_t max_bytes = 4000) const;

 private:
  Status ReadInfoFile(bool* ready);

  const ExternalDaemonOptions opts_;
  const std::string data_dir_;
  const std::string log_path_;
  const std::string info_path_;
  pid_t pid_ = -1;
  std::string exit_description_;
  std::string uuid_;
  rpc::Sockaddr rpc_addr_;
  int http_port_ = 0;
};

}  // namespace nyala::test
