// Tests of TabletManager in its production shape (TestTabletManager: a consensus
// runtime with its synced log, every tablet a Raft group of one): creating tablets
// that lead and take writes, opening them again after a restart, a tablet whose group
// fails to start (only it is FAILED), and deleting a tablet with its group.
#include "tserver/tablet_manager.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/test_util.h"
#include "consensus/peer_id.h"
#include "consensus/runtime.h"
#include "tserver/tablet.h"
#include "tserver/tablet_manager_test_util.h"
#include "tserver/tablet_store.h"
#include "tserver/tserver_test_util.h"

namespace nyala::tserver {
namespace {

using namespace testing;  // NOLINT(build/namespaces)

class TabletManagerTest : public NyalaTest {
 protected:
  void SetUp() override {
    NyalaTest::SetUp();
    schema_ = SeedSchema();
    ASSERT_NO_FATAL_FAILURE(Start());
  }
  void TearDown() override {
    server_.reset();
    NyalaTest::TearDown();
  }
  // Starts the manager, or restarts it (as the tablet server would).
  void Start() {
    server_.reset();
    TestTabletManager::Options opts;
    opts.data_dir = test_dir();
    auto server = TestTabletManager::Start(std::move(opts));
    ASSERT_OK(server.status());
    server_ = std::move(*server);
  }
  TabletManager* mgr() const { return server_->manager(); }
  void CreateTablet(const std::string& id) {
    TabletServerErrorPB::Code code;
    ASSERT_OK(mgr()->CreateTablet(MakeCreateTablet(id, schema_), &code));
  }
  // Inserts seed rows [first, first + n) into `id`.
  void Insert(const std::string& id, int64_t first, int64_t n) {
    std::shared_ptr<Tablet> t = mgr()->Lookup(id);
    ASSERT_NE(t, nullptr) << id;
    WriteResponsePB resp;
    t->Write(MakeSeedWrite(id, schema_, first, n), &resp);
    ASSERT_FALSE(resp.has_error()) << resp.ShortDebugString();
    ASSERT_EQ(resp.rows_applied(), n);
  }
  // Whether `id` holds seed row `k`, read linearizably at its leader.
  bool HasRow(const std::string& id, int64_t k) {
    GetRequestPB req;
    req.set_tablet_id(id);
    req.add_keys(EncodedKey(schema_, k));
    GetResponsePB resp;
    std::string rows, indirect;
    mgr()->Lookup(id)->Get(req, &resp, &rows, &indirect);
    EXPECT_FALSE(resp.has_error()) << resp.ShortDebugString();
    return resp.found_size() == 1 && resp.found(0);
  }
  // The reported state of every tablet in a full report, by id.
  std::map<std::string, master::ReportedTabletPB> FullReport() {
    master::TabletReportPB report;
    mgr()->BuildReport(/*full=*/true, 0, &report);
    std::map<std::string, master::ReportedTabletPB> out;
    for (const auto& t : report.updated_tablets()) out[t.tablet_id()] = t;
    return out;
  }

