// The on-disk format of the consensus log (SharedLog, log.h): how its segment files and
// records are laid out, written and read back, and the pure functions that encode and
// check them. No I/O and no state: every function here may be called from any thread.
// For the SharedLog implementation (log*.cc) and tests; other code uses log.h.
//
// ---------------------------------------------------------------------------------
// On-disk format (version 1). All integers are fixed-width little-endian; CRCs are
// CRC-32C (common/crc32c.h) of the bytes named, starting from 0.
//
// The directory holds segments named wal-<sequence, 16 decimal digits, zero-padded>.log
// (wal-0000000000000001.log, ...), read in sequence order; other files are ignored.
// The newest is the active one; the log appends only to it. Every Open starts a new
// segment. A segment is rolled (a new one started) before a write once the active one
// holds segment_size_bytes or more, so one write never spans two segments.
//
// Segment header, 24 bytes, at offset 0:
//    0  8  magic "NYWAL001"
//    8  4  u32 format version (1)
//   12  8  u64 segment sequence (equal to the one in the file name)
//   20  4  u32 CRC of bytes 0..19
//
// Then records back to back, each a 45-byte header and its payload:
//    0  4  u32 payload length
//    4  4  u32 CRC of the payload
//    8  1  u8 type (RecordType)
//    9  8  u64 group id
//   17  8  u64 group sequence number: 1, 2, 3... over every record of that group, in
//          file order across segments; a gap on recovery means a record of that group
//          was lost (how damage is attributed to groups when a header is unreadable)
//   25  8  u64 term
//   33  8  u64 index
//   41  4  u32 CRC of header bytes 0..40
//   45     payload
//
// Record types; term and index are 0 where unused:
//   1 ENTRY          a Raft log entry (term, index); payload: the entry's bytes, opaque
//   2 HARD_STATE     term = the current term, index = the commit index; payload: u64 term,
//                    u64 commit index, then the voted-for peer id (the rest of the
//                    payload, possibly empty: no vote)
//   3 TRUNCATE       the group's entries at and above `index` are discarded (a follower
//                    overwriting conflicting entries); empty payload
//   4 SNAPSHOT_MARK  the group's entries at and below `index` are dropped (those above
//                    it are kept); its log now starts at index + 1 at the latest, and
//                    `term` is the term of `index`; empty payload
//   5 REMOVE_GROUP   the group was deleted: everything of it before this record is void;
//                    empty payload. Its sequence numbers go on if it is recreated.
//
// Checkpoint: at the start of every new segment (after its header), and in the active
// segment when a durable index lets old segments go, the log writes each live group's
// newest HARD_STATE and its SNAPSHOT_MARK again, so an old segment never holds the only
// copy of them. The mark it writes also records the group's durable index: it is
// max(snapshot mark, min(durable index, last index)), with the term of that index, so
// entries at or below the durable index leave the group's log at a checkpoint.
//
// Preallocation (LogOptions::preallocate, --log_preallocate_segments): a new segment is
// given segment_size_bytes of disk at once (fallocate), so the appends that follow do
// not change the file's size and an fdatasync need not write it. Past the last record
// the file then reads as zeros. A segment is rolled only once written past its size,
// and closing the log cuts the newest one back to its records (ftruncate), so only the
// newest segment can end in such zeros, after a crash or a write error.
//
// Recovery reads the segments oldest first. A record is valid when both its CRCs match
// and its type is known. At an invalid one the reader resynchronises at the next
// offset where a valid record starts (right after the record when only its payload is
// bad). In the newest segment, zeros from there to the end of the file are space
// preallocated and never written: they are cut off and are no damage. If anything
// else follows in the newest segment and nothing valid, the rest is a torn tail: cut
// off (ftruncate) and reported. Otherwise the bytes skipped are a corrupt region: the
// record's group fails if its header was intact, and every group whose sequence
// numbers jump fails; the rest is read on.
//
// Release: segments are deleted only from the oldest on, so the files left are always
// a contiguous run and each group's records in them have contiguous sequence numbers
// (the first record of a group is taken with whatever number it has).
// ---------------------------------------------------------------------------------
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "consensus/log.h"
#include "nyala/slice.h"

namespace nyala::consensus {

inline constexpr char kMagic[8] = {'N', 'Y', 'W', 'A', 'L', '0', '0', '1'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kSegmentHeaderSize = 24;
inline constexpr size_t kRecordHeaderSize = 45;
inline constexpr size_t kRecordHeaderCrcOffset = 41;    // of the header's own CRC
inline constexpr size_t kHardStateFixedSize = 16;       // a HARD_STATE payload's term and index
inline constexpr size_t kMaxPayload = size_t{1} << 30;  // the largest payload an append may carry

// Whether `t` is a known RecordType.
bool ValidType(uint8_t t);

// A record header, decoded (the fields in the order of the layout above).
struct RecordHeader {
  uint32_t length = 0;
  uint32_t payload_crc = 0;
  uint8_t type = 0;
  uint64_t group = 0;
  uint64_t seq = 0;
  uint64_t term = 0;
  uint64_t index = 0;
};

// Writes `h` and the CRC of its bytes into the kRecordHeaderSize bytes at `p`.
void EncodeRecordHeader(const RecordHeader& h, uint8_t* p);
// Reads the kRecordHeaderSize bytes at `p` into `h`. False when the header's CRC fails.
bool DecodeRecordHeader(const uint8_t* p, RecordHeader* h);

// The kSegmentHeaderSize bytes that open segment `seq`.
std::string EncodeSegmentHeader(uint64_t seq);
// Empty when `data` starts with a good header of segment `seq`, else what is wrong.
std::string CheckSegmentHeader(const std::string& data, uint64_t seq);

// What CheckRecord found at an offset.
enum class RecordCheck { kValid, kShortHeader, kBadHeader, kShortPayload, kBadPayload, kBadType };
// A few words naming `c`, for reports ("record header checksum mismatch").
const char* CheckReason(RecordCheck c);
// Whether the header (so the group) of a record that failed `c` can be trusted.
bool HeaderIntact(RecordCheck c);
// Checks the record at `off` in `data` (REQUIRES: off <= data.size()). `h` is filled
// once the header's CRC matches. kValid: the whole record is there, both CRCs match
// and its type is known; it spans kRecordHeaderSize + h->length bytes.
RecordCheck CheckRecord(const std::string& data, size_t off, RecordHeader* h);
// The offset at or after `from` of the next whole, valid record; npos if none.
size_t FindNextValid(const std::string& data, size_t from);
// Where the run of zeros that ends `data` starts (data.size() when none).
size_t StartOfTrailingZeros(const std::string& data);

// The file name of segment `seq`: "wal-<seq, 16 digits, zero-padded>.log".
std::string SegmentName(uint64_t seq);
// The sequence of a segment file name, or 0 when `name` is not one.
uint64_t ParseSegmentName(const std::string& name);

// The payload of a HARD_STATE record.
std::string EncodeHardState(const HardState& hs);
// False when `p` is too short to be a HARD_STATE payload.
bool DecodeHardState(Slice p, HardState* hs);

}  // namespace nyala::consensus
