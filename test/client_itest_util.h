// For client integration tests and benchmarks: a real nyala-master and N real
// nyala-tserver processes (ExternalDaemon) under one directory, and a client of
// them. Used until test/mini_cluster.h can replace it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "test/external_daemon.h"

namespace nyala::client::itest {

class ClientTestCluster {
 public:
  ClientTestCluster(std::string root, int num_tservers, std::vector<std::string> tserver_flags = {})
      : root_(std::move(root)), num_tservers_(num_tservers), ts_flags_(std::move(tserver_flags)) {}

  // Starts the master and the tablet servers and waits until all have registered.
  Status Start() {
    test::ExternalDaemonOptions mo;
    mo.binary = test::BinDir() + "/nyala-master";
    mo.name = "master";
    mo.root_dir = root_ + "/master";
    master_ = std::make_unique<test::ExternalDaemon>(mo);
    RETURN_NOT_OK(master_->Start());
    for (int i = 0; i < num_tservers_; i++) {
      test::ExternalDaemonOptions to;
      to.binary = test::BinDir() + "/nyala-tserver";
      to.name = "ts" + std::to_string(i);
      to.root_dir = root_ + "/ts" + std::to_string(i);
      to.flags = {"--tserver_master_addrs=" + master_addr(), "--heartbeat_interval_ms=200"};
      for (const auto& f : ts_flags_) to.flags.push_back(f);
      tservers_.push_back(std::make_unique<test::ExternalDaemon>(to));
      RETURN_NOT_OK(tservers_.back()->Start());
    }
    ASSIGN_OR_RETURN(client_, NewClient());
    const MonoTime deadline = MonoTime::Now() + MonoDelta::FromSeconds(30);
    while (true) {
      auto servers = client_->ListTabletServers();
      int live = 0;
      if (servers.ok()) {
        for (const auto& s : *servers) live += s.live;
      }
      if (live >= num_tservers_) return Status::OK();
      if (MonoTime::Now() > deadline) {
        return Status::TimedOut("tablet servers did not register", std::to_string(live));
      }
      SleepFor(MonoDelta::FromMilliseconds(50));  // polling for registration
    }
  }

  Result<std::shared_ptr<Client>> NewClient() {
    return ClientBuilder().add_master_server_addr(master_addr()).Build();
  }

  std::string master_addr() const { return master_->rpc_addr().ToString(); }
  const std::shared_ptr<Client>& client() const { return client_; }
  test::ExternalDaemon* tserver(int i) { return tservers_[i].get(); }
  test::ExternalDaemon* master() { return master_.get(); }
  int num_tservers() const { return num_tservers_; }
  // The tablet server listening on `rpc_address` ("host:port"), or nullptr.
  test::ExternalDaemon* TserverAt(const std::string& rpc_address) {
    for (auto& t : tservers_) {
      if (t->rpc_addr().ToString() == rpc_address) return t.get();
    }
    return nullptr;
  }

  void Shutdown() {
    client_.reset();
    for (auto& t : tservers_) WARN_NOT_OK(t->Shutdown(), "stopping " + t->uuid());
    if (master_) WARN_NOT_OK(master_->Shutdown(), "stopping master");
  }

 private:
  const std::string root_;
  const int num_tservers_;
  const std::vector<std::string> ts_flags_;
  std::unique_ptr<test::ExternalDaemon> master_;
  std::vector<std::unique_ptr<test::ExternalDaemon>> tservers_;
  std::shared_ptr<Client> client_;
};

}  // namespace nyala::client::itest