  Schema schema_;
  std::unique_ptr<TestTabletManager> server_;
};

TEST_F(TabletManagerTest, CreatedTabletsAreGroupsOfOneThatLeadAndTakeWrites) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t2"));
  EXPECT_EQ(mgr()->NumTablets(), 2u);
  for (const std::string id : {"t1", "t2"}) {
    std::shared_ptr<Tablet> t = mgr()->Lookup(id);
    ASSERT_NE(t, nullptr);
    // CreateTablet answers once a tablet of one replica leads.
    EXPECT_NE(t->replica().ReadyLeaderTerm(), 0u) << id;
    ASSERT_NE(t->replica().group(), nullptr);
    EXPECT_EQ(server_->runtime()->GetGroup(consensus::GroupIdFromTabletId(id)),
              t->replica().group());
    master::ConsensusStatePB c;
    ASSERT_TRUE(mgr()->ConsensusStateOf(*t, &c));
    EXPECT_EQ(c.role(), master::LEADER);
    EXPECT_EQ(c.leader_uuid(), server_->uuid());
    EXPECT_EQ(c.voter_uuids_size(), 1);
    EXPECT_EQ(c.voter_uuids(0), server_->uuid());
  }
  ASSERT_NO_FATAL_FAILURE(Insert("t1", 0, 10));
  ASSERT_NO_FATAL_FAILURE(Insert("t2", 100, 5));
  EXPECT_TRUE(HasRow("t1", 9));
  EXPECT_FALSE(HasRow("t1", 100));
  EXPECT_TRUE(HasRow("t2", 100));
  // Its election's no-op, then the write.
  EXPECT_GE(mgr()->Lookup("t1")->replica().applied_index(), 2u);
  auto report = FullReport();
  ASSERT_EQ(report.size(), 2u);
  EXPECT_EQ(report["t1"].state(), master::TABLET_RUNNING);
  EXPECT_EQ(report["t1"].consensus().role(), master::LEADER);
}

TEST_F(TabletManagerTest, TabletsOpenAgainAfterARestartWithTheirRowsAndLog) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t2"));
  ASSERT_NO_FATAL_FAILURE(Insert("t1", 0, 10));
  ASSERT_NO_FATAL_FAILURE(Insert("t2", 0, 3));
  const uint64_t applied = mgr()->Lookup("t1")->replica().applied_index();
  const uint64_t term = mgr()->Lookup("t1")->replica().ReadyLeaderTerm();

  ASSERT_NO_FATAL_FAILURE(Start());  // a restart
  EXPECT_EQ(mgr()->NumTablets(), 2u);
  std::shared_ptr<Tablet> t1 = mgr()->Lookup("t1");
  ASSERT_NE(t1, nullptr);
  EXPECT_EQ(t1->state(), TabletState::kRunning);
  // Its group came back from the log and elected itself in a later term.
  EXPECT_GE(t1->replica().applied_index(), applied);
  EXPECT_GT(t1->replica().ReadyLeaderTerm(), term);
  for (int64_t k = 0; k < 10; k++) EXPECT_TRUE(HasRow("t1", k)) << k;
  EXPECT_TRUE(HasRow("t2", 2));
  // Writes go on where they stopped.
  ASSERT_NO_FATAL_FAILURE(Insert("t1", 10, 5));
  EXPECT_TRUE(HasRow("t1", 14));
}

TEST_F(TabletManagerTest, ATabletWhoseGroupDoesNotStartIsFailedAlone) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t2"));
  ASSERT_NO_FATAL_FAILURE(Insert("t1", 0, 4));
  ASSERT_NO_FATAL_FAILURE(Insert("t2", 0, 4));
  const uint64_t seq2 = mgr()->Lookup("t2")->seq();
  server_.reset();

  // Damage t2's applied state (too short to hold an index) while the server is down.
  {
    auto store = TabletStore::Open(test_dir() + "/tablets", nullptr);
    ASSERT_OK(store.status());
    StoreWriteBatch batch;
    (*store)->PutAppliedState(&batch, seq2, "bad");
    ASSERT_OK((*store)->Write(&batch));
  }
  ASSERT_NO_FATAL_FAILURE(Start());
  std::shared_ptr<Tablet> t2 = mgr()->Lookup("t2");
  ASSERT_NE(t2, nullptr);
  EXPECT_EQ(t2->state(), TabletState::kFailed);
  EXPECT_TRUE(t2->failure().IsCorruption()) << t2->failure().ToString();
  EXPECT_NE(t2->failure().ToString().find("applied state"), std::string::npos)
      << t2->failure().ToString();
  EXPECT_EQ(server_->runtime()->GetGroup(consensus::GroupIdFromTabletId("t2")), nullptr);
  WriteResponsePB resp;
  t2->Write(MakeSeedWrite("t2", schema_, 10, 1), &resp);
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::TABLET_FAILED) << resp.ShortDebugString();

  // The other tablet runs: it leads, reads and takes writes.
  EXPECT_EQ(mgr()->Lookup("t1")->state(), TabletState::kRunning);
  EXPECT_TRUE(HasRow("t1", 3));
  ASSERT_NO_FATAL_FAILURE(Insert("t1", 4, 4));
  auto report = FullReport();
  EXPECT_EQ(report["t1"].state(), master::TABLET_RUNNING);
  EXPECT_EQ(report["t2"].state(), master::TABLET_FAILED);
  EXPECT_TRUE(report["t2"].has_error());
  EXPECT_FALSE(report["t2"].has_consensus());
}

