// Tests of TabletReplica against a fake ReplicaStorage, on a real ConsensusRuntime
// with a group of one (its log in the test's dir, synced): leadership before and after
// Start, replicating and applying write commands with their applied state and request
// hook, a restart from the stored applied state, an applied state that does not
// decode, a failed apply, a proposal in a stale term, and Stop.
#include "tserver/tablet_replica.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "common/coding.h"
#include "common/mutex.h"
#include "common/test_util.h"
#include "consensus/peer_id.h"
#include "consensus/raft.pb.h"
#include "consensus/runtime.h"
#include "rpc/messenger.h"
#include "tserver/write_command.h"

namespace nyala::tserver {
namespace {

constexpr consensus::PeerId kSelf = 7;
constexpr uint64_t kGroup = 42;

// Records what the replica applies; can be told to fail the next write.
class FakeStorage : public ReplicaStorage {
 public:
  struct Applied {
    std::vector<std::string> keys;  // the command's changes, "put:k" or "delete:k"
    std::string applied_state;
  };

  bool Running() const override { return !failed_.load(); }
  Status ApplyWrite(const DecodedWriteCommand& cmd, Slice applied_state) override {
    MutexLock l(mu_);
    if (fail_next_write_) {
      fail_next_write_ = false;
      return Status::IOError("disk on fire");
    }
    Applied a;
    for (const auto& c : cmd.changes) {
      a.keys.push_back((c.is_delete ? "delete:" : "put:") + c.key.ToString());
    }
    a.applied_state = applied_state.ToString();
    applied_state_ = a.applied_state;
    writes_.push_back(std::move(a));
    return Status::OK();
  }
  Status StoreAppliedState(Slice applied_state) override {
    MutexLock l(mu_);
    applied_state_ = applied_state.ToString();
    return Status::OK();
  }
  Result<std::string> LoadAppliedState() override {
    MutexLock l(mu_);
    return applied_state_;
  }
  Status SyncApplied() override { return Status::OK(); }
  void Fail(const Status& error) override {
    MutexLock l(mu_);
    failure_ = error;
    failed_.store(true);
  }

  void FailNextWrite() {
    MutexLock l(mu_);
    fail_next_write_ = true;
  }
  void SetAppliedState(std::string v) {
    MutexLock l(mu_);
    applied_state_ = std::move(v);
  }
  std::vector<Applied> writes() const {
    MutexLock l(mu_);
    return writes_;
  }
  std::string applied_state() const {
    MutexLock l(mu_);
    return applied_state_;
  }
  Status failure() const {
    MutexLock l(mu_);
    return failure_;
  }
  bool failed() const { return failed_.load(); }

 private:
  mutable Mutex mu_;
  std::vector<Applied> writes_ GUARDED_BY(mu_);
  std::string applied_state_ GUARDED_BY(mu_);
  bool fail_next_write_ GUARDED_BY(mu_) = false;
  Status failure_ GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};
};

// A command putting `key` (and, with `id`, carrying that request and its response).
std::string PutCommand(const std::string& key, const rpc::RequestIdPB* id = nullptr) {
  std::string changes;
  const Slice value("v");
  EncodeRowChange(Slice(key), &value, &changes);
  WriteResponsePB resp;
  resp.set_rows_applied(1);
  return EncodeWriteCommand(1, changes, id, resp);
}

class TabletReplicaTest : public NyalaTest {
 protected:
  void SetUp() override {
    NyalaTest::SetUp();
    ASSERT_NO_FATAL_FAILURE(StartRuntime());
  }
  void TearDown() override {
    StopRuntime();
    NyalaTest::TearDown();
  }
  void StartRuntime() {
    rpc::MessengerOptions mo;
    mo.name = "replica-test";
    mo.num_reactors = 1;
    auto m = rpc::Messenger::Create(mo);
    ASSERT_OK(m.status());
    messenger_ = *m;
    consensus::RuntimeOptions ro;
    ro.server_id = kSelf;
    ro.messenger = messenger_;
    ro.log.dir = test_dir() + "/wal";
    auto rt = consensus::ConsensusRuntime::Start(ro);
    ASSERT_OK(rt.status());
    runtime_ = std::move(*rt);
  }
  void StopRuntime() {
    if (runtime_) runtime_->Shutdown();
    if (messenger_) messenger_->Shutdown();
  }
  // As the tablet server restarts: the runtime stops, then the replica goes.
  void Restart(std::unique_ptr<TabletReplica>* replica) {
    StopRuntime();
    replica->reset();
    runtime_.reset();
    messenger_.reset();
    ASSERT_NO_FATAL_FAILURE(StartRuntime());
  }

