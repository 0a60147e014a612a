// For client integration tests and benchmarks: a MiniCluster (a real nyala-master and
// N real nyala-tserver processes) plus a client connected to it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "nyala/client.h"
#include "test/mini_cluster.h"

namespace nyala::client::itest {

class ClientTestCluster {
 public:
  ClientTestCluster(std::string root, int num_tservers, std::vector<std::string> tserver_flags = {},
                    std::vector<std::string> master_flags = {})
      : cluster_(Options(std::move(root), num_tservers, std::move(tserver_flags),
                         std::move(master_flags))) {}

  // Starts the master and the tablet servers, waits until all have registered, and
  // connects a client.
  Status Start() {
    RETURN_NOT_OK(cluster_.Start());
    ASSIGN_OR_RETURN(client_, NewClient());
    return Status::OK();
  }

  Result<std::shared_ptr<Client>> NewClient() {
    return ClientBuilder().add_master_server_addr(master_addr()).Build();
  }

  std::string master_addr() const { return cluster_.master_addr(); }
  const std::shared_ptr<Client>& client() const { return client_; }
  test::ExternalDaemon* tserver(int i) { return cluster_.tserver(i); }
  test::ExternalDaemon* master() { return cluster_.master(); }
  test::MiniCluster* mini_cluster() { return &cluster_; }
  int num_tservers() const { return cluster_.num_tservers(); }
  // The tablet server listening on `rpc_address` ("host:port"), or nullptr.
  test::ExternalDaemon* TserverAt(const std::string& rpc_address) {
    for (int i = 0; i < cluster_.num_tservers(); i++) {
      if (cluster_.tserver(i)->rpc_addr().ToString() == rpc_address) return cluster_.tserver(i);
    }
    return nullptr;
  }

  // Stops the client, then the daemons. An error if a daemon did not exit 0 on
  // SIGTERM (in a ThreadSanitizer build, also a daemon that saw a race).
  Status Shutdown() {
    client_.reset();
    return cluster_.Shutdown();
  }

 private:
  static test::MiniClusterOptions Options(std::string root, int n, std::vector<std::string> flags,
                                          std::vector<std::string> master_flags) {
    test::MiniClusterOptions o;
    o.root_dir = std::move(root);
    o.num_tservers = n;
    o.tserver_flags = std::move(flags);
    o.master_flags = std::move(master_flags);
    return o;
  }

  test::MiniCluster cluster_;
  std::shared_ptr<Client> client_;
};

}  // namespace nyala::client::itest
