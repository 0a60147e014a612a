// `nyala cluster ksck`'s verdicts: how healthy one tablet is, from the view of its
// replicas that cluster_admin.h gathers (the tablet servers asked), and the exit code
// of the whole check. Pure functions: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/cluster_admin.h"

namespace nyala::tools {

enum class TabletHealth {
  kHealthy,          // a leader, and every replica reachable, running and caught up
  kUnderReplicated,  // a leader and a majority, but some replica down, missing or lagging
  kUnavailable,      // no leader, or fewer than a majority of the voters running
};
const char* TabletHealthName(TabletHealth h);  // HEALTHY, UNDER_REPLICATED, UNAVAILABLE

struct TabletVerdict {
  TabletHealth health = TabletHealth::kHealthy;
  // Why it is not healthy, one line each ("replica on <uuid> (<address>) is DEAD").
  std::vector<std::string> reasons;
};

// A replica running more than `max_lag` entries behind its leader counts as lagging.
TabletVerdict CheckTablet(const TabletView& t, int64_t max_lag);

// The exit codes of `nyala cluster ksck`.
constexpr int kKsckHealthy = 0;
constexpr int kKsckError = 1;             // the check could not run (master unreachable...)
constexpr int kKsckUnderReplicated = 3;   // some tablet under-replicated or server dead
constexpr int kKsckUnavailable = 4;       // some tablet unavailable
constexpr int kKsckChecksumMismatch = 5;  // --checksum_scan: replicas of a tablet disagree

// The exit code for a check that found these verdicts and `dead_servers` dead tablet
// servers: the worst wins.
int KsckExitCode(const std::vector<TabletVerdict>& verdicts, int dead_servers);

}  // namespace nyala::tools
