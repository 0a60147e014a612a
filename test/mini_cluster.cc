#include "test/mini_cluster.h"
#include "common/result.h"

#include <glog/logging.h>

#include "common/wire_protocol.h"
#include "rpc/rpc_controller.h"
#include "server/generic_service.proxy.h"

namespace nyala::test {

Status MasterErrorToStatus(const master::MasterErrorPB& err) {
  Status s = StatusFromPB(err.status());
  if (s.ok()) s = Status::RuntimeError("master error without status");
  return s.CloneAndPrepend(master::MasterErrorPB::Code_Name(err.code()));
}

MiniCluster::MiniCluster(MiniClusterOptions options) : opts_(std::move(options)) {}

MiniCluster::~MiniCluster() {
  WARN_NOT_OK(Shutdown(), "mini cluster shutdown");
  if (messenger_) messenger_->Shutdown();
}

Status MiniCluster::Start() {
  if (!messenger_) {
    rpc::MessengerOptions mo;
    mo.name = "mini-cluster";
    mo.num_reactors = 1;
    ASSIGN_OR_RETURN(messenger_, rpc::Messenger::Create(mo));
  }
  ExternalDaemonOptions mo;
  mo.binary = BinDir() + "/nyala-master";
  mo.name = "master";
  mo.root_dir = opts_.root_dir + "/master";
  mo.flags = opts_.master_flags;
  mo.start_timeout = opts_.start_timeout;
  master_ = std::make_unique<ExternalDaemon>(mo);
  RETURN_NOT_OK(master_->Start());
  for (int i = 0; i < opts_.num_tservers; i++) RETURN_NOT_OK(StartTabletServer());
  return WaitForTabletServers(opts_.num_tservers, opts_.start_timeout);
}

Status MiniCluster::StartTabletServer() {
  const int i = int(tservers_.size());
  ExternalDaemonOptions to;
  to.binary = BinDir() + "/nyala-tserver";
  to.name = "ts" + std::to_string(i);
  to.root_dir = opts_.root_dir + "/ts" + std::to_string(i);
  to.flags = {"--tserver_master_addrs=" + master_addr(),
              "--heartbeat_interval_ms=" + std::to_string(opts_.heartbeat_interval_ms)};
  for (const auto& f : opts_.tserver_flags) to.flags.push_back(f);
  to.start_timeout = opts_.start_timeout;
  tservers_.push_back(std::make_unique<ExternalDaemon>(to));
  return tservers_.back()->Start();
}

Status MiniCluster::AddTabletServer() {
  RETURN_NOT_OK(StartTabletServer());
  return WaitForTabletServers(num_tservers(), opts_.start_timeout);
}

Status MiniCluster::Shutdown() {
  Status first;
  for (auto& ts : tservers_) {
    Status s = ts->Shutdown();
    if (first.ok() && !s.ok()) first = s;
  }
  if (master_) {
    Status s = master_->Shutdown();
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

std::string MiniCluster::master_addr() const { return master_->rpc_addr().ToString(); }

master::MasterServiceProxy MiniCluster::master_proxy() const {
  return master::MasterServiceProxy(messenger_, master_->rpc_addr());
}

tserver::TabletServerAdminServiceProxy MiniCluster::tserver_admin_proxy(int i) const {
  return tserver::TabletServerAdminServiceProxy(messenger_, tservers_[i]->rpc_addr());
}

Status MiniCluster::ListTabletServers(master::ListTabletServersResponsePB* resp) const {
  return CallMaster(&master::MasterServiceProxy::ListTabletServers,
                    master::ListTabletServersRequestPB(), resp);
}

Status MiniCluster::SetTserverFlag(int i, const std::string& flag, const std::string& value,
                                   MonoDelta timeout) const {
  server::GenericServiceProxy proxy(messenger_, tservers_[i]->rpc_addr());
  server::SetFlagRequestPB req;
  req.set_flag(flag);
  req.set_value(value);
  server::SetFlagResponsePB resp;
  rpc::RpcController rpc;
  rpc.set_timeout(timeout);
  RETURN_NOT_OK_PREPEND(proxy.SetFlag(req, &resp, &rpc), "SetFlag on " + tservers_[i]->uuid());
  if (resp.result() != server::SetFlagResponsePB::SUCCESS) {
    return Status::RuntimeError(
        "SetFlag --" + flag + " on tablet server " + std::to_string(i),
        server::SetFlagResponsePB::Code_Name(resp.result()) + ": " + resp.msg());
  }
  return Status::OK();
}

Status MiniCluster::WaitForTabletServers(int n, MonoDelta timeout) {
  const MonoTime deadline = MonoTime::Now() + timeout;
  MonoDelta backoff = MonoDelta::FromMilliseconds(5);
  int live = 0;
  Status last;
  while (MonoTime::Now() < deadline) {
    master::ListTabletServersResponsePB resp;
    last = ListTabletServers(&resp);
    live = 0;
    if (last.ok()) {
      for (const auto& s : resp.servers()) live += s.live() ? 1 : 0;
      if (live >= n) return Status::OK();
    }
    SleepFor(backoff);  // polling other processes
    backoff = std::min(backoff * 2, MonoDelta::FromMilliseconds(100));
  }
  return Status::TimedOut(std::to_string(live) + " of " + std::to_string(n) +
                          " tablet servers live after " + timeout.ToString() +
                          " (last ListTabletServers: " + last.ToString() + ")");
}

Status MiniCluster::CreateTable(const master::CreateTableRequestPB& req,
                                std::string* table_id) const {
  master::CreateTableResponsePB resp;
  RETURN_NOT_OK(
      CallMaster(&master::MasterServiceProxy::CreateTable, req, &resp, MonoDelta::FromSeconds(30)));
  if (resp.has_error()) return MasterErrorToStatus(resp.error());
  *table_id = resp.table_id();
  return Status::OK();
}

Status MiniCluster::WaitForTableRunning(const std::string& table_id, MonoDelta timeout) const {
  const MonoTime deadline = MonoTime::Now() + timeout;
  MonoDelta backoff = MonoDelta::FromMilliseconds(5);
  master::IsCreateTableDoneRequestPB req;
  req.mutable_table()->set_table_id(table_id);
  master::IsCreateTableDoneResponsePB resp;
  while (MonoTime::Now() < deadline) {
    resp.Clear();
    RETURN_NOT_OK(CallMaster(&master::MasterServiceProxy::IsCreateTableDone, req, &resp));
    if (resp.has_error()) return MasterErrorToStatus(resp.error());
    if (resp.done()) return Status::OK();
    SleepFor(backoff);  // polling other processes
    backoff = std::min(backoff * 2, MonoDelta::FromMilliseconds(100));
  }
  return Status::TimedOut("table " + table_id +
                          " not running: " + std::to_string(resp.tablets_running()) + " of " +
                          std::to_string(resp.tablets_total()) + " tablets");
}

}  // namespace nyala::test