TEST_F(TabletManagerTest, DeletingATabletRemovesItAndItsGroup) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t2"));
  ASSERT_NO_FATAL_FAILURE(Insert("t1", 0, 4));
  std::shared_ptr<Tablet> t1 = mgr()->Lookup("t1");
  const int64_t before = mgr()->LatestChange();

  ASSERT_OK(mgr()->DeleteTablet("t1"));
  EXPECT_EQ(mgr()->Lookup("t1"), nullptr);
  EXPECT_EQ(t1->state(), TabletState::kDeleted);
  EXPECT_EQ(server_->runtime()->GetGroup(consensus::GroupIdFromTabletId("t1")), nullptr);
  EXPECT_TRUE(mgr()->DeleteTablet("t1").IsNotFound());
  // The next incremental report says so.
  master::TabletReportPB report;
  mgr()->BuildReport(/*full=*/false, before, &report);
  ASSERT_EQ(report.removed_tablet_ids_size(), 1);
  EXPECT_EQ(report.removed_tablet_ids(0), "t1");
  // A held reference to the deleted tablet refuses writes.
  WriteResponsePB resp;
  t1->Write(MakeSeedWrite("t1", schema_, 10, 1), &resp);
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::TABLET_NOT_FOUND);
  t1.reset();
  // The other tablet is untouched, and stays so across a restart; t1 stays gone.
  ASSERT_NO_FATAL_FAILURE(Insert("t2", 0, 2));
  ASSERT_NO_FATAL_FAILURE(Start());
  EXPECT_EQ(mgr()->NumTablets(), 1u);
  EXPECT_EQ(mgr()->Lookup("t1"), nullptr);
  EXPECT_TRUE(HasRow("t2", 1));
  // A tablet of the same id can be created again, as a new group.
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  EXPECT_FALSE(HasRow("t1", 0));
}

TEST_F(TabletManagerTest, CreatingBeforeReplicationStartsIsRefused) {
  server_.reset();
  TabletManager mgr({test_dir()}, nullptr);
  ASSERT_OK(mgr.Open());
  TabletServerErrorPB::Code code;
  Status s = mgr.CreateTablet(MakeCreateTablet("t1", schema_), &code);
  EXPECT_TRUE(s.IsServiceUnavailable()) << s.ToString();
  EXPECT_EQ(mgr.NumTablets(), 0u);
}

