// CatalogManager: tablet life cycle: confirmation (RPC results and heartbeat
// reports), replacement after a creation timeout, and the CreateTablet /
// DeleteTablet calls the background thread sends.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include "master/catalog_manager.h"
#include "server/fs_manager.h"

DEFINE_int32(tablet_creation_timeout_ms, 30000,
             "A tablet not running this long after it was placed is marked REPLACED and a new "
             "tablet with the same partition is placed elsewhere.");
DEFINE_validator(tablet_creation_timeout_ms, [](const char*, int32_t v) { return v > 0; });

namespace nyala::master {

namespace {
bool HasReplica(const SysTabletEntryPB& pb, const std::string& uuid) {
  for (const auto& r : pb.replica_uuids()) {
    if (r == uuid) return true;
  }
  return false;
}
bool AllConfirmed(const SysTabletEntryPB& pb, const std::set<std::string>& confirmed) {
  for (const auto& r : pb.replica_uuids()) {
    if (!confirmed.count(r)) return false;
  }
  return true;
}
}  // namespace

Status CatalogManager::ConfirmReplicas(const std::vector<Confirmation>& confirmations) {
  if (confirmations.empty()) return Status::OK();
  MutexLock w(write_mu_);
  SysCatalogBatch batch;
  std::map<std::string, std::set<std::string>> new_confirmed;  // tablet -> confirmed set
  std::set<std::string> now_running;
  std::set<std::shared_ptr<TableInfo>> tables_running;
  {
    SharedLock l(state_mu_);
    for (const auto& [tablet_id, uuid] : confirmations) {
      auto it = tablets_.find(tablet_id);
      if (it == tablets_.end()) continue;
      const TabletInfo& t = *it->second;
      if (t.pb.state() != TABLET_CREATING || !HasReplica(t.pb, uuid)) continue;
      auto [c, inserted] = new_confirmed.emplace(tablet_id, t.confirmed);
      c->second.insert(uuid);
    }
    for (const auto& [tablet_id, confirmed] : new_confirmed) {
      const TabletInfo& t = *tablets_.at(tablet_id);
      if (!AllConfirmed(t.pb, confirmed)) continue;
      SysTabletEntryPB pb = t.pb;
      pb.set_state(TABLET_RUNNING);
      batch.put_tablets.emplace_back(tablet_id, std::move(pb));
      now_running.insert(tablet_id);
    }
    std::set<std::string> seen_tables;
    for (const auto& tablet_id : now_running) {
      const std::string& table_id = tablets_.at(tablet_id)->pb.table_id();
      if (!seen_tables.insert(table_id).second) continue;
      const auto& table = tables_.at(table_id);
      if (table->pb.state() != TABLE_CREATING) continue;
      bool all = true;
      for (const auto& [start, t] : table->tablets_by_start) {
        all &= t->pb.state() == TABLET_RUNNING || now_running.count(t->id);
      }
      if (!all) continue;
      SysTableEntryPB pb = table->pb;
      pb.set_state(TABLE_RUNNING);
      batch.put_tables.emplace_back(table_id, std::move(pb));
      tables_running.insert(table);
    }
  }
  if (!batch.empty()) RETURN_NOT_OK_PREPEND(sys_catalog_->Write(batch), "marking tablets running");
  ExclusiveLock l(state_mu_);
  for (const auto& [id, pb] : batch.put_tablets) InvalidateLocked(pb.table_id());
  for (auto& [tablet_id, confirmed] : new_confirmed) tablets_.at(tablet_id)->confirmed = confirmed;
  for (auto& [id, pb] : batch.put_tablets) {
    tablets_.at(id)->pb = pb;
    pending_tablets_.erase(id);
  }
  for (auto& [id, pb] : batch.put_tables) tables_.at(id)->pb = pb;
  for (const auto& t : tables_running) LOG(INFO) << "table " << t->pb.name() << " is running";
  return Status::OK();
}

void CatalogManager::ApplyTaskResults() {
  std::vector<Confirmation> confirmations;
  std::vector<TabletRpcTasks::Result> deleted;
  for (auto& r : tasks_->TakeResults()) {
    if (!r.status.ok()) {
      VLOG(1) << (r.key.kind == TabletRpcTasks::Kind::kCreate ? "CreateTablet " : "DeleteTablet ")
              << r.key.tablet_id << " on " << r.key.ts_uuid << " failed: " << r.status.ToString();
      continue;
    }
    if (r.key.kind == TabletRpcTasks::Kind::kCreate) {
      confirmations.emplace_back(r.key.tablet_id, r.key.ts_uuid);
    } else {
      deleted.push_back(std::move(r));
    }
  }
  WARN_NOT_OK(ConfirmReplicas(confirmations), "confirming created replicas");
  if (deleted.empty()) return;
  ExclusiveLock l(state_mu_);  // in-memory bookkeeping only; no answer changes
  for (const auto& r : deleted) {
    orphans_.erase({r.key.ts_uuid, r.key.tablet_id});
    auto it = tablets_.find(r.key.tablet_id);
    if (it == tablets_.end()) continue;
    TabletInfo& t = *it->second;
    t.delete_acked.insert(r.key.ts_uuid);
    const TabletStatePB st = t.pb.state();
    if ((st == TABLET_DELETED || st == TABLET_REPLACED) && AllConfirmed(t.pb, t.delete_acked)) {
      pending_tablets_.erase(t.id);
    }
  }
}

Status CatalogManager::ReplaceTimedOutTablets(MonoTime now) {
  MutexLock w(write_mu_);
  SysCatalogBatch batch;
  // old tablet, its replacement
  std::vector<std::pair<std::shared_ptr<TabletInfo>, std::shared_ptr<TabletInfo>>> replaced;
  {
    SharedLock l(state_mu_);
    ServerLoads loads;
    bool have_loads = false;
    for (const auto& id : pending_tablets_) {
      const auto& old = tablets_.at(id);
      if (old->pb.state() != TABLET_CREATING || old->creation_deadline > now) continue;
      const auto& table = tables_.at(old->pb.table_id());
      if (!have_loads) {
        loads = LiveServerLoadsLocked();
        have_loads = true;
      }
      std::set<std::string> avoid(old->pb.replica_uuids().begin(), old->pb.replica_uuids().end());
      auto placed = PlaceReplicas(table->pb.num_replicas(), &loads, &rng_, avoid);
      if (!placed.ok()) {
        LOG(WARNING) << "tablet " << id << " timed out creating but cannot be placed again: "
                     << placed.status().ToString();
        continue;
      }
      auto fresh = std::make_shared<TabletInfo>();
      fresh->id = server::GenerateUuid();
      fresh->partition = old->partition;
      fresh->creation_deadline =
          now + MonoDelta::FromMilliseconds(FLAGS_tablet_creation_timeout_ms);
      fresh->pb.set_table_id(table->id);
      *fresh->pb.mutable_partition() = old->pb.partition();
      fresh->pb.set_state(TABLET_CREATING);
      for (const auto& uuid : *placed) fresh->pb.add_replica_uuids(uuid);
      SysTabletEntryPB old_pb = old->pb;
      old_pb.set_state(TABLET_REPLACED);
      old_pb.set_replaced_by_tablet_id(fresh->id);
      old_pb.set_state_msg("not running within --tablet_creation_timeout_ms");
      batch.put_tablets.emplace_back(old->id, std::move(old_pb));
      batch.put_tablets.emplace_back(fresh->id, fresh->pb);
      replaced.emplace_back(old, std::move(fresh));
    }
  }
  if (batch.empty()) return Status::OK();
  RETURN_NOT_OK_PREPEND(sys_catalog_->Write(batch), "replacing tablets");
  ExclusiveLock l(state_mu_);
  for (size_t i = 0; i < replaced.size(); i++) {
    auto& [old, fresh] = replaced[i];
    LOG(WARNING) << "tablet " << old->id << " was not running within "
                 << FLAGS_tablet_creation_timeout_ms << " ms; replaced by " << fresh->id;
    const auto& table = tables_.at(old->pb.table_id());
    InvalidateLocked(table->id);
    old->pb = batch.put_tablets[2 * i].second;
    table->tablets_by_start[fresh->partition.partition_key_start] = fresh;
    table->all_tablet_ids.push_back(fresh->id);
    tablets_[fresh->id] = fresh;
    pending_tablets_.insert(fresh->id);  // the old one stays pending: its replicas are dropped
  }
  return Status::OK();
}

void CatalogManager::SendPendingRpcs(MonoTime now) {
  struct Want {
    std::string address;
    tserver::CreateTabletRequestPB create;
    tserver::DeleteTabletRequestPB del;
    bool is_create;
  };
  std::vector<Want> wants;
  std::set<TabletRpcTasks::Key> needed;  // every task still wanted, due or not
  {
    SharedLock l(state_mu_);
    auto want = [&](TabletRpcTasks::Kind kind, const std::string& uuid, const std::string& tablet) {
      needed.insert({kind, uuid, tablet});
      if (!tasks_->IsDue({kind, uuid, tablet}, now)) return (Want*)nullptr;
      auto ts = ts_manager_->Lookup(uuid);
      if (!ts || !ts->live || ts->RpcAddressString().empty()) return (Want*)nullptr;
      wants.push_back(Want{ts->RpcAddressString(), {}, {}, kind == TabletRpcTasks::Kind::kCreate});
      return &wants.back();
    };
    for (const auto& id : pending_tablets_) {
      const TabletInfo& t = *tablets_.at(id);
      const TabletStatePB st = t.pb.state();
      if (st == TABLET_CREATING) {
        const TableInfo& table = *tables_.at(t.pb.table_id());
        for (const auto& uuid : t.pb.replica_uuids()) {
          if (t.confirmed.count(uuid)) continue;
          Want* w = want(TabletRpcTasks::Kind::kCreate, uuid, id);
          if (!w) continue;
          w->create.set_dest_uuid(uuid);
          w->create.set_table_id(table.id);
          w->create.set_table_name(table.pb.name());
          w->create.set_tablet_id(id);
          *w->create.mutable_partition() = t.pb.partition();
          *w->create.mutable_schema() = table.pb.schema();
          *w->create.mutable_partition_schema() = table.pb.partition_schema();
        }
      } else if (st == TABLET_DELETED || st == TABLET_REPLACED) {
        for (const auto& uuid : t.pb.replica_uuids()) {
          if (t.delete_acked.count(uuid)) continue;
          Want* w = want(TabletRpcTasks::Kind::kDelete, uuid, id);
          if (!w) continue;
          w->del.set_dest_uuid(uuid);
          w->del.set_tablet_id(id);
          w->del.set_reason(st == TABLET_DELETED ? "table deleted" : "tablet replaced");
        }
      }
    }
    for (const auto& [uuid, tablet_id] : orphans_) {
      Want* w = want(TabletRpcTasks::Kind::kDelete, uuid, tablet_id);
      if (!w) continue;
      w->del.set_dest_uuid(uuid);
      w->del.set_tablet_id(tablet_id);
      w->del.set_reason("not a tablet of this server in the master's catalog");
    }
  }
  // Forget the backoff state of tasks nobody wants any more (tablets running or gone).
  tasks_->Retain([&](const TabletRpcTasks::Key& k) { return needed.count(k) > 0; });
  for (auto& w : wants) {
    if (w.is_create) {
      tasks_->SendCreate(w.address, std::move(w.create), now);
    } else {
      tasks_->SendDelete(w.address, std::move(w.del), now);
    }
  }
}

void CatalogManager::ProcessTabletReport(const std::string& uuid, const TabletReportPB& report) {
  std::vector<Confirmation> confirmations;
  std::vector<std::string> orphans;
  {
    SharedLock l(state_mu_);
    for (const auto& rt : report.updated_tablets()) {
      auto it = tablets_.find(rt.tablet_id());
      if (it == tablets_.end()) {
        orphans.push_back(rt.tablet_id());
        continue;
      }
      const TabletInfo& t = *it->second;
      const TabletStatePB st = t.pb.state();
      if (st == TABLET_DELETED || st == TABLET_REPLACED || !HasReplica(t.pb, uuid)) {
        if (rt.state() != TABLET_DELETED) orphans.push_back(rt.tablet_id());
        continue;
      }
      if (rt.state() == TABLET_RUNNING && st == TABLET_CREATING) {
        confirmations.emplace_back(rt.tablet_id(), uuid);
      } else if (rt.state() == TABLET_FAILED) {
        LOG(WARNING) << "tablet " << rt.tablet_id() << " failed on " << uuid << ": "
                     << rt.error().message();
      }
    }
  }
  if (!orphans.empty()) {
    ExclusiveLock l(state_mu_);  // bookkeeping only; no answer changes
    for (auto& id : orphans) {
      LOG(INFO) << "tablet server " << uuid << " reported tablet " << id
                << " it should not have; deleting it there";
      orphans_.emplace(uuid, std::move(id));
    }
  }
  WARN_NOT_OK(ConfirmReplicas(confirmations), "confirming reported replicas");
  if (!orphans.empty() || !confirmations.empty()) tasks_->Wake();
}

void CatalogManager::TSHeartbeat(const TSHeartbeatRequestPB& req, TSHeartbeatResponsePB* resp) {
  *resp->mutable_master_instance() = master_instance_;
  const std::string& uuid = req.common().permanent_uuid();
  if (uuid.empty()) {
    SetError(MasterErrorPB::INVALID_ARGUMENT,
             Status::InvalidArgument("heartbeat without common.permanent_uuid"),
             resp->mutable_error());
    return;
  }
  const MonoTime now = MonoTime::Now();
  TSManager::HeartbeatOutcome out = ts_manager_->Heartbeat(req, now, false);
  if (out.needs_exclusive) {
    // A change answers can see: purge the server's tables first, atomically with it.
    ExclusiveLock l(state_mu_);
    for (const auto& table_id : TablesOnServerLocked(uuid)) InvalidateLocked(table_id);
    out = ts_manager_->Heartbeat(req, now, true);
  }
  resp->set_needs_reregister(out.needs_reregister);
  resp->set_needs_full_tablet_report(out.needs_full_report);
  if (out.process_report) {
    ProcessTabletReport(uuid, req.tablet_report());
    resp->set_acked_report_sequence_number(req.tablet_report().sequence_number());
  }
}

}  // namespace nyala::master
