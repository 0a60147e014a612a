// CatalogManager: tablets' Raft configurations and their changes. Following the
// configuration each tablet's leader reports (FollowConfigs), replacing failed
// replicas (ReplaceFailedReplicas, deciding with replica_replacement.h), tombstoning
// replicas left outside their tablet's configuration, and the operators' calls about
// tablet servers (unregistering, maintenance mode).
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>

#include "common/flag_tags.h"
#include "common/status.h"
#include "master/catalog_manager.h"

DEFINE_int32(follower_unavailable_considered_failed_sec, 300,
             "A tablet server that sends no heartbeat for this long is failed: the master "
             "replaces its replicas (unless it is in maintenance mode). A learner on a failed "
             "server, or one whose catch-up makes no progress for this long, is removed and "
             "another server chosen.");
DEFINE_validator(follower_unavailable_considered_failed_sec,
                 [](const char*, int32_t v) { return v > 0; });
TAG_FLAG(follower_unavailable_considered_failed_sec, runtime);
DEFINE_int32(max_concurrent_tablet_copies, 2,
             "Learners the master adds on one tablet server at a time while replacing failed "
             "replicas (each one copies its tablet there); the other replacements wait.");
DEFINE_validator(max_concurrent_tablet_copies, [](const char*, int32_t v) { return v > 0; });
TAG_FLAG(max_concurrent_tablet_copies, runtime);

DECLARE_int32(max_num_replicas);