// A tombstone: the group stops with its consensus state kept in the log, the data
// goes, reads and writes are refused, the master hears it removed, and it stays a
// tombstone across a restart until a delete removes its log records too.
TEST_F(TabletManagerTest, ATombstoneKeepsTheConsensusStateAndServesNothing) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t2"));
  ASSERT_NO_FATAL_FAILURE(Insert("t1", 0, 4));
  const uint64_t group = consensus::GroupIdFromTabletId("t1");
  const uint64_t term = server_->runtime()->log()->GetGroupState(group).hard_state->term;
  const int64_t before = mgr()->LatestChange();
  ASSERT_OK(mgr()->TombstoneTablet("t1"));
  ASSERT_OK(mgr()->TombstoneTablet("t1"));  // again: nothing to do
  std::shared_ptr<Tablet> t1 = mgr()->Lookup("t1");
  ASSERT_NE(t1, nullptr);
  EXPECT_EQ(t1->state(), TabletState::kTombstoned);
  EXPECT_EQ(t1->store()->Rows(t1->seq()), nullptr) << "its rows are gone";
  EXPECT_EQ(server_->runtime()->GetGroup(group), nullptr);
  consensus::GroupState gs = server_->runtime()->log()->GetGroupState(group);
  ASSERT_TRUE(gs.exists);
  ASSERT_TRUE(gs.hard_state.has_value());
  EXPECT_EQ(gs.hard_state->term, term);
  WriteResponsePB resp;
  t1->Write(MakeSeedWrite("t1", schema_, 10, 1), &resp);
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::TABLET_NOT_FOUND);
  master::TabletReportPB report;
  mgr()->BuildReport(/*full=*/false, before, &report);
  ASSERT_EQ(report.removed_tablet_ids_size(), 1);
  EXPECT_EQ(report.removed_tablet_ids(0), "t1");

  ASSERT_NO_FATAL_FAILURE(Start());  // a restart
  t1 = mgr()->Lookup("t1");
  ASSERT_NE(t1, nullptr);
  EXPECT_EQ(t1->state(), TabletState::kTombstoned);
  EXPECT_EQ(server_->runtime()->GetGroup(group), nullptr);
  EXPECT_EQ(server_->runtime()->log()->GetGroupState(group).hard_state->term, term);
  EXPECT_EQ(FullReport().count("t1"), 0u);
  ASSERT_OK(mgr()->DeleteTablet("t1"));
  EXPECT_EQ(mgr()->Lookup("t1"), nullptr);
  EXPECT_FALSE(server_->runtime()->log()->GetGroupState(group).exists);
  EXPECT_TRUE(mgr()->TombstoneTablet("t1").IsNotFound());
}

