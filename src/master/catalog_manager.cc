// CatalogManager: construction, loading, the background thread, dead servers,
// listing servers and shared helpers. Tables: catalog_manager_tables.cc; tablets,
// reports and RPCs: catalog_manager_tablets.cc; GetTableLocations:
// catalog_manager_locations.cc; configurations, replacements and tablet-server
// states: catalog_manager_replicas.cc.
#include "master/catalog_manager.h"
#include "common/status.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "common/flag_tags.h"
#include "common/wire_protocol.h"
#include "consensus/peer_id.h"
#include "server/fs_manager.h"

DEFINE_int32(table_locations_cache_capacity_mb, 64,
             "Capacity of the master's table-locations cache (serialized GetTableLocations "
             "answers), in MiB; 0 disables the cache.");
DEFINE_validator(table_locations_cache_capacity_mb, [](const char*, int32_t v) { return v >= 0; });
DEFINE_int32(catalog_manager_bg_interval_ms, 100,
             "Interval of the catalog manager's background pass (RPC retries, creation "
             "timeouts, dead tablet servers) when nothing wakes it earlier.");
DEFINE_validator(catalog_manager_bg_interval_ms, [](const char*, int32_t v) { return v > 0; });
TAG_FLAG(catalog_manager_bg_interval_ms, runtime);
DECLARE_int32(tablet_creation_timeout_ms);

