#include "common/status.h"

#include <gtest/gtest.h>

#include "common/coding.h"
#include "common/result.h"
#include "common/test_util.h"

namespace nyala {
namespace {

Result<int> ParsePositive(int v) {
  if (v <= 0) return Status::InvalidArgument("not positive", std::to_string(v));
  return v;
}

Status AddOne(int v, int* out) {
  ASSIGN_OR_RETURN(int x, ParsePositive(v));
  *out = x + 1;
  return Status::OK();
}

TEST(StatusTest, OkIsCheapAndPrintable) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), Status::kOk);
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(sizeof(Status), sizeof(void*));
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = Status::NotFound("tablet", "abc");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.IsNotFound());
  EXPECT_EQ(s.message(), "tablet: abc");
  EXPECT_EQ(s.ToString(), "Not found: tablet: abc");
  Status copy = s;
  EXPECT_EQ(copy.ToString(), s.ToString());
  Status prepended = s.CloneAndPrepend("lookup");
  EXPECT_EQ(prepended.message(), "lookup: tablet: abc");
  EXPECT_TRUE(prepended.IsNotFound());
}

TEST(StatusTest, FromCodeRoundTripsAndRejectsUnknown) {
  Status s = Status::FromCode(Status::kTimedOut, "slow");
  EXPECT_TRUE(s.IsTimedOut());
  EXPECT_TRUE(Status::FromCode(0, "x").ok());
  EXPECT_TRUE(Status::FromCode(999, "x").IsRuntimeError());
}

TEST(ResultTest, ValueOrStatus) {
  int out = 0;
  ASSERT_OK(AddOne(4, &out));
  EXPECT_EQ(out, 5);
  Status s = AddOne(-1, &out);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_EQ(s.message(), "not positive: -1");
  Result<std::string> r = std::string("x");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "x");
}

TEST(CodingTest, VarintRoundTripAndRejectsTruncation) {
  for (uint64_t v : {0ull, 1ull, 127ull, 128ull, 300ull, 1ull << 35, ~0ull}) {
    std::string buf;
    PutVarint64(&buf, v);
    EXPECT_EQ(int(buf.size()), VarintLength(v));
    Slice in(buf);
    uint64_t got;
    ASSERT_TRUE(GetVarint64(&in, &got));
    EXPECT_EQ(got, v);
    EXPECT_TRUE(in.empty());
    if (buf.size() > 1) {
      Slice cut(buf.data(), buf.size() - 1);
      EXPECT_FALSE(GetVarint64(&cut, &got));
    }
  }
  std::string too_long(11, '\xff');
  Slice in(too_long);
  uint64_t got;
  EXPECT_FALSE(GetVarint64(&in, &got));
}

TEST(CodingTest, BigEndianFixed) {
  std::string buf;
  PutFixed32BE(&buf, 0x01020304);
  PutFixed64BE(&buf, 0x0102030405060708ull);
  ASSERT_EQ(buf.size(), 12u);
  EXPECT_EQ(buf[0], 1);
  EXPECT_EQ(DecodeFixed32BE(reinterpret_cast<const uint8_t*>(buf.data())), 0x01020304u);
  EXPECT_EQ(DecodeFixed64BE(reinterpret_cast<const uint8_t*>(buf.data() + 4)),
            0x0102030405060708ull);
}

TEST(MonoTimeTest, OrderedAndArithmetic) {
  MonoTime a = MonoTime::Now();
  MonoTime b = a + MonoDelta::FromMilliseconds(5);
  EXPECT_LT(a, b);
  EXPECT_EQ((b - a).ToMilliseconds(), 5);
  EXPECT_EQ(MonoTime::Max() + MonoDelta::FromSeconds(1), MonoTime::Max());
  EXPECT_GE(MonoTime::Now(), a);
  timeval tv = MonoDelta::FromMicroseconds(1500001).ToTimeVal();
  EXPECT_EQ(tv.tv_sec, 1);
  EXPECT_EQ(tv.tv_usec, 500001);
}

}  // namespace
}  // namespace nyala
