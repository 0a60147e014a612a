// Targeted tests of the Raft core (consensus/raft.h): quiescence and membership
// change, on a network that delivers at once. The randomized schedules are in
// raft_sim-test.cc; these pin down the contract of each call.
#include "consensus/raft.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

namespace nyala::consensus {
namespace {

constexpr int64_t kMs = 1000;

class Cluster {
 public:
  explicit Cluster(std::vector<PeerId> voters,
                   std::function<void(RaftOptions*)> tweak = nullptr)
      : voters_(voters), tweak_(std::move(tweak)) {
    for (PeerId id : voters) Add(id);
  }

  // A node outside the first configuration (a replica being added).
  void Add(PeerId id) {
    Node& n = nodes_[id];
    n.up = true;
    n.raft = std::make_unique<Raft>(Options(id), RaftPersistentState{}, now_);
  }

  RaftOptions Options(PeerId id) const {
    RaftOptions o;
    o.id = id;
    o.voters = voters_;
    o.election_timeout_min_us = 100 * kMs;
    o.heartbeat_interval_us = 20 * kMs;
    o.lease_us = 80 * kMs;
    o.random_seed = 7;
    if (tweak_) tweak_(&o);
    return o;
  }

  Raft& raft(PeerId id) { return *nodes_.at(id).raft; }
  int64_t now() const { return now_; }

  // Runs every node's Ready and delivers messages until nothing moves. Returns the
  // number of messages sent.
  int Settle() {
    int sent = 0;
    int rounds = 0;
    for (bool moved = true; moved;) {
      if (++rounds > 10000) {
        ADD_FAILURE() << "the nodes still exchange messages after 10000 rounds";
        break;
      }
      moved = false;
      std::vector<MessagePB> out;
      for (auto& [id, n] : nodes_) {
        if (!n.up) continue;
        while (n.raft->HasReady()) {
          Ready rd = n.raft->TakeReady();
          Persist(n, rd);
          for (const EntryPtr& e : rd.committed) n.applied.push_back(*e);
          for (MessagePB& m : rd.messages) out.push_back(std::move(m));
          n.raft->Advance(rd, now_);
          snapshot_requests_ += rd.snapshots.size();
          for (const FetchRequest& f : rd.fetches) ServeFetch(n, f);
          moved = true;
        }
      }
      for (const MessagePB& m : out) {
        sent++;
        auto it = nodes_.find(m.to());
        if (it == nodes_.end() || !it->second.up || cut_.count(m.from()) || cut_.count(m.to()) ||
            cut_links_.count({m.from(), m.to()}) || (drop_ && drop_(m))) {
          continue;
        }
        if (record_) recorded_.push_back(m);
        EXPECT_TRUE(it->second.raft->Step(m, now_).ok());
        moved = true;
      }
    }
    return sent;
  }

  // Advances time in ticks of `step`, settling after each; returns messages sent.
  int Run(int64_t duration, int64_t step = 10 * kMs) {
    int sent = 0;
    for (int64_t t = 0; t < duration; t += step) {
      now_ += step;
      for (auto& [id, n] : nodes_) {
        if (n.up) n.raft->Tick(now_);
      }
      sent += Settle();
    }
    return sent;
  }

  PeerId Leader() {
    PeerId best = kNoPeer;
    for (auto& [id, n] : nodes_) {
      if (n.up && n.raft->role() == RaftRole::kLeader &&
          (best == kNoPeer || n.raft->term() > raft(best).term())) {
        best = id;
      }
    }
    return best;
  }

  PeerId ElectOne() {
    for (int i = 0; i < 100 && Leader() == kNoPeer; i++) Run(10 * kMs);
    return Leader();
  }

  // Elects a leader, commits one write and lets the group go idle: the leader, once
  // it (and so every follower, which it waits for) is quiesced; else kNoPeer.
  PeerId ElectAndQuiesce() {
    const PeerId l = ElectOne();
    if (l == kNoPeer) return kNoPeer;
    Propose("a");
    Run(100 * kMs);
    return raft(l).quiesced() ? l : kNoPeer;
  }

  uint64_t Propose(const std::string& data) {
    auto r = raft(Leader()).Propose(data, now_);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    Settle();
    return r.ok() ? *r : 0;
  }

  size_t Applied(PeerId id) const { return nodes_.at(id).applied.size(); }

