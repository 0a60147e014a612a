// A hostile or broken peer, written as tests of the Raft core (consensus/raft.h): every
// message that came off the wire is checked before the core acts on it, and a bad
// one is refused with InvalidArgument, leaving the node's log, commit index and term
// as they were, and sending nothing. One behaviour per test name. A state loaded
// from disk that cannot be right is refused the same way (RaftPersistentState).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "consensus/raft.h"
#include "consensus/raft_test_util.h"

namespace nyala::consensus {
namespace {

// An append from node 1 to node 2 of term `term` after (log_term, index).
MessagePB Append(uint64_t term, uint64_t log_term, uint64_t index, std::vector<EntryPB> entries,
                 uint64_t commit = 0) {
  MessagePB m;
  m.set_type(MSG_APPEND);
  m.set_from(1);
  m.set_to(2);
  m.set_term(term);
  m.set_log_term(log_term);
  m.set_index(index);
  m.set_commit(commit);
  for (EntryPB& e : entries) *m.add_entries() = std::move(e);
  return m;
}

std::string ConfigData(std::vector<PeerId> voters, std::vector<PeerId> learners = {}) {
  ConfigPB c;
  for (PeerId v : voters) c.add_voters(v);
  for (PeerId l : learners) c.add_learners(l);
  return c.SerializeAsString();
}

// Node 2 of {1, 2, 3}, a follower of node 1 in term 2 holding entries 1-2 of term 1
// and 3-4 of term 2, with entries up to 3 committed.
class RaftBadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RaftOptions o;
    o.id = 2;
    o.voters = {1, 2, 3};
    follower_ = std::make_unique<Raft>(o, RaftPersistentState{}, 0);
    ASSERT_TRUE(
        follower_
            ->Step(Append(2, 0, 0,
                          {MakeEntry(1, 1), MakeEntry(1, 2), MakeEntry(2, 3), MakeEntry(2, 4)},
                          /*commit=*/3),
                   0)
            .ok());
    Drain();
    ASSERT_EQ(follower_->last_index(), 4u);
    ASSERT_EQ(follower_->commit_index(), 3u);
    ASSERT_EQ(follower_->term(), 2u);
  }

  // Takes and finishes every Ready.
  void Drain() {
    while (follower_->HasReady()) {
      Ready rd = follower_->TakeReady();
      follower_->Advance(rd, 0);
    }
  }

  // Steps `m` into the follower: it must be refused, with nothing changed or sent.
  void ExpectRefused(const MessagePB& m, const std::string& why) {
    SCOPED_TRACE(m.ShortDebugString());
    Status s = follower_->Step(m, 0);
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
    EXPECT_NE(s.ToString().find(why), std::string::npos) << s.ToString();
    EXPECT_EQ(follower_->last_index(), 4u);
    EXPECT_EQ(follower_->commit_index(), 3u);
    EXPECT_EQ(follower_->term(), 2u);
    EXPECT_EQ(follower_->TermAt(3), 2u);
    EXPECT_EQ(follower_->TermAt(4), 2u);
    EXPECT_FALSE(follower_->HasReady()) << "a refused message made the node persist or send";
  }

  // The follower still takes a good append after the bad ones.
  void ExpectStillServing() {
    ASSERT_TRUE(follower_->Step(Append(2, 2, 4, {MakeEntry(2, 5)}, /*commit=*/5), 0).ok());
    EXPECT_EQ(follower_->last_index(), 5u);
    EXPECT_EQ(follower_->commit_index(), 5u);
  }

  std::unique_ptr<Raft> follower_;
};

TEST_F(RaftBadInputTest, AnAppendWithAGapInItsIndexesIsRefused) {
  ExpectRefused(Append(2, 2, 4, {MakeEntry(2, 5), MakeEntry(2, 7)}), "indexes must be contiguous");
  ExpectStillServing();
}

TEST_F(RaftBadInputTest, AnAppendWhoseEntriesDoNotFollowItsIndexIsRefused) {
  ExpectRefused(Append(2, 2, 4, {MakeEntry(2, 6)}), "indexes must be contiguous");
  // Entries before the position the append names would rewrite the log behind it.
  ExpectRefused(Append(2, 2, 4, {MakeEntry(2, 2)}), "indexes must be contiguous");
  ExpectStillServing();
}

TEST_F(RaftBadInputTest, AnAppendWithDecreasingTermsIsRefused) {
  ExpectRefused(Append(3, 2, 4, {MakeEntry(3, 5), MakeEntry(2, 6)}), "below term 3");
  ExpectStillServing();
}