// A tablet exported by one server installs on another, as a new replica and then in
// place of an older one; an export no newer than the replica is refused.
TEST_F(TabletManagerTest, AnExportedTabletInstallsOnAnotherServer) {
  ASSERT_NO_FATAL_FAILURE(CreateTablet("t1"));
  ASSERT_NO_FATAL_FAILURE(Insert("t1", 0, 100));
  TestTabletManager::Options opts;
  opts.data_dir = test_dir() + "/other";
  std::filesystem::create_directories(opts.data_dir);
  opts.uuid = "00000000000000000000000000000002";
  auto other = TestTabletManager::Start(std::move(opts));
  ASSERT_OK(other.status());
  auto rows_on = [&](TabletManager* m) {
    std::shared_ptr<Tablet> t = m->Lookup("t1");
    int n = 0;
    auto it = t->NewIterator(nullptr, KeyRange());
    for (it->SeekToFirst(); it->Valid(); it->Next()) n++;
    EXPECT_OK(it->status());
    return n;
  };
  auto export_to = [&](const std::string& dir, std::string* superblock) {
    std::vector<std::string> files;
    ASSERT_OK(mgr()->ExportForCopy("t1", dir, &files, superblock));
    ASSERT_FALSE(files.empty());
    for (const std::string& f : files) EXPECT_TRUE(std::filesystem::exists(dir + "/" + f)) << f;
  };
  std::string first;
  ASSERT_NO_FATAL_FAILURE(export_to(test_dir() + "/copy1", &first));
  auto index =
      (*other)->manager()->InstallCopy("t1", test_dir() + "/copy1", first, (*other)->tracker());
  ASSERT_OK(index.status());
  EXPECT_EQ(*index, mgr()->Lookup("t1")->replica().applied_index());
  EXPECT_EQ(rows_on((*other)->manager()), 100);
  EXPECT_EQ((*other)->manager()->Lookup("t1")->state(), TabletState::kRunning);
  // Rows of the copy keep their source's key prefix; the copy's seq is its own.
  EXPECT_EQ((*other)->manager()->Lookup("t1")->row_prefix(), mgr()->Lookup("t1")->row_prefix());

  ASSERT_NO_FATAL_FAILURE(Insert("t1", 100, 50));
  std::string second;
  ASSERT_NO_FATAL_FAILURE(export_to(test_dir() + "/copy2", &second));
  index =
      (*other)->manager()->InstallCopy("t1", test_dir() + "/copy2", second, (*other)->tracker());
  ASSERT_OK(index.status());
  EXPECT_EQ(rows_on((*other)->manager()), 150);
  // The copy and its source checksum alike at the same index; a row changed behind the
  // copy's back (damage) changes its checksum.
  auto checksum = [](TabletManager* m) {
    ChecksumTabletResponsePB resp;
    m->Checksum("t1", 0, MonoDelta::FromSeconds(10), &resp);
    EXPECT_FALSE(resp.has_error()) << resp.ShortDebugString();
    return resp;
  };
  ChecksumTabletResponsePB a = checksum(mgr()), b = checksum((*other)->manager());
  EXPECT_EQ(a.applied_index(), b.applied_index());
  EXPECT_EQ(a.rows(), 150);
  EXPECT_EQ(b.rows(), 150);
  EXPECT_EQ(a.checksum(), b.checksum());
  {
    std::shared_ptr<Tablet> copy = (*other)->manager()->Lookup("t1");
    StoreWriteBatch batch;
    std::string key = TabletPrefix(copy->row_prefix()) + EncodedKey(schema_, 5);
    std::unique_ptr<StoreIterator> it = copy->NewIterator(nullptr, KeyRange());
    it->Seek(key);
    ASSERT_TRUE(it->Valid());
    std::string value = it->value().ToString();
    value.back() ^= 1;
    batch.Put(*copy->rows(), key, value);
    ASSERT_OK(copy->store()->Write(&batch));
  }
  b = checksum((*other)->manager());
  EXPECT_EQ(b.rows(), 150);
  EXPECT_NE(a.checksum(), b.checksum());
  // A checksum at an index the replica passed is refused; one it never reaches times out.
  ChecksumTabletResponsePB late;
  mgr()->Checksum("t1", 1, MonoDelta::FromSeconds(5), &late);
  EXPECT_EQ(late.error().code(), TabletServerErrorPB::REPLICA_TOO_STALE);
  mgr()->Checksum("t1", a.applied_index() + 10, MonoDelta::FromMilliseconds(100), &late);
  EXPECT_EQ(late.error().code(), TabletServerErrorPB::REPLICA_TOO_STALE);
  mgr()->Checksum("t9", 0, MonoDelta::FromSeconds(1), &late);
  EXPECT_EQ(late.error().code(), TabletServerErrorPB::TABLET_NOT_FOUND);
  // An export at the index the replica holds already: nothing to install.
  std::string again;
  ASSERT_NO_FATAL_FAILURE(export_to(test_dir() + "/copy3", &again));
  index = (*other)->manager()->InstallCopy("t1", test_dir() + "/copy3", again, (*other)->tracker());
  EXPECT_TRUE(index.status().IsAlreadyPresent()) << index.status().ToString();
  // A superblock that does not parse, or names another tablet, is refused.
  EXPECT_TRUE((*other)
                  ->manager()
                  ->InstallCopy("t1", test_dir() + "/copy3", "junk", (*other)->tracker())
                  .status()
                  .IsCorruption());
  EXPECT_TRUE((*other)
                  ->manager()
                  ->InstallCopy("t9", test_dir() + "/copy3", again, (*other)->tracker())
                  .status()
                  .IsCorruption());
  EXPECT_EQ(rows_on((*other)->manager()), 150);
}

}  // namespace
}  // namespace nyala::tserver