namespace nyala::master {

void SetError(MasterErrorPB::Code code, const Status& s, MasterErrorPB* err) {
  err->set_code(code);
  StatusToPB(s, err->mutable_status());
}

Status TableNotFound(const TableIdentifierPB& id) {
  return Status::NotFound(id.table_id().empty() ? "table '" + id.table_name() + "' not found"
                                                : "table " + id.table_id() + " not found",
                          "'nyala table list' lists the tables");
}

namespace {
std::unique_ptr<TableLocationsCache> MakeCache(MetricRegistry* metrics) {
  if (FLAGS_table_locations_cache_capacity_mb == 0) return nullptr;
  return std::make_unique<TableLocationsCache>(
      size_t(FLAGS_table_locations_cache_capacity_mb) * 1024 * 1024, metrics);
}
}  // namespace

CatalogManager::CatalogManager(SysCatalog* sys_catalog, TSManager* ts_manager,
                               std::shared_ptr<rpc::Messenger> messenger, MetricRegistry* metrics)
    : sys_catalog_(sys_catalog),
      ts_manager_(ts_manager),
      messenger_(std::move(messenger)),
      cache_(MakeCache(metrics)),
      tasks_(std::make_shared<TabletRpcTasks>(messenger_)),
      replacements_started_(metrics->FindOrCreateCounter(
          "master_replica_replacements_started_total",
          "Failed voters whose replacement began: the first learner was added in their stead")),
      replacements_completed_(metrics->FindOrCreateCounter(
          "master_replica_replacements_completed_total",
          "Failed voters removed from their tablet's configuration after their replacement "
          "was promoted")),
      learners_removed_(metrics->FindOrCreateCounter(
          "master_replacement_learners_removed_total",
          "Learners removed because their server failed, they made no progress, or no voter "
          "was left for them to replace")),
      rng_(std::random_device{}()),
      tablet_id_generator_([] { return server::GenerateUuid(); }) {}

CatalogManager::~CatalogManager() { Shutdown(); }

Status CatalogManager::Load() {
  MutexLock w(write_mu_);
  std::vector<std::shared_ptr<TableInfo>> tables;
  RETURN_NOT_OK(sys_catalog_->VisitTables([&](const std::string& id, SysTableEntryPB&& pb) {
    auto t = std::make_shared<TableInfo>();
    t->id = id;
    t->pb = std::move(pb);
    tables.push_back(std::move(t));
    return Status::OK();
  }));
  std::map<std::string, SysTServerStateEntryPB> states;
  RETURN_NOT_OK(
      sys_catalog_->VisitTServerStates([&](const std::string& uuid, SysTServerStateEntryPB&& pb) {
        states[uuid] = std::move(pb);
        return Status::OK();
      }));
  std::vector<std::shared_ptr<TabletInfo>> tablets;
  const MonoTime deadline =
      MonoTime::Now() + MonoDelta::FromMilliseconds(FLAGS_tablet_creation_timeout_ms);
  RETURN_NOT_OK(sys_catalog_->VisitTablets([&](const std::string& id, SysTabletEntryPB&& pb) {
    auto t = std::make_shared<TabletInfo>();
    t->id = id;
    t->pb = std::move(pb);
    t->partition = Partition::FromPB(t->pb.partition());
    t->creation_deadline = deadline;
    tablets.push_back(std::move(t));
    return Status::OK();
  }));

  ExclusiveLock l(state_mu_);
  tserver_states_ = std::move(states);
  load_time_ = MonoTime::Now();
  for (auto& t : tables) {
    if (t->pb.state() != TABLE_DELETED) table_ids_by_name_[t->pb.name()] = t->id;
    tables_[t->id] = std::move(t);
  }
  for (auto& t : tablets) {
    auto table_it = tables_.find(t->pb.table_id());
    if (table_it == tables_.end()) {
      return Status::Corruption("sys catalog: tablet " + t->id + " of unknown table",
                                t->pb.table_id());
    }
    TableInfo& table = *table_it->second;
    table.all_tablet_ids.push_back(t->id);
    const TabletStatePB st = t->pb.state();
    if (st == TABLET_CREATING || st == TABLET_RUNNING) {
      table.tablets_by_start[t->partition.partition_key_start] = t;
    }
    if (st == TABLET_CREATING || st == TABLET_DELETED || st == TABLET_REPLACED) {
      pending_tablets_.insert(t->id);
    }
    const uint64_t group = consensus::GroupIdFromTabletId(t->id);
    if (auto [it, fresh] = tablet_ids_by_group_.emplace(group, t->id); !fresh) {
      // Written by a version that did not check; the ids are random, so this is rare.
      LOG(WARNING) << "sys catalog: tablets " << it->second << " and " << t->id
                   << " have the same Raft group id";
    }
    tablets_[t->id] = std::move(t);
  }
  LOG(INFO) << "catalog loaded: " << tables_.size() << " tables (" << table_ids_by_name_.size()
            << " live), " << tablets_.size() << " tablets, " << tserver_states_.size()
            << " tablet server(s) in maintenance";
  return Status::OK();
}

void CatalogManager::StartBackgroundTasks() {
  bg_thread_ = std::thread([this] { BackgroundLoop(); });
}

void CatalogManager::Shutdown() {
  if (stopping_.exchange(true)) return;
  tasks_->Wake();
  if (bg_thread_.joinable()) bg_thread_.join();
}

void CatalogManager::BackgroundLoop() {
  while (!stopping_.load()) {
    BackgroundPass();
    tasks_->WaitForWork(MonoDelta::FromMilliseconds(FLAGS_catalog_manager_bg_interval_ms));
  }
}

void CatalogManager::BackgroundPass() {
  const MonoTime now = MonoTime::Now();
  CheckDeadServers(now);
  ApplyTaskResults();
  // Normally done when the leader is reported; this retries a failed write.
  WARN_NOT_OK(MarkTabletsRunning(PendingTabletsWithLeader()), "marking tablets running");
  // Normally done when the leader reports; this retries a failed write.
  WARN_NOT_OK(FollowConfigs(UnfollowedConfigs()), "following reported configurations");
  WARN_NOT_OK(ReplaceTimedOutTablets(now), "replacing timed-out tablets");
  std::set<TabletRpcTasks::Key> needed;  // every task still wanted, due or not
  ReplaceFailedReplicas(now, &needed);
  DriveAlters(now, &needed);
  SendPendingRpcs(now, std::move(needed));
}

void CatalogManager::CheckDeadServers(MonoTime now) {
  std::vector<std::string> expired = ts_manager_->ExpiredLiveServers(now);
  if (expired.empty()) return;
  ExclusiveLock l(state_mu_);
  for (const auto& uuid : expired) {
    // Purge first: the server's death changes its tables' answers.
    for (const auto& table_id : TablesOnServerLocked(uuid)) InvalidateLocked(table_id);
    ts_manager_->MarkDeadIfExpired(uuid, now);
  }
}

std::vector<std::string> CatalogManager::TablesOnServerLocked(const std::string& uuid) const {
  std::vector<std::string> out;
  for (const auto& [id, table] : tables_) {
    if (table->pb.state() == TABLE_DELETED) continue;
    bool found = false;
    for (const auto& [start, tablet] : table->tablets_by_start) {
      found |= tablet->IsMember(uuid);
      if (found) break;
    }
    if (found) out.push_back(id);
  }
  return out;
}

void CatalogManager::InvalidateLocked(const std::string& table_id) {
  if (cache_) cache_->InvalidateTable(table_id);
}

std::shared_ptr<CatalogManager::TableInfo> CatalogManager::FindTableLocked(
    const TableIdentifierPB& id) const {
  std::shared_ptr<TableInfo> t;
  if (!id.table_id().empty()) {
    auto it = tables_.find(id.table_id());
    if (it != tables_.end()) t = it->second;
  } else if (!id.table_name().empty()) {
    auto it = table_ids_by_name_.find(id.table_name());
    if (it != table_ids_by_name_.end()) t = tables_.at(it->second);
  }
  if (t && t->pb.state() == TABLE_DELETED) return nullptr;
  return t;
}

ServerLoads CatalogManager::LiveServerLoadsLocked(ServerLoads* leaders) const {
  ServerLoads loads;
  for (const auto& uuid : ts_manager_->LiveServerUuids()) {
    if (!DecommissioningLocked(uuid)) loads[uuid] = 0;
  }
  for (const auto& [id, tablet] : tablets_) {
    const TabletStatePB st = tablet->pb.state();
    if (st != TABLET_CREATING && st != TABLET_RUNNING) continue;
    for (const auto& r : tablet->Members()) {
      auto it = loads.find(r);
      if (it != loads.end()) it->second++;
    }
    if (leaders && tablet->pb.replica_uuids_size() > 0) {
      (*leaders)[tablet->leader_uuid.empty() ? tablet->pb.replica_uuids(0) : tablet->leader_uuid]++;
    }
  }
  return loads;
}

Result<std::string> CatalogManager::NewTabletIdLocked(std::set<uint64_t>* taken) const {
  constexpr int kMaxAttempts = 100;  // a collision of random 64-bit ids is already rare
  for (int i = 0; i < kMaxAttempts; i++) {
    std::string id = tablet_id_generator_();
    const uint64_t group = consensus::GroupIdFromTabletId(id);
    auto existing = tablet_ids_by_group_.find(group);
    if (existing == tablet_ids_by_group_.end() && !taken->count(group) && !tablets_.count(id)) {
      taken->insert(group);
      return id;
    }
    LOG(WARNING) << "new tablet id " << id << " has the Raft group id of tablet "
                 << (existing != tablet_ids_by_group_.end() ? existing->second : "(same batch)")
                 << "; generating another";
  }
  return Status::IllegalState("no tablet id with an unused Raft group id after " +
                              std::to_string(kMaxAttempts) + " attempts");
}

void CatalogManager::AddTabletLocked(std::shared_ptr<TabletInfo> tablet) {
  tablet_ids_by_group_[consensus::GroupIdFromTabletId(tablet->id)] = tablet->id;
  tablets_[tablet->id] = std::move(tablet);
}

std::map<std::string, int64_t> CatalogManager::ReplicasPerServer() const {
  SharedLock l(state_mu_);
  return ReplicasPerServerLocked();
}

std::map<std::string, int64_t> CatalogManager::ReplicasPerServerLocked() const {
  std::map<std::string, int64_t> out;
  for (const auto& [id, tablet] : tablets_) {
    const TabletStatePB st = tablet->pb.state();
    if (st != TABLET_CREATING && st != TABLET_RUNNING) continue;
    for (const auto& r : tablet->Members()) out[r]++;
  }
  return out;
}

void CatalogManager::ListTabletServers(const ListTabletServersRequestPB& req,
                                       ListTabletServersResponsePB* resp) {
  const MonoTime now = MonoTime::Now();
  const std::map<std::string, TServerStatePB> states = TServerStates();
  const std::map<std::string, int64_t> replicas = ReplicasPerServer();
  for (const TSDescriptor& ts : ts_manager_->GetAll()) {
    auto* e = resp->add_servers();
    auto st = states.find(ts.uuid);
    e->set_state(st == states.end() ? TSERVER_STATE_NONE : st->second);
    e->mutable_instance_id()->set_permanent_uuid(ts.uuid);
    e->mutable_instance_id()->set_instance_seqno(ts.instance_seqno);
    *e->mutable_registration() = ts.registration;
    e->set_millis_since_heartbeat((now - ts.last_heartbeat).ToMilliseconds());
    e->set_live(ts.live);
    e->set_num_live_tablets(int32_t(ts.running_tablets.size()));
    auto r = replicas.find(ts.uuid);
    e->set_num_replicas(r == replicas.end() ? 0 : int32_t(r->second));
  }
}

std::vector<TableSnapshot> CatalogManager::GetTableSnapshots() const {
  const HealthSnapshot health = TakeHealthSnapshot(MonoTime::Now());
  SharedLock l(state_mu_);
  std::vector<TableSnapshot> out;
  for (const auto& [id, table] : tables_) {
    TableSnapshot s;
    s.id = id;
    s.entry = table->pb;
    for (const auto& [start, tablet] : table->tablets_by_start) {
      TabletSnapshot& ts = s.tablets.emplace_back();
      ts.id = tablet->id;
      ts.entry = tablet->pb;
      ts.leader_uuid = tablet->leader_uuid;
      ts.term = tablet->max_term;
      ts.replica_states = tablet->replica_states;
      ts.replica_stats = tablet->replica_stats;
      for (const auto& r : tablet->Members()) ts.roles[r] = tablet->RoleOf(r);
      if (tablet->pb.state() == TABLET_RUNNING) {
        ts.replacement = ReplacementStatusLocked(*tablet, health);
      }
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const TableSnapshot& a, const TableSnapshot& b) {
    return a.entry.name() != b.entry.name() ? a.entry.name() < b.entry.name() : a.id < b.id;
  });
  return out;
}

int CatalogManager::NumTables() const {
  SharedLock l(state_mu_);
  return int(table_ids_by_name_.size());
}

size_t CatalogManager::NumPendingTabletsForTests() const {
  SharedLock l(state_mu_);
  return pending_tablets_.size();
}

}  // namespace nyala::master
