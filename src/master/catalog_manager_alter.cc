// CatalogManager: AlterTable, IsAlterTableDone, and carrying a table's new schema to
// its tablets (catalog_manager.h).
#include <gflags/gflags.h>
#include <glog/logging.h>

#include "master/alter_table.h"
#include "master/catalog_manager.h"

DECLARE_int32(tablet_creation_timeout_ms);

namespace nyala::master {

Result<std::vector<std::shared_ptr<CatalogManager::TabletInfo>>> CatalogManager::NewTabletsLocked(
    const std::string& table_id, int num_replicas, const std::vector<Partition>& partitions,
    ServerLoads* loads, ServerLoads* leaders, std::set<uint64_t>* taken) {
  std::vector<std::shared_ptr<TabletInfo>> out;
  const MonoTime deadline =
      MonoTime::Now() + MonoDelta::FromMilliseconds(FLAGS_tablet_creation_timeout_ms);
  for (const Partition& p : partitions) {
    auto t = std::make_shared<TabletInfo>();
    ASSIGN_OR_RETURN(t->id, NewTabletIdLocked(taken));
    t->partition = p;
    t->creation_deadline = deadline;
    t->pb.set_table_id(table_id);
    p.ToPB(t->pb.mutable_partition());
    t->pb.set_state(TABLET_CREATING);
    ASSIGN_OR_RETURN(std::vector<std::string> placed, PlaceReplicas(num_replicas, loads, &rng_));
    OrderForLeadership(&placed, leaders);  // the first replica campaigns first
    for (const auto& uuid : placed) t->pb.add_replica_uuids(uuid);
    out.push_back(std::move(t));
  }
  return out;
}

void CatalogManager::AlterTable(const AlterTableRequestPB& req, AlterTableResponsePB* resp) {
  MutexLock w(write_mu_);
  std::shared_ptr<TableInfo> table;
  SysTableEntryPB current;
  std::vector<std::pair<std::string, std::string>> ranges;
  {
    SharedLock l(state_mu_);
    table = FindTableLocked(req.table());
    if (!table) {
      SetError(MasterErrorPB::TABLE_NOT_FOUND, TableNotFound(req.table()), resp->mutable_error());
      return;
    }
    current = table->pb;
    for (const auto& [start, t] : table->tablets_by_start) {
      std::pair<std::string, std::string> r{t->partition.range_key_start,
                                            t->partition.range_key_end};
      if (ranges.empty() || ranges.back() != r) ranges.push_back(std::move(r));
    }
  }
  // Tablets are ordered by partition key: hash buckets first, so one range shows once
  // per bucket.
  std::sort(ranges.begin(), ranges.end());
  ranges.erase(std::unique(ranges.begin(), ranges.end()), ranges.end());
  MasterErrorPB::Code code;
  Result<AlterPlan> plan = PlanAlterTable(current, req, std::move(ranges), &code);
  if (!plan.ok()) {
    LOG(INFO) << "AlterTable " << current.name() << " refused: " << plan.status().ToString();
    SetError(code, plan.status(), resp->mutable_error());
    return;
  }
  const bool renamed = plan->table.name() != current.name();
  SysCatalogBatch batch;
  batch.put_tables.emplace_back(table->id, plan->table);
  std::vector<std::shared_ptr<TabletInfo>> added;
  std::vector<std::pair<std::shared_ptr<TabletInfo>, SysTabletEntryPB>> dropped;
  {
    SharedLock l(state_mu_);
    if (renamed && table_ids_by_name_.count(plan->table.name())) {
      SetError(MasterErrorPB::TABLE_ALREADY_PRESENT,
               Status::AlreadyPresent("cannot rename table " + current.name() + " to " +
                                      plan->table.name() + ": a table of that name exists"),
               resp->mutable_error());
      return;
    }
    if (!plan->add_partitions.empty()) {
      ServerLoads leaders;
      ServerLoads loads = LiveServerLoadsLocked(&leaders);
      std::set<uint64_t> taken;
      auto made = NewTabletsLocked(table->id, current.num_replicas(), plan->add_partitions, &loads,
                                   &leaders, &taken);
      if (!made.ok()) {
        SetError(MasterErrorPB::REPLICATION_FACTOR_TOO_HIGH, made.status(), resp->mutable_error());
        return;
      }
      added = std::move(made).value();
      for (const auto& t : added) batch.put_tablets.emplace_back(t->id, t->pb);
    }
    for (const auto& [start, end] : plan->drop_ranges) {
      for (const auto& [key, t] : table->tablets_by_start) {
        if (t->partition.range_key_start != start || t->partition.range_key_end != end) continue;
        SysTabletEntryPB pb = t->pb;
        pb.set_state(TABLET_DELETED);
        pb.set_state_msg("range partition dropped at " + std::to_string(GetWallTimeMicros()));
        batch.put_tablets.emplace_back(t->id, pb);
        dropped.emplace_back(t, std::move(pb));
      }
    }
  }
  if (Status s = sys_catalog_->Write(batch); !s.ok()) {
    LOG(ERROR) << "AlterTable " << current.name() << ": sys catalog write failed: " << s.ToString();
    SetError(MasterErrorPB::UNKNOWN_ERROR, s, resp->mutable_error());
    return;
  }
  {
    ExclusiveLock l(state_mu_);
    InvalidateLocked(table->id);
    table->pb = plan->table;
    if (renamed) {
      table_ids_by_name_.erase(current.name());
      table_ids_by_name_[plan->table.name()] = table->id;
    }
    for (auto& [t, pb] : dropped) {
      table->tablets_by_start.erase(t->partition.partition_key_start);
      t->pb = std::move(pb);
      pending_tablets_.insert(t->id);
    }
    for (auto& t : added) {
      table->all_tablet_ids.push_back(t->id);
      table->tablets_by_start[t->partition.partition_key_start] = t;
      pending_tablets_.insert(t->id);
      AddTabletLocked(t);
    }
  }
  LOG(INFO) << "altered table " << current.name() << " (" << table->id << ")"
            << (renamed ? " renamed to " + plan->table.name() : "") << ": schema version "
            << plan->table.schema().version() << ", " << added.size() << " tablets added, "
            << dropped.size() << " dropped";
  resp->set_table_id(table->id);
  resp->set_schema_version(plan->table.schema().version());
  tasks_->Wake();
}

int CatalogManager::TabletsAlteredLocked(const TableInfo& table) const {
  const uint32_t v = table.pb.schema().version();
  int n = 0;
  for (const auto& [start, t] : table.tablets_by_start) {
    n += t->pb.state() == TABLET_RUNNING && t->schema_version >= v;
  }
  return n;
}

void CatalogManager::IsAlterTableDone(const IsAlterTableDoneRequestPB& req,
                                      IsAlterTableDoneResponsePB* resp) {
  SharedLock l(state_mu_);
  auto table = FindTableLocked(req.table());
  if (!table) {
    SetError(MasterErrorPB::TABLE_NOT_FOUND, TableNotFound(req.table()), resp->mutable_error());
    return;
  }
  const int done = TabletsAlteredLocked(*table);
  const int total = int(table->tablets_by_start.size());
  resp->set_schema_version(table->pb.schema().version());
  resp->set_tablets_done(done);
  resp->set_tablets_total(total);
  resp->set_done(done == total);
}

void CatalogManager::DriveAlters(MonoTime now, std::set<TabletRpcTasks::Key>* needed) {
  struct Want {
    std::string address;
    tserver::AlterSchemaRequestPB req;
  };
  std::vector<Want> wants;
  const HealthSnapshot h = TakeHealthSnapshot(now);
  {
    SharedLock l(state_mu_);
    for (const auto& [id, table] : tables_) {
      if (table->pb.state() == TABLE_DELETED) continue;
      const uint32_t v = table->pb.schema().version();
      for (const auto& [start, t] : table->tablets_by_start) {
        if (t->pb.state() != TABLET_RUNNING || t->schema_version >= v || t->leader_uuid.empty()) {
          continue;
        }
        auto srv = h.servers.find(t->leader_uuid);
        if (srv == h.servers.end() || !srv->second.live || srv->second.rpc_address.empty()) {
          continue;
        }
        const TabletRpcTasks::Key key{TabletRpcTasks::Kind::kAlterSchema, t->leader_uuid, t->id};
        needed->insert(key);
        if (!tasks_->IsDue(key, now)) continue;
        Want w;
        w.address = srv->second.rpc_address;
        w.req.set_dest_uuid(t->leader_uuid);
        w.req.set_tablet_id(t->id);
        *w.req.mutable_schema() = table->pb.schema();
        w.req.set_new_table_name(table->pb.name());
        wants.push_back(std::move(w));
      }
    }
  }
  for (Want& w : wants) {
    VLOG(1) << "tablet " << w.req.tablet_id() << ": asking its leader " << w.req.dest_uuid()
            << " for schema version " << w.req.schema().version();
    tasks_->SendAlterSchema(w.address, std::move(w.req), now);
  }
}

}  // namespace nyala::master
