#include "common/wire_protocol.h"

#include <gtest/gtest.h>

#include "common/common.pb.h"
#include "common/test_util.h"

namespace nyala {
namespace {

TEST(WireProtocolTest, StatusRoundTrips) {
  for (int code = Status::kNotFound; code <= Status::kCancelled; code++) {
    Status s = Status::FromCode(code, "message " + std::to_string(code), code + 100);
    AppStatusPB pb;
    StatusToPB(s, &pb);
    EXPECT_EQ(pb.code(), code);
    Status back = StatusFromPB(pb);
    EXPECT_EQ(back.code(), s.code());
    EXPECT_EQ(back.message(), s.message());
    EXPECT_EQ(back.posix_code(), code + 100);
    EXPECT_EQ(back.ToString(), s.ToString());
  }
}

TEST(WireProtocolTest, OkAndUnknownCodes) {
  AppStatusPB pb;
  pb.set_message("stale");
  StatusToPB(Status::OK(), &pb);
  EXPECT_EQ(pb.code(), 0);
  EXPECT_EQ(pb.message(), "");
  EXPECT_TRUE(StatusFromPB(pb).ok());
  pb.set_code(4242);
  pb.set_message("from the future");
  Status s = StatusFromPB(pb);
  EXPECT_TRUE(s.IsRuntimeError());
  EXPECT_NE(s.message().find("from the future"), std::string::npos);
}

}  // namespace
}  // namespace nyala
