// TabletCopyRunner's answers to StartTabletCopy, with a download function the test
// controls (the download itself is tablet_copy-test's; a real copy end to end is
// test/replication-itest.cc's): bad requests, a copy that fails and is reported once,
// the limit on copies at once, a new source cancelling a running copy, and a replica
// that holds the index asked for.
#include "tserver/tablet_copy_runner.h"

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>

#include "common/test_util.h"
#include "tserver/tablet_manager.h"
#include "tserver/tablet_manager_test_util.h"
#include "tserver/tserver_test_util.h"

DECLARE_int32(num_tablets_to_copy_simultaneously);

namespace nyala::tserver {
namespace {

using namespace testing;  // NOLINT(build/namespaces)

class TabletCopyRunnerTest : public NyalaTest {
 protected:
  void SetUp() override {
    NyalaTest::SetUp();
    TestTabletManager::Options opts;
    opts.data_dir = test_dir();
    auto server = TestTabletManager::Start(std::move(opts));
    ASSERT_OK(server.status());
    server_ = std::move(*server);
    TabletCopyRunner::Options o;
    o.tablets = server_->manager();
    o.tracker = server_->tracker();
    o.self_uuid = server_->uuid();
    o.staging_root = test_dir() + "/copies-in-progress";
    o.download = [this](const std::string& source, const std::string& tablet_id,
                        const std::string& staging, TabletCopyProgress* progress,
                        const std::atomic<bool>* cancelled, std::string*) -> Status {
      downloads_++;
      last_source_ = source;
      std::filesystem::create_directories(staging);
      progress->bytes_total = 100;
      progress->bytes_done = 40;
      // Until the test releases it, or the copy is cancelled.
      for (int i = 0; i < 30000 && !release_ && !cancelled->load(); i++) {
        SleepFor(MonoDelta::FromMilliseconds(1));
      }
      if (cancelled->load()) return Status::Aborted("cancelled");
      return Status::IOError("the test's source went away");
    };
    runner_ = std::make_unique<TabletCopyRunner>(std::move(o));
  }
  void TearDown() override {
    release_ = true;
    runner_.reset();
    server_.reset();
    NyalaTest::TearDown();
  }
  StartTabletCopyResponsePB Ask(const std::string& tablet_id, const std::string& source_uuid,
                                uint64_t min_index = 5) {
    StartTabletCopyRequestPB req;
    req.set_tablet_id(tablet_id);
    req.mutable_source()->set_permanent_uuid(source_uuid);
    req.mutable_source()->set_host("127.0.0.1");
    req.mutable_source()->set_port(7050);
    req.set_min_index(min_index);
    StartTabletCopyResponsePB resp;
    runner_->Start(req, &resp);
    return resp;
  }

  std::unique_ptr<TestTabletManager> server_;
  std::unique_ptr<TabletCopyRunner> runner_;
  std::atomic<int> downloads_{0};
  std::atomic<bool> release_{false};
  std::string last_source_;
};

TEST_F(TabletCopyRunnerTest, BadRequestsAreRefusedAndStartNothing) {
  for (const std::string id : {"", "../escape", "a/b", ".."}) {
    StartTabletCopyResponsePB resp = Ask(id, "leader-uuid");
    ASSERT_TRUE(resp.has_error()) << id;
    EXPECT_EQ(resp.error().code(), TabletServerErrorPB::INVALID_CONFIG) << id;
  }
  StartTabletCopyRequestPB req;
  req.set_tablet_id("t1");
  StartTabletCopyResponsePB resp;
  runner_->Start(req, &resp);  // no source
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::INVALID_CONFIG);
  resp = Ask("t1", server_->uuid());  // from itself
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::INVALID_CONFIG);
  EXPECT_EQ(downloads_.load(), 0);
  EXPECT_FALSE(std::filesystem::exists(test_dir() + "/escape"));
}

