#include "master/replica_replacement.h"

#include <algorithm>

#include "consensus/raft.h"

namespace nyala::master {

namespace {

using Action = ReplacementDecision::Action;

ServerHealth HealthOf(const ReplacementInput& in, const std::string& uuid) {
  auto it = in.health.find(uuid);
  return it == in.health.end() ? ServerHealth::kUp : it->second;
}

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

const FollowerStatusPB* FollowerOf(const ConsensusStatePB& leader, const std::string& uuid) {
  for (const auto& f : leader.followers()) {
    if (f.uuid() == uuid) return &f;
  }
  return nullptr;
}

ReplacementDecision Decision(ReplacementPB::Step step, const std::string& failed,
                             const std::string& fresh, const std::string& what,
                             Action action = Action::kNone, const std::string& peer = "") {
  ReplacementDecision d;
  d.action = action;
  d.peer_uuid = peer;
  d.status.set_step(step);
  d.status.set_failed_uuid(failed);
  d.status.set_new_uuid(fresh);
  d.status.set_description(DescribeReplacement(failed, fresh, what));
  return d;
}

// How the leader last saw learner `uuid`: "probing at index 3 of 10", "not seen yet".
std::string CatchUpText(const ConsensusStatePB& leader, const std::string& uuid) {
  const FollowerStatusPB* f = FollowerOf(leader, uuid);
  if (f == nullptr) return "not in the leader's report yet";
  static const char* const kWords[] = {"probing", "replicating", "needs a copy",
                                       "catching up from the log on disk"};
  const int s = int(f->state());
  const std::string word = s >= 0 && s < 4 ? kWords[s] : "unknown state";
  return word + ", at index " + std::to_string(f->match_index()) + " of " +
         std::to_string(leader.committed_index()) + " committed";
}

// The decision while the change the master asked for is not yet reported.
ReplacementDecision DescribePending(const ReplacementInput& in, const std::string& failed) {
  const PendingChange& p = *in.pending;
  switch (p.type) {
    case tserver::ADD_LEARNER:
      return Decision(ReplacementPB::ADDING_LEARNER, failed, p.peer_uuid, "adding learner");
    case tserver::PROMOTE_LEARNER:
      return Decision(ReplacementPB::PROMOTING, failed, p.peer_uuid, "promoting");
    case tserver::REMOVE_PEER:
      if (Contains(in.learners, p.peer_uuid)) {
        return Decision(ReplacementPB::REMOVING_LEARNER, failed, "",
                        "removing learner " + p.peer_uuid);
      }
      return Decision(ReplacementPB::REMOVING, p.peer_uuid,
                      p.peer_uuid == in.replacing ? in.replacement : "", "removing " + p.peer_uuid);
    default:
      return Decision(ReplacementPB::WAITING, failed, "", "a configuration change is pending");
  }
}

}  // namespace

std::string DescribeReplacement(const std::string& failed_uuid, const std::string& new_uuid,
                                const std::string& what) {
  if (!failed_uuid.empty() && !new_uuid.empty()) {
    return "replacing " + failed_uuid + " by " + new_uuid + ": " + what;
  }
  if (!failed_uuid.empty()) return "replacing " + failed_uuid + ": " + what;
  if (!new_uuid.empty()) return "new replica " + new_uuid + ": " + what;
  return what;
}

bool LearnerCaughtUp(const ConsensusStatePB& leader, const std::string& uuid) {
  // As the leader's Raft judges it (consensus/raft.h): within kPromoteMaxLagEntries
  // while it replicates. The leader has the last word; a report is a moment's view.
  const FollowerStatusPB* f = FollowerOf(leader, uuid);
  return f != nullptr && f->state() == FollowerStatusPB::REPLICATE &&
         f->match_index() + consensus::kPromoteMaxLagEntries >= leader.committed_index();
}

ReplacementDecision DecideReplacement(const ReplacementInput& in) {
  const int n = int(in.voters.size());
  const int rf = in.replication_factor;
  // The voters to be replaced, the one the master started on first, then the failed
  // ones, then the leaving ones.
  std::vector<std::string> doomed;
  int up = 0;
  for (const auto& v : in.voters) {
    const ServerHealth h = HealthOf(in, v);
    if (h == ServerHealth::kFailed || in.leaving.count(v)) {
      if (v == in.replacing) {
        doomed.insert(doomed.begin(), v);
      } else if (h == ServerHealth::kFailed) {
        auto after_failed = std::find_if(doomed.begin(), doomed.end(), [&](const std::string& d) {
          return d != in.replacing && HealthOf(in, d) != ServerHealth::kFailed;
        });
        doomed.insert(after_failed, v);
      } else {
        doomed.push_back(v);
      }
    }
    up += h == ServerHealth::kUp ? 1 : 0;
  }
  const std::string doomed0 = doomed.empty() ? "" : doomed[0];
  // A learner has a purpose while a voter is to be replaced or missing.
  const bool purpose = !doomed.empty() || n < rf;

  // 1. A leader to ask.
  if (in.leader_uuid.empty() || in.leader_state == nullptr ||
      HealthOf(in, in.leader_uuid) != ServerHealth::kUp) {
    if (!purpose && n <= rf) return {};
    return Decision(ReplacementPB::WAITING, doomed0, "",
                    "no leader known: waiting for one to be elected and to report");
  }
  // 2. One change at a time.
  if (in.pending) return DescribePending(in, doomed0);
  // 3. A change commits only with a majority of the voters.
  if (up < n / 2 + 1) {
    return Decision(ReplacementPB::WAITING, doomed0, "",
                    std::to_string(up) + " of " + std::to_string(n) +
                        " voters up, fewer than a majority: no change can commit until an "
                        "operator brings voters back");
  }
  // 4. A learner that cannot finish, or that is to go.
  for (const auto& l : in.learners) {
    const bool dead = HealthOf(in, l) == ServerHealth::kFailed;
    if (dead || in.stalled_learners.count(l) || in.leaving.count(l)) {
      const std::string why = dead                           ? ": its tablet server failed"
                              : in.stalled_learners.count(l) ? ": it made no progress"
                                                             : ": it is moved away";
      return Decision(ReplacementPB::REMOVING_LEARNER, doomed0, "", "removing learner " + l + why,
                      Action::kRemovePeer, l);
    }
  }
  // 5. A voter too many: the last step of a replacement, or a lowered RF.
  if (n > rf) {
    std::string victim = doomed0;
    std::string why;
    if (victim.empty() && Contains(in.voters, in.replacing)) victim = in.replacing;
    if (victim.empty()) {
      why = ": " + std::to_string(n) + " voters, replication factor " + std::to_string(rf);
      for (const auto& v : in.voters) {
        if (HealthOf(in, v) != ServerHealth::kUp) {
          victim = v;
          break;
        }
      }
    }
    if (victim.empty()) {
      int64_t most = -1;  // ties: the later voter, the newer one
      for (const auto& v : in.voters) {
        auto l = in.loads.find(v);
        const int64_t load = l == in.loads.end() ? 0 : l->second;
        if (v != in.leader_uuid && load >= most) {
          most = load;
          victim = v;
        }
      }
    }
    const std::string fresh =
        victim == in.replacing && Contains(in.voters, in.replacement) ? in.replacement : "";
    if (victim == in.leader_uuid) {
      // Leadership goes first, to a voter that stays, is up and caught up.
      for (const auto& v : in.voters) {
        if (v == victim || in.leaving.count(v) || HealthOf(in, v) != ServerHealth::kUp) continue;
        const FollowerStatusPB* f = FollowerOf(*in.leader_state, v);
        if (f == nullptr || f->state() != FollowerStatusPB::REPLICATE) continue;
        return Decision(ReplacementPB::TRANSFERRING_LEADERSHIP, victim, fresh,
                        "handing leadership to " + v + " before removing " + victim,
                        Action::kTransferLeadership, v);
      }
      return Decision(ReplacementPB::WAITING, victim, fresh,
                      "waiting for a voter to hand leadership to before removing " + victim);
    }
    if (!victim.empty()) {
      // A voter too many replaces nobody.
      return Decision(ReplacementPB::REMOVING, why.empty() ? victim : "", fresh,
                      "removing " + victim + why, Action::kRemovePeer, victim);
    }
  }
  // 6. A learner that replaces a voter: promoted once caught up.
  if (purpose) {
    for (const auto& l : in.learners) {
      if (LearnerCaughtUp(*in.leader_state, l)) {
        return Decision(ReplacementPB::PROMOTING, doomed0, l, "promoting", Action::kPromoteLearner,
                        l);
      }
    }
  }
  // 7. A new replica, while the others copy.
  if (n - int(doomed.size()) + int(in.learners.size()) < rf) {
    return Decision(ReplacementPB::ADDING_LEARNER, doomed0, "",
                    "choosing a tablet server for a new replica", Action::kAddLearner);
  }
  if (!in.learners.empty()) {
    // 8. It catches up.
    if (purpose) {
      const std::string& l =
          Contains(in.learners, in.replacement) ? in.replacement : in.learners.front();
      return Decision(ReplacementPB::ADDING_LEARNER, doomed0, l,
                      "adding learner (" + CatchUpText(*in.leader_state, l) + ")");
    }
    // 9. The master's own learner, not needed (the voter it was to replace came back,
    // or an operator filled the missing voter meanwhile).
    if (up == n && n >= rf) {
      for (const auto& l : in.learners) {
        if (l != in.replacement && !in.own_learners.count(l)) continue;
        return Decision(ReplacementPB::REMOVING_LEARNER, "", "",
                        "removing learner " + l + ": no voter to replace", Action::kRemovePeer, l);
      }
    }
  }
  // 10. Nothing to do; say why a learner or a down voter waits.
  for (const auto& v : in.voters) {
    const ServerHealth h = HealthOf(in, v);
    if (h == ServerHealth::kUp) continue;
    const std::string why = h == ServerHealth::kMaintenance
                                ? "its tablet server is in maintenance mode"
                                : "its tablet server is down, not failed yet";
    if (!in.learners.empty()) {
      return Decision(
          ReplacementPB::WAITING, "", in.learners.front(),
          "waiting: voter " + v + " is down but " +
              (h == ServerHealth::kMaintenance ? "in maintenance mode" : "not failed yet"));
    }
    if (h == ServerHealth::kMaintenance) {
      return Decision(ReplacementPB::WAITING, "", "", "not replacing " + v + ": " + why);
    }
  }
  return {};
}

}  // namespace nyala::master