  consensus::GroupOptions GroupOfOne() const {
    consensus::GroupOptions o;
    o.group_id = kGroup;
    o.voters = {kSelf};
    return o;
  }
  TabletReplicaHooks Hooks() {
    TabletReplicaHooks h;
    h.uuid_of = [](consensus::PeerId id) { return "server-" + std::to_string(id); };
    h.consensus_changed = [this] { changes_.fetch_add(1); };
    h.applied_request = [this](const rpc::RequestIdPB& id, const WriteResponsePB& resp) {
      MutexLock l(mu_);
      applied_requests_.push_back(id.client_id() + "/" + std::to_string(id.seq_no()) + ":" +
                                  std::to_string(resp.rows_applied()));
    };
    return h;
  }
  // A started replica of a group of one that leads.
  std::unique_ptr<TabletReplica> StartLeader(FakeStorage* storage) {
    auto r = std::make_unique<TabletReplica>("t1", storage, nullptr);
    EXPECT_OK(r->Start(runtime_.get(), GroupOfOne(), Hooks(), /*campaign=*/true));
    EXPECT_TRUE(r->WaitUntilLeader(MonoDelta::FromSeconds(30)));
    return r;
  }
  std::vector<std::string> applied_requests() {
    MutexLock l(mu_);
    return applied_requests_;
  }

  std::shared_ptr<rpc::Messenger> messenger_;
  std::unique_ptr<consensus::ConsensusRuntime> runtime_;
  std::atomic<int> changes_{0};
  Mutex mu_;
  std::vector<std::string> applied_requests_ GUARDED_BY(mu_);
};

TEST_F(TabletReplicaTest, BeforeStartItNeitherLeadsNorReplicates) {
  FakeStorage storage;
  TabletReplica replica("t1", &storage, nullptr);
  EXPECT_EQ(replica.group(), nullptr);
  EXPECT_EQ(replica.ReadyLeaderTerm(), 0u);
  EXPECT_FALSE(replica.CanReadNow());
  EXPECT_FALSE(replica.WaitUntilLeader(MonoDelta::FromMilliseconds(1)));
  TabletServerErrorPB err;
  EXPECT_FALSE(replica.CheckLeader(&err));
  EXPECT_EQ(err.code(), TabletServerErrorPB::NOT_THE_LEADER);
  EXPECT_EQ(err.leader_uuid(), "");
  err.Clear();
  EXPECT_FALSE(replica.WaitForLinearizableRead(MonoDelta::FromSeconds(1), &err));
  EXPECT_EQ(err.code(), TabletServerErrorPB::NOT_THE_LEADER);
  EXPECT_TRUE(replica.Replicate(PutCommand("k"), 1).IsIllegalState());
  EXPECT_TRUE(storage.writes().empty());
  EXPECT_OK(replica.Stop());  // nothing to stop
}

TEST_F(TabletReplicaTest, AGroupOfOneLeadsAndAppliesWritesWithTheirAppliedState) {
  FakeStorage storage;
  std::unique_ptr<TabletReplica> replica = StartLeader(&storage);
  const uint64_t term = replica->ReadyLeaderTerm();
  ASSERT_GE(term, 1u);
  TabletServerErrorPB err;
  EXPECT_TRUE(replica->CheckLeader(&err)) << err.ShortDebugString();
  EXPECT_TRUE(replica->WaitForLinearizableRead(MonoDelta::FromSeconds(10), &err));
  EXPECT_GE(changes_.load(), 1);  // its election was noted

  rpc::RequestIdPB id;
  id.set_client_id("client");
  id.set_seq_no(3);
  ASSERT_OK(replica->Replicate(PutCommand("a"), term));
  ASSERT_OK(replica->Replicate(PutCommand("b", &id), term));
  const std::vector<FakeStorage::Applied> writes = storage.writes();
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0].keys, std::vector<std::string>{"put:a"});
  EXPECT_EQ(writes[1].keys, std::vector<std::string>{"put:b"});
  // Each write is stored with the index of its own entry; the second is the last.
  TabletReplica::AppliedState first, second;
  ASSERT_OK(TabletReplica::DecodeAppliedState(writes[0].applied_state, &first));
  ASSERT_OK(TabletReplica::DecodeAppliedState(writes[1].applied_state, &second));
  EXPECT_EQ(second.index, first.index + 1);
  EXPECT_EQ(replica->applied_index(), second.index);
  // With the term the entries were written in (a copy of the tablet carries it).
  EXPECT_EQ(first.term, term);
  EXPECT_EQ(second.term, term);
  // Only the write with a request id reaches the tracker's hook.
  EXPECT_EQ(applied_requests(), std::vector<std::string>{"client/3:1"});
  // A write decided in another term is not appended.
  EXPECT_TRUE(replica->Replicate(PutCommand("c"), term + 1).IsIllegalState());
  EXPECT_EQ(storage.writes().size(), 2u);
  ASSERT_OK(replica->Stop());
  EXPECT_EQ(runtime_->GetGroup(kGroup), nullptr);
}