  // Cut a node off the network (both ways) or bring it back.
  void Cut(PeerId id) { cut_.insert(id); }
  void Uncut(PeerId id) { cut_.erase(id); }
  // Cut the link between two nodes only (both ways).
  void CutLink(PeerId a, PeerId b) {
    cut_links_.insert({a, b});
    cut_links_.insert({b, a});
  }
  // Drops every message for which `drop` is true (nullptr: none).
  void Drop(std::function<bool(const MessagePB&)> drop) { drop_ = std::move(drop); }
  // Ticks until one of `ids` leads a term above `above`; returns it (or kNoPeer).
  PeerId ElectAmong(const std::set<PeerId>& ids, uint64_t above) {
    for (int i = 0; i < 300; i++) {
      for (PeerId id : ids) {
        if (raft(id).role() == RaftRole::kLeader && raft(id).term() > above) return id;
      }
      Run(10 * kMs);
    }
    return kNoPeer;
  }
  const std::vector<EntryPB>& applied(PeerId id) const { return nodes_.at(id).applied; }
  void UncutLinks() { cut_links_.clear(); }
  // Keeps a copy of every message delivered while on.
  void Record(bool on) { record_ = on; }
  const std::vector<MessagePB>& recorded() const { return recorded_; }

  // Answers the leader's fetches from the log it persisted (which the tests never
  // compact), `batch` entries at a time; 0: the log lacks them (StorageMissing).
  void ServeFetchesInBatchesOf(size_t batch) { fetch_batch_ = batch; }
  int fetches_served() const { return fetches_served_; }
  // The next `n` fetches are answered with entries from one index too far on, which
  // the leader must refuse.
  void ServeWrongEntries(int n) { wrong_left_ = n; }
  int wrong_entries_refused() const { return wrong_refused_; }
  size_t snapshot_requests() const { return snapshot_requests_; }

  // Restarts a node from what it persisted.
  void Restart(PeerId id) {
    Node& n = nodes_.at(id);
    RaftPersistentState st;
    st.hard_state = n.hard_state;
    st.entries = n.log;
    st.applied = n.applied.size();
    n.raft = std::make_unique<Raft>(Options(id), st, now_);
  }

 private:
  struct Node {
    bool up = false;
    std::unique_ptr<Raft> raft;
    HardStatePB hard_state;
    std::vector<EntryPB> log;
    std::vector<EntryPB> applied;
  };

  void ServeFetch(Node& n, const FetchRequest& f) {
    if (fetch_batch_ == 0 || f.index == 0 || f.index > n.log.size()) {
      n.raft->StorageMissing(f.peer, f.index);
      return;
    }
    const uint64_t from = wrong_left_ > 0 ? f.index + 1 : f.index;
    std::vector<EntryPtr> entries;
    for (uint64_t i = from; i <= n.log.size() && entries.size() < fetch_batch_; i++) {
      entries.push_back(std::make_shared<const EntryPB>(n.log[i - 1]));
    }
    const uint64_t prev_term = from > 1 ? n.log[from - 2].term() : 0;
    Status s = n.raft->SendFromStorage(f.peer, prev_term, entries);
    if (wrong_left_ > 0) {
      wrong_left_--;
      EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
      if (s.IsInvalidArgument()) wrong_refused_++;
      return;
    }
    EXPECT_TRUE(s.ok()) << s.ToString();
    fetches_served_++;
  }

  static void Persist(Node& n, const Ready& rd) {
    if (rd.truncate_from) n.log.resize(*rd.truncate_from - 1);
    for (const EntryPtr& e : rd.entries) {
      if (e->index() <= n.log.size()) n.log.resize(e->index() - 1);
      n.log.push_back(*e);
    }
    if (rd.hard_state) n.hard_state = *rd.hard_state;
  }

