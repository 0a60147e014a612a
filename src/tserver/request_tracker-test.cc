// Tests of the write-retry tracker: remembered answers, forgetting below the
// client's first incomplete request, stale retries, failed requests run again,
// answers restored from stored records and the deletion of forgotten records.
#include "tserver/request_tracker.h"

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "tserver/tablet_store.h"

DECLARE_int32(write_dedup_ttl_ms);

namespace nyala::tserver {
namespace {

rpc::RequestIdPB Id(const std::string& client, int64_t seq, int64_t first_incomplete) {
  rpc::RequestIdPB id;
  id.set_client_id(client);
  id.set_seq_no(seq);
  id.set_first_incomplete_seq_no(first_incomplete);
  return id;
}

TEST(RequestTrackerTest, RemembersAnswersUntilTheClientMovesOn) {
  RequestTracker t;
  WriteResponsePB resp;
  ASSERT_EQ(t.Begin(Id("a", 1, 1), &resp, nullptr), RequestTracker::Outcome::kNew);
  WriteResponsePB done;
  done.set_rows_applied(5);
  t.Finish(Id("a", 1, 1), done, /*remember=*/true);
  WriteResponsePB again;
  ASSERT_EQ(t.Begin(Id("a", 1, 1), &again, nullptr), RequestTracker::Outcome::kAnswered);
  EXPECT_EQ(again.rows_applied(), 5);
  // Another client's seq 1 is independent.
  ASSERT_EQ(t.Begin(Id("b", 1, 1), &resp, nullptr), RequestTracker::Outcome::kNew);
  t.Finish(Id("b", 1, 1), done, true);
  EXPECT_EQ(t.NumClientsForTests(), 2u);
  // Client a is past 1: its answer is dropped and a late retry of 1 is stale.
  ASSERT_EQ(t.Begin(Id("a", 2, 2), &resp, nullptr), RequestTracker::Outcome::kNew);
  t.Finish(Id("a", 2, 2), done, true);
  EXPECT_EQ(t.NumResponsesForTests(), 2u);  // a:2 and b:1
  EXPECT_EQ(t.Begin(Id("a", 1, 1), &resp, nullptr), RequestTracker::Outcome::kStale);
}

TEST(RequestTrackerTest, FailedRequestsRunAgain) {
  RequestTracker t;
  WriteResponsePB resp;
  ASSERT_EQ(t.Begin(Id("a", 3, 1), &resp, nullptr), RequestTracker::Outcome::kNew);
  WriteResponsePB failed;
  failed.mutable_error()->set_code(TabletServerErrorPB::TABLET_NOT_FOUND);
  t.Finish(Id("a", 3, 1), failed, /*remember=*/false);
  EXPECT_EQ(t.Begin(Id("a", 3, 1), &resp, nullptr), RequestTracker::Outcome::kNew);
}

WriteResponsePB Applied(int64_t rows) {
  WriteResponsePB r;
  r.set_rows_applied(rows);
  return r;
}

class RequestTrackerStoreTest : public NyalaTest {
 protected:
  void SetUp() override {
    NyalaTest::SetUp();
    auto store = TabletStore::Open(test_dir() + "/store", nullptr);
    ASSERT_OK(store.status());
    store_ = std::move(store).value();
  }
  void TearDown() override {
    store_.reset();
    NyalaTest::TearDown();
  }
  RequestRecordLocation At(uint64_t tablet_seq) { return {store_.get(), tablet_seq}; }

  std::unique_ptr<TabletStore> store_;
};

TEST_F(RequestTrackerStoreTest, ForgettingAStoredAnswerQueuesTheDeletionOfItsRecord) {
  RequestTracker t;
  WriteResponsePB resp;
  ASSERT_EQ(t.Begin(Id("a", 1, 1), &resp, nullptr), RequestTracker::Outcome::kNew);
  t.Finish(Id("a", 1, 1), Applied(5), true, At(7));
  ASSERT_EQ(t.Begin(Id("a", 2, 1), &resp, nullptr), RequestTracker::Outcome::kNew);
  t.Finish(Id("a", 2, 1), Applied(5), true, At(7));
  EXPECT_EQ(store_->NumQueuedRequestRecordDeletesForTests(), 0u);
  // The client moves past 2: both answers go, and so do their records.
  ASSERT_EQ(t.Begin(Id("a", 3, 3), &resp, nullptr), RequestTracker::Outcome::kNew);
  EXPECT_EQ(store_->NumQueuedRequestRecordDeletesForTests(), 2u);
  // An answer finished below the first incomplete number is not kept either.
  ASSERT_EQ(t.Begin(Id("a", 4, 3), &resp, nullptr), RequestTracker::Outcome::kNew);
  ASSERT_EQ(t.Begin(Id("a", 5, 5), &resp, nullptr), RequestTracker::Outcome::kNew);
  t.Finish(Id("a", 4, 3), Applied(1), true, At(7));
  EXPECT_EQ(store_->NumQueuedRequestRecordDeletesForTests(), 3u);
  // The queued deletions go out with the next batch.
  StoreWriteBatch batch;
  store_->TakeRequestRecordDeletes(&batch);
  EXPECT_EQ(batch.Count(), 3);
  EXPECT_EQ(store_->NumQueuedRequestRecordDeletesForTests(), 0u);
}

TEST_F(RequestTrackerStoreTest, RestoredAnswersAreGivenAndWhatIsNotWorthKeepingIsDeleted) {
  RequestTracker t;
  const MonoDelta recent = MonoDelta::FromSeconds(1);
  EXPECT_TRUE(t.Restore("a", 5, 4, Applied(3), recent, At(1)));
  EXPECT_TRUE(t.Restore("a", 6, 4, Applied(4), recent, At(1)));
  // Too old.
  EXPECT_FALSE(t.Restore("b", 1, 1, Applied(1),
                         MonoDelta::FromMilliseconds(FLAGS_write_dedup_ttl_ms + 1), At(1)));
  // Below what another record says the client has.
  EXPECT_FALSE(t.Restore("a", 3, 3, Applied(1), recent, At(1)));
  // The same request twice.
  EXPECT_FALSE(t.Restore("a", 6, 4, Applied(4), recent, At(2)));
  EXPECT_EQ(store_->NumQueuedRequestRecordDeletesForTests(), 3u);
  EXPECT_EQ(t.NumResponsesForTests(), 2u);

  WriteResponsePB resp;
  ASSERT_EQ(t.Begin(Id("a", 5, 5), &resp, nullptr), RequestTracker::Outcome::kAnswered);
  EXPECT_EQ(resp.rows_applied(), 3);
  EXPECT_EQ(t.Begin(Id("a", 3, 5), &resp, nullptr), RequestTracker::Outcome::kStale);
  EXPECT_EQ(t.Begin(Id("b", 1, 1), &resp, nullptr), RequestTracker::Outcome::kNew);
  // A later record that moves the client on drops the earlier answers.
  EXPECT_TRUE(t.Restore("a", 9, 7, Applied(2), recent, At(1)));
  EXPECT_EQ(store_->NumQueuedRequestRecordDeletesForTests(), 5u);  // a/5 and a/6
  EXPECT_EQ(t.Begin(Id("a", 6, 7), &resp, nullptr), RequestTracker::Outcome::kStale);
}

}  // namespace
}  // namespace nyala::tserver
