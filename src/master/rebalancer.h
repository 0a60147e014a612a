// Planning a rebalance (`nyala cluster rebalance`): which replicas to move, and which
// leaders to hand over, so that every tablet server that can hold replicas holds about
// as many as the others, and leads about as many tablets. A pure function of the
// catalog's view; the catalog manager (catalog_manager_rebalance.cc) gathers the
// input, starts the moves (each a 3-4-3 move through a learner, as replica_replacement.h
// decides) and sends the leadership transfers.
//
// The plan, for servers S (live, not in maintenance, not decommissioning):
//   1. Replicas. While the server with the most replicas holds at least two more than
//      the one with the fewest, move one replica from a server with more to one with
//      fewer: of a tablet that is not busy (see RebalanceTablet), that has a voter on
//      the first and no member on the second; of those, the tablet whose table is most
//      uneven between the two, then one whose leader is elsewhere. At most `max_moves`.
//   2. Leaders, only when step 1 plans nothing and nothing is busy moving: while the
//      server leading the most tablets leads at least two more than the one leading the
//      fewest, hand the leadership of one of its tablets to a voter on the other.
//      At most `max_moves` transfers.
// A move in progress counts as done (its replica is counted on its target), so calling
// again while moves run plans no move twice. Replicas on servers outside S are counted
// nowhere: they are neither moved (a decommission or a replacement moves them) nor
// targets.
//
// Thread-compatible: pure functions.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace nyala::master {

struct RebalanceTablet {
  std::string id;
  std::string table_id;
  std::vector<std::string> voters;
  std::vector<std::string> learners;
  std::string leader;  // "" when none is known
  // Changing its configuration already (a move, a replacement, a pending change), a
  // member's server not up, or no leader known: nothing is planned for it.
  bool busy = false;
  // A move in progress, counted as done ("" when none).
  std::string moving_from;
  std::string moving_to;
};

struct RebalanceInput {
  std::set<std::string> servers;  // S
  std::vector<RebalanceTablet> tablets;
  int max_moves = 5;
  bool leaders = true;  // plan leadership transfers (step 2)
};

struct PlannedMove {
  std::string tablet_id;
  std::string table_id;
  std::string from;
  std::string to;
};

struct ServerLoad {
  int replicas = 0;
  int leaders = 0;
};

struct RebalancePlan {
  std::vector<PlannedMove> moves;
  std::vector<PlannedMove> leader_transfers;  // from: the leader, to: the new one
  std::map<std::string, ServerLoad> before;   // of every server in S
  std::map<std::string, ServerLoad> after;    // once the plan is carried out
};

RebalancePlan PlanRebalance(const RebalanceInput& in);

}  // namespace nyala::master
