// DecideReplacement, rule by rule (replica_replacement.h), and the whole 3-4-3
// sequence played against a configuration that follows each decision.
#include "master/replica_replacement.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace nyala::master {
namespace {

using Action = ReplacementDecision::Action;

// RF 3, voters a (leader), b, x; x failed.
ReplacementInput OneFailed() {
  ReplacementInput in;
  in.replication_factor = 3;
  in.voters = {"a", "b", "x"};
  in.leader_uuid = "a";
  in.health = {{"x", ServerHealth::kFailed}};
  return in;
}

void SetFollower(ConsensusStatePB* leader, const std::string& uuid, FollowerStatusPB::State state,
                 uint64_t match) {
  for (auto& f : *leader->mutable_followers()) {
    if (f.uuid() == uuid) {
      f.set_state(state);
      f.set_match_index(match);
      return;
    }
  }
  auto* f = leader->add_followers();
  f->set_uuid(uuid);
  f->set_state(state);
  f->set_match_index(match);
}

TEST(ReplicaReplacementTest, FailedVoterIsReplacedAddPromoteRemoveNeverBelowRF) {
  ReplacementInput in = OneFailed();
  ConsensusStatePB leader;
  leader.set_committed_index(10);
  in.leader_state = &leader;
  std::vector<std::string> steps;
  for (int round = 0; round < 10; round++) {
    const ReplacementDecision d = DecideReplacement(in);
    if (d.action == Action::kNone) {
      if (d.status.step() == ReplacementPB::ADDING_LEARNER) {  // catching up: let it
        SetFollower(&leader, "y", FollowerStatusPB::REPLICATE, 10);
        continue;
      }
      break;
    }
    switch (d.action) {
      case Action::kAddLearner:
        EXPECT_EQ("replacing x: choosing a tablet server for a new replica",
                  d.status.description());
        steps.push_back("add y");
        in.learners.push_back("y");
        in.replacing = d.status.failed_uuid();
        in.replacement = "y";
        SetFollower(&leader, "y", FollowerStatusPB::PROBE, 0);
        break;
      case Action::kPromoteLearner:
        EXPECT_EQ("replacing x by y: promoting", d.status.description());
        steps.push_back("promote " + d.peer_uuid);
        in.learners.clear();
        in.voters.push_back(d.peer_uuid);
        break;
      case Action::kRemovePeer:
        EXPECT_EQ("replacing x by y: removing x", d.status.description());
        steps.push_back("remove " + d.peer_uuid);
        in.voters.erase(std::find(in.voters.begin(), in.voters.end(), d.peer_uuid));
        break;
      default:
        break;
    }
    ASSERT_GE(in.voters.size(), 3u) << "after " << steps.back();
  }
  EXPECT_EQ((std::vector<std::string>{"add y", "promote y", "remove x"}), steps);
  EXPECT_EQ((std::vector<std::string>{"a", "b", "y"}), in.voters);
  EXPECT_EQ(ReplacementPB::UNKNOWN_STEP, DecideReplacement(in).status.step());
}

TEST(ReplicaReplacementTest, ALearnerCatchingUpIsShownNotPromoted) {
  ReplacementInput in = OneFailed();
  in.learners = {"y"};
  in.replacing = "x";
  in.replacement = "y";
  ConsensusStatePB leader;
  leader.set_committed_index(10);
  in.leader_state = &leader;
  ReplacementDecision d = DecideReplacement(in);
  EXPECT_EQ(Action::kNone, d.action);
  EXPECT_EQ(ReplacementPB::ADDING_LEARNER, d.status.step());
  EXPECT_EQ("replacing x by y: adding learner (not in the leader's report yet)",
            d.status.description());
  // Replicating but further behind than the leader's Raft promotes is not caught up.
  leader.set_committed_index(5000);
  SetFollower(&leader, "y", FollowerStatusPB::REPLICATE, 3999);
  d = DecideReplacement(in);
  EXPECT_EQ(Action::kNone, d.action);
  EXPECT_EQ("replacing x by y: adding learner (replicating, at index 3999 of 5000 committed)",
            d.status.description());
  SetFollower(&leader, "y", FollowerStatusPB::NEEDS_COPY, 5000);
  EXPECT_EQ(Action::kNone, DecideReplacement(in).action);
  // An append or two behind, as under steady writes: promoted.
  SetFollower(&leader, "y", FollowerStatusPB::REPLICATE, 4998);
  EXPECT_EQ(Action::kPromoteLearner, DecideReplacement(in).action);
}

TEST(ReplicaReplacementTest, WithoutAnUpLeaderNothingIsAsked) {
  ReplacementInput in = OneFailed();
  ConsensusStatePB leader;
  in.leader_state = &leader;
  in.health["a"] = ServerHealth::kDown;
  ReplacementDecision d = DecideReplacement(in);
  EXPECT_EQ(Action::kNone, d.action);
  EXPECT_EQ(ReplacementPB::WAITING, d.status.step());
  EXPECT_EQ("replacing x: no leader known: waiting for one to be elected and to report",
            d.status.description());
  in.health.erase("a");
  in.leader_uuid = "";
  EXPECT_EQ(ReplacementPB::WAITING, DecideReplacement(in).status.step());
  // Nothing failed: nothing to show either.
  in.health.clear();
  EXPECT_EQ(ReplacementPB::UNKNOWN_STEP, DecideReplacement(in).status.step());
}

TEST(ReplicaReplacementTest, APendingChangeIsShownAndNothingElseIsAsked) {
  ReplacementInput in = OneFailed();
  ConsensusStatePB leader;
  in.leader_state = &leader;
  in.replacing = "x";
  in.replacement = "y";
  in.pending = PendingChange{tserver::ADD_LEARNER, "y"};
  ReplacementDecision d = DecideReplacement(in);
  EXPECT_EQ(Action::kNone, d.action);
  EXPECT_EQ("replacing x by y: adding learner", d.status.description());
  in.learners = {"y"};
  in.pending = PendingChange{tserver::PROMOTE_LEARNER, "y"};
  EXPECT_EQ("replacing x by y: promoting", DecideReplacement(in).status.description());
  in.learners.clear();
  in.voters.push_back("y");
  in.pending = PendingChange{tserver::REMOVE_PEER, "x"};
  d = DecideReplacement(in);
  EXPECT_EQ(Action::kNone, d.action);
  EXPECT_EQ(ReplacementPB::REMOVING, d.status.step());
  EXPECT_EQ("replacing x by y: removing x", d.status.description());
}

TEST(ReplicaReplacementTest, WithoutAMajorityUpNothingIsAsked) {
  ReplacementInput in = OneFailed();
  ConsensusStatePB leader;
  in.leader_state = &leader;
  in.health["b"] = ServerHealth::kFailed;
  const ReplacementDecision d = DecideReplacement(in);
  EXPECT_EQ(Action::kNone, d.action);
  EXPECT_EQ(ReplacementPB::WAITING, d.status.step());
  EXPECT_NE(std::string::npos, d.status.description().find("1 of 3 voters up"))
      << d.status.description();
}

TEST(ReplicaReplacementTest, ALearnerWhoseServerFailedOrThatStalledIsRemoved) {
  for (bool stalled : {false, true}) {
    ReplacementInput in = OneFailed();
    ConsensusStatePB leader;
    in.leader_state = &leader;
    in.learners = {"y"};
    if (stalled) {
      in.stalled_learners = {"y"};
    } else {
      in.health["y"] = ServerHealth::kFailed;
    }
    const ReplacementDecision d = DecideReplacement(in);
    EXPECT_EQ(Action::kRemovePeer, d.action);
    EXPECT_EQ("y", d.peer_uuid);
    EXPECT_EQ(ReplacementPB::REMOVING_LEARNER, d.status.step());
    EXPECT_EQ(stalled ? "replacing x: removing learner y: it made no progress"
                      : "replacing x: removing learner y: its tablet server failed",
              d.status.description());
  }
  // A learner's server that is merely down, or in maintenance, is waited for.
  ReplacementInput in = OneFailed();
  ConsensusStatePB leader;
  in.leader_state = &leader;
  in.learners = {"y"};
  in.health["y"] = ServerHealth::kMaintenance;
  EXPECT_EQ(Action::kNone, DecideReplacement(in).action);
}

TEST(ReplicaReplacementTest, AVoterInMaintenanceIsNotReplaced) {
  ReplacementInput in = OneFailed();
  ConsensusStatePB leader;
  in.leader_state = &leader;
  in.health["x"] = ServerHealth::kMaintenance;
  ReplacementDecision d = DecideReplacement(in);
  EXPECT_EQ(Action::kNone, d.action);
  EXPECT_EQ("not replacing x: its tablet server is in maintenance mode", d.status.description());
  // Nor one down for less than the failure timeout.
  in.health["x"] = ServerHealth::kDown;
  d = DecideReplacement(in);
  EXPECT_EQ(Action::kNone, d.action);
  EXPECT_EQ(ReplacementPB::UNKNOWN_STEP, d.status.step());
  // A learner added before the voter's server entered maintenance waits, neither
  // promoted nor removed.
  in.health["x"] = ServerHealth::kMaintenance;
  in.learners = {"y"};
  SetFollower(&leader, "y", FollowerStatusPB::REPLICATE, 0);
  d = DecideReplacement(in);
  EXPECT_EQ(Action::kNone, d.action);
  EXPECT_EQ("new replica y: waiting: voter x is down but in maintenance mode",
            d.status.description());
}

TEST(ReplicaReplacementTest, AVoterTooManyGoesTheFailedOrReplacedOneFirst) {
  ReplacementInput in = OneFailed();
  ConsensusStatePB leader;
  in.leader_state = &leader;
  in.voters = {"a", "b", "x", "y", "z"};  // RF 3
  in.health["z"] = ServerHealth::kFailed;
  in.replacing = "z";
  EXPECT_EQ("z", DecideReplacement(in).peer_uuid);
  // The voter being replaced came back before its removal: it goes all the same.
  in.voters = {"a", "b", "x", "y"};
  in.health.clear();
  in.replacing = "x";
  in.replacement = "y";
  ReplacementDecision d = DecideReplacement(in);
  EXPECT_EQ(Action::kRemovePeer, d.action);
  EXPECT_EQ("x", d.peer_uuid);
  EXPECT_EQ("replacing x by y: removing x", d.status.description());
  // The leader being replaced hands leadership to a caught-up voter first (none yet).
  in.replacing = "a";
  d = DecideReplacement(in);
  EXPECT_EQ(ReplacementPB::WAITING, d.status.step());
  EXPECT_EQ(Action::kNone, d.action);
  SetFollower(&leader, "b", FollowerStatusPB::REPLICATE, 5);
  d = DecideReplacement(in);
  EXPECT_EQ(Action::kTransferLeadership, d.action);
  EXPECT_EQ("b", d.peer_uuid);
  EXPECT_EQ(ReplacementPB::TRANSFERRING_LEADERSHIP, d.status.step());
}

TEST(ReplicaReplacementTest, TheMastersLearnerNotNeededIsRemoved) {
  ReplacementInput in = OneFailed();
  ConsensusStatePB leader;
  in.leader_state = &leader;
  in.health.clear();  // x came back before its replacement caught up
  in.learners = {"y"};
  in.replacing = "x";
  in.replacement = "y";
  const ReplacementDecision d = DecideReplacement(in);
  EXPECT_EQ(Action::kRemovePeer, d.action);
  EXPECT_EQ("y", d.peer_uuid);
  EXPECT_EQ("removing learner y: no voter to replace", d.status.description());
}

// A learner the master added for a missing voter is removed once an operator filled
// the gap meanwhile; an operator's learner stays.
TEST(ReplicaReplacementTest, TheMastersLearnerForAMissingVoterIsRemovedOnceNotNeeded) {
  ReplacementInput in;
  in.replication_factor = 3;
  in.voters = {"a", "b", "c"};
  in.leader_uuid = "a";
  in.learners = {"d", "e"};
  in.own_learners = {"e"};
  ConsensusStatePB leader;
  in.leader_state = &leader;
  ReplacementDecision d = DecideReplacement(in);
  EXPECT_EQ(Action::kRemovePeer, d.action);
  EXPECT_EQ("e", d.peer_uuid);
  in.learners = {"d"};
  EXPECT_EQ(Action::kNone, DecideReplacement(in).action);
}

// An operator's learner is neither removed nor promoted by the master; once the
// operator promotes it, the tablet has a voter too many and the master removes the one
// on the most loaded server that does not lead.
TEST(ReplicaReplacementTest, ALearnerSomeoneElseAddedIsLeftToThem) {
  ReplacementInput in = OneFailed();
  ConsensusStatePB leader;
  in.leader_state = &leader;
  in.health.clear();
  in.learners = {"s"};
  SetFollower(&leader, "s", FollowerStatusPB::REPLICATE, 0);
  ReplacementDecision d = DecideReplacement(in);
  EXPECT_EQ(Action::kNone, d.action);
  EXPECT_EQ(ReplacementPB::UNKNOWN_STEP, d.status.step());
  in.learners.clear();
  in.voters.push_back("s");  // promoted: four voters, all up
  in.loads = {{"a", 9}, {"b", 7}, {"x", 5}, {"s", 1}};
  d = DecideReplacement(in);
  EXPECT_EQ(Action::kRemovePeer, d.action);
  EXPECT_EQ("b", d.peer_uuid);  // a has more replicas but leads
  EXPECT_EQ("removing b: 4 voters, replication factor 3", d.status.description());
  // Should a voter fail meanwhile, the learner is the replacement.
  in.voters.pop_back();
  in.learners = {"s"};
  in.health["x"] = ServerHealth::kFailed;
  d = DecideReplacement(in);
  EXPECT_EQ(Action::kPromoteLearner, d.action);
  EXPECT_EQ("replacing x by s: promoting", d.status.description());
}

TEST(ReplicaReplacementTest, MissingVotersAreAddedWithoutAFailure) {
  ReplacementInput in;
  in.replication_factor = 3;
  in.voters = {"a", "b"};
  in.leader_uuid = "a";
  ConsensusStatePB leader;
  in.leader_state = &leader;
  ReplacementDecision d = DecideReplacement(in);
  EXPECT_EQ(Action::kAddLearner, d.action);
  EXPECT_EQ("", d.status.failed_uuid());
  in.learners = {"c"};
  SetFollower(&leader, "c", FollowerStatusPB::REPLICATE, 0);
  d = DecideReplacement(in);
  EXPECT_EQ(Action::kPromoteLearner, d.action);
  EXPECT_EQ("new replica c: promoting", d.status.description());
}

// A decommissioned server's voter, or one an operator moves, is replaced as a failed
// one is, with its server up; when it leads, leadership goes to a caught-up voter that
// stays before it is removed.
TEST(ReplicaReplacementTest, ALeavingVoterIsReplacedAndALeavingLeaderHandsOverFirst) {
  ReplacementInput in;
  in.replication_factor = 3;
  in.voters = {"a", "b", "c"};
  in.leader_uuid = "a";
  in.leaving = {"a"};
  ConsensusStatePB leader;
  leader.set_committed_index(10);
  in.leader_state = &leader;
  SetFollower(&leader, "b", FollowerStatusPB::PROBE, 0);
  SetFollower(&leader, "c", FollowerStatusPB::REPLICATE, 10);
  ReplacementDecision d = DecideReplacement(in);
  EXPECT_EQ(Action::kAddLearner, d.action);
  EXPECT_EQ("a", d.status.failed_uuid());
  in.learners = {"d"};
  in.replacing = "a";
  in.replacement = "d";
  SetFollower(&leader, "d", FollowerStatusPB::PROBE, 0);
  EXPECT_EQ(Action::kNone, DecideReplacement(in).action);  // it catches up
  SetFollower(&leader, "d", FollowerStatusPB::REPLICATE, 10);
  d = DecideReplacement(in);
  EXPECT_EQ(Action::kPromoteLearner, d.action);
  in.learners.clear();
  in.voters.push_back("d");
  d = DecideReplacement(in);
  EXPECT_EQ(Action::kTransferLeadership, d.action);
  EXPECT_EQ("c", d.peer_uuid);  // b is not caught up; d does not lead yet
  EXPECT_EQ("replacing a by d: handing leadership to c before removing a", d.status.description());
  // c leads now.
  in.leader_uuid = "c";
  d = DecideReplacement(in);
  EXPECT_EQ(Action::kRemovePeer, d.action);
  EXPECT_EQ("a", d.peer_uuid);
  // A leaving learner goes at once.
  in.voters = {"b", "c", "d"};
  in.learners = {"e"};
  in.leaving = {"e"};
  d = DecideReplacement(in);
  EXPECT_EQ(Action::kRemovePeer, d.action);
  EXPECT_EQ("e", d.peer_uuid);
}

// A raised replication factor adds every missing learner at once (they copy in
// parallel), then promotes each once caught up; a lowered one removes a down voter
// first, then those on the most loaded servers, never the leader, one at a time.
TEST(ReplicaReplacementTest, ReplicationFactorUpAndDown) {
  ReplacementInput in;
  in.replication_factor = 3;
  in.voters = {"a"};
  in.leader_uuid = "a";
  ConsensusStatePB leader;
  leader.set_committed_index(7);
  in.leader_state = &leader;
  EXPECT_EQ(Action::kAddLearner, DecideReplacement(in).action);
  in.learners = {"b"};
  SetFollower(&leader, "b", FollowerStatusPB::PROBE, 0);
  EXPECT_EQ(Action::kAddLearner, DecideReplacement(in).action);
  in.learners = {"b", "c"};
  SetFollower(&leader, "c", FollowerStatusPB::REPLICATE, 7);
  ReplacementDecision d = DecideReplacement(in);
  EXPECT_EQ(Action::kPromoteLearner, d.action);
  EXPECT_EQ("c", d.peer_uuid);
  in.voters = {"a", "c"};
  in.learners = {"b"};
  EXPECT_EQ(Action::kNone, DecideReplacement(in).action);  // b catches up
  SetFollower(&leader, "b", FollowerStatusPB::REPLICATE, 7);
  EXPECT_EQ(Action::kPromoteLearner, DecideReplacement(in).action);
  in.voters = {"a", "c", "b"};
  in.learners.clear();
  EXPECT_EQ(Action::kNone, DecideReplacement(in).action);

  in.voters = {"a", "b", "c", "d", "e"};
  in.replication_factor = 3;
  in.health = {{"d", ServerHealth::kDown}};
  in.loads = {{"a", 50}, {"b", 10}, {"c", 30}, {"d", 1}, {"e", 20}};
  d = DecideReplacement(in);
  EXPECT_EQ(Action::kRemovePeer, d.action);
  EXPECT_EQ("d", d.peer_uuid);
  in.voters = {"a", "b", "c", "e"};
  d = DecideReplacement(in);
  EXPECT_EQ(Action::kRemovePeer, d.action);
  EXPECT_EQ("c", d.peer_uuid);
  in.voters = {"a", "b", "e"};
  EXPECT_EQ(Action::kNone, DecideReplacement(in).action);
}

}  // namespace
}  // namespace nyala::master
