// MiniCluster: one real nyala-master and N real nyala-tserver processes
// (ExternalDaemon) on loopback, ports picked at run time, all under one root
// directory. Tablet servers get --tserver_master_addrs of the master and a short
// --heartbeat_interval_ms. Used by integration tests and benchmarks.
//
//   MiniCluster cluster({.root_dir = test_dir(), .num_tservers = 3});
//   ASSERT_OK(cluster.Start());  // waits until every tablet server is live
//   master::ListTabletServersResponsePB servers;
//   ASSERT_OK(cluster.ListTabletServers(&servers));
//
// Teardown stops every process it started, by PID (the destructor kills what is
// still running). Thread-compatible: drive it from one thread; the master helpers
// (CallMaster & co.) are thread-safe.
#pragma once

#include <google/protobuf/message.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "master/master.pb.h"
#include "master/master.proxy.h"
#include "nyala/monotime.h"
#include "rpc/messenger.h"
#include "rpc/rpc_controller.h"
#include "test/external_daemon.h"
#include "tserver/tserver_admin.proxy.h"

namespace nyala::test {

struct MiniClusterOptions {
  std::string root_dir;
  int num_tservers = 3;
  // Extra flags; they follow (and so override) the cluster's own.
  std::vector<std::string> master_flags;
  std::vector<std::string> tserver_flags;
  int heartbeat_interval_ms = 200;
  MonoDelta start_timeout = MonoDelta::FromSeconds(60);
};

class MiniCluster {
 public:
  explicit MiniCluster(MiniClusterOptions options);
  ~MiniCluster();
  MiniCluster(const MiniCluster&) = delete;
  MiniCluster& operator=(const MiniCluster&) = delete;

  // Starts the master, then the tablet servers, and waits until all are live.
  Status Start();
  // SIGTERM to every running process (tablet servers first); the first failure.
  Status Shutdown();

  // Starts one more tablet server and waits until the master sees it live.
  Status AddTabletServer();
  // Waits until the master lists at least `n` live tablet servers.
  Status WaitForTabletServers(int n, MonoDelta timeout);

  ExternalDaemon* master() { return master_.get(); }
  ExternalDaemon* tserver(int i) { return tservers_[i].get(); }
  int num_tservers() const { return int(tservers_.size()); }
  // "127.0.0.1:port".
  std::string master_addr() const;

  // --- Master helpers (a messenger of the cluster's own) ---
  const std::shared_ptr<rpc::Messenger>& messenger() const { return messenger_; }
  master::MasterServiceProxy master_proxy() const;
  tserver::TabletServerAdminServiceProxy tserver_admin_proxy(int i) const;
  // One MasterService call (e.g. &master::MasterServiceProxy::Ping) with `timeout`; the
  // RPC status (the response's own `error` is the caller's to check).
  template <typename Req, typename Resp>
  Status CallMaster(Status (master::MasterServiceProxy::*method)(const Req&, Resp*,
                                                                 rpc::RpcController*) const,
                    const std::type_identity_t<Req>& req, Resp* resp,
                    MonoDelta timeout = MonoDelta::FromSeconds(10)) const {
    rpc::RpcController rpc;
    rpc.set_timeout(timeout);
    return (master_proxy().*method)(req, resp, &rpc);
  }
  Status ListTabletServers(master::ListTabletServersResponsePB* resp) const;
  // GenericService.SetFlag on tablet server `i` (running): an error unless the server
  // took the value (a flag not tagged runtime is refused; common/flag_tags.h).
  Status SetTserverFlag(int i, const std::string& flag, const std::string& value,
                        MonoDelta timeout = MonoDelta::FromSeconds(10)) const;
  // CreateTable; a response error becomes a Status naming its MasterErrorPB code.
  Status CreateTable(const master::CreateTableRequestPB& req, std::string* table_id) const;
  // Waits until IsCreateTableDone says done.
  Status WaitForTableRunning(const std::string& table_id, MonoDelta timeout) const;

 private:
  Status StartTabletServer();

  const MiniClusterOptions opts_;
  std::unique_ptr<ExternalDaemon> master_;
  std::vector<std::unique_ptr<ExternalDaemon>> tservers_;
  std::shared_ptr<rpc::Messenger> messenger_;
};

// The Status a MasterErrorPB describes, prefixed with its code name.
Status MasterErrorToStatus(const master::MasterErrorPB& err);

}  // namespace nyala::test
