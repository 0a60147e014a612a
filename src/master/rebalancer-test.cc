// PlanRebalance (rebalancer.h): replicas first, then leaders; busy tablets and servers
// outside the set are left alone; a plan carried out leaves every server within one.
#include "master/rebalancer.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace nyala::master {
namespace {

RebalanceTablet Tablet(const std::string& id, std::vector<std::string> voters,
                       const std::string& table = "t") {
  RebalanceTablet t;
  t.id = id;
  t.table_id = table;
  t.leader = voters.front();
  t.voters = std::move(voters);
  return t;
}

// Carries out `plan` on `in`'s tablets.
void Apply(const RebalancePlan& plan, RebalanceInput* in) {
  for (const auto& m : plan.moves) {
    for (auto& t : in->tablets) {
      if (t.id != m.tablet_id) continue;
      std::replace(t.voters.begin(), t.voters.end(), m.from, m.to);
      if (t.leader == m.from) t.leader = m.to;
    }
  }
  for (const auto& m : plan.leader_transfers) {
    for (auto& t : in->tablets) {
      if (t.id == m.tablet_id) t.leader = m.to;
    }
  }
}

int Spread(const std::map<std::string, ServerLoad>& loads, bool leaders) {
  int lo = 1 << 30, hi = -1;
  for (const auto& [uuid, l] : loads) {
    const int n = leaders ? l.leaders : l.replicas;
    lo = std::min(lo, n);
    hi = std::max(hi, n);
  }
  return hi - lo;
}

// Ten RF-3 tablets on a, b, c, all led by a; d is new and empty.
RebalanceInput NewEmptyServer() {
  RebalanceInput in;
  in.servers = {"a", "b", "c", "d"};
  for (int i = 0; i < 10; i++)
    in.tablets.push_back(Tablet("t" + std::to_string(i), {"a", "b", "c"}));
  return in;
}

TEST(RebalancerTest, ANewEmptyServerGetsItsShareThenLeadersEvenOut) {
  RebalanceInput in = NewEmptyServer();
  in.max_moves = 100;
  RebalancePlan plan = PlanRebalance(in);
  EXPECT_EQ(0, plan.before.at("d").replicas);
  EXPECT_EQ(10, plan.before.at("a").leaders);
  // 30 replicas over 4 servers: 7 or 8 each, so d gets 7.
  EXPECT_EQ(7u, plan.moves.size());
  EXPECT_EQ(7, plan.after.at("d").replicas);
  EXPECT_LE(Spread(plan.after, false), 1);
  EXPECT_TRUE(plan.leader_transfers.empty()) << "leaders wait for the replicas";
  int from_a = 0;  // the replicas that lead: moved only where needed
  for (const auto& m : plan.moves) {
    EXPECT_EQ("d", m.to);
    from_a += m.from == "a" ? 1 : 0;
  }
  EXPECT_LE(from_a, 2);
  Apply(plan, &in);
  plan = PlanRebalance(in);
  EXPECT_TRUE(plan.moves.empty());
  EXPECT_FALSE(plan.leader_transfers.empty());
  Apply(plan, &in);
  plan = PlanRebalance(in);
  EXPECT_TRUE(plan.moves.empty());
  EXPECT_TRUE(plan.leader_transfers.empty());
  EXPECT_LE(Spread(plan.after, true), 1);
}

TEST(RebalancerTest, AtMostMaxMovesAndNoneTwiceWhileMovesRun) {
  RebalanceInput in = NewEmptyServer();
  in.max_moves = 3;
  RebalancePlan plan = PlanRebalance(in);
  ASSERT_EQ(3u, plan.moves.size());
  // The moves run: planned again, each counts as done and none is planned twice.
  for (const auto& m : plan.moves) {
    for (auto& t : in.tablets) {
      if (t.id != m.tablet_id) continue;
      t.moving_from = m.from;
      t.moving_to = m.to;
      t.busy = true;
    }
  }
  RebalancePlan next = PlanRebalance(in);
  EXPECT_EQ(3, next.before.at("d").replicas);
  for (const auto& m : next.moves) {
    for (const auto& old : plan.moves) EXPECT_NE(old.tablet_id, m.tablet_id);
  }
  EXPECT_TRUE(next.leader_transfers.empty()) << "no leader moves while replicas move";
}

TEST(RebalancerTest, BusyTabletsAndServersOutsideTheSetAreLeftAlone) {
  RebalanceInput in;
  in.servers = {"a", "b", "c", "d"};  // x: dead, decommissioning or in maintenance
  for (int i = 0; i < 6; i++) {
    auto t = Tablet("t" + std::to_string(i), {"a", "b", i < 3 ? "c" : "x"});
    t.busy = i >= 3;  // a member's server is not up
    in.tablets.push_back(t);
  }
  in.max_moves = 100;
  const RebalancePlan plan = PlanRebalance(in);
  EXPECT_EQ(0u, plan.before.count("x"));
  for (const auto& m : plan.moves) {
    EXPECT_LT(m.tablet_id, "t3");
    EXPECT_NE("x", m.to);
    EXPECT_NE("x", m.from);
  }
  EXPECT_FALSE(plan.moves.empty());
  EXPECT_TRUE(plan.leader_transfers.empty());
}

TEST(RebalancerTest, ABalancedClusterPlansNothing) {
  RebalanceInput in;
  in.servers = {"a", "b", "c"};
  in.tablets = {Tablet("t0", {"a", "b", "c"}), Tablet("t1", {"b", "c", "a"}),
                Tablet("t2", {"c", "a", "b"})};
  const RebalancePlan plan = PlanRebalance(in);
  EXPECT_TRUE(plan.moves.empty());
  EXPECT_TRUE(plan.leader_transfers.empty());
  EXPECT_EQ(plan.before.at("a").replicas, plan.after.at("a").replicas);
}

// Of two tables, the one uneven between the two servers moves first.
TEST(RebalancerTest, TheMostUnevenTableMovesFirst) {
  RebalanceInput in;
  in.servers = {"a", "b", "c", "d"};
  in.tablets = {Tablet("even0", {"b", "a", "c"}, "even"), Tablet("even1", {"b", "a", "d"}, "even"),
                Tablet("skew0", {"b", "a", "c"}, "skew"), Tablet("skew1", {"b", "a", "c"}, "skew")};
  in.max_moves = 1;
  const RebalancePlan plan = PlanRebalance(in);
  ASSERT_EQ(1u, plan.moves.size());
  EXPECT_EQ("d", plan.moves[0].to);
  EXPECT_EQ("skew", plan.moves[0].table_id);
}

}  // namespace
}  // namespace nyala::master
