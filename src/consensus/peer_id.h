// Raft ids from the cluster's string ids. A tablet server's Raft peer id (PeerId) and
// a tablet's Raft group id are 64-bit numbers derived from the server's permanent uuid
// and the tablet id, so every server computes the same ids without asking anyone:
// the first 16 characters when they are hex digits (uuids are 32 hex digits: 64
// random bits), else a 64-bit FNV-1a hash of the whole string (ids tests make up).
// Never 0 (kNoPeer). The master refuses a second server or tablet whose id collides.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "consensus/raft.h"

namespace nyala::consensus {

uint64_t IdFromString(std::string_view s);
inline PeerId PeerIdFromUuid(std::string_view uuid) { return IdFromString(uuid); }
inline uint64_t GroupIdFromTabletId(std::string_view tablet_id) { return IdFromString(tablet_id); }

}  // namespace nyala::consensus
