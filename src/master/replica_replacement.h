// Replacing failed replicas (Kudu's 3-4-3 re-replication): what the master does next
// for one tablet, as a pure function of what it knows of the tablet. The catalog
// manager (catalog_manager_replicas.cc) gathers the input every background pass,
// chooses the server of a new replica (placement.h), sends the change to the tablet's
// leader (TabletServerAdminService.ChangeConfig) and shows the decision's status in
// ListTablets and on the /tables page. docs/consensus.md, "Replacing replicas", has
// the operator's view.
//
// Words. A member's server is *up* when it heartbeats (within
// --tserver_unresponsive_timeout_ms and --follower_unavailable_considered_failed_sec);
// *failed* when it has sent none for --follower_unavailable_considered_failed_sec (or,
// never heard from since the master started, the master has run that long) and is not
// in maintenance mode; *down* when neither (not heard from lately, not failed yet); in
// *maintenance* when down and in maintenance mode. A learner is *caught up* when the
// leader reports it REPLICATE with a match index at least the leader's committed index
// (as reported), and *stalled* when it is not caught up and the leader's view of it
// (state, match index) has not changed for the failure timeout. RF is the table's
// replication factor.
//
// The rules, in order; the first that applies decides. One change at a time:
//
//   | # | condition                                            | decision                  |
//   |---|------------------------------------------------------|---------------------------|
//   | 1 | no leader known, or the leader's server not up       | wait                      |
//   | 2 | a change the master asked for is not yet in the      | wait (show that change)   |
//   |   | leader's report                                      |                           |
//   | 3 | fewer than a majority of the voters up               | wait: an operator must act|
//   | 4 | a learner whose server failed, or stalled            | REMOVE_PEER the learner   |
//   | 5 | more voters than RF, one of them failed (the one     | REMOVE_PEER that voter    |
//   |   | being replaced first) or being replaced              |                           |
//   | 6 | a learner caught up, and a voter failed or fewer     | PROMOTE_LEARNER it        |
//   |   | voters than RF                                       |                           |
//   | 7 | a learner, and a voter failed or fewer voters than RF| wait (it catches up)      |
//   | 8 | the learner the master added, RF voters or more,     | REMOVE_PEER it (not needed)|
//   |   | every voter up (the failed one came back)            |                           |
//   | 9 | voters not failed + learners < RF                    | ADD_LEARNER (the caller   |
//   |   |                                                      | picks the server)         |
//   |10 | otherwise                                            | nothing (a learner waiting|
//   |   |                                                      | on a down voter, or a     |
//   |   |                                                      | voter in maintenance, is  |
//   |   |                                                      | shown)                    |
//
// So a failed voter of RF voters is replaced by ADD_LEARNER (9), PROMOTE_LEARNER (6),
// then REMOVE_PEER of the failed voter (5): the voters go 3, 4, 3, never below RF.
// Rule 1 keeps a tablet whose leader failed waiting for the election of another; rule
// 3 keeps the master from proposing changes that cannot commit. A learner someone else
// added (an operator moving a replica) is left to them unless it fails or stalls (4);
// it is promoted (6) only when a voter failed.
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
};

struct ReplacementDecision {
  enum class Action { kNone, kAddLearner, kPromoteLearner, kRemovePeer };
  Action action = Action::kNone;
  std::string peer_uuid;  // promoted or removed; "" for kAddLearner (the caller picks)
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
