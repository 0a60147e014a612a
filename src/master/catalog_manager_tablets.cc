// CatalogManager: tablet life cycle: confirmation (RPC results and heartbeat
// reports), replacement after a creation timeout, and the CreateTablet /
// DeleteTablet calls the background thread sends.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include "common/flag_tags.h"
#include "common/status.h"
#include "master/catalog_manager.h"
#include "server/fs_manager.h"

DEFINE_int32(tablet_creation_timeout_ms, 30000,
             "A tablet not running this long after it was placed is marked REPLACED and a new "
             "tablet with the same partition is placed elsewhere.");
DEFINE_validator(tablet_creation_timeout_ms, [](const char*, int32_t v) { return v > 0; });
TAG_FLAG(tablet_creation_timeout_ms, runtime);
DEFINE_int32(master_max_tablet_rpcs_per_ts, 16,
             "CreateTablet and DeleteTablet calls the master keeps in flight to one tablet "
             "server; the others wait their turn at the master. A table of many tablets sent "
             "all at once would overflow the server's admin queue, and the calls turned away "
             "would back off for seconds.");
DEFINE_validator(master_max_tablet_rpcs_per_ts, [](const char*, int32_t v) { return v > 0; });

namespace nyala::master {

namespace {
bool Contains(const google::protobuf::RepeatedPtrField<std::string>& v, const std::string& x) {
  for (const auto& e : v) {
    if (e == x) return true;
  }
  return false;
}
// Every member (voter or learner) of `pb` is in `confirmed`.
bool AllConfirmed(const SysTabletEntryPB& pb, const std::set<std::string>& confirmed) {
  for (const auto& r : pb.replica_uuids()) {
    if (!confirmed.count(r)) return false;
  }
  for (const auto& r : pb.learner_uuids()) {
    if (!confirmed.count(r)) return false;
  }
  return true;
}
// What a tablet's locations say of its replicas: the leader, the term, each role.
struct LeaderView {
  std::string leader;
  uint64_t term;
  std::vector<ReplicaRolePB> roles;
  bool operator==(const LeaderView& o) const {
    return leader == o.leader && term == o.term && roles == o.roles;
  }
};
}  // namespace

bool CatalogManager::TabletInfo::IsVoter(const std::string& uuid) const {
  return Contains(pb.replica_uuids(), uuid);
}

bool CatalogManager::TabletInfo::IsLearner(const std::string& uuid) const {
  return Contains(pb.learner_uuids(), uuid);
}

std::vector<std::string> CatalogManager::TabletInfo::Members() const {
  std::vector<std::string> out(pb.replica_uuids().begin(), pb.replica_uuids().end());
  out.insert(out.end(), pb.learner_uuids().begin(), pb.learner_uuids().end());
  return out;
}

ReplicaRolePB CatalogManager::TabletInfo::RoleOf(const std::string& uuid) const {
  if (!leader_uuid.empty() && uuid == leader_uuid) return LEADER;
  if (IsLearner(uuid)) return LEARNER;
  auto it = replica_states.find(uuid);
  if (it == replica_states.end()) return UNKNOWN_ROLE;
  // A claim from an older term, or a report from before its promotion.
  const ReplicaRolePB role = it->second.role();
  return role == LEADER || role == LEARNER ? FOLLOWER : role;
}

void CatalogManager::TabletInfo::UpdateLeader() {
  // A replica outside the configuration counts only when it claims to lead: a
  // removed one that went on campaigning must not hide the real leader.
  auto counts = [&](const std::string& uuid, const ConsensusStatePB& st) {
    return st.role() == LEADER || IsMember(uuid);
  };
  for (const auto& [uuid, st] : replica_states) {
    if (counts(uuid, st)) max_term = std::max(max_term, st.term());
  }
  leader_uuid.clear();
  for (const auto& [uuid, st] : replica_states) {
    if (st.role() == LEADER && st.term() == max_term) leader_uuid = uuid;
  }
}

void CatalogManager::SetReplicaStateLocked(TabletInfo* t, const std::string& uuid,
                                           const ConsensusStatePB* state) {
  auto view = [&] {
    LeaderView v{t->leader_uuid, t->max_term, {}};
    for (const auto& r : t->Members()) v.roles.push_back(t->RoleOf(r));
    return v;
  };
  const LeaderView before = view();
  if (state) {
    t->replica_states[uuid] = *state;
  } else if (!t->replica_states.erase(uuid)) {
    return;
  }
  t->UpdateLeader();
  const LeaderView after = view();
  if (before == after) return;
  // The exclusive lock is held, so no answer built from the old view is cached after this.
  InvalidateLocked(t->pb.table_id());
  if (after.leader != before.leader && before.term == 0) {
    // The first reports (a new tablet, or any tablet after a master restart).
    VLOG(1) << "tablet " << t->id << ": leader " << after.leader << " in term " << after.term;
  } else if (after.leader != before.leader) {
    if (after.leader.empty()) {
      LOG(INFO) << "tablet " << t->id << ": no leader known in term " << after.term << " (was "
                << before.leader << ")";
    } else {
      LOG(INFO) << "tablet " << t->id << ": leader " << after.leader << " in term " << after.term;
    }
  } else {
    VLOG(1) << "tablet " << t->id << ": term " << after.term << ", replica " << uuid << " now "
            << ReplicaRolePB_Name(t->RoleOf(uuid));
  }
}

void CatalogManager::ConfirmReplicaLocked(TabletInfo* t, const std::string& uuid) {
  const TabletStatePB st = t->pb.state();
  if ((st != TABLET_CREATING && st != TABLET_RUNNING) || !t->IsMember(uuid)) return;
  t->confirmed.insert(uuid);
  if (st == TABLET_RUNNING && AllConfirmed(t->pb, t->confirmed)) pending_tablets_.erase(t->id);
}

std::vector<std::string> CatalogManager::PendingTabletsWithLeader() const {
  SharedLock l(state_mu_);
  std::vector<std::string> out;
  for (const auto& id : pending_tablets_) {
    const TabletInfo& t = *tablets_.at(id);
    if (t.pb.state() == TABLET_CREATING && !t.leader_uuid.empty()) out.push_back(id);
  }
  return out;
}

Status CatalogManager::MarkTabletsRunning(const std::vector<std::string>& tablet_ids) {
  if (tablet_ids.empty()) return Status::OK();
  MutexLock w(write_mu_);
  SysCatalogBatch batch;
  std::set<std::string> now_running;
  std::set<std::shared_ptr<TableInfo>> tables_running;
  {
    SharedLock l(state_mu_);
    for (const auto& tablet_id : tablet_ids) {
      auto it = tablets_.find(tablet_id);
      if (it == tablets_.end()) continue;
      const TabletInfo& t = *it->second;
      if (t.pb.state() != TABLET_CREATING || t.leader_uuid.empty()) continue;
      if (!now_running.insert(tablet_id).second) continue;
      SysTabletEntryPB pb = t.pb;
      pb.set_state(TABLET_RUNNING);
      batch.put_tablets.emplace_back(tablet_id, std::move(pb));
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
  if (batch.empty()) return Status::OK();
  RETURN_NOT_OK_PREPEND(sys_catalog_->Write(batch), "marking tablets running");
  ExclusiveLock l(state_mu_);
  for (const auto& [id, pb] : batch.put_tablets) InvalidateLocked(pb.table_id());
  for (auto& [id, pb] : batch.put_tablets) {
    TabletInfo& t = *tablets_.at(id);
    t.pb = pb;
    // Still pending while a replica has not confirmed: CreateTablet keeps going to it.
    if (AllConfirmed(t.pb, t.confirmed)) pending_tablets_.erase(id);
  }
  for (auto& [id, pb] : batch.put_tables) tables_.at(id)->pb = pb;
  for (const auto& t : tables_running) LOG(INFO) << "table " << t->pb.name() << " is running";
  return Status::OK();
}

void CatalogManager::ApplyTaskResults() {
  std::vector<TabletRpcTasks::Result> results;
  for (auto& r : tasks_->TakeResults()) {
    // A leadership transfer shows in the leader's reports; the master asks again, if
    // still needed, after TabletInfo::transfer_until.
    if (r.key.kind == TabletRpcTasks::Kind::kStepDown) {
      if (!r.status.ok()) {
        LOG(WARNING) << "tablet " << r.key.tablet_id << ": its leader " << r.key.ts_uuid
                     << " did not hand leadership away: " << r.status.ToString();
      }
      continue;
    }
    // A configuration change's outcome, failed or not, settles the tablet's pending change.
    if (!r.status.ok() && r.key.kind == TabletRpcTasks::Kind::kAlterSchema) {
      LOG(WARNING) << "tablet " << r.key.tablet_id << ": schema change on its leader "
                   << r.key.ts_uuid << " failed (asked again later): " << r.status.ToString();
      continue;
    }
    if (!r.status.ok() && r.key.kind != TabletRpcTasks::Kind::kChangeConfig) {
      VLOG(1) << (r.key.kind == TabletRpcTasks::Kind::kCreate ? "CreateTablet " : "DeleteTablet ")
              << r.key.tablet_id << " on " << r.key.ts_uuid << " failed: " << r.status.ToString();
      continue;
    }
    results.push_back(std::move(r));
  }
  if (results.empty()) return;
  const MonoTime now = MonoTime::Now();
  ExclusiveLock l(state_mu_);  // in-memory bookkeeping only; no answer changes
  for (const auto& r : results) {
    if (r.key.kind == TabletRpcTasks::Kind::kChangeConfig) {
      ApplyChangeConfigResult(r, now);
      continue;
    }
    if (r.key.kind == TabletRpcTasks::Kind::kDelete) {
      orphans_.erase({r.key.ts_uuid, r.key.tablet_id});
      auto left = leftovers_.find({r.key.ts_uuid, r.key.tablet_id});
      if (left != leftovers_.end()) left->second.tombstoned = true;
    }
    auto it = tablets_.find(r.key.tablet_id);
    if (it == tablets_.end()) continue;
    TabletInfo& t = *it->second;
    if (r.key.kind == TabletRpcTasks::Kind::kAlterSchema) {
      t.schema_version = std::max(t.schema_version, r.schema_version);
      continue;
    }
    if (r.key.kind == TabletRpcTasks::Kind::kCreate) {
      ConfirmReplicaLocked(&t, r.key.ts_uuid);
      continue;
    }
    // Only a deleted or replaced tablet's members are dropped (not a leftover, whose
    // tablet runs on).
    const TabletStatePB st = t.pb.state();
    if (st != TABLET_DELETED && st != TABLET_REPLACED) continue;
    t.delete_acked.insert(r.key.ts_uuid);
    if (AllConfirmed(t.pb, t.delete_acked)) pending_tablets_.erase(t.id);
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
    ServerLoads leaders;
    bool have_loads = false;
    std::set<uint64_t> group_ids;  // of the replacements
    for (const auto& id : pending_tablets_) {
      const auto& old = tablets_.at(id);
      // A tablet with a leader is about to be marked running, not replaced.
      if (old->pb.state() != TABLET_CREATING || old->creation_deadline > now ||
          !old->leader_uuid.empty()) {
        continue;
      }
      const auto& table = tables_.at(old->pb.table_id());
      if (!have_loads) {
        loads = LiveServerLoadsLocked(&leaders);
        have_loads = true;
      }
      // Avoid the replicas that never confirmed (their servers failed to create it);
      // when all did (they never elected a leader), avoid them all.
      std::set<std::string> avoid;
      for (const auto& r : old->pb.replica_uuids()) {
        if (!old->confirmed.count(r)) avoid.insert(r);
      }
      if (avoid.empty())
        avoid.insert(old->pb.replica_uuids().begin(), old->pb.replica_uuids().end());
      auto placed = PlaceReplicas(table->pb.num_replicas(), &loads, &rng_, avoid);
      if (!placed.ok()) {
        LOG(WARNING) << "tablet " << id << " timed out creating but cannot be placed again: "
                     << placed.status().ToString();
        continue;
      }
      OrderForLeadership(&*placed, &leaders);
      auto fresh_id = NewTabletIdLocked(&group_ids);
      if (!fresh_id.ok()) return fresh_id.status();
      auto fresh = std::make_shared<TabletInfo>();
      fresh->id = std::move(*fresh_id);
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
      old_pb.set_state_msg("no leader within --tablet_creation_timeout_ms");
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
    LOG(WARNING) << "tablet " << old->id << " had no leader within "
                 << FLAGS_tablet_creation_timeout_ms << " ms (" << old->confirmed.size() << " of "
                 << old->pb.replica_uuids_size() << " replicas confirmed); replaced by "
                 << fresh->id;
    const auto& table = tables_.at(old->pb.table_id());
    InvalidateLocked(table->id);
    old->pb = batch.put_tablets[2 * i].second;
    table->tablets_by_start[fresh->partition.partition_key_start] = fresh;
    table->all_tablet_ids.push_back(fresh->id);
    AddTabletLocked(fresh);
    pending_tablets_.insert(fresh->id);  // the old one stays pending: its replicas are dropped
  }
  return Status::OK();
}

void CatalogManager::SendPendingRpcs(MonoTime now, std::set<TabletRpcTasks::Key> needed) {
  struct Want {
    std::string address;
    tserver::CreateTabletRequestPB create;
    tserver::DeleteTabletRequestPB del;
    bool is_create;
  };
  std::vector<Want> wants;
  // At most --master_max_tablet_rpcs_per_ts calls in flight per server; the next ones
  // go when these finish (each completion wakes the background thread).
  std::map<std::string, int> in_flight = tasks_->InFlightPerServer();
  {
    SharedLock l(state_mu_);
    auto want = [&](TabletRpcTasks::Kind kind, const std::string& uuid, const std::string& tablet) {
      needed.insert({kind, uuid, tablet});
      int& sending = in_flight[uuid];
      if (sending >= FLAGS_master_max_tablet_rpcs_per_ts) return (Want*)nullptr;
      if (!tasks_->IsDue({kind, uuid, tablet}, now)) return (Want*)nullptr;
      auto ts = ts_manager_->Lookup(uuid);
      if (!ts || !ts->live || ts->RpcAddressString().empty()) return (Want*)nullptr;
      sending++;
      wants.push_back(Want{ts->RpcAddressString(), {}, {}, kind == TabletRpcTasks::Kind::kCreate});
      return &wants.back();
    };
    for (const auto& id : pending_tablets_) {
      const TabletInfo& t = *tablets_.at(id);
      const TabletStatePB st = t.pb.state();
      if (st == TABLET_CREATING || st == TABLET_RUNNING) {
        if (AllConfirmed(t.pb, t.confirmed)) continue;
        // Every replica gets the same Raft configuration; wait until every server's
        // address is known (after a master restart, until they all registered).
        google::protobuf::RepeatedPtrField<tserver::RaftPeerPB> peers;
        for (const auto& uuid : t.pb.replica_uuids()) {
          auto ts = ts_manager_->Lookup(uuid);
          if (!ts || ts->registration.rpc_addresses_size() == 0) break;
          auto* peer = peers.Add();
          peer->set_permanent_uuid(uuid);
          peer->set_host(ts->registration.rpc_addresses(0).host());
          peer->set_port(ts->registration.rpc_addresses(0).port());
        }
        if (peers.size() != t.pb.replica_uuids_size()) continue;
        const TableInfo& table = *tables_.at(t.pb.table_id());
        // The first replica campaigns as soon as it is created: it is created once
        // enough of the others are to vote for it (a majority with itself), so that
        // the leader is the one placement chose, not whichever replica's election
        // timer fires first after its campaign went unanswered.
        const int n = t.pb.replica_uuids_size();
        int others_confirmed = 0;
        for (int i = 1; i < n; i++)
          others_confirmed += int(t.confirmed.count(t.pb.replica_uuids(i)));
        const bool first_may_start = st != TABLET_CREATING || others_confirmed >= n / 2;
        for (int i = 0; i < n; i++) {
          const std::string& uuid = t.pb.replica_uuids(i);
          if (t.confirmed.count(uuid)) continue;
          if (i == 0 && !first_may_start) continue;
          Want* w = want(TabletRpcTasks::Kind::kCreate, uuid, id);
          if (!w) continue;
          w->create.set_dest_uuid(uuid);
          w->create.set_table_id(table.id);
          w->create.set_table_name(table.pb.name());
          w->create.set_tablet_id(id);
          *w->create.mutable_partition() = t.pb.partition();
          *w->create.mutable_schema() = table.pb.schema();
          *w->create.mutable_partition_schema() = table.pb.partition_schema();
          *w->create.mutable_peers() = peers;
        }
      } else if (st == TABLET_DELETED || st == TABLET_REPLACED) {
        for (const auto& uuid : t.Members()) {
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
  const bool full = !report.is_incremental();
  if (!full && report.updated_tablets().empty() && report.removed_tablet_ids().empty()) return;
  std::vector<std::string> with_leader;  // CREATING tablets that now have a leader
  std::vector<std::string> to_follow;    // tablets whose leader reports a new configuration
  bool wake = false;                     // new orphans or leftovers
  const MonoTime now = MonoTime::Now();
  {
    // Reports change what locations say (roles, leaders): exclusive. Incremental
    // reports carry only changed tablets, so this is rare.
    ExclusiveLock l(state_mu_);
    std::set<std::string> reported;
    for (const auto& rt : report.updated_tablets()) {
      reported.insert(rt.tablet_id());
      auto it = tablets_.find(rt.tablet_id());
      const TabletStatePB st = it == tablets_.end() ? TABLET_UNKNOWN : it->second->pb.state();
      if (st == TABLET_RUNNING && !it->second->IsMember(uuid)) {
        // Outside the configuration the catalog holds: a learner its leader has not
        // reported yet, a leader the master has not followed yet, or a leftover.
        TabletInfo& t = *it->second;
        NoteNonMemberReportLocked(t, uuid, rt);
        const bool running = rt.state() == TABLET_RUNNING;
        SetReplicaStateLocked(&t, uuid, running ? &rt.consensus() : nullptr);
        if (running && uuid == t.leader_uuid) {
          NoteLeaderReportLocked(&t, rt.consensus(), now);
          if (unfollowed_.count(t.id)) to_follow.push_back(t.id);
        }
        wake = true;
        continue;
      }
      const bool ours =
          (st == TABLET_CREATING || st == TABLET_RUNNING) && it->second->IsMember(uuid);
      if (!ours) {
        if (rt.state() != TABLET_DELETED && orphans_.emplace(uuid, rt.tablet_id()).second) {
          LOG(INFO) << "tablet server " << uuid << " reported tablet " << rt.tablet_id()
                    << " it should not have; deleting it there";
          wake = true;
        }
        continue;
      }
      TabletInfo& t = *it->second;
      if (rt.state() == TABLET_RUNNING) {
        // A replica applies only committed entries: the tablet has that version.
        t.schema_version = std::max(t.schema_version, rt.schema_version());
        ConfirmReplicaLocked(&t, uuid);
        SetReplicaStateLocked(&t, uuid, &rt.consensus());
        if (rt.has_stats()) t.replica_stats[uuid] = rt.stats();
        if (uuid == t.leader_uuid) {
          NoteLeaderReportLocked(&t, rt.consensus(), now);
          if (unfollowed_.count(t.id)) to_follow.push_back(t.id);
        }
        if (t.pb.state() == TABLET_CREATING && !t.leader_uuid.empty()) {
          with_leader.push_back(t.id);
        }
      } else {
        SetReplicaStateLocked(&t, uuid, nullptr);
        t.replica_stats.erase(uuid);
        if (rt.state() == TABLET_FAILED) {
          LOG(WARNING) << "tablet " << rt.tablet_id() << " failed on " << uuid << ": "
                       << rt.error().message();
        }
      }
    }
    for (const auto& id : report.removed_tablet_ids()) {
      leftovers_.erase({uuid, id});
      auto it = tablets_.find(id);
      if (it != tablets_.end()) {
        SetReplicaStateLocked(it->second.get(), uuid, nullptr);
        it->second->replica_stats.erase(uuid);
      }
    }
    if (full) {
      // What the server no longer lists, it no longer reports on.
      for (auto& [id, t] : tablets_) {
        if (!reported.count(id) && t->replica_states.count(uuid)) {
          SetReplicaStateLocked(t.get(), uuid, nullptr);
        }
        if (!reported.count(id)) t->replica_stats.erase(uuid);
      }
      for (auto it = leftovers_.begin(); it != leftovers_.end();) {
        const bool gone = it->first.first == uuid && !reported.count(it->first.second);
        it = gone ? leftovers_.erase(it) : std::next(it);
      }
    }
  }
  WARN_NOT_OK(MarkTabletsRunning(with_leader), "marking reported tablets running");
  WARN_NOT_OK(FollowConfigs(to_follow), "following reported configurations");
  if (wake) tasks_->Wake();
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
  if (!out.error.ok()) {
    SetError(MasterErrorPB::INVALID_ARGUMENT, out.error, resp->mutable_error());
    return;
  }
  if (out.needs_exclusive) {
    // A change answers can see: purge the server's tables first, atomically with it.
    ExclusiveLock l(state_mu_);
    for (const auto& table_id : TablesOnServerLocked(uuid)) InvalidateLocked(table_id);
    out = ts_manager_->Heartbeat(req, now, true);
  }
  if (!out.error.ok()) {
    SetError(MasterErrorPB::INVALID_ARGUMENT, out.error, resp->mutable_error());
    return;
  }
  resp->set_needs_reregister(out.needs_reregister);
  resp->set_needs_full_tablet_report(out.needs_full_report);
  if (out.process_report) {
    ProcessTabletReport(uuid, req.tablet_report());
    resp->set_acked_report_sequence_number(req.tablet_report().sequence_number());
  }
  // The replacement of a replica waits on this server's view of a tablet it leads.
  if (TakeFullReportRequest(uuid)) resp->set_needs_full_tablet_report(true);
  // Where this server's consensus transport reaches the other replicas.
  for (auto& info : ts_manager_->AllTSInfos()) *resp->add_tablet_servers() = std::move(info);
}

}  // namespace nyala::master