TEST_F(RaftBadInputTest, AnAppendWithAnEntryBelowItsLogTermIsRefused) {
  ExpectRefused(Append(2, 2, 4, {MakeEntry(1, 5)}), "below term 2");
  ExpectStillServing();
}

TEST_F(RaftBadInputTest, AnAppendFollowingAnEntryOfALaterTermThanItsOwnIsRefused) {
  ExpectRefused(Append(2, 3, 4, {}), "follows an entry of term 3");
  ExpectStillServing();
}

TEST_F(RaftBadInputTest, AnAppendCarryingEntriesOfALaterTermThanItsOwnIsRefused) {
  ExpectRefused(Append(2, 2, 4, {MakeEntry(5, 5)}), "carries entries of term 5");
  ExpectStillServing();
}

TEST_F(RaftBadInputTest, AnAppendWhoseIndexesOverflowIsRefused) {
  ExpectRefused(Append(2, 2, UINT64_MAX, {MakeEntry(2, 0)}), "overflow");
  ExpectRefused(Append(2, 2, UINT64_MAX - 1, {MakeEntry(2, UINT64_MAX), MakeEntry(2, 0)}),
                "overflow");
  ExpectStillServing();
}

TEST_F(RaftBadInputTest, AnAppendWithAnUnreadableConfigurationIsRefused) {
  ExpectRefused(Append(2, 2, 4, {MakeEntry(2, 5, ENTRY_CONFIG, "\xff\xff\xff")}), "does not parse");
  ExpectRefused(Append(2, 2, 4, {MakeEntry(2, 5, ENTRY_CONFIG, ConfigData({}))}), "without voters");
  ExpectRefused(Append(2, 2, 4, {MakeEntry(2, 5, ENTRY_CONFIG, ConfigData({1, 0}))}), "member 0");
  ExpectRefused(Append(2, 2, 4, {MakeEntry(2, 5, ENTRY_CONFIG, ConfigData({1, 2}, {2}))}),
                "member 2 twice");
  ExpectStillServing();
}

TEST_F(RaftBadInputTest, AnEntryOfUnknownTypeIsRefused) {
  ExpectRefused(Append(2, 2, 4, {MakeEntry(2, 5, static_cast<EntryTypePB>(42))}),
                "unknown type 42");
  ExpectStillServing();
}

TEST_F(RaftBadInputTest, AMessageOfUnknownTypeIsRefused) {
  MessagePB m = Append(2, 2, 4, {});
  m.set_type(static_cast<MessageTypePB>(77));
  ExpectRefused(m, "unknown message type 77");
  m.set_type(MSG_UNKNOWN);
  ExpectRefused(m, "unknown message type 0");
  ExpectStillServing();
}

TEST_F(RaftBadInputTest, MessagesOtherThanAppendsCarryingEntriesAreRefused) {
  for (MessageTypePB type :
       {MSG_HEARTBEAT, MSG_VOTE, MSG_PRE_VOTE, MSG_APPEND_RESP, MSG_TIMEOUT_NOW}) {
    MessagePB m = Append(2, 2, 4, {MakeEntry(2, 5)});
    m.set_type(type);
    ExpectRefused(m, "carries 1 entries");
  }
  ExpectStillServing();
}

TEST_F(RaftBadInputTest, MessagesToAnotherNodeOrFromNoneAreRefused) {
  MessagePB m = Append(2, 2, 4, {MakeEntry(2, 5)});
  m.set_to(3);
  ExpectRefused(m, "message to node 3");
  m.set_to(2);
  m.set_from(0);
  ExpectRefused(m, "message from 0");
  m.set_from(2);
  ExpectRefused(m, "message from 2");
  ExpectStillServing();
}

// An append that starts below the commit index cannot rewrite committed entries: the
// follower answers with its commit index and keeps its log, whatever the entries say.
TEST_F(RaftBadInputTest, AnAppendBelowTheCommitIndexLeavesTheCommittedEntries) {
  ASSERT_TRUE(follower_->Step(Append(3, 1, 2, {MakeEntry(3, 3), MakeEntry(3, 4)}), 0).ok());
  EXPECT_EQ(follower_->TermAt(3), 2u);
  EXPECT_EQ(follower_->TermAt(4), 2u);
  Ready rd = follower_->TakeReady();
  EXPECT_TRUE(rd.entries.empty());
  EXPECT_FALSE(rd.truncate_from.has_value());
  ASSERT_EQ(rd.messages.size(), 1u);
  EXPECT_EQ(rd.messages[0].type(), MSG_APPEND_RESP);
  EXPECT_FALSE(rd.messages[0].reject());
  EXPECT_EQ(rd.messages[0].index(), 3u);
}

