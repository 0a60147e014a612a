#include "master/master.h"
#include "common/result.h"

#include <glog/logging.h>

#include "master/catalog_manager.h"
#include "master/master_service.h"
#include "master/sys_catalog.h"
#include "master/ts_manager.h"
#include "server/webserver.h"

namespace nyala::master {

Master::Master(server::ServerBaseOptions options) : ServerBase(std::move(options)) {}

Master::~Master() { Shutdown(); }

Status Master::Init() {
  RETURN_NOT_OK(ServerBase::Init());
  instance_.set_permanent_uuid(uuid());
  instance_.set_instance_seqno(GetWallTimeMicros());
  ASSIGN_OR_RETURN(sys_catalog_, SysCatalog::Open(fs()->data_dirs()[0] + "/sys_catalog"));
  ts_manager_ = std::make_unique<TSManager>();
  catalog_ = std::make_unique<CatalogManager>(sys_catalog_.get(), ts_manager_.get(), messenger(),
                                              metrics());
  catalog_->set_master_instance(instance_);
  RETURN_NOT_OK_PREPEND(catalog_->Load(), "loading the sys catalog");
  RETURN_NOT_OK(messenger()->RegisterService(std::make_unique<MasterServiceImpl>(this)));
  // Operators' calls are rare: two threads and a short queue.
  return messenger()->RegisterService(std::make_unique<MasterAdminServiceImpl>(this), 2, 16);
}

Status Master::Start() {
  RETURN_NOT_OK(ServerBase::Start());
  catalog_->StartBackgroundTasks();
  return Status::OK();
}

void Master::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  // Background tasks first (they send RPCs), then the messenger (which fails the
  // calls still in flight); the catalog and sys catalog go with the object.
  if (catalog_) catalog_->Shutdown();
  ServerBase::Shutdown();
}

void Master::FillRegistration(GetMasterRegistrationResponsePB* resp) const {
  *resp->mutable_instance_id() = instance_;
  for (const auto& hp : advertised_rpc_addresses()) {
    auto* pb = resp->add_rpc_addresses();
    pb->set_host(hp.host());
    pb->set_port(hp.port());
  }
  for (const auto& hp : http_addresses()) {
    auto* pb = resp->add_http_addresses();
    pb->set_host(hp.host());
    pb->set_port(hp.port());
  }
  resp->set_software_version(server::kNyalaVersion);
  resp->set_start_time_micros(start_time_wall_micros());
  resp->set_num_tables(catalog_->NumTables());
  resp->set_num_live_tablet_servers(ts_manager_->NumLiveServers());
}

void Master::AddRateSeries(server::RateHistory* rates) {
  MetricRegistry* m = metrics();
  rates->AddSeries("rpc_calls", "RPC calls", "/s",
                   [m] { return m->SumOfFamily("rpc_calls_total"); });
  rates->AddSeries("location_lookups", "Table location lookups", "/s", [m] {
    return m->SumOfFamily("table_locations_cache_hits_total") +
           m->SumOfFamily("table_locations_cache_misses_total");
  });
}

void Master::AddOverviewRows(std::vector<std::pair<std::string, std::string>>* rows) {
  const CatalogManager::HealthSummary h = catalog_->GetHealthSummary();
  std::string dead;
  int live = 0;
  for (const TSDescriptor& d : ts_manager_->GetAll()) {
    if (d.live) {
      live++;
    } else {
      dead += (dead.empty() ? "" : ", ") + server::EscapeHtml(d.uuid) + " (" +
              server::EscapeHtml(d.RpcAddressString()) + ")";
    }
  }
  auto flagged = [](int n, const char* what) {
    return n == 0 ? std::string("0") : "<b class=\"bad\">" + std::to_string(n) + "</b> " + what;
  };
  rows->emplace_back("Tables", std::to_string(h.tables));
  rows->emplace_back("Live tablet servers", std::to_string(live));
  rows->emplace_back("Dead tablet servers", dead.empty() ? "none" : "<b class=\"bad\">" + dead + "</b>");
  rows->emplace_back("Tablets", std::to_string(h.tablets) + " (<a href=\"/tables\">by table</a>)");
  rows->emplace_back("Tablets unavailable",
                     flagged(h.unavailable, "(no live leader or no live majority)"));
  rows->emplace_back("Tablets under-replicated",
                     flagged(h.under_replicated, "(fewer live replicas than the table asks)"));
  std::string altering;
  for (const auto& name : h.altering) altering += (altering.empty() ? "" : ", ") + server::EscapeHtml(name);
  rows->emplace_back("Alterations in progress", altering.empty() ? "none" : altering);
}

}  // namespace nyala::master
