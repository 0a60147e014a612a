// Replacing replicas (Kudu's 3-4-3 re-replication) and keeping each tablet at its
// table's replication factor: what the master does next for one tablet, as a pure
// function of what it knows of the tablet. The catalog manager
// (catalog_manager_replicas.cc) gathers the input every background pass, chooses the
// server of a new replica (placement.h, or the operator's choice for a move), sends
// the change to the tablet's leader (TabletServerAdminService.ChangeConfig, or
// LeaderStepDown) and shows the decision's status in ListTablets and on the /tables
// page. docs/consensus.md, "Replacing and moving replicas", has the operator's view.
//
// Words. A member's server is *up* when it heartbeats (within
// --tserver_unresponsive_timeout_ms and --follower_unavailable_considered_failed_sec);
// *failed* when it has sent none for --follower_unavailable_considered_failed_sec (or,
// never heard from since the master started, the master has run that long) and is not
// in maintenance mode; *down* when neither (not heard from lately, not failed yet); in
// *maintenance* when down and in maintenance mode. A member is *leaving* when an
// operator moves it away (MoveReplica, a rebalance) or its server is being
// decommissioned. A voter is *to be replaced* when failed or leaving. A learner is
// *caught up* when the leader reports it REPLICATE with a match index within
// consensus::kPromoteMaxLagEntries of the leader's committed index (as reported), and
// *stalled* when it is not caught up and the leader's view of it (state, match index)
// has not changed for the failure timeout. RF is the table's replication factor; n the
// number of voters.
//
// The rules, in order; the first that applies decides. One change at a time:
//
//   | # | condition                                            | decision                  |
//   |---|------------------------------------------------------|---------------------------|
//   | 1 | no leader known, or the leader's server not up       | wait                      |
//   | 2 | a change the master asked for is not yet in the      | wait (show that change)   |
//   |   | leader's report                                      |                           |
//   | 3 | fewer than a majority of the voters up               | wait: an operator must act|
//   | 4 | a learner whose server failed, stalled or leaving    | REMOVE_PEER the learner   |
//   | 5 | n > RF: the voter to remove is the first to be       | REMOVE_PEER that voter;   |
//   |   | replaced, else (RF lowered) a voter down, else the   | when it leads, hand       |
//   |   | voter on the most loaded server (not the leader)     | leadership away first     |
//   | 6 | a learner caught up, and a voter to be replaced or   | PROMOTE_LEARNER it        |
//   |   | n < RF                                               |                           |
//   | 7 | voters not to be replaced + learners < RF            | ADD_LEARNER (the caller   |
//   |   |                                                      | picks the server)         |
//   | 8 | a learner, and a voter to be replaced or n < RF      | wait (it catches up)      |
//   | 9 | a learner the master added, RF voters or more, every | REMOVE_PEER it (not needed)|
//   |   | voter up, none leaving (the failed one came back, or |                           |
//   |   | an operator filled the missing voter)                |                           |
//   |10 | otherwise                                            | nothing (a learner waiting|
//   |   |                                                      | on a down voter, or a     |
//   |   |                                                      | voter in maintenance, is  |
//   |   |                                                      | shown)                    |
//
// So a failed or leaving voter of RF voters is replaced by ADD_LEARNER (7),
// PROMOTE_LEARNER (6), then REMOVE_PEER of that voter (5): the voters go 3, 4, 3,
// never below RF. A raised RF adds learners (7), several copying at once, each
// promoted once caught up (6); a lowered one removes voters one at a time (5). Rule 1
// keeps a tablet whose leader failed waiting for the election of another; rule 3
// keeps the master from proposing changes that cannot commit. A learner someone else
// added (an operator) is left to them unless it fails, stalls or leaves (4); it is
// promoted (6) only when a voter is to be replaced or missing.
//
// Thread-compatible: pure functions.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "master/master.pb.h"
#include "tserver/tserver_admin.pb.h"

namespace nyala::master {

enum class ServerHealth { kUp, kDown, kFailed, kMaintenance };

// The change the master asked the leader for and does not yet see in its report.
struct PendingChange {
  tserver::ChangeConfigTypePB type = tserver::CHANGE_CONFIG_UNKNOWN;
  std::string peer_uuid;
};

struct ReplacementInput {
  int replication_factor = 0;
  std::vector<std::string> voters;    // the configuration followed, voters in catalog order
  std::vector<std::string> learners;  // ... and its learners
  std::string leader_uuid;            // "" when no leader is known
  // The leader's last report (committed index, followers); null when none.
  const ConsensusStatePB* leader_state = nullptr;
  // Of every member's server and the leader's; absent counts as kUp.
  std::map<std::string, ServerHealth> health;
  std::set<std::string> stalled_learners;
  std::optional<PendingChange> pending;
  // What the master last started: the voter it replaces and the learner it added for
  // it ("" when none, e.g. after a master restart).
  std::string replacing;
  std::string replacement;
  // Members to move away (an operator's move, a decommissioning server).
  std::set<std::string> leaving;
  // Learners the master added (for a missing voter too), as opposed to an operator's.
  std::set<std::string> own_learners;
  // Replicas per server, to choose the voter a lowered RF removes (absent = 0).
  std::map<std::string, int64_t> loads;
};

struct ReplacementDecision {
  enum class Action { kNone, kAddLearner, kPromoteLearner, kRemovePeer, kTransferLeadership };
  Action action = Action::kNone;
  // Promoted, removed, or given leadership; "" for kAddLearner (the caller picks).
  std::string peer_uuid;
  // What ListTablets shows; step UNKNOWN_STEP when nothing is being replaced.
  ReplacementPB status;
};

ReplacementDecision DecideReplacement(const ReplacementInput& in);

// True when the leader's report `leader` says learner `uuid` caught up.
bool LearnerCaughtUp(const ConsensusStatePB& leader, const std::string& uuid);

// "replacing <failed> by <new>: <what>", or without the parts that are "".
std::string DescribeReplacement(const std::string& failed_uuid, const std::string& new_uuid,
                                const std::string& what);

}  // namespace nyala::master