TEST_F(TabletCopyRunnerTest, AFailedCopyIsReportedOnceAndTheNextRequestStartsAnother) {
  StartTabletCopyResponsePB resp = Ask("t1", "leader-uuid");
  ASSERT_FALSE(resp.has_error()) << resp.ShortDebugString();
  EXPECT_EQ(resp.state(), StartTabletCopyResponsePB::COPYING);
  AssertEventually(MonoDelta::FromSeconds(10), [&] {
    resp = Ask("t1", "leader-uuid");
    ASSERT_EQ(resp.state(), StartTabletCopyResponsePB::COPYING);
    ASSERT_EQ(resp.bytes_done(), 40);
    ASSERT_EQ(resp.bytes_total(), 100);
  });
  EXPECT_EQ(last_source_, "127.0.0.1:7050");
  ASSERT_EQ(runner_->RunningCopies().size(), 1u);
  EXPECT_EQ(runner_->RunningCopies()[0].tablet_id, "t1");
  release_ = true;
  AssertEventually(MonoDelta::FromSeconds(10), [&] {
    resp = Ask("t1", "leader-uuid");
    ASSERT_EQ(resp.state(), StartTabletCopyResponsePB::FAILED);
  });
  EXPECT_NE(resp.failure().message().find("went away"), std::string::npos)
      << resp.ShortDebugString();
  EXPECT_EQ(runner_->copies_failed(), 1);
  EXPECT_TRUE(runner_->RunningCopies().empty());
  // The staging directory is gone with the failed copy.
  EXPECT_FALSE(std::filesystem::exists(test_dir() + "/copies-in-progress/t1"));
  resp = Ask("t1", "leader-uuid");
  EXPECT_EQ(resp.state(), StartTabletCopyResponsePB::COPYING);
  AssertEventually(MonoDelta::FromSeconds(10), [&] { ASSERT_EQ(downloads_.load(), 2); });
}

TEST_F(TabletCopyRunnerTest, CopiesBeyondTheLimitAreThrottled) {
  gflags::FlagSaver saver;
  FLAGS_num_tablets_to_copy_simultaneously = 1;
  EXPECT_FALSE(Ask("t1", "leader-uuid").has_error());
  StartTabletCopyResponsePB resp = Ask("t2", "leader-uuid");
  ASSERT_TRUE(resp.has_error());
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::THROTTLED);
  FLAGS_num_tablets_to_copy_simultaneously = 0;  // takes none
  resp = Ask("t3", "leader-uuid");
  EXPECT_EQ(resp.error().code(), TabletServerErrorPB::THROTTLED);
}

TEST_F(TabletCopyRunnerTest, ANewSourceCancelsTheRunningCopy) {
  EXPECT_FALSE(Ask("t1", "old-leader").has_error());
  AssertEventually(MonoDelta::FromSeconds(10), [&] { ASSERT_EQ(downloads_.load(), 1); });
  StartTabletCopyResponsePB resp = Ask("t1", "new-leader");
  EXPECT_EQ(resp.state(), StartTabletCopyResponsePB::COPYING);
  AssertEventually(MonoDelta::FromSeconds(10), [&] {
    resp = Ask("t1", "new-leader");
    ASSERT_EQ(resp.state(), StartTabletCopyResponsePB::FAILED);
  });
  EXPECT_NE(resp.failure().message().find("cancelled"), std::string::npos);
}

TEST_F(TabletCopyRunnerTest, AReplicaThatHoldsTheIndexNeedsNoCopy) {
  TabletServerErrorPB::Code code;
  ASSERT_OK(server_->manager()->CreateTablet(MakeCreateTablet("t1", SeedSchema()), &code));
  const uint64_t applied = server_->manager()->Lookup("t1")->replica().applied_index();
  ASSERT_GT(applied, 0u);
  StartTabletCopyResponsePB resp = Ask("t1", "leader-uuid", applied);
  EXPECT_EQ(resp.state(), StartTabletCopyResponsePB::DONE);
  EXPECT_EQ(resp.applied_index(), applied);
  EXPECT_EQ(downloads_.load(), 0);
  resp = Ask("t1", "leader-uuid", applied + 1);  // it lacks that: a copy starts
  EXPECT_EQ(resp.state(), StartTabletCopyResponsePB::COPYING);
}

}  // namespace
}  // namespace nyala::tserver
