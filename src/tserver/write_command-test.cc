#include "tserver/write_command.h"

#include <gtest/gtest.h>

#include "common/test_util.h"

namespace nyala::tserver {
namespace {

std::string SampleCommand(bool with_request) {
  std::string changes;
  const Slice v1("value-1"), empty("");
  EncodeRowChange(Slice("k1"), &v1, &changes);
  EncodeRowChange(Slice("k2"), nullptr, &changes);
  EncodeRowChange(Slice("k3"), &empty, &changes);
  rpc::RequestIdPB id;
  id.set_client_id("client-a");
  id.set_seq_no(42);
  id.set_first_incomplete_seq_no(40);
  WriteResponsePB resp;
  resp.set_rows_applied(2);
  resp.add_per_row_errors()->set_row_index(1);
  return EncodeWriteCommand(3, changes, with_request ? &id : nullptr, resp);
}

TEST(WriteCommandTest, WriteCommandRoundTrips) {
  for (bool with_request : {false, true}) {
    const std::string cmd = SampleCommand(with_request);
    DecodedWriteCommand d;
    ASSERT_OK(DecodeWriteCommand(cmd, &d));
    ASSERT_EQ(d.changes.size(), 3u);
    EXPECT_EQ(d.changes[0].key.ToString(), "k1");
    EXPECT_EQ(d.changes[0].value.ToString(), "value-1");
    EXPECT_FALSE(d.changes[0].is_delete);
    EXPECT_EQ(d.changes[1].key.ToString(), "k2");
    EXPECT_TRUE(d.changes[1].is_delete);
    EXPECT_EQ(d.changes[2].value.size(), 0u);
    EXPECT_FALSE(d.changes[2].is_delete);
    EXPECT_EQ(d.has_request, with_request);
    if (with_request) {
      EXPECT_EQ(d.request_id.client_id(), "client-a");
      EXPECT_EQ(d.request_id.seq_no(), 42);
      EXPECT_EQ(d.response.rows_applied(), 2);
      EXPECT_EQ(d.response.per_row_errors_size(), 1);
    }
  }
}

// A command cut anywhere, or with a byte changed where the format has no freedom, is
// Corruption: never a crash, never a partial decode taken for whole.
TEST(WriteCommandTest, DamagedCommandsAreCorruption) {
  const std::string cmd = SampleCommand(true);
  for (size_t len = 0; len < cmd.size(); len++) {
    DecodedWriteCommand d;
    Status s = DecodeWriteCommand(Slice(cmd.data(), len), &d);
    EXPECT_TRUE(s.IsCorruption()) << "cut at " << len << ": " << s.ToString();
  }
  std::string bad_version = cmd;
  bad_version[0] = 7;
  DecodedWriteCommand d;
  EXPECT_TRUE(DecodeWriteCommand(bad_version, &d).IsCorruption());
  std::string bad_kind = cmd;
  bad_kind[2] = 9;  // the first change's kind
  EXPECT_TRUE(DecodeWriteCommand(bad_kind, &d).IsCorruption());
  EXPECT_TRUE(DecodeWriteCommand(cmd + "x", &d).IsCorruption());
}

}  // namespace
}  // namespace nyala::tserver
