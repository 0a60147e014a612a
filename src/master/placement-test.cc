#include "master/placement.h"

#include <gtest/gtest.h>

#include <set>

#include "common/test_util.h"

namespace nyala::master {

TEST(PlacementTest, NeverTwoReplicasOnOneServer) {
  std::mt19937_64 rng(TestRandomSeed());
  ServerLoads loads = {{"a", 0}, {"b", 0}, {"c", 0}};
  for (int i = 0; i < 200; i++) {
    auto r = PlaceReplicas(3, &loads, &rng);
    ASSERT_OK(r.status());
    std::set<std::string> distinct(r->begin(), r->end());
    ASSERT_EQ(3u, distinct.size());
  }
  EXPECT_EQ(200, loads["a"]);
  EXPECT_EQ(200, loads["b"]);
  EXPECT_EQ(200, loads["c"]);
}

TEST(PlacementTest, PowerOfTwoChoicesBalances) {
  std::mt19937_64 rng(TestRandomSeed());
  ServerLoads loads;
  for (int i = 0; i < 10; i++) loads["ts" + std::to_string(i)] = 0;
  for (int i = 0; i < 1000; i++) ASSERT_OK(PlaceReplicas(1, &loads, &rng).status());
  int64_t lo = INT64_MAX, hi = 0;
  for (const auto& [uuid, n] : loads) {
    lo = std::min(lo, n);
    hi = std::max(hi, n);
  }
  // Uniform random placement of 1000 on 10 spreads about +-30; two choices keep
  // every server within a few of the mean of 100.
  EXPECT_LE(hi - lo, 10) << "min " << lo << " max " << hi;
}

TEST(PlacementTest, FillsAnUnloadedNewServerFirst) {
  std::mt19937_64 rng(TestRandomSeed());
  const ServerLoads start = {{"old1", 50}, {"old2", 50}, {"new", 0}};
  int on_new = 0;
  constexpr int kDraws = 300;
  for (int i = 0; i < kDraws; i++) {
    ServerLoads loads = start;  // independent draws from the same state
    auto r = PlaceReplicas(1, &loads, &rng);
    ASSERT_OK(r.status());
    on_new += (*r)[0] == "new";
  }
  // "new" wins every draw it takes part in (2 of 3 pairs): about 200 of 300, with a
  // standard deviation of about 8. Uniform placement would give about 100.
  EXPECT_GE(on_new, 160);
}

TEST(PlacementTest, AvoidedServersOnlyWhenNeeded) {
  std::mt19937_64 rng(TestRandomSeed());
  ServerLoads loads = {{"a", 0}, {"b", 100}};
  for (int i = 0; i < 20; i++) {
    auto r = PlaceReplicas(1, &loads, &rng, {"a"});
    ASSERT_OK(r.status());
    EXPECT_EQ("b", (*r)[0]);
  }
  auto r = PlaceReplicas(2, &loads, &rng, {"a"});
  ASSERT_OK(r.status());
  EXPECT_EQ(2u, r->size());
}

TEST(PlacementTest, LeadersSpreadLikeReplicas) {
  std::mt19937_64 rng(TestRandomSeed());
  ServerLoads loads = {{"a", 0}, {"b", 0}, {"c", 0}, {"d", 0}, {"e", 0}};
  ServerLoads leaders;
  for (int i = 0; i < 100; i++) {
    auto r = PlaceReplicas(3, &loads, &rng);
    ASSERT_OK(r.status());
    const std::set<std::string> before(r->begin(), r->end());
    OrderForLeadership(&*r, &leaders);
    EXPECT_EQ(before, std::set<std::string>(r->begin(), r->end()));  // only reordered
  }
  int64_t total = 0;
  for (const auto& [uuid, n] : leaders) {
    total += n;
    EXPECT_GE(n, 17) << uuid;  // 20 each; the fewest-first rule keeps them within a few
    EXPECT_LE(n, 23) << uuid;
  }
  EXPECT_EQ(100, total);
}

TEST(PlacementTest, FewestLeadersGoesFirstAndTiesKeepTheOrder) {
  ServerLoads leaders = {{"a", 2}, {"b", 1}, {"c", 1}};
  std::vector<std::string> r = {"a", "c", "b"};
  OrderForLeadership(&r, &leaders);
  EXPECT_EQ((std::vector<std::string>{"c", "a", "b"}), r);
  EXPECT_EQ(2, leaders["c"]);
  r = {"a", "d"};  // "d" leads nothing yet
  OrderForLeadership(&r, &leaders);
  EXPECT_EQ((std::vector<std::string>{"d", "a"}), r);
  EXPECT_EQ(1, leaders["d"]);
}

TEST(PlacementTest, NotEnoughServers) {
  std::mt19937_64 rng(1);
  ServerLoads none;
  EXPECT_TRUE(PlaceReplicas(1, &none, &rng).status().IsInvalidArgument());
  ServerLoads two = {{"a", 0}, {"b", 0}};
  EXPECT_TRUE(PlaceReplicas(3, &two, &rng).status().IsInvalidArgument());
  EXPECT_TRUE(PlaceReplicas(0, &two, &rng).status().IsInvalidArgument());
  EXPECT_EQ(0, two["a"]);  // nothing charged on failure
}

TEST(PlacementTest, ReplacementGoesToTheLeastLoadedCandidate) {
  std::mt19937_64 rng(TestRandomSeed());
  ServerLoads loads = {{"a", 5}, {"b", 2}, {"c", 9}, {"d", 1}};
  // "d" is the least loaded but not a candidate (e.g. it holds a replica already).
  auto r = PlaceReplacement({"a", "b", "c"}, &loads, &rng);
  ASSERT_OK(r.status());
  EXPECT_EQ("b", *r);
  EXPECT_EQ(3, loads["b"]);
  // A candidate missing from the loads counts 0.
  EXPECT_EQ("e", *PlaceReplacement({"a", "e"}, &loads, &rng));
  // Ties go either way, and each pick counts toward the next.
  loads = {{"x", 0}, {"y", 0}};
  std::set<std::string> picked;
  for (int i = 0; i < 4; i++) picked.insert(*PlaceReplacement({"x", "y"}, &loads, &rng));
  EXPECT_EQ(2u, picked.size());
  EXPECT_EQ(2, loads["x"]);
  EXPECT_EQ(2, loads["y"]);
  EXPECT_TRUE(PlaceReplacement({}, &loads, &rng).status().IsInvalidArgument());
}

}  // namespace nyala::master
