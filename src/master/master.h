// Master: the nyala-master daemon: ServerBase (data dirs, messenger, metrics, web
// UI) plus the sys catalog, the tablet-server manager, the catalog manager with
// its table-locations cache, MasterService and MasterAdminService, and the /tables,
// /tablet-servers and /rpc-latency pages.
//
// Life cycle: construct, Init() (opens the data dirs and the sys catalog, loads
// the catalog, registers the services), Start() (listens, starts the background
// tasks), Shutdown() (stops the background tasks, then the messenger; idempotent).
// Thread-safety: accessors are safe from any thread after Start().
#pragma once

#include <memory>

#include "master/master.pb.h"
#include "server/server_base.h"

namespace nyala::master {

class CatalogManager;
class SysCatalog;
class TSManager;

class Master : public server::ServerBase {
 public:
  static constexpr uint16_t kDefaultRpcPort = 7051;
  static constexpr int kDefaultWebPort = 8051;

  explicit Master(server::ServerBaseOptions options);
  ~Master() override;

  Status Init() override;
  Status Start() override;
  void Shutdown() override;

  CatalogManager* catalog_manager() const { return catalog_.get(); }
  TSManager* ts_manager() const { return ts_manager_.get(); }
  void FillRegistration(GetMasterRegistrationResponsePB* resp) const;

 protected:
  void AddOverviewRows(std::vector<std::pair<std::string, std::string>>* rows) override;
  void AddRateSeries(server::RateHistory* rates) override;

 private:
  // master_web.cc
  void RegisterWebPages() override;

  NodeInstancePB instance_;
  std::unique_ptr<SysCatalog> sys_catalog_;
  std::unique_ptr<TSManager> ts_manager_;
  std::unique_ptr<CatalogManager> catalog_;
  bool shut_down_ = false;
};

}  // namespace nyala::master
