#include "consensus/peer_id.h"

namespace nyala::consensus {

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

uint64_t IdFromString(std::string_view s) {
  uint64_t id = 0;
  bool hex = s.size() >= 16;
  for (size_t i = 0; hex && i < 16; i++) {
    const int v = HexValue(s[i]);
    if (v < 0) hex = false;
    id = (id << 4) | uint64_t(v);
  }
  if (!hex) {
    id = 14695981039346656037ull;  // FNV-1a offset basis
    for (char c : s) {
      id ^= uint8_t(c);
      id *= 1099511628211ull;
    }
  }
  return id == kNoPeer ? 1 : id;
}

}  // namespace nyala::consensus
