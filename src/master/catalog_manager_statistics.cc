// CatalogManager: GetTableStatistics, from the sizes the tablet servers report with
// their tablets (ReportedTabletStatsPB, kept per replica by ProcessTabletReport).
#include "master/catalog_manager.h"

#include <algorithm>

namespace nyala::master {

bool TabletStatsOf(const std::string& leader_uuid,
                   const std::map<std::string, ReportedTabletStatsPB>& replica_stats,
                   ReportedTabletStatsPB* out) {
  auto leader = replica_stats.find(leader_uuid);
  if (!leader_uuid.empty() && leader != replica_stats.end()) {
    *out = leader->second;
    return true;
  }
  const ReportedTabletStatsPB* best = nullptr;
  for (const auto& [uuid, stats] : replica_stats) {
    if (!best || stats.on_disk_size() > best->on_disk_size()) best = &stats;
  }
  if (!best) return false;
  *out = *best;
  return true;
}

CatalogManager::HealthSummary CatalogManager::GetHealthSummary() const {
  const std::map<std::string, TSManager::Liveness> servers = ts_manager_->LivenessOfAll();
  auto live = [&](const std::string& uuid) {
    auto it = servers.find(uuid);
    return it != servers.end() && it->second.live;
  };
  HealthSummary h;
  SharedLock l(state_mu_);
  for (const auto& [id, table] : tables_) {
    if (table->pb.state() == TABLE_DELETED) continue;
    h.tables++;
    if (table->pb.state() == TABLE_RUNNING &&
        TabletsAlteredLocked(*table) < int(table->tablets_by_start.size())) {
      h.altering.push_back(table->pb.name());
    }
    for (const auto& [start, t] : table->tablets_by_start) {
      h.tablets++;
      int live_voters = 0;
      for (const auto& uuid : t->pb.replica_uuids()) live_voters += live(uuid);
      const int voters = t->pb.replica_uuids_size();
      if (t->leader_uuid.empty() || !live(t->leader_uuid) || 2 * live_voters <= voters) {
        h.unavailable++;
      } else if (live_voters < table->pb.num_replicas()) {
        h.under_replicated++;
      }
    }
  }
  std::sort(h.altering.begin(), h.altering.end());
  return h;
}

void CatalogManager::GetTableStatistics(const GetTableStatisticsRequestPB& req,
                                        GetTableStatisticsResponsePB* resp) {
  SharedLock l(state_mu_);
  auto table = FindTableLocked(req.table());
  if (!table) {
    SetError(MasterErrorPB::TABLE_NOT_FOUND, TableNotFound(req.table()), resp->mutable_error());
    return;
  }
  resp->set_table_id(table->id);
  resp->set_table_name(table->pb.name());
  resp->set_num_replicas(table->pb.num_replicas());
  int64_t size = 0, rows = 0;
  int32_t without = 0;
  for (const auto& [start, tablet] : table->tablets_by_start) {
    const TabletInfo& t = *tablet;
    auto* out = resp->add_tablets();
    out->set_tablet_id(t.id);
    *out->mutable_partition() = t.pb.partition();
    ReportedTabletStatsPB chosen;
    if (TabletStatsOf(t.leader_uuid, t.replica_stats, &chosen)) {
      out->set_has_stats(true);
      out->set_on_disk_size(chosen.on_disk_size());
      out->set_live_row_count(chosen.live_row_count());
      size += chosen.on_disk_size();
      rows += chosen.live_row_count();
    } else {
      without++;
    }
    for (const std::string& uuid : t.Members()) {
      auto* r = out->add_replicas();
      r->set_ts_uuid(uuid);
      if (auto ts = ts_manager_->Lookup(uuid)) {
        r->mutable_ts_info()->set_permanent_uuid(uuid);
        *r->mutable_ts_info()->mutable_rpc_addresses() = ts->registration.rpc_addresses();
        r->set_ts_live(ts->live);
      }
      r->set_role(t.RoleOf(uuid));
      auto st = t.replica_stats.find(uuid);
      if (st != t.replica_stats.end()) {
        r->set_has_stats(true);
        r->set_on_disk_size(st->second.on_disk_size());
        r->set_live_row_count(st->second.live_row_count());
      }
    }
  }
  resp->set_on_disk_size(size);
  resp->set_live_row_count(rows);
  resp->set_tablets_without_stats(without);
}

}  // namespace nyala::master