TEST_F(TabletReplicaTest, ARestartStartsFromTheStoredAppliedState) {
  FakeStorage storage;
  std::unique_ptr<TabletReplica> replica = StartLeader(&storage);
  ASSERT_OK(replica->Replicate(PutCommand("a"), replica->ReadyLeaderTerm()));
  const uint64_t applied = replica->applied_index();
  ASSERT_NO_FATAL_FAILURE(Restart(&replica));

  // The storage kept its applied state: the log's entries up to it are not applied
  // again, and the replica leads again in a later term.
  replica = StartLeader(&storage);
  EXPECT_GE(replica->applied_index(), applied);
  EXPECT_EQ(storage.writes().size(), 1u);
  const uint64_t term = replica->ReadyLeaderTerm();
  EXPECT_GE(term, 2u);
  ASSERT_OK(replica->Replicate(PutCommand("b"), term));
  EXPECT_EQ(storage.writes().size(), 2u);
  EXPECT_GT(replica->applied_index(), applied);
}

TEST_F(TabletReplicaTest, AnAppliedStateThatDoesNotDecodeFailsStart) {
  FakeStorage storage;
  storage.SetAppliedState("short");
  TabletReplica replica("t1", &storage, nullptr);
  Status s = replica.Start(runtime_.get(), GroupOfOne(), Hooks(), /*campaign=*/true);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_EQ(replica.group(), nullptr);
  EXPECT_EQ(runtime_->GetGroup(kGroup), nullptr);
}

TEST_F(TabletReplicaTest, AFailedApplyFailsTheTabletAndStopsItsApplies) {
  FakeStorage storage;
  std::unique_ptr<TabletReplica> replica = StartLeader(&storage);
  const uint64_t term = replica->ReadyLeaderTerm();
  const int changes_before = changes_.load();
  storage.FailNextWrite();
  // Applied (the entry is committed), but the storage's apply failed: the tablet stops.
  ASSERT_OK(replica->Replicate(PutCommand("a"), term));
  ASSERT_TRUE(storage.failed());
  EXPECT_NE(storage.failure().ToString().find("applying entry"), std::string::npos)
      << storage.failure().ToString();
  EXPECT_GT(changes_.load(), changes_before);  // reported to the master
  // Later entries advance the applied index without reaching the storage.
  const uint64_t applied = replica->applied_index();
  ASSERT_OK(replica->Replicate(PutCommand("b"), term));
  EXPECT_TRUE(storage.writes().empty());
  EXPECT_EQ(replica->applied_index(), applied + 1);
}

TEST_F(TabletReplicaTest, AFailedGroupFailsTheTablet) {
  FakeStorage storage;
  TabletReplica replica("t1", &storage, nullptr);
  ASSERT_OK(replica.Start(runtime_.get(), GroupOfOne(), Hooks(), /*campaign=*/false));
  ASSERT_OK(replica.Stop());  // no worker calls it any more: the test plays the worker
  replica.GroupFailed(Status::IOError("log disk full"));
  ASSERT_TRUE(storage.failed());
  EXPECT_NE(storage.failure().ToString().find("log disk full"), std::string::npos);
  EXPECT_GE(changes_.load(), 1);
}

TEST(TabletReplicaAppliedStateTest, RoundTripsWithAndWithoutAConfiguration) {
  using State = TabletReplica::AppliedState;
  State s;
  ASSERT_OK(TabletReplica::DecodeAppliedState("", &s));
  EXPECT_EQ(s.index, 0u);
  EXPECT_FALSE(s.config.has_value());
  ASSERT_OK(TabletReplica::DecodeAppliedState(TabletReplica::EncodeAppliedState({17, 3, {}}), &s));
  EXPECT_EQ(s.index, 17u);
  EXPECT_EQ(s.term, 3u);
  EXPECT_FALSE(s.config.has_value());
  consensus::ConfigPB c;
  c.add_voters(1);
  c.add_voters(2);
  c.add_learners(3);
  ASSERT_OK(TabletReplica::DecodeAppliedState(
      TabletReplica::EncodeAppliedState({uint64_t{1} << 40, 9, c}), &s));
  EXPECT_EQ(s.index, uint64_t{1} << 40);
  EXPECT_EQ(s.term, 9u);
  ASSERT_TRUE(s.config.has_value());
  EXPECT_EQ(s.config->voters_size(), 2);
  EXPECT_EQ(s.config->learners_size(), 1);
  // The earlier form: the index, then the configuration, no term.
  std::string old;
  PutFixed64BE(&old, 42);
  c.AppendToString(&old);
  ASSERT_OK(TabletReplica::DecodeAppliedState(old, &s));
  EXPECT_EQ(s.index, 42u);
  EXPECT_EQ(s.term, 0u);
  ASSERT_TRUE(s.config.has_value());
  EXPECT_EQ(s.config->voters_size(), 2);
  EXPECT_TRUE(TabletReplica::DecodeAppliedState("1234567", &s).IsCorruption());
  EXPECT_TRUE(
      TabletReplica::DecodeAppliedState(std::string(8, '\0') + "\xff\xff", &s).IsCorruption());
  EXPECT_TRUE(TabletReplica::DecodeAppliedState(std::string(1, '\1') + "short", &s).IsCorruption());
  EXPECT_TRUE(TabletReplica::DecodeAppliedState(std::string(17, '\7'), &s).IsCorruption());
}

}  // namespace
}  // namespace nyala::tserver