// A leader's log only grows within its term, so no follower can acknowledge more than
// it holds: such an answer is refused and does not move the follower's progress
// (which would stop replication to it and could commit what it lacks).
TEST(RaftBadInputLeaderTest, AnAnswerAcknowledgingEntriesTheLeaderNeverHadIsRefused) {
  RaftOptions o;
  o.id = 1;
  o.voters = {1, 2, 3};
  Raft leader(o, RaftPersistentState{}, 0);
  ASSERT_TRUE(leader.CampaignNow(0).ok());
  auto drain = [&](std::vector<MessagePB>* sent) {
    while (leader.HasReady()) {
      Ready rd = leader.TakeReady();
      if (sent) sent->insert(sent->end(), rd.messages.begin(), rd.messages.end());
      leader.Advance(rd, 0);
    }
  };
  std::vector<MessagePB> sent;
  drain(&sent);
  for (const MessagePB& m : sent) {
    if (m.type() != MSG_PRE_VOTE) continue;
    MessagePB r;
    r.set_type(MSG_PRE_VOTE_RESP);
    r.set_from(m.to());
    r.set_to(1);
    r.set_term(m.term());
    ASSERT_TRUE(leader.Step(r, 0).ok());
  }
  sent.clear();
  drain(&sent);
  for (const MessagePB& m : sent) {
    if (m.type() != MSG_VOTE) continue;
    MessagePB r;
    r.set_type(MSG_VOTE_RESP);
    r.set_from(m.to());
    r.set_to(1);
    r.set_term(m.term());
    ASSERT_TRUE(leader.Step(r, 0).ok());
  }
  drain(nullptr);
  ASSERT_EQ(leader.role(), RaftRole::kLeader);
  const uint64_t last = leader.last_index();  // the term's no-op
  MessagePB forged;
  forged.set_type(MSG_APPEND_RESP);
  forged.set_from(2);
  forged.set_to(1);
  forged.set_term(leader.term());
  forged.set_index(last + 1000);
  Status s = leader.Step(forged, 0);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.ToString().find("past this leader's last entry"), std::string::npos);
  EXPECT_EQ(leader.commit_index(), 0u);
  // The true answers still commit the no-op.
  for (PeerId f : {2, 3}) {
    MessagePB r = forged;
    r.set_from(f);
    r.set_index(last);
    ASSERT_TRUE(leader.Step(r, 0).ok());
  }
  EXPECT_EQ(leader.commit_index(), last);
}

TEST(RaftPersistentStateTest, ADamagedStateIsRefusedWithCorruption) {
  auto state = [](std::vector<EntryPB> entries, uint64_t applied) {
    RaftPersistentState st;
    st.entries = std::move(entries);
    st.applied = applied;
    return st;
  };
  EXPECT_TRUE(state({MakeEntry(1, 1), MakeEntry(1, 2)}, 2).Validate().ok());
  struct Case {
    const char* what;
    RaftPersistentState st;
    const char* why;
  };
  std::vector<Case> cases = {
      {"a gap", state({MakeEntry(1, 1), MakeEntry(1, 3)}, 0), "contiguous"},
      {"not from the snapshot", state({MakeEntry(1, 2)}, 0), "contiguous"},
      {"a decreasing term", state({MakeEntry(2, 1), MakeEntry(1, 2)}, 0), "below term 2"},
      {"a bad configuration", state({MakeEntry(1, 1, ENTRY_CONFIG, "\xff")}, 0), "does not parse"},
      {"applied past the log", state({MakeEntry(1, 1)}, 5), "the log ends at 1"},
  };
  RaftPersistentState below = state({MakeEntry(1, 11)}, 3);
  below.snapshot_index = 10;
  below.snapshot_term = 1;
  cases.push_back({"applied below the snapshot", below, "starts after 10"});
  RaftPersistentState bad_config = state({}, 0);
  bad_config.snapshot_config = ConfigPB();
  cases.push_back({"a snapshot configuration without voters", bad_config, "without voters"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Status s = c.st.Validate();
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.ToString().find(c.why), std::string::npos) << s.ToString();
  }
}

}  // namespace
}  // namespace nyala::consensus
