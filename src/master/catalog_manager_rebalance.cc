// CatalogManager::Rebalance: the catalog's view for rebalancer.h, and starting the
// plan: each replica move becomes the tablet's TabletInfo::move (carried out by the
// background thread, catalog_manager_replicas.cc), each leadership transfer a
// LeaderStepDown to the tablet's leader.
#include <glog/logging.h>

#include "master/catalog_manager.h"
#include "master/rebalancer.h"

namespace nyala::master {

void CatalogManager::Rebalance(const RebalanceRequestPB& req, RebalanceResponsePB* resp) {
  constexpr int kDefaultMaxMoves = 5;
  const MonoTime now = MonoTime::Now();
  const HealthSnapshot h = TakeHealthSnapshot(now);
  struct Transfer {
    std::string address;
    tserver::LeaderStepDownRequestPB req;
  };
  std::vector<Transfer> transfers;
  {
    MutexLock w(write_mu_);
    ExclusiveLock l(state_mu_);  // the moves are recorded in the tablets
    RebalanceInput in;
    for (const auto& [uuid, lv] : h.servers) {
      if (!lv.rpc_address.empty() && HealthLocked(h, uuid) == ServerHealth::kUp &&
          !InMaintenanceLocked(uuid) && !DecommissioningLocked(uuid)) {
        in.servers.insert(uuid);
      }
    }
    int in_progress = 0;
    for (const auto& [id, tp] : tablets_) {
      const TabletInfo& t = *tp;
      if (t.pb.state() != TABLET_RUNNING) continue;
      RebalanceTablet rt;
      rt.id = id;
      rt.table_id = t.pb.table_id();
      rt.voters.assign(t.pb.replica_uuids().begin(), t.pb.replica_uuids().end());
      rt.learners.assign(t.pb.learner_uuids().begin(), t.pb.learner_uuids().end());
      rt.leader = t.leader_uuid;
      const bool moving = t.move && t.IsMember(t.move->from);
      if (moving) {
        rt.moving_from = t.move->from;
        rt.moving_to = t.move->to;
      }
      rt.busy = moving || t.change || !t.replacing.empty() || !rt.learners.empty() ||
                t.leader_uuid.empty();
      for (const auto& m : t.Members()) {
        rt.busy = rt.busy || HealthLocked(h, m) != ServerHealth::kUp || DecommissioningLocked(m);
      }
      in_progress += moving || !rt.learners.empty() ? 1 : 0;
      in.tablets.push_back(std::move(rt));
    }
    const int max_moves = req.max_moves() > 0 ? req.max_moves() : kDefaultMaxMoves;
    in.max_moves = std::max(0, max_moves - in_progress);
    in.leaders = !req.no_leaders();
    const RebalancePlan plan = PlanRebalance(in);

    auto add = [&](google::protobuf::RepeatedPtrField<RebalanceResponsePB::MovePB>* out,
                   const PlannedMove& m) REQUIRES_SHARED(state_mu_) {
      auto* pb = out->Add();
      pb->set_tablet_id(m.tablet_id);
      auto table = tables_.find(m.table_id);
      if (table != tables_.end()) pb->set_table_name(table->second->pb.name());
      pb->set_from_uuid(m.from);
      pb->set_to_uuid(m.to);
    };
    for (const auto& m : plan.moves) add(resp->mutable_moves(), m);
    for (const auto& m : plan.leader_transfers) add(resp->mutable_leader_transfers(), m);
    auto loads = [](google::protobuf::RepeatedPtrField<RebalanceResponsePB::ServerLoadPB>* out,
                    const std::map<std::string, ServerLoad>& from) {
      for (const auto& [uuid, l] : from) {
        auto* pb = out->Add();
        pb->set_uuid(uuid);
        pb->set_replicas(l.replicas);
        pb->set_leaders(l.leaders);
      }
    };
    loads(resp->mutable_before(), plan.before);
    loads(resp->mutable_after(), plan.after);
    resp->set_moves_in_progress(in_progress);
    resp->set_balanced(in_progress == 0 && plan.moves.empty() && plan.leader_transfers.empty());
    if (req.dry_run()) return;

    for (const auto& m : plan.moves) {
      TabletInfo& t = *tablets_.at(m.tablet_id);
      t.move = TabletInfo::Move{m.from, m.to};
      LOG(INFO) << "tablet " << t.id << ": rebalancing moves its replica off " << m.from << " to "
                << m.to;
    }
    for (const auto& m : plan.leader_transfers) {
      TabletInfo& t = *tablets_.at(m.tablet_id);
      auto srv = h.servers.find(m.from);
      if (srv == h.servers.end() || srv->second.rpc_address.empty()) continue;
      Transfer tr;
      tr.address = srv->second.rpc_address;
      tr.req.set_dest_uuid(m.from);
      tr.req.set_tablet_id(t.id);
      tr.req.set_new_leader_uuid(m.to);
      transfers.push_back(std::move(tr));
      LOG(INFO) << "tablet " << t.id << ": rebalancing hands leadership from " << m.from << " to "
                << m.to;
    }
  }
  for (Transfer& tr : transfers) tasks_->SendStepDown(tr.address, std::move(tr.req), now);
  tasks_->Wake();
}

}  // namespace nyala::master
