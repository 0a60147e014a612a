// Tests of the write-retry tracker: remembered answers, forgetting below the
// client's first incomplete request, stale retries, failed requests run again.
#include "tserver/request_tracker.h"

#include <gtest/gtest.h>

#include "common/test_util.h"

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

}  // namespace
}  // namespace nyala::tserver
