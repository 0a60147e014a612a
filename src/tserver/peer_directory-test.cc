// Tests of PeerDirectory: uuids by peer id, routes handed to the transport once per
// new or changed address and never for this server, and unresolvable addresses
// forgotten so that the next report tries again.
#include "tserver/peer_directory.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "common/test_util.h"

namespace nyala::tserver {
namespace {

// An empty host never resolves (no DNS needed).
const std::string kSelf = "0000000000000001ffffffffffffffff";
const std::string kOther = "00000000000000020000000000000000";

class PeerDirectoryTest : public ::testing::Test {
 protected:
  PeerDirectory dir_{
      kSelf, [this](consensus::PeerId id, const rpc::Sockaddr& addr, const std::string& uuid) {
        EXPECT_EQ(consensus::PeerIdFromUuid(uuid), id);
        routes_.emplace_back(id, addr.port());
      }};
  std::vector<std::pair<consensus::PeerId, int>> routes_;  // (peer, port) handed over
};

TEST_F(PeerDirectoryTest, KnowsItselfFromTheStart) {
  EXPECT_EQ(dir_.self_uuid(), kSelf);
  EXPECT_EQ(dir_.self_id(), consensus::PeerIdFromUuid(kSelf));
  EXPECT_EQ(dir_.UuidOf(dir_.self_id()), kSelf);
  EXPECT_EQ(dir_.UuidOf(12345), "");
  dir_.AddPeer(kSelf, "127.0.0.1", 7050);
  EXPECT_TRUE(routes_.empty());  // no route to itself
}

TEST_F(PeerDirectoryTest, RoutesEachNewOrChangedAddressOnce) {
  const consensus::PeerId other = consensus::PeerIdFromUuid(kOther);
  dir_.AddPeer(kOther, "127.0.0.1", 7050);
  dir_.AddPeer(kOther, "127.0.0.1", 7050);  // the same: nothing new
  ASSERT_EQ(routes_.size(), 1u);
  EXPECT_EQ(routes_[0], std::make_pair(other, 7050));
  EXPECT_EQ(dir_.UuidOf(other), kOther);

  google::protobuf::RepeatedPtrField<master::TSInfoPB> servers;
  auto* ts = servers.Add();
  ts->set_permanent_uuid(kOther);
  auto* a = ts->add_rpc_addresses();
  a->set_host("127.0.0.1");
  a->set_port(7060);  // moved
  // A server without an RPC address is skipped.
  servers.Add()->set_permanent_uuid("00000000000000030000000000000000");
  dir_.Update(servers);
  ASSERT_EQ(routes_.size(), 2u);
  EXPECT_EQ(routes_[1], std::make_pair(other, 7060));
  EXPECT_EQ(dir_.UuidOf(consensus::PeerIdFromUuid("00000000000000030000000000000000")), "");
}

TEST_F(PeerDirectoryTest, AnAddressThatDoesNotResolveIsTriedAgain) {
  dir_.AddPeer(kOther, "", 7050);
  EXPECT_TRUE(routes_.empty());
  EXPECT_EQ(dir_.UuidOf(consensus::PeerIdFromUuid(kOther)), kOther);  // the uuid is known
  // Tried again, not taken for a known address.
  dir_.AddPeer(kOther, "", 7050);
  EXPECT_TRUE(routes_.empty());
  dir_.AddPeer(kOther, "127.0.0.1", 7050);
  EXPECT_EQ(routes_.size(), 1u);
}

}  // namespace
}  // namespace nyala::tserver
