#include "master/replica_replacement.h"

#include <algorithm>

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
  const FollowerStatusPB* f = FollowerOf(leader, uuid);
  return f != nullptr && f->state() == FollowerStatusPB::REPLICATE &&
         f->match_index() >= leader.committed_index();
}

ReplacementDecision DecideReplacement(const ReplacementInput& in) {
  const int n = int(in.voters.size());
  std::vector<std::string> failed;  // the one being replaced first
  int up = 0;
  for (const auto& v : in.voters) {
    const ServerHealth h = HealthOf(in, v);
    if (h == ServerHealth::kFailed) {
      if (v == in.replacing) {
        failed.insert(failed.begin(), v);
      } else {
        failed.push_back(v);
      }
    }
    up += h == ServerHealth::kUp ? 1 : 0;
  }
  const std::string failed0 = failed.empty() ? "" : failed[0];
  // A learner has a purpose while a voter is to be replaced or missing.
  const bool purpose = !failed.empty() || n < in.replication_factor;

  // 1. A leader to ask.
  if (in.leader_uuid.empty() || in.leader_state == nullptr ||
      HealthOf(in, in.leader_uuid) != ServerHealth::kUp) {
    if (!purpose) return {};
    return Decision(ReplacementPB::WAITING, failed0, "",
                    "no leader known: waiting for one to be elected and to report");
  }
  // 2. One change at a time.
  if (in.pending) return DescribePending(in, failed0);
  // 3. A change commits only with a majority of the voters.
  if (up < n / 2 + 1) {
    return Decision(ReplacementPB::WAITING, failed0, "",
                    std::to_string(up) + " of " + std::to_string(n) +
                        " voters up, fewer than a majority: no change can commit until an "
                        "operator brings voters back");
  }
  // 4. A learner that cannot finish.
  for (const auto& l : in.learners) {
    const bool dead = HealthOf(in, l) == ServerHealth::kFailed;
    if (dead || in.stalled_learners.count(l)) {
      return Decision(
          ReplacementPB::REMOVING_LEARNER, failed0, "",
          "removing learner " + l + (dead ? ": its tablet server failed" : ": it made no progress"),
          Action::kRemovePeer, l);
    }
  }
  // 5. The last step: a voter too many, the failed one (or the one being replaced,
  // should it have come back meanwhile).
  if (n > in.replication_factor) {
    std::string victim = failed0;
    if (victim.empty() && Contains(in.voters, in.replacing)) victim = in.replacing;
    if (!victim.empty() && victim != in.leader_uuid) {
      const std::string fresh =
          victim == in.replacing && Contains(in.voters, in.replacement) ? in.replacement : "";
      return Decision(ReplacementPB::REMOVING, victim, fresh, "removing " + victim,
                      Action::kRemovePeer, victim);
    }
  }
  if (!in.learners.empty()) {
    // 6, 7. A learner that replaces a voter: promoted once caught up.
    if (purpose) {
      for (const auto& l : in.learners) {
        if (LearnerCaughtUp(*in.leader_state, l)) {
          return Decision(ReplacementPB::PROMOTING, failed0, l, "promoting",
                          Action::kPromoteLearner, l);
        }
      }
      const std::string& l =
          Contains(in.learners, in.replacement) ? in.replacement : in.learners.front();
      return Decision(ReplacementPB::ADDING_LEARNER, failed0, l,
                      "adding learner (" + CatchUpText(*in.leader_state, l) + ")");
    }
    // 8. The master's own learner, not needed (the voter it was to replace came back).
    if (up == n && Contains(in.learners, in.replacement)) {
      const std::string& l = in.replacement;
      return Decision(ReplacementPB::REMOVING_LEARNER, "", "",
                      "removing learner " + l + ": no voter to replace", Action::kRemovePeer, l);
    }
  }
  // 9. A new replica.
  const int not_failed = n - int(failed.size());
  if (not_failed + int(in.learners.size()) < in.replication_factor) {
    return Decision(ReplacementPB::ADDING_LEARNER, failed0, "",
                    "choosing a tablet server for a new replica", Action::kAddLearner);
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