namespace nyala::master {

namespace {

using Action = ReplacementDecision::Action;

MonoDelta FailedAfter() {
  return MonoDelta::FromSeconds(FLAGS_follower_unavailable_considered_failed_sec);
}

// Between two full-report requests to one server: a tenth of the failure timeout,
// within [100 ms, 5 s].
MonoDelta ReportRequestInterval() {
  const int64_t ms = int64_t(FLAGS_follower_unavailable_considered_failed_sec) * 100;
  return MonoDelta::FromMilliseconds(std::clamp<int64_t>(ms, 100, 5000));
}

template <typename Voters, typename Learners>
bool Reflected(const PendingChange& c, const Voters& voters, const Learners& learners) {
  const bool voter = std::find(voters.begin(), voters.end(), c.peer_uuid) != voters.end();
  const bool learner = std::find(learners.begin(), learners.end(), c.peer_uuid) != learners.end();
  switch (c.type) {
    case tserver::ADD_LEARNER:
      return voter || learner;
    case tserver::PROMOTE_LEARNER:
      return voter;
    case tserver::REMOVE_PEER:
      return !voter && !learner;
    default:
      return true;
  }
}

bool SameSet(const google::protobuf::RepeatedPtrField<std::string>& a,
             const google::protobuf::RepeatedPtrField<std::string>& b) {
  return std::set<std::string>(a.begin(), a.end()) == std::set<std::string>(b.begin(), b.end());
}

std::string Join(const google::protobuf::RepeatedPtrField<std::string>& v) {
  std::string out = "[";
  for (const auto& s : v) out += (out.size() > 1 ? ", " : "") + s;
  return out + "]";
}

// What makes a leftover's report a new one: its state, role, term, leader and
// configuration, not its indexes or size.
std::string ReportKey(TabletStatePB state, const ConsensusStatePB& c) {
  return std::to_string(state) + "/" + std::to_string(c.role()) + "/" + std::to_string(c.term()) +
         "/" + c.leader_uuid() + "/" + Join(c.voter_uuids()) + Join(c.learner_uuids());
}

// The entry `t` has once it follows `leader`'s configuration: the voters kept in their
// order, new ones last; the learners as reported.
SysTabletEntryPB FollowedEntry(const SysTabletEntryPB& pb, const ConsensusStatePB& leader) {
  SysTabletEntryPB out = pb;
  out.clear_replica_uuids();
  out.clear_learner_uuids();
  const auto& reported = leader.voter_uuids();
  for (const auto& v : pb.replica_uuids()) {
    if (std::find(reported.begin(), reported.end(), v) != reported.end()) out.add_replica_uuids(v);
  }
  for (const auto& v : reported) {
    const auto& kept = pb.replica_uuids();
    if (std::find(kept.begin(), kept.end(), v) == kept.end()) out.add_replica_uuids(v);
  }
  *out.mutable_learner_uuids() = leader.learner_uuids();
  return out;
}

}  // namespace

// --- Health ----------------------------------------------------------------------------

CatalogManager::HealthSnapshot CatalogManager::TakeHealthSnapshot(MonoTime now) const {
  return HealthSnapshot{now, FailedAfter(), ts_manager_->LivenessOfAll()};
}

bool CatalogManager::InMaintenanceLocked(const std::string& uuid) const {
  auto it = tserver_states_.find(uuid);
  return it != tserver_states_.end() && it->second.state() == MAINTENANCE_MODE;
}

bool CatalogManager::DecommissioningLocked(const std::string& uuid) const {
  auto it = tserver_states_.find(uuid);
  return it != tserver_states_.end() && it->second.state() == DECOMMISSIONING;
}

ServerHealth CatalogManager::HealthLocked(const HealthSnapshot& h, const std::string& uuid) const {
  bool live = false;
  MonoDelta silent = h.now - load_time_;  // never heard from by this master instance
  auto it = h.servers.find(uuid);
  if (it != h.servers.end()) {
    live = it->second.live;
    silent = h.now - it->second.last_heartbeat;
  }
  if (live && silent <= h.failed_after) return ServerHealth::kUp;
  if (InMaintenanceLocked(uuid)) return ServerHealth::kMaintenance;
  return silent > h.failed_after ? ServerHealth::kFailed : ServerHealth::kDown;
}

ReplacementInput CatalogManager::ReplacementInputLocked(const TabletInfo& t,
                                                        const HealthSnapshot& h) const {
  ReplacementInput in;
  auto table = tables_.find(t.pb.table_id());
  in.replication_factor = table == tables_.end() ? 0 : table->second->pb.num_replicas();
  in.voters.assign(t.pb.replica_uuids().begin(), t.pb.replica_uuids().end());
  in.learners.assign(t.pb.learner_uuids().begin(), t.pb.learner_uuids().end());
  in.leader_uuid = t.leader_uuid;
  if (!t.leader_uuid.empty()) {
    auto st = t.replica_states.find(t.leader_uuid);
    if (st != t.replica_states.end()) in.leader_state = &st->second;
    in.health[t.leader_uuid] = HealthLocked(h, t.leader_uuid);
  }
  for (const auto& m : t.Members()) in.health[m] = HealthLocked(h, m);
  for (const auto& l : in.learners) {
    auto p = t.learner_progress.find(l);
    if (p == t.learner_progress.end() || in.leader_state == nullptr) continue;
    if (!LearnerCaughtUp(*in.leader_state, l) && h.now - p->second.since > h.failed_after) {
      in.stalled_learners.insert(l);
    }
  }
  in.pending = t.change;
  in.replacing = t.replacing;
  in.replacement = t.replacement;
  in.own_learners = t.own_learners;
  for (const auto& m : t.Members()) {
    if (DecommissioningLocked(m)) in.leaving.insert(m);
  }
  if (t.move && t.IsMember(t.move->from)) in.leaving.insert(t.move->from);
  if (int(in.voters.size()) > in.replication_factor) in.loads = ReplicasPerServerLocked();
  return in;
}

ReplacementPB CatalogManager::ReplacementStatusLocked(const TabletInfo& t,
                                                      const HealthSnapshot& h) const {
  ReplacementDecision d = DecideReplacement(ReplacementInputLocked(t, h));
  if (d.action != Action::kNone && t.AwaitsLeaderReport()) {
    d.status.set_step(ReplacementPB::WAITING);
    d.status.set_description(DescribeReplacement(
        d.status.failed_uuid(), "",
        t.refused_by + " answered NOT_THE_LEADER: waiting for the leader's report"));
  } else if (d.action == Action::kAddLearner && !t.no_target.empty()) {
    d.status.set_step(ReplacementPB::WAITING);
    d.status.set_description(DescribeReplacement(d.status.failed_uuid(), "", t.no_target));
  }
  return d.status;
}

// --- Following the leader's configuration ------------------------------------------------

void CatalogManager::NoteLeaderReportLocked(TabletInfo* t, const ConsensusStatePB& state,
                                            MonoTime now) {
  t->refused_by.clear();
  if (state.voter_uuids().empty()) return;  // a group without a configuration (tests)
  // One more report without each replica outside the configuration.
  auto lists = [&](const std::string& uuid) {
    return std::count(state.voter_uuids().begin(), state.voter_uuids().end(), uuid) ||
           std::count(state.learner_uuids().begin(), state.learner_uuids().end(), uuid);
  };
  for (auto& [key, e] : leftovers_) {
    if (key.second == t->id && !lists(key.first)) {
      e.leader_reports_without = std::min(e.leader_reports_without + 1, 2);
    }
  }
  // The learners' progress as the leader sees them.
  std::map<std::string, TabletInfo::LearnerProgress> progress;
  for (const auto& l : state.learner_uuids()) {
    TabletInfo::LearnerProgress p;
    for (const auto& f : state.followers()) {
      if (f.uuid() != l) continue;
      p.state = int(f.state());
      p.match_index = f.match_index();
    }
    auto old = t->learner_progress.find(l);
    const bool same = old != t->learner_progress.end() && old->second.state == p.state &&
                      old->second.match_index == p.match_index;
    p.since = same ? old->second.since : now;
    progress[l] = p;
  }
  t->learner_progress = std::move(progress);
  // A committed change the report shows is done.
  if (t->change && t->change_answered &&
      Reflected(*t->change, state.voter_uuids(), state.learner_uuids())) {
    t->change.reset();
  }
  if (t->pb.state() == TABLET_RUNNING && (!SameSet(state.voter_uuids(), t->pb.replica_uuids()) ||
                                          !SameSet(state.learner_uuids(), t->pb.learner_uuids()))) {
    unfollowed_.insert(t->id);
  }
}

void CatalogManager::NoteNonMemberReportLocked(const TabletInfo& t, const std::string& uuid,
                                               const ReportedTabletPB& rt) {
  if (rt.state() == TABLET_DELETED) {
    leftovers_.erase({uuid, t.id});
    return;
  }
  Leftover& e = leftovers_[{uuid, t.id}];
  std::string report = ReportKey(rt.state(), rt.consensus());
  if (e.report != report) {
    e.report = std::move(report);
    e.leader_reports_without = 0;  // a new report: the leader must confirm it again
    e.tombstoned = false;
  }
}

std::vector<std::string> CatalogManager::UnfollowedConfigs() const {
  SharedLock l(state_mu_);
  return {unfollowed_.begin(), unfollowed_.end()};
}

Status CatalogManager::FollowConfigs(const std::vector<std::string>& tablet_ids) {
  if (tablet_ids.empty()) return Status::OK();
  MutexLock w(write_mu_);
  SysCatalogBatch batch;
  {
    SharedLock l(state_mu_);
    for (const auto& id : tablet_ids) {
      auto it = tablets_.find(id);
      if (it == tablets_.end()) continue;
      const TabletInfo& t = *it->second;
      auto leader = t.replica_states.find(t.leader_uuid);
      if (t.pb.state() != TABLET_RUNNING || leader == t.replica_states.end() ||
          leader->second.voter_uuids().empty()) {
        continue;
      }
      SysTabletEntryPB pb = FollowedEntry(t.pb, leader->second);
      if (SameSet(pb.replica_uuids(), t.pb.replica_uuids()) &&
          SameSet(pb.learner_uuids(), t.pb.learner_uuids())) {
        continue;
      }
      batch.put_tablets.emplace_back(id, std::move(pb));
    }
  }
  if (!batch.empty()) {
    RETURN_NOT_OK_PREPEND(sys_catalog_->Write(batch), "writing reported configurations");
  }
  ExclusiveLock l(state_mu_);
  for (auto& [id, pb] : batch.put_tablets) {
    TabletInfo& t = *tablets_.at(id);
    InvalidateLocked(t.pb.table_id());
    LOG(INFO) << "tablet " << id << ": configuration now voters " << Join(pb.replica_uuids())
              << ", learners " << Join(pb.learner_uuids()) << " (was " << Join(t.pb.replica_uuids())
              << ", " << Join(t.pb.learner_uuids()) << "), as its leader " << t.leader_uuid
              << " reports in term " << t.max_term;
    // A member removed keeps what it last reported (it may never hear of its removal):
    // a leftover, tombstoned once the leader's reports confirm the removal.
    for (const auto& m : t.Members()) {
      const bool kept = std::count(pb.replica_uuids().begin(), pb.replica_uuids().end(), m) ||
                        std::count(pb.learner_uuids().begin(), pb.learner_uuids().end(), m);
      auto st = t.replica_states.find(m);
      if (!kept && st != t.replica_states.end()) {
        // The leader's report of its removal is the first without it.
        leftovers_[{m, id}] = Leftover{ReportKey(TABLET_RUNNING, st->second), 1, false};
      }
    }
    t.pb = std::move(pb);
    // The group has a leader and changes its own membership: every member holds the
    // tablet or gets a copy from the leader, and CreateTablet is no longer sent.
    for (const auto& m : t.Members()) {
      t.confirmed.insert(m);
      leftovers_.erase({m, id});
    }
    pending_tablets_.erase(id);
    if (t.change && t.change_answered &&
        Reflected(*t.change, t.pb.replica_uuids(), t.pb.learner_uuids())) {
      t.change.reset();
    }
    if (!t.replacing.empty() && !t.IsMember(t.replacing)) t.replacing.clear();
    if (t.move && !t.IsMember(t.move->from)) {
      LOG(INFO) << "tablet " << id << ": moved its replica off " << t.move->from;
      t.move.reset();
    }
    if (!t.replacement.empty() && !t.IsMember(t.replacement)) t.replacement.clear();
    std::erase_if(t.own_learners, [&](const std::string& l) {
      return !t.IsLearner(l) && !(t.change && t.change->peer_uuid == l);
    });
    t.UpdateLeader();  // who counts toward the newest term depends on the members
  }
  // Settled, unless a newer report differs again.
  for (const auto& id : tablet_ids) {
    auto it = tablets_.find(id);
    if (it == tablets_.end()) {
      unfollowed_.erase(id);
      continue;
    }
    const TabletInfo& t = *it->second;
    auto leader = t.replica_states.find(t.leader_uuid);
    const bool differs = t.pb.state() == TABLET_RUNNING && leader != t.replica_states.end() &&
                         !leader->second.voter_uuids().empty() &&
                         (!SameSet(leader->second.voter_uuids(), t.pb.replica_uuids()) ||
                          !SameSet(leader->second.learner_uuids(), t.pb.learner_uuids()));
    if (!differs) unfollowed_.erase(id);
  }
  return Status::OK();
}

// --- Replacing failed replicas ---------------------------------------------------------

void CatalogManager::ReplaceFailedReplicas(MonoTime now, std::set<TabletRpcTasks::Key>* needed) {
  struct Change {
    std::string tablet_id;  // "" once dropped
    std::string leader;
    std::string address;
    std::string failed;  // the voter replaced, for an ADD_LEARNER
    std::string log;
    TabletInfo::ChangeRole role = TabletInfo::ChangeRole::kOther;
    tserver::ChangeConfigRequestPB req;
  };
  struct Tombstone {
    std::string address;
    std::string log;
    tserver::DeleteTabletRequestPB req;
  };
  struct Transfer {
    std::string tablet_id;
    std::string leader;
    std::string address;
    std::string log;
    tserver::LeaderStepDownRequestPB req;
  };
  std::vector<Transfer> transfers;
  std::vector<Change> changes;
  std::vector<Tombstone> tombstones;
  std::vector<std::string> expired;              // answered changes never reported
  std::map<std::string, std::string> no_target;  // tablet -> why no learner ("" clears)
  std::set<std::string> ask_reports;             // leaders' servers
  const HealthSnapshot h = TakeHealthSnapshot(now);
  {
    // Configurations only change under write_mu_: they stay as decided on until the
    // changes are recorded below. Leaders may change meanwhile (reports).
    MutexLock w(write_mu_);
    {
      SharedLock l(state_mu_);
      // Targets for new learners, computed once, when some tablet needs one.
      bool have_targets = false;
      ServerLoads loads;
      std::map<std::string, int> copies;  // learners being added per server
      std::set<std::string> eligible;     // up, not in maintenance, with an address
      auto compute_targets = [&]() REQUIRES_SHARED(state_mu_) {
        have_targets = true;
        loads = LiveServerLoadsLocked();
        for (const auto& [id, t] : tablets_) {
          if (t->pb.state() != TABLET_RUNNING) continue;
          for (const auto& l : t->pb.learner_uuids()) copies[l]++;
          if (t->change && t->change->type == tserver::ADD_LEARNER &&
              !t->IsMember(t->change->peer_uuid)) {
            copies[t->change->peer_uuid]++;
          }
        }
        for (const auto& [uuid, lv] : h.servers) {
          if (!lv.rpc_address.empty() && HealthLocked(h, uuid) == ServerHealth::kUp &&
              !InMaintenanceLocked(uuid) && !DecommissioningLocked(uuid)) {
            eligible.insert(uuid);
          }
        }
      };
      // Most tablets have every voter up and nothing going on: skipped at once.
      auto quiet = [&](const TabletInfo& t, int rf) REQUIRES_SHARED(state_mu_) {
        if (t.change || t.move || t.pb.learner_uuids_size() > 0 || !t.no_target.empty() ||
            t.pb.replica_uuids_size() != rf) {
          return false;
        }
        for (const auto& v : t.pb.replica_uuids()) {
          if (DecommissioningLocked(v)) return false;
          auto it = h.servers.find(v);
          if (it == h.servers.end() || !it->second.live ||
              h.now - it->second.last_heartbeat > h.failed_after) {
            return false;
          }
        }
        return true;
      };
      for (const auto& [id, tp] : tablets_) {
        const TabletInfo& t = *tp;
        if (t.pb.state() != TABLET_RUNNING) continue;
        auto table = tables_.find(t.pb.table_id());
        if (table == tables_.end() || quiet(t, table->second->pb.num_replicas())) continue;
        if (t.change && t.change_answered && now - t.change_since > h.failed_after) {
          expired.push_back(id);
          continue;
        }
        // A learner's progress and a committed change show in the leader's reports.
        if (!t.leader_uuid.empty() &&
            (t.pb.learner_uuids_size() > 0 || (t.change && t.change_answered))) {
          ask_reports.insert(t.leader_uuid);
        }
        const ReplacementDecision d = DecideReplacement(ReplacementInputLocked(t, h));
        if (d.action == Action::kNone) {
          if (!t.no_target.empty()) no_target[id] = "";
          continue;
        }
        if (t.AwaitsLeaderReport()) continue;
        if (d.action == Action::kTransferLeadership) {
          if (t.transfer_from == t.leader_uuid && now < t.transfer_until) continue;
          const TabletRpcTasks::Key key{TabletRpcTasks::Kind::kStepDown, t.leader_uuid, id};
          needed->insert(key);
          auto leader = h.servers.find(t.leader_uuid);
          if (!tasks_->IsDue(key, now) || leader == h.servers.end() ||
              leader->second.rpc_address.empty()) {
            continue;
          }
          Transfer tr;
          tr.tablet_id = id;
          tr.leader = t.leader_uuid;
          tr.address = leader->second.rpc_address;
          tr.log = d.status.description();
          tr.req.set_dest_uuid(t.leader_uuid);
          tr.req.set_tablet_id(id);
          tr.req.set_new_leader_uuid(d.peer_uuid);
          transfers.push_back(std::move(tr));
          continue;
        }
        const TabletRpcTasks::Key key{TabletRpcTasks::Kind::kChangeConfig, t.leader_uuid, id};
        needed->insert(key);
        auto leader = h.servers.find(t.leader_uuid);
        if (!tasks_->IsDue(key, now) || leader == h.servers.end() ||
            leader->second.rpc_address.empty()) {
          continue;
        }
        Change c;
        c.tablet_id = id;
        c.leader = t.leader_uuid;
        c.address = leader->second.rpc_address;
        c.failed = d.status.failed_uuid();
        c.log = d.status.description();
        c.req.set_dest_uuid(t.leader_uuid);
        c.req.set_tablet_id(id);
        std::string peer = d.peer_uuid;
        if (d.action == Action::kAddLearner) {
          if (!have_targets) compute_targets();
          std::set<std::string> candidates;
          bool any_free = false;  // a server without a replica, whatever it copies
          for (const auto& s : eligible) {
            if (t.IsMember(s) || t.replica_states.count(s) || leftovers_.count({s, id})) continue;
            any_free = true;
            if (copies[s] < FLAGS_max_concurrent_tablet_copies) candidates.insert(s);
          }
          // An operator's move names its target: it waits for that server's copies.
          const std::string wanted = t.move ? t.move->to : "";
          if (!wanted.empty() && eligible.count(wanted) && !t.IsMember(wanted) &&
              !leftovers_.count({wanted, id})) {
            candidates.clear();
            if (copies[wanted] < FLAGS_max_concurrent_tablet_copies) candidates.insert(wanted);
          }
          auto pick = PlaceReplacement(candidates, &loads, &rng_);
          if (!pick.ok()) {
            std::string why = any_free
                                  ? "every tablet server that could take a new replica is adding " +
                                        std::to_string(FLAGS_max_concurrent_tablet_copies) +
                                        " (--max_concurrent_tablet_copies) already"
                                  : "no tablet server to add a replica on (every one up and not in "
                                    "maintenance mode holds one)";
            if (t.no_target != why) no_target[id] = std::move(why);
            continue;
          }
          peer = *pick;
          copies[peer]++;
          if (!t.no_target.empty()) no_target[id] = "";
          c.req.set_type(tserver::ADD_LEARNER);
          // Another learner for the same failed voter (the last one failed or stalled)
          // goes on with its replacement.
          c.role = c.failed.empty() || c.failed == t.replacing
                       ? TabletInfo::ChangeRole::kOther
                       : TabletInfo::ChangeRole::kStartsReplacement;
          c.log = DescribeReplacement(c.failed, peer, "adding learner");
        } else if (d.action == Action::kPromoteLearner) {
          c.req.set_type(tserver::PROMOTE_LEARNER);
        } else {
          c.req.set_type(tserver::REMOVE_PEER);
          c.role = t.IsLearner(peer) ? TabletInfo::ChangeRole::kRemovesLearner
                   : d.status.step() == ReplacementPB::REMOVING && !d.status.failed_uuid().empty()
                       ? TabletInfo::ChangeRole::kCompletesReplacement
                       : TabletInfo::ChangeRole::kOther;
        }
        tserver::RaftPeerPB* p = c.req.mutable_peer();
        p->set_permanent_uuid(peer);
        if (auto ts = ts_manager_->Lookup(peer); ts && ts->registration.rpc_addresses_size() > 0) {
          p->set_host(ts->registration.rpc_addresses(0).host());
          p->set_port(ts->registration.rpc_addresses(0).port());
        }
        changes.push_back(std::move(c));
      }

      // Replicas outside their tablet's configuration: tombstoned once two reports of
      // the leader since lack them and no change adding them is pending.
      for (const auto& [key, e] : leftovers_) {
        if (e.tombstoned) continue;
        const auto& [server, tablet_id] = key;
        auto it = tablets_.find(tablet_id);
        auto srv = h.servers.find(server);
        if (it == tablets_.end() || srv == h.servers.end() || !srv->second.live ||
            srv->second.rpc_address.empty()) {
          continue;
        }
        const TabletInfo& t = *it->second;
        const bool running = t.pb.state() == TABLET_RUNNING;
        if (running) {
          if (t.IsMember(server) || t.leader_uuid.empty() ||
              HealthLocked(h, t.leader_uuid) != ServerHealth::kUp) {
            continue;
          }
          if (t.change && t.change->type == tserver::ADD_LEARNER && t.change->peer_uuid == server) {
            continue;
          }
          if (e.leader_reports_without < 2) {
            ask_reports.insert(t.leader_uuid);
            continue;
          }
        }
        const TabletRpcTasks::Key task{TabletRpcTasks::Kind::kDelete, server, tablet_id};
        needed->insert(task);
        if (!tasks_->IsDue(task, now)) continue;
        Tombstone tb;
        tb.address = srv->second.rpc_address;
        tb.req.set_dest_uuid(server);
        tb.req.set_tablet_id(tablet_id);
        if (running) {
          // Its data goes; its consensus state stays, so it never votes as if it had
          // forgotten it.
          tb.req.set_delete_type(tserver::TABLET_DATA_TOMBSTONED);
          tb.req.set_reason("not in the tablet's configuration");
          tb.log = "tablet " + tablet_id + ": tablet server " + server +
                   " holds a replica outside the configuration (voters " +
                   Join(t.pb.replica_uuids()) + ", learners " + Join(t.pb.learner_uuids()) +
                   "); tombstoning it";
        } else {
          tb.req.set_reason("table deleted");  // since the replica was left out
          tb.log = "tablet " + tablet_id + " (" + TabletStatePB_Name(t.pb.state()) +
                   "): deleting the replica tablet server " + server + " was left with";
        }
        tombstones.push_back(std::move(tb));
      }
    }

    // Record what is about to be sent.
    if (!changes.empty() || !expired.empty() || !no_target.empty() || !transfers.empty()) {
      ExclusiveLock l(state_mu_);
      for (const Transfer& tr : transfers) {
        TabletInfo& t = *tablets_.at(tr.tablet_id);
        t.transfer_from = tr.leader;
        t.transfer_until = now + MonoDelta::FromSeconds(5);
      }
      for (const auto& id : expired) {
        TabletInfo& t = *tablets_.at(id);
        if (!t.change) continue;
        LOG(WARNING) << "tablet " << id << ": " << tserver::ChangeConfigTypePB_Name(t.change->type)
                     << " " << t.change->peer_uuid
                     << " was committed but its leader has not reported it "
                     << "within --follower_unavailable_considered_failed_sec; deciding again";
        t.change.reset();
      }
      for (const auto& [id, why] : no_target) {
        TabletInfo& t = *tablets_.at(id);
        if (!why.empty()) LOG(WARNING) << "tablet " << id << ": cannot add a replica: " << why;
        t.no_target = why;
      }
      for (Change& c : changes) {
        TabletInfo& t = *tablets_.at(c.tablet_id);
        if (t.leader_uuid != c.leader || t.change || t.AwaitsLeaderReport()) {
          c.tablet_id.clear();  // the leader changed meanwhile: decide again next pass
          continue;
        }
        t.change = PendingChange{c.req.type(), c.req.peer().permanent_uuid()};
        t.change_answered = false;
        t.change_since = now;
        t.change_leader = c.leader;
        t.change_term = t.max_term;
        t.change_role = c.role;
        if (c.req.type() == tserver::ADD_LEARNER)
          t.own_learners.insert(c.req.peer().permanent_uuid());
        if (c.req.type() == tserver::ADD_LEARNER && !c.failed.empty()) {
          t.replacing = c.failed;
          t.replacement = c.req.peer().permanent_uuid();
        }
      }
    }
  }
  for (Change& c : changes) {
    if (c.tablet_id.empty()) continue;
    LOG(INFO) << "tablet " << c.tablet_id << ": " << c.log << " (asking its leader " << c.leader
              << ")";
    tasks_->SendChangeConfig(c.address, std::move(c.req), now);
  }
  for (Tombstone& tb : tombstones) {
    LOG(INFO) << tb.log;
    tasks_->SendDelete(tb.address, std::move(tb.req), now);
  }
  for (Transfer& tr : transfers) {
    LOG(INFO) << "tablet " << tr.tablet_id << ": " << tr.log << " (asking its leader " << tr.leader
              << ")";
    tasks_->SendStepDown(tr.address, std::move(tr.req), now);
  }
  for (const auto& uuid : ask_reports) RequestFullReport(uuid, now);
}

void CatalogManager::ApplyChangeConfigResult(const TabletRpcTasks::Result& r, MonoTime now) {
  auto it = tablets_.find(r.key.tablet_id);
  if (it == tablets_.end() || !it->second->change) return;
  TabletInfo& t = *it->second;
  const PendingChange c = *t.change;
  const std::string what = tserver::ChangeConfigTypePB_Name(c.type) + " " + c.peer_uuid;
  if (!r.status.ok()) {
    t.change.reset();
    if (r.ts_error == tserver::TabletServerErrorPB::NOT_THE_LEADER) {
      // Until a leader reports: unless one did already (another leader, a newer term).
      t.refused_by = r.key.ts_uuid;
      t.refused_term = t.change_term;
      LOG(INFO) << "tablet " << t.id << ": " << what << ": " << r.key.ts_uuid
                << " no longer leads; waiting for the leader's report";
    } else {
      LOG(WARNING) << "tablet " << t.id << ": " << what << " on its leader " << r.key.ts_uuid
                   << " failed (tried again after a backoff): " << r.status.ToString();
    }
    return;
  }
  LOG(INFO) << "tablet " << t.id << ": " << what << " committed by its leader " << r.key.ts_uuid;
  switch (t.change_role) {
    case TabletInfo::ChangeRole::kStartsReplacement:
      replacements_started_->Increment();
      break;
    case TabletInfo::ChangeRole::kCompletesReplacement:
      replacements_completed_->Increment();
      break;
    case TabletInfo::ChangeRole::kRemovesLearner:
      learners_removed_->Increment();
      break;
    case TabletInfo::ChangeRole::kOther:
      break;
  }
  t.change_answered = true;
  t.change_since = now;
  auto leader = t.replica_states.find(t.leader_uuid);
  if (Reflected(c, t.pb.replica_uuids(), t.pb.learner_uuids()) ||
      (leader != t.replica_states.end() &&
       Reflected(c, leader->second.voter_uuids(), leader->second.learner_uuids()))) {
    t.change.reset();
  }
}

void CatalogManager::RequestFullReport(const std::string& uuid, MonoTime now) {
  MutexLock l(report_mu_);
  MonoTime& last = full_report_asked_[uuid];
  if (last.Initialized() && now - last < ReportRequestInterval()) return;
  last = now;
  full_report_wanted_.insert(uuid);
}

bool CatalogManager::TakeFullReportRequest(const std::string& uuid) {
  MutexLock l(report_mu_);
  return full_report_wanted_.erase(uuid) > 0;
}

// --- Operators' calls ---------------------------------------------------------------------

void CatalogManager::UnregisterTServer(const UnregisterTServerRequestPB& req,
                                       UnregisterTServerResponsePB* resp) {
  if (req.uuid().empty()) {
    SetError(MasterErrorPB::INVALID_ARGUMENT, Status::InvalidArgument("no tablet server uuid"),
             resp->mutable_error());
    return;
  }
  Status s = ts_manager_->Unregister(req.uuid(), MonoTime::Now());
  if (s.IsNotFound()) {
    SetError(MasterErrorPB::UNKNOWN_TABLET_SERVER, s, resp->mutable_error());
    return;
  }
  if (!s.ok()) {
    SetError(MasterErrorPB::TABLET_SERVER_IS_LIVE, s, resp->mutable_error());
    return;
  }
  // Its maintenance state goes with it.
  MutexLock w(write_mu_);
  {
    SharedLock l(state_mu_);
    if (!tserver_states_.count(req.uuid())) return;
  }
  SysCatalogBatch batch;
  batch.delete_tserver_states.push_back(req.uuid());
  s = sys_catalog_->Write(batch);
  if (!s.ok()) {
    SetError(MasterErrorPB::UNKNOWN_ERROR,
             s.CloneAndPrepend("unregistered, but its maintenance state stays"),
             resp->mutable_error());
    return;
  }
  ExclusiveLock l(state_mu_);
  tserver_states_.erase(req.uuid());
}

void CatalogManager::ChangeTServerState(const ChangeTServerStateRequestPB& req,
                                        ChangeTServerStateResponsePB* resp) {
  using Req = ChangeTServerStateRequestPB;
  const std::string& uuid = req.uuid();
  if (uuid.empty()) {
    SetError(MasterErrorPB::INVALID_ARGUMENT, Status::InvalidArgument("no tablet server uuid"),
             resp->mutable_error());
    return;
  }
  // The state a change enters, and the one it leaves.
  TServerStatePB enters;
  TServerStatePB leaves;
  switch (req.change()) {
    case Req::ENTER_MAINTENANCE_MODE:
      enters = MAINTENANCE_MODE;
      leaves = TSERVER_STATE_NONE;
      break;
    case Req::EXIT_MAINTENANCE_MODE:
      enters = TSERVER_STATE_NONE;
      leaves = MAINTENANCE_MODE;
      break;
    case Req::START_DECOMMISSION:
      enters = DECOMMISSIONING;
      leaves = TSERVER_STATE_NONE;
      break;
    case Req::CANCEL_DECOMMISSION:
      enters = TSERVER_STATE_NONE;
      leaves = DECOMMISSIONING;
      break;
    default:
      SetError(MasterErrorPB::INVALID_ARGUMENT,
               Status::InvalidArgument("unknown tablet server state change",
                                       std::to_string(int(req.change()))),
               resp->mutable_error());
      return;
  }
  MutexLock w(write_mu_);
  TServerStatePB now_in;
  {
    SharedLock l(state_mu_);
    auto it = tserver_states_.find(uuid);
    now_in = it == tserver_states_.end() ? TSERVER_STATE_NONE : it->second.state();
  }
  // A server in a state may be unknown (not registered since a master restart).
  if (now_in == TSERVER_STATE_NONE && !ts_manager_->Lookup(uuid)) {
    SetError(MasterErrorPB::UNKNOWN_TABLET_SERVER,
             Status::NotFound("no tablet server with this uuid is registered", uuid),
             resp->mutable_error());
    return;
  }
  if (now_in == enters) return;                                  // already so
  if (enters == TSERVER_STATE_NONE && now_in != leaves) return;  // not in the state left
  SysCatalogBatch batch;
  SysTServerStateEntryPB pb;
  if (enters != TSERVER_STATE_NONE) {
    pb.set_state(enters);
    pb.set_time_entered_micros(GetWallTimeMicros());
    batch.put_tserver_states.emplace_back(uuid, pb);
  } else {
    batch.delete_tserver_states.push_back(uuid);
  }
  Status s = sys_catalog_->Write(batch);
  if (!s.ok()) {
    SetError(MasterErrorPB::UNKNOWN_ERROR, s, resp->mutable_error());
    return;
  }
  {
    ExclusiveLock l(state_mu_);
    if (enters != TSERVER_STATE_NONE) {
      tserver_states_[uuid] = pb;
    } else {
      tserver_states_.erase(uuid);
    }
  }
  LOG(INFO) << "tablet server " << uuid << ": state " << TServerStatePB_Name(enters) << " (was "
            << TServerStatePB_Name(now_in) << ")";
  tasks_->Wake();  // replacements it held back, or its replicas' moves, may start
}

void CatalogManager::MoveReplica(const MoveReplicaRequestPB& req, MoveReplicaResponsePB* resp) {
  const HealthSnapshot h = TakeHealthSnapshot(MonoTime::Now());
  MutexLock w(write_mu_);
  ExclusiveLock l(state_mu_);
  auto it = tablets_.find(req.tablet_id());
  if (it == tablets_.end() || it->second->pb.state() != TABLET_RUNNING) {
    SetError(MasterErrorPB::TABLET_NOT_FOUND,
             Status::NotFound("no running tablet with this id", req.tablet_id()),
             resp->mutable_error());
    return;
  }
  TabletInfo& t = *it->second;
  if (!t.IsVoter(req.from_uuid())) {
    SetError(
        MasterErrorPB::INVALID_ARGUMENT,
        Status::InvalidArgument("tablet server " + req.from_uuid() + " holds no voter of tablet " +
                                t.id + ": see its replicas with `nyala tablet list`"),
        resp->mutable_error());
    return;
  }
  const std::string& to = req.to_uuid();
  if (!to.empty()) {
    if (t.IsMember(to)) {
      SetError(MasterErrorPB::INVALID_ARGUMENT,
               Status::InvalidArgument("tablet server " + to + " already holds a replica of " +
                                       "tablet " + t.id),
               resp->mutable_error());
      return;
    }
    auto srv = h.servers.find(to);
    if (srv == h.servers.end() || HealthLocked(h, to) != ServerHealth::kUp ||
        InMaintenanceLocked(to) || DecommissioningLocked(to)) {
      SetError(MasterErrorPB::UNKNOWN_TABLET_SERVER,
               Status::InvalidArgument("tablet server " + to +
                                       " cannot take a replica: it is not live, or is in "
                                       "maintenance mode or being decommissioned"),
               resp->mutable_error());
      return;
    }
  }
  if ((t.move && t.IsMember(t.move->from)) || t.change || !t.replacing.empty() ||
      t.pb.learner_uuids_size() > 0) {
    SetError(MasterErrorPB::CONFIG_CHANGE_IN_PROGRESS,
             Status::IllegalState("tablet " + t.id + " is changing its configuration already (" +
                                  ReplacementStatusLocked(t, h).description() +
                                  "): try again once `nyala tablet list` shows it done"),
             resp->mutable_error());
    return;
  }
  t.move = TabletInfo::Move{req.from_uuid(), to};
  LOG(INFO) << "tablet " << t.id << ": moving its replica off " << req.from_uuid() << " to "
            << (to.empty() ? "a server the master chooses" : to);
  tasks_->Wake();
}

void CatalogManager::SetReplicationFactor(const SetReplicationFactorRequestPB& req,
                                          SetReplicationFactorResponsePB* resp) {
  const int rf = req.num_replicas();
  if (rf < 1 || rf % 2 == 0 || rf > FLAGS_max_num_replicas) {
    SetError(MasterErrorPB::ILLEGAL_REPLICATION_FACTOR,
             Status::InvalidArgument("replication factor " + std::to_string(rf) +
                                     " is not allowed: it must be odd (an even one survives no "
                                     "more failures than the odd one below it), at least 1 and "
                                     "at most --max_num_replicas=" +
                                     std::to_string(FLAGS_max_num_replicas)),
             resp->mutable_error());
    return;
  }
  MutexLock w(write_mu_);
  SysTableEntryPB pb;
  std::string table_id;
  {
    SharedLock l(state_mu_);
    auto table = FindTableLocked(req.table());
    if (!table) {
      SetError(MasterErrorPB::TABLE_NOT_FOUND,
               Status::NotFound("no such table", req.table().table_name().empty()
                                                     ? req.table().table_id()
                                                     : req.table().table_name()),
               resp->mutable_error());
      return;
    }
    resp->set_old_num_replicas(table->pb.num_replicas());
    if (table->pb.num_replicas() == rf) return;
    int eligible = 0;
    for (const auto& [uuid, load] : LiveServerLoadsLocked()) {
      eligible += InMaintenanceLocked(uuid) ? 0 : 1;
    }
    if (rf > eligible) {
      SetError(MasterErrorPB::REPLICATION_FACTOR_TOO_HIGH,
               Status::InvalidArgument("replication factor " + std::to_string(rf) + " needs " +
                                       std::to_string(rf) +
                                       " live tablet servers that can take "
                                       "replicas, there are " +
                                       std::to_string(eligible) + ": start more tablet servers"),
               resp->mutable_error());
      return;
    }
    table_id = table->id;
    pb = table->pb;
  }
  pb.set_num_replicas(rf);
  SysCatalogBatch batch;
  batch.put_tables.emplace_back(table_id, pb);
  Status s = sys_catalog_->Write(batch);
  if (!s.ok()) {
    SetError(MasterErrorPB::UNKNOWN_ERROR, s.CloneAndPrepend("writing the table's entry"),
             resp->mutable_error());
    return;
  }
  {
    ExclusiveLock l(state_mu_);
    tables_.at(table_id)->pb = pb;
    InvalidateLocked(table_id);
  }
  LOG(INFO) << "table " << pb.name() << ": replication factor " << rf << " (was "
            << resp->old_num_replicas() << ")";
  tasks_->Wake();
}

std::map<std::string, TServerStatePB> CatalogManager::TServerStates() const {
  SharedLock l(state_mu_);
  std::map<std::string, TServerStatePB> out;
  for (const auto& [uuid, pb] : tserver_states_) out[uuid] = pb.state();
  return out;
}

}  // namespace nyala::master
