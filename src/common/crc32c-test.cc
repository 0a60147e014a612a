#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/test_util.h"

namespace nyala {
namespace {

using crc32c_internal::Crc32cHardware;
using crc32c_internal::Crc32cSoftware;
using crc32c_internal::HasHardwareCrc32c;

// The CRC-32C of `s` by every available implementation, which must agree.
uint32_t AllPaths(const std::string& s) {
  const uint32_t sw = Crc32cSoftware(0, s.data(), s.size());
  if (HasHardwareCrc32c()) {
    EXPECT_EQ(sw, Crc32cHardware(0, s.data(), s.size()));
  }
  EXPECT_EQ(sw, Crc32c(0, s.data(), s.size()));
  return sw;
}

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(AllPaths(""), 0u);
  EXPECT_EQ(AllPaths("123456789"), 0xE3069283u);
  // RFC 3720 (iSCSI), appendix B.4.
  EXPECT_EQ(AllPaths(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(AllPaths(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending;
  std::string descending;
  for (int i = 0; i < 32; i++) {
    ascending.push_back(char(i));
    descending.push_back(char(31 - i));
  }
  EXPECT_EQ(AllPaths(ascending), 0x46DD794Eu);
  EXPECT_EQ(AllPaths(descending), 0x113FDB5Cu);
}

TEST(Crc32cTest, Extends) {
  const std::string s = "The quick brown fox jumps over the lazy dog";
  const uint32_t whole = Crc32c(0, s.data(), s.size());
  for (size_t split = 0; split <= s.size(); split++) {
    const uint32_t head = Crc32c(0, s.data(), split);
    EXPECT_EQ(Crc32c(head, s.data() + split, s.size() - split), whole) << split;
    EXPECT_EQ(
        Crc32cSoftware(Crc32cSoftware(0, s.data(), split), s.data() + split, s.size() - split),
        whole);
  }
}

// Hardware and software agree on every length 0..300 at every alignment 0..15.
TEST(Crc32cTest, HardwareMatchesSoftware) {
  if (!HasHardwareCrc32c()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::mt19937 rng(TestRandomSeed());
  std::vector<uint8_t> buf(300 + 16);
  for (size_t len = 0; len <= 300; len++) {
    for (size_t align = 0; align < 16; align++) {
      for (size_t i = 0; i < len; i++) buf[align + i] = uint8_t(rng());
      const uint32_t seed = (len % 3 == 0) ? 0 : uint32_t(rng());
      ASSERT_EQ(Crc32cHardware(seed, buf.data() + align, len),
                Crc32cSoftware(seed, buf.data() + align, len))
          << "len " << len << " align " << align << " seed " << seed;
    }
  }
}

// A single flipped bit always changes the CRC.
TEST(Crc32cTest, DetectsBitFlips) {
  std::string s(64, 'x');
  const uint32_t base = Crc32c(0, s.data(), s.size());
  for (size_t bit = 0; bit < s.size() * 8; bit++) {
    s[bit / 8] ^= char(1 << (bit % 8));
    EXPECT_NE(Crc32c(0, s.data(), s.size()), base) << bit;
    s[bit / 8] ^= char(1 << (bit % 8));
  }
}

}  // namespace
}  // namespace nyala
