#include "consensus/peer_id.h"

#include <gtest/gtest.h>

namespace nyala::consensus {
namespace {

TEST(PeerIdTest, UuidsGiveTheirFirstSixtyFourBits) {
  EXPECT_EQ(0x0123456789abcdefull, PeerIdFromUuid("0123456789abcdeffedcba9876543210"));
  EXPECT_EQ(0xffffffffffffffffull, IdFromString("FFFFFFFFFFFFFFFF"));
  // Same first half, different second half: the same id (the master refuses the pair).
  EXPECT_EQ(IdFromString("0123456789abcdef0000000000000000"),
            IdFromString("0123456789abcdef1111111111111111"));
}

TEST(PeerIdTest, OtherStringsAreHashedAndNeverZero) {
  EXPECT_NE(IdFromString("tablet-1"), IdFromString("tablet-2"));
  EXPECT_EQ(IdFromString("tablet-1"), IdFromString("tablet-1"));
  EXPECT_NE(kNoPeer, IdFromString("0000000000000000"));
  EXPECT_NE(kNoPeer, IdFromString(""));
  // 15 hex digits are not a uuid: hashed.
  EXPECT_NE(0x0123456789abcdeull, IdFromString("0123456789abcde"));
}

}  // namespace
}  // namespace nyala::consensus
