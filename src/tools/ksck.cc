#include "tools/ksck.h"

namespace nyala::tools {

const char* TabletHealthName(TabletHealth h) {
  switch (h) {
    case TabletHealth::kHealthy:
      return "HEALTHY";
    case TabletHealth::kUnderReplicated:
      return "UNDER_REPLICATED";
    case TabletHealth::kUnavailable:
      return "UNAVAILABLE";
  }
  return "UNKNOWN";
}

namespace {

std::string ReplicaName(const ReplicaView& r) {
  return "replica on " + r.ts_uuid + (r.address.empty() ? "" : " (" + r.address + ")");
}

// Why a replica that is not running is not (why its server is unreachable is said once
// per server, by the caller).
std::string NotRunningReason(const ReplicaView& r) {
  const std::string health = r.Health();
  std::string s = ReplicaName(r) + " is " + health;
  if (health == "FAILED" && !r.failure.empty()) s += ": " + r.failure;
  if (health == "NOT_HOSTED") s += ": its tablet server does not hold the tablet";
  if (health == "DEAD") s += ": the master hears no heartbeats from its tablet server";
  return s;
}

}  // namespace

TabletVerdict CheckTablet(const TabletView& t, int64_t max_lag) {
  TabletVerdict v;
  if (t.master_state != "TABLET_RUNNING") {
    v.health = TabletHealth::kUnavailable;
    v.reasons.push_back("the master has the tablet " + t.master_state);
    return v;
  }
  // Learners (replicas being added) neither vote nor count toward a majority.
  const size_t n = t.NumVoters();
  const size_t majority = n / 2 + 1;
  size_t running = 0;
  for (const ReplicaView& r : t.replicas) {
    if (r.running()) {
      running += r.learner ? 0 : 1;
    } else {
      v.reasons.push_back(NotRunningReason(r));
    }
  }
  // The master is healing it: say how far it got.
  if (!t.replacement.empty()) v.reasons.push_back(t.replacement);
  if (n < size_t(t.num_replicas)) {
    v.reasons.push_back("placed on " + std::to_string(n) + " of its " +
                        std::to_string(t.num_replicas) + " replicas");
  }
  const ReplicaView* leader = t.Leader();
  if (running < majority || leader == nullptr) {
    v.health = TabletHealth::kUnavailable;
    v.reasons.insert(v.reasons.begin(),
                     running < majority
                         ? std::to_string(running) + " of " + std::to_string(n) +
                               " replicas running: a majority (" + std::to_string(majority) +
                               ") is needed"
                         : "no leader (an election may be running, or the replicas cannot "
                           "reach each other)");
    return v;
  }
  for (const ReplicaView& r : t.replicas) {
    auto lag = t.Lag(r);
    const std::string catch_up = t.CatchUp(r);
    if (r.running() && catch_up == "needs a copy") {
      v.reasons.push_back(ReplicaName(r) + " cannot catch up: it needs a copy of the tablet " +
                          "(the leader's log no longer holds the entries it lacks" +
                          (lag ? ", " + std::to_string(*lag) + " behind" : std::string()) + ")");
    } else if (!r.copy.empty()) {
      v.reasons.push_back(ReplicaName(r) + " is " + r.copy);
    } else if (r.running() && catch_up == "catching up from the log on disk") {
      v.reasons.push_back(ReplicaName(r) + " is catching up from the leader's log on disk" +
                          (lag ? " (" + std::to_string(*lag) + " entries behind)" : std::string()));
    } else if (r.running() && lag && *lag > max_lag) {
      v.reasons.push_back(ReplicaName(r) + " lags " + std::to_string(*lag) +
                          " entries behind the leader");
    }
  }
  v.health = v.reasons.empty() ? TabletHealth::kHealthy : TabletHealth::kUnderReplicated;
  return v;
}

int KsckExitCode(const std::vector<TabletVerdict>& verdicts, int dead_servers) {
  int code = dead_servers > 0 ? kKsckUnderReplicated : kKsckHealthy;
  for (const TabletVerdict& v : verdicts) {
    if (v.health == TabletHealth::kUnavailable) return kKsckUnavailable;
    if (v.health == TabletHealth::kUnderReplicated) code = kKsckUnderReplicated;
  }
  return code;
}

}  // namespace nyala::tools
