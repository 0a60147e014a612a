// Tests of the mistyped-flag suggestions (flag_util.h).
#include "common/flag_util.h"

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include "common/flag_tags.h"

DEFINE_bool(flag_util_test_verbose, false, "For tests: a boolean flag to suggest.");
DEFINE_int32(flag_util_test_secret, 0, "For tests: a hidden flag, never suggested.");
TAG_FLAG(flag_util_test_secret, hidden);

namespace nyala {
namespace {

TEST(FlagUtilTest, EditDistance) {
  EXPECT_EQ(EditDistance("format", "format"), 0);
  EXPECT_EQ(EditDistance("frmat", "format"), 1);   // a letter left out
  EXPECT_EQ(EditDistance("foramt", "format"), 1);  // two letters swapped
  EXPECT_EQ(EditDistance("formet", "format"), 1);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
}

TEST(FlagUtilTest, ClosestName) {
  const std::vector<std::string> flags = {"format", "file", "flags", "num_threads",
                                          "num_rows_per_thread", "timeout_ms"};
  EXPECT_EQ(ClosestName("frmat", flags), "format");
  EXPECT_EQ(ClosestName("foramt", flags), "format");
  EXPECT_EQ(ClosestName("num_thread", flags), "num_threads");
  EXPECT_EQ(ClosestName("timeout", flags), "timeout_ms");  // the only one it starts
  EXPECT_EQ(ClosestName("num_rows", flags), "num_rows_per_thread");
  // Too far from every flag, or the start of more than one: no guess.
  EXPECT_EQ(ClosestName("colour", flags), "");
  EXPECT_EQ(ClosestName("num_", flags), "");
  EXPECT_EQ(ClosestName("xyz", flags), "");
  EXPECT_EQ(ClosestName("fil", {"file", "fill"}), "file");  // a tie: the first listed
}

TEST(FlagUtilTest, ClosestGflagSkipsHiddenFlags) {
  EXPECT_EQ(ClosestGflag("flag_util_test_verbos"), "flag_util_test_verbose");
  EXPECT_EQ(ClosestGflag("noflag_util_test_verbos"), "noflag_util_test_verbose");
  EXPECT_EQ(ClosestGflag("flag_util_test_secrt"), "");
}

}  // namespace
}  // namespace nyala