  std::vector<PeerId> voters_;
  std::function<void(RaftOptions*)> tweak_;
  std::function<bool(const MessagePB&)> drop_;
  std::map<PeerId, Node> nodes_;
  std::set<PeerId> cut_;
  std::set<std::pair<PeerId, PeerId>> cut_links_;
  bool record_ = false;
  std::vector<MessagePB> recorded_;
  size_t fetch_batch_ = 0;
  int fetches_served_ = 0;
  int wrong_left_ = 0;
  int wrong_refused_ = 0;
  size_t snapshot_requests_ = 0;
  int64_t now_ = 0;
};

TEST(RaftTest, IdleGroupQuiescesAndAProposalWakesIt) {
  Cluster c({1, 2, 3});
  const PeerId l = c.ElectAndQuiesce();
  ASSERT_NE(l, kNoPeer);
  for (PeerId id : {1, 2, 3}) EXPECT_TRUE(c.raft(id).quiesced()) << id;
  // Quiet: a second of ticks sends nothing, and nobody campaigns.
  const uint64_t term = c.raft(l).term();
  EXPECT_EQ(c.Run(1000 * kMs), 0);
  EXPECT_EQ(c.Leader(), l);
  EXPECT_EQ(c.raft(l).term(), term);
  // A proposal wakes the leader, and its appends the followers.
  const uint64_t idx = c.Propose("b");
  for (PeerId id : {1, 2, 3}) {
    EXPECT_FALSE(c.raft(id).quiesced()) << id;
    EXPECT_GE(c.Applied(id), idx) << id;
  }
  // A read wakes it too: with the lease long gone, it needs a heartbeat round.
  c.Run(100 * kMs);
  ASSERT_TRUE(c.raft(l).quiesced());
  EXPECT_FALSE(c.raft(l).HasLease(c.now()));
  ASSERT_TRUE(c.raft(l).ReadIndex(1, c.now()).ok());
  EXPECT_GT(c.Settle(), 0);
  EXPECT_TRUE(c.raft(l).HasLease(c.now()));
}

TEST(RaftTest, QuiescedFollowersElectOnlyWhenTheDriverWakesThem) {
  Cluster c({1, 2, 3});
  const PeerId l = c.ElectAndQuiesce();
  ASSERT_NE(l, kNoPeer);
  c.Cut(l);  // the leader's server dies; nothing tells the quiesced followers
  c.Run(1000 * kMs);
  std::vector<PeerId> others;
  for (PeerId id : {1, 2, 3}) {
    if (id != l) others.push_back(id);
  }
  for (PeerId id : others) EXPECT_EQ(c.raft(id).role(), RaftRole::kFollower) << id;
  // The driver notices the silent server and wakes them: they elect a leader.
  for (PeerId id : others) c.raft(id).WakeUp(c.now());
  c.Run(500 * kMs);
  const PeerId l2 = c.Leader();
  ASSERT_NE(l2, kNoPeer);
  EXPECT_NE(l2, l);
  EXPECT_GT(c.raft(l2).term(), c.raft(l).term());
}

// A new group's replicas never heard a leader: the one told to campaign on creation
// is elected at once. A restarted replica, which may have promised a leader its vote,
// refuses votes for an election timeout first.
TEST(RaftTest, ANewGroupElectsTheReplicaThatCampaignsAtOnce) {
  Cluster c({1, 2, 3});
  ASSERT_TRUE(c.raft(2).CampaignNow(c.now()).ok());
  c.Settle();
  EXPECT_EQ(c.Leader(), 2u) << "a new replica refused its first campaign";
  EXPECT_EQ(c.raft(2).term(), 1u);

  // Every replica restarted (term 1 on disk): a campaign at once is refused.
  for (PeerId id : {1, 2, 3}) c.Restart(id);
  ASSERT_TRUE(c.raft(3).CampaignNow(c.now()).ok());
  c.Settle();
  EXPECT_EQ(c.Leader(), kNoPeer) << "restarted replicas broke their promise to a leader";
}

TEST(RaftTest, ARestartedFollowerWakesTheIdleLeaderInsteadOfDeposingIt) {
  Cluster c({1, 2, 3});
  const PeerId l = c.ElectAndQuiesce();
  ASSERT_NE(l, kNoPeer);
  const uint64_t term = c.raft(l).term();
  const PeerId f = l % 3 + 1;
  c.Restart(f);  // forgets it was quiesced; campaigns after an election timeout
  c.Run(1000 * kMs);
  EXPECT_EQ(c.Leader(), l);
  EXPECT_EQ(c.raft(l).term(), term) << "a quiesced follower let the restarted one depose the leader";
  EXPECT_EQ(c.raft(f).leader(), l);
}

// A follower cut off from the idle leader alone (the others hear it) and woken by its
// driver campaigns; the quiesced follower refuses it, as stickiness would.
TEST(RaftTest, AQuiescedFollowerRefusesVotesWhileItsLeaderIsAlive) {
  Cluster c({1, 2, 3});
  const PeerId l = c.ElectAndQuiesce();
  ASSERT_NE(l, kNoPeer);
  const uint64_t term = c.raft(l).term();
  const PeerId f = l % 3 + 1;
  c.CutLink(l, f);
  c.Run(200 * kMs);  // past the promise of stickiness: only quiescence refuses now
  c.raft(f).WakeUp(c.now());
  c.Run(1000 * kMs);
  EXPECT_EQ(c.Leader(), l);
  EXPECT_EQ(c.raft(l).term(), term) << "the woken follower deposed a leader the others hear";
}

// The network may deliver a message the leader sent before its quiesce heartbeat
// after it: it must not wake the follower, which the leader no longer heartbeats.
TEST(RaftTest, AReorderedOlderMessageDoesNotWakeAQuiescedFollower) {
  Cluster c({1, 2, 3});
  const PeerId l = c.ElectOne();
  ASSERT_NE(l, kNoPeer);
  c.Record(true);
  c.Propose("a");
  c.Record(false);
  c.Run(100 * kMs);
  const PeerId f = l % 3 + 1;
  ASSERT_TRUE(c.raft(f).quiesced());
  const MessagePB* old_append = nullptr;
  for (const MessagePB& m : c.recorded()) {
    if (m.type() == MSG_APPEND && m.to() == f) old_append = &m;
  }
  ASSERT_NE(old_append, nullptr);
  ASSERT_TRUE(c.raft(f).Step(*old_append, c.now()).ok());
  EXPECT_TRUE(c.raft(f).quiesced());
  c.Settle();
  // And nothing else stirs: a second of ticks, no messages, no election.
  EXPECT_EQ(c.Run(1000 * kMs), 0);
  EXPECT_EQ(c.Leader(), l);
}

// The thesis's figure 8 (§3.6.2), step by step on five nodes: an entry of an older
// term that a later leader has brought to a majority is not committed by counting, for
// a leader of yet another term may still overwrite it. Only an entry of the leader's
// own term is committed that way.
TEST(RaftTest, AnOlderTermsEntryOnAMajorityIsNotCommittedByCounting) {
  Cluster c({1, 2, 3, 4, 5}, [](RaftOptions* o) {
    o->max_msg_bytes = 1;  // one entry per append, so appends can be told apart
    o->quiesce_when_idle = false;
  });
  // (a) L leads term t2 and gets entry X onto one follower F only.
  const PeerId l = c.ElectOne();
  ASSERT_NE(l, kNoPeer);
  c.Propose("base");
  const uint64_t t2 = c.raft(l).term();
  std::vector<PeerId> rest;
  for (PeerId id = 1; id <= 5; id++) {
    if (id != l) rest.push_back(id);
  }
  const PeerId f = rest[0];
  for (size_t i = 1; i < rest.size(); i++) c.CutLink(l, rest[i]);
  auto x = c.raft(l).Propose("X", c.now());
  ASSERT_TRUE(x.ok());
  c.Settle();
  ASSERT_EQ(c.raft(f).TermAt(*x), t2);
  // (b) L and F go down. M is elected by the other three in term t3 and appends its
  // no-op at X's index, which reaches nobody.
  c.Cut(l);
  c.Cut(f);
  c.UncutLinks();
  c.Drop([&](const MessagePB& m) {
    return m.type() == MSG_APPEND && m.entries_size() > 0 && m.term() > t2;
  });
  const PeerId m = c.ElectAmong({rest[1], rest[2], rest[3]}, t2);
  ASSERT_NE(m, kNoPeer);
  const uint64_t t3 = c.raft(m).term();
  ASSERT_GT(c.raft(m).TermAt(*x), t2);  // its own no-op, at X's index
  std::vector<PeerId> ab;
  for (PeerId id : {rest[1], rest[2], rest[3]}) {
    if (id != m) ab.push_back(id);
  }
  const PeerId a = ab[0], b = ab[1];
  // (c) M goes down; L and F come back and one of them, L2, is elected in term t4
  // (A and B may not campaign). L2 brings X to A, but its own no-op to nobody but the
  // other of L and F: X is on three of five nodes, the no-op on two.
  c.Cut(m);
  c.Uncut(l);
  c.Uncut(f);
  c.Drop([&](const MessagePB& msg) {
    if ((msg.type() == MSG_PRE_VOTE || msg.type() == MSG_VOTE) &&
        (msg.from() == a || msg.from() == b)) {
      return true;
    }
    if (msg.type() != MSG_APPEND || msg.entries_size() == 0) return false;
    if (msg.to() == b) return true;
    // A takes appends until it holds X (the first, carrying the no-op after where A's
    // log ends, it rejects); after that, none with entries of the new term.
    if (msg.to() == a) return c.raft(a).TermAt(*x) == t2 && msg.entries(0).term() != t2;
    return false;
  });
  const PeerId l2 = c.ElectAmong({l, f}, t3);
  ASSERT_NE(l2, kNoPeer);
  c.Run(100 * kMs);
  ASSERT_EQ(c.raft(a).TermAt(*x), t2) << "X did not reach A";
  EXPECT_LT(c.raft(l2).commit_index(), *x)
      << "the leader of term " << c.raft(l2).term() << " committed X, of term " << t2
      << ", by counting the nodes that hold it";
  // (d) Why: L and F go down, M comes back and is elected (its last term, t3, beats
  // A's t2), and overwrites X everywhere it reaches.
  c.Cut(l);
  c.Cut(f);
  c.Uncut(m);
  c.Drop([&](const MessagePB& msg) {
    return (msg.type() == MSG_PRE_VOTE || msg.type() == MSG_VOTE) &&
           (msg.from() == a || msg.from() == b);
  });
  ASSERT_EQ(c.ElectAmong({m}, c.raft(l2).term()), m);
  c.Propose("after");
  EXPECT_NE(c.raft(a).TermAt(*x), t2);
  // Whatever one node applied, no other applied differently.
  for (PeerId i = 1; i <= 5; i++) {
    for (PeerId j = i + 1; j <= 5; j++) {
      const auto& ai = c.applied(i);
      const auto& aj = c.applied(j);
      for (size_t k = 0; k < std::min(ai.size(), aj.size()); k++) {
        EXPECT_EQ(ai[k].term(), aj[k].term()) << "nodes " << i << " and " << j << " applied "
                                              << "different entries at " << k + 1;
      }
    }
  }
}

// A learner an append or two behind, as under steady writes, is promoted: it
// replicates and every committed entry is on its way to it. One that stopped
// answering is not.
TEST(RaftTest, ALearnerWithCommittedEntriesInFlightIsPromoted) {
  Cluster c({1, 2, 3});
  const PeerId l = c.ElectOne();
  ASSERT_NE(l, kNoPeer);
  c.Propose("a");
  c.Add(4);
  Raft& leader = c.raft(l);
  ASSERT_TRUE(leader.ProposeConfigChange(ConfigChange::kAddLearner, 4, c.now()).ok());
  c.Settle();
  c.Propose("b");
  ASSERT_EQ(c.Applied(4), c.Applied(l));
  // Its acknowledgements are lost from now on: the voters commit without it.
  c.Drop([](const MessagePB& m) { return m.from() == 4; });
  auto r = leader.Propose("c", c.now());
  ASSERT_TRUE(r.ok());
  c.Run(5 * kMs);
  ASSERT_GE(leader.commit_index(), *r);
  std::vector<FollowerProgress> followers;
  leader.Followers(&followers);
  for (const auto& f : followers) {
    if (f.id == 4) EXPECT_LT(f.match, leader.commit_index()) << "the leader saw no ack of it";
  }
  auto promote = leader.ProposeConfigChange(ConfigChange::kPromoteLearner, 4, c.now());
  ASSERT_TRUE(promote.ok()) << promote.status().ToString();
  c.Drop(nullptr);
  c.Settle();
  EXPECT_TRUE(c.raft(4).IsVoter(4));
  EXPECT_EQ(c.Applied(4), c.Applied(l));
  // A learner that stopped answering for an election timeout and more is not.
  c.Add(5);
  ASSERT_TRUE(leader.ProposeConfigChange(ConfigChange::kAddLearner, 5, c.now()).ok());
  c.Settle();
  c.Drop([](const MessagePB& m) { return m.from() == 5; });
  for (int i = 0; i < 5; i++) {
    ASSERT_TRUE(leader.Propose("d" + std::to_string(i), c.now()).ok());
    c.Run(100 * kMs);
  }
  EXPECT_TRUE(leader.ProposeConfigChange(ConfigChange::kPromoteLearner, 5, c.now())
                  .status()
                  .IsIllegalState());
  c.Drop(nullptr);
}

TEST(RaftTest, MembershipChangesOneAtATime) {
  Cluster c({1, 2, 3});
  const PeerId l = c.ElectOne();
  ASSERT_NE(l, kNoPeer);
  c.Propose("a");
  c.Add(4);
  Raft& leader = c.raft(l);
  // A promotion of a non-member and a removal of a non-member are refused.
  EXPECT_TRUE(leader.ProposeConfigChange(ConfigChange::kPromoteLearner, 4, c.now())
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(
      leader.ProposeConfigChange(ConfigChange::kRemovePeer, 9, c.now()).status().IsInvalidArgument());
  // Add 4 as a learner; before that commits, no second change.
  c.Cut(4);
  auto add = leader.ProposeConfigChange(ConfigChange::kAddLearner, 4, c.now());
  ASSERT_TRUE(add.ok()) << add.status().ToString();
  auto second = leader.ProposeConfigChange(ConfigChange::kRemovePeer, 3, c.now());
  EXPECT_TRUE(second.status().IsIllegalState()) << second.status().ToString();
  c.Settle();
  EXPECT_GE(leader.commit_index(), *add);  // a learner is not needed for a majority
  // The learner has not caught up (it is cut off): no promotion yet.
  EXPECT_TRUE(leader.ProposeConfigChange(ConfigChange::kPromoteLearner, 4, c.now())
                  .status()
                  .IsIllegalState());
  c.Uncut(4);
  c.Run(100 * kMs);
  EXPECT_EQ(c.Applied(4), c.Applied(l));
  EXPECT_FALSE(c.raft(4).IsVoter(4));
  auto promote = leader.ProposeConfigChange(ConfigChange::kPromoteLearner, 4, c.now());
  ASSERT_TRUE(promote.ok()) << promote.status().ToString();
  c.Settle();
  EXPECT_TRUE(c.raft(4).IsVoter(4));
  EXPECT_EQ(leader.config().voters_size(), 4);
  // The leader removes itself: it steps down once that commits and the rest elect.
  auto remove = leader.ProposeConfigChange(ConfigChange::kRemovePeer, l, c.now());
  ASSERT_TRUE(remove.ok()) << remove.status().ToString();
  c.Run(500 * kMs);
  const PeerId l2 = c.Leader();
  ASSERT_NE(l2, kNoPeer);
  EXPECT_NE(l2, l);
  EXPECT_FALSE(c.raft(l2).IsVoter(l));
  EXPECT_EQ(c.raft(l).role(), RaftRole::kFollower);
  // The group goes on without it.
  const uint64_t idx = c.Propose("after");
  EXPECT_GE(c.Applied(4), idx);
}

// The erratum to thesis §4.1: a leader elected in a new term must commit an entry of
// that term before it changes the configuration. Otherwise a change an earlier leader
// left on a minority (here: promoting learner 5) and the new leader's change (removing
// the old leader) could both commit, under configurations with no majority in common.
TEST(RaftTest, ANewLeaderChangesTheConfigurationOnlyAfterCommittingInItsTerm) {
  Cluster c({1, 2, 3, 4}, [](RaftOptions* o) { o->quiesce_when_idle = false; });
  c.Add(5);
  const PeerId l = c.ElectOne();
  ASSERT_NE(l, kNoPeer);
  ASSERT_TRUE(c.raft(l).ProposeConfigChange(ConfigChange::kAddLearner, 5, c.now()).ok());
  c.Settle();
  c.Run(50 * kMs);
  // The promotion reaches learner 5 only; then the leader is gone.
  for (PeerId id = 1; id <= 4; id++) {
    if (id != l) c.CutLink(l, id);
  }
  ASSERT_TRUE(c.raft(l).ProposeConfigChange(ConfigChange::kPromoteLearner, 5, c.now()).ok());
  c.Settle();
  c.Cut(l);
  c.UncutLinks();
  // A new leader among the other three voters, whose no-op reaches nobody yet.
  std::set<PeerId> others;
  for (PeerId id = 1; id <= 4; id++) {
    if (id != l) others.insert(id);
  }
  c.Drop([](const MessagePB& m) { return m.type() == MSG_APPEND && m.entries_size() > 0; });
  const PeerId l2 = c.ElectAmong(others, c.raft(l).term());
  ASSERT_NE(l2, kNoPeer);
  auto change = c.raft(l2).ProposeConfigChange(ConfigChange::kRemovePeer, l, c.now());
  EXPECT_TRUE(change.status().IsIllegalState()) << change.status().ToString();
  // Once its no-op commits, the change is taken.
  c.Drop(nullptr);
  c.Run(50 * kMs);
  ASSERT_GE(c.raft(l2).commit_index(), c.raft(l2).last_index());
  EXPECT_TRUE(c.raft(l2).ProposeConfigChange(ConfigChange::kRemovePeer, l, c.now()).ok());
}

TEST(RaftTest, ALearnerDoesNotCountTowardAMajority) {
  Cluster c({1, 2, 3});
  const PeerId l = c.ElectOne();
  ASSERT_NE(l, kNoPeer);
  c.Add(4);
  c.Propose("a");
  ASSERT_TRUE(c.raft(l).ProposeConfigChange(ConfigChange::kAddLearner, 4, c.now()).ok());
  c.Settle();
  // Both other voters gone: the leader and the learner are two of four members, but
  // one of three voters, so nothing commits.
  for (PeerId id : {1, 2, 3}) {
    if (id != l) c.Cut(id);
  }
  const uint64_t before = c.raft(l).commit_index();
  ASSERT_TRUE(c.raft(l).Propose("b", c.now()).ok());
  c.Settle();
  EXPECT_EQ(c.raft(l).commit_index(), before);
  EXPECT_EQ(c.raft(4).last_index(), c.raft(l).last_index());  // it did get the entry
}

// An append the driver shares is kept by the log as it is: the Ready hands back the
// message's own entries (no copy), and they keep the message alive. One stepped by
// reference is copied first: the caller's message is its own again.
TEST(RaftTest, ASharedAppendsEntriesAreKeptWithoutACopy) {
  RaftOptions o;
  o.id = 2;
  o.voters = {1, 2, 3};
  for (bool shared : {true, false}) {
    SCOPED_TRACE(shared ? "shared" : "by reference");
    Raft follower(o, RaftPersistentState{}, 0);
    auto m = std::make_shared<MessagePB>();
    m->set_type(MSG_APPEND);
    m->set_from(1);
    m->set_to(2);
    m->set_term(1);
    for (uint64_t i = 1; i <= 3; i++) {
      EntryPB* e = m->add_entries();
      e->set_term(1);
      e->set_index(i);
      e->set_data("entry " + std::to_string(i));
    }
    std::shared_ptr<const MessagePB> sent = m;
    ASSERT_TRUE((shared ? follower.Step(sent, 0) : follower.Step(*sent, 0)).ok());
    Ready rd = follower.TakeReady();
    ASSERT_EQ(rd.entries.size(), 3u);
    for (int i = 0; i < 3; i++) {
      EXPECT_EQ(rd.entries[i]->data(), "entry " + std::to_string(i + 1));
      EXPECT_EQ(rd.entries[i].get() == &sent->entries(i), shared);
    }
    ASSERT_EQ(rd.messages.size(), 1u);
    EXPECT_EQ(rd.messages[0].type(), MSG_APPEND_RESP);
    EXPECT_EQ(rd.messages[0].index(), 3u);
    // The log and the Ready hold the shared message; a copied one is ours alone.
    const long holders = sent.use_count();
    rd = Ready();
    if (shared) {
      EXPECT_GT(holders, 1 + 3);
      EXPECT_GT(sent.use_count(), 1);  // the log still holds its entries
    } else {
      EXPECT_EQ(holders, 2);  // `m` and `sent`
    }
  }
}

// A group of 3 whose leader reads compacted entries back from its log: one follower is
// cut off while the leader takes `entries` entries and then compacts all but the last
// `keep` of its in-memory log; the follower is let back. Returns (leader, follower).
std::pair<PeerId, PeerId> FallBehindTheCompactedLog(Cluster* c, int entries, uint64_t keep) {
  const PeerId l = c->ElectOne();
  if (l == kNoPeer) return {kNoPeer, kNoPeer};
  const PeerId behind = l == 3 ? 2 : 3;
  c->Cut(behind);
  for (int i = 0; i < entries; i++) c->Propose("e" + std::to_string(i));
  c->Run(50 * kMs);
  const uint64_t last = c->raft(l).last_index();
  EXPECT_TRUE(c->raft(l).Compact(last - keep).ok());
  EXPECT_EQ(c->raft(l).snapshot_index(), last - keep);
  c->Uncut(behind);
  return {l, behind};
}

void FetchFromStorage(RaftOptions* o) { o->fetch_from_storage = true; }

// A follower that missed entries the leader has compacted from its in-memory log is
// sent them from the leader's log on disk (the driver reads them back), a batch per
// round trip, and never needs a copy of the state machine.
TEST(RaftTest, AFollowerBehindTheCompactedLogIsServedFromStorage) {
  Cluster c({1, 2, 3}, FetchFromStorage);
  c.ServeFetchesInBatchesOf(7);
  auto [l, behind] = FallBehindTheCompactedLog(&c, 60, 5);
  ASSERT_NE(l, kNoPeer);
  const uint64_t last = c.raft(l).last_index();
  c.Run(500 * kMs);
  EXPECT_EQ(c.raft(behind).last_index(), last);
  EXPECT_EQ(c.Applied(behind), c.Applied(l));
  // 55 entries it lacked below the in-memory log, 7 a time.
  EXPECT_GE(c.fetches_served(), 8);
  EXPECT_EQ(c.snapshot_requests(), 0u);
  // It takes new entries as any follower.
  c.Propose("after");
  EXPECT_EQ(c.raft(behind).last_index(), last + 1);
}

// When the leader's log on disk lacks them too, the follower needs a copy.
TEST(RaftTest, AFollowerBehindTheLogOnDiskNeedsACopy) {
  Cluster c({1, 2, 3}, FetchFromStorage);
  c.ServeFetchesInBatchesOf(0);
  auto [l, behind] = FallBehindTheCompactedLog(&c, 20, 2);
  ASSERT_NE(l, kNoPeer);
  c.Run(300 * kMs);
  EXPECT_EQ(c.snapshot_requests(), 1u);
  EXPECT_EQ(c.fetches_served(), 0);
  EXPECT_LT(c.raft(behind).last_index(), c.raft(l).snapshot_index());
}

// Entries the driver hands back that do not fit the leader's log (here: not from the
// index asked for) are refused with nothing sent; the follower is asked for again at
// the next heartbeat answer and catches up once the driver answers right.
TEST(RaftTest, EntriesFromStorageThatDoNotFitAreRefused) {
  Cluster c({1, 2, 3}, FetchFromStorage);
  c.ServeFetchesInBatchesOf(10);
  c.ServeWrongEntries(2);
  auto [l, behind] = FallBehindTheCompactedLog(&c, 20, 2);
  ASSERT_NE(l, kNoPeer);
  c.Run(500 * kMs);
  EXPECT_EQ(c.wrong_entries_refused(), 2);
  EXPECT_EQ(c.raft(behind).last_index(), c.raft(l).last_index());
  EXPECT_EQ(c.snapshot_requests(), 0u);
}

// A lone voter needs nobody's vote, but it leads only once its own vote is durable:
// restarted without it, it could vote for another leader of the same term (which a
// removed voter may still run for), and the runtime sends a leader's appends before
// its Ready is durable.
TEST(RaftTest, ALoneVoterLeadsOnlyOnceItsVoteIsDurable) {
  RaftOptions o;
  o.id = 1;
  o.voters = {1};
  Raft r(o, RaftPersistentState{}, 0);
  ASSERT_TRUE(r.CampaignNow(0).ok());
  EXPECT_EQ(r.role(), RaftRole::kCandidate);
  Ready rd = r.TakeReady();
  ASSERT_TRUE(rd.hard_state.has_value());
  EXPECT_EQ(rd.hard_state->term(), 1u);
  EXPECT_EQ(rd.hard_state->vote(), 1u);
  EXPECT_TRUE(rd.entries.empty()) << "it appended as a leader before its vote was durable";
  EXPECT_FALSE(r.Propose("early", 0).ok());

  // Only this term's vote counts: not a Ready without a hard state, nor one of an
  // earlier term made durable late.
  r.Advance(Ready(), 1);
  EXPECT_EQ(r.role(), RaftRole::kCandidate);
  Ready earlier;
  earlier.hard_state.emplace();
  earlier.hard_state->set_term(0);
  earlier.hard_state->set_vote(1);
  r.Advance(earlier, 1);
  EXPECT_EQ(r.role(), RaftRole::kCandidate);
  r.Advance(rd, 2);
  EXPECT_EQ(r.role(), RaftRole::kLeader);
  EXPECT_EQ(r.term(), 1u);
  auto index = r.Propose("a", 3);
  ASSERT_TRUE(index.ok()) << index.status().ToString();
  rd = r.TakeReady();
  ASSERT_EQ(rd.entries.size(), 2u);  // the term's no-op and the proposal
  r.Advance(rd, 4);
  EXPECT_EQ(r.commit_index(), *index);
}

}  // namespace
}  // namespace nyala::consensus
