#include "consensus/log_format.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "common/coding.h"
#include "common/crc32c.h"

namespace nyala::consensus {

bool ValidType(uint8_t t) { return t >= 1 && t <= 5; }

void EncodeRecordHeader(const RecordHeader& h, uint8_t* p) {
  EncodeFixedLE<uint32_t>(p, h.length);
  EncodeFixedLE<uint32_t>(p + 4, h.payload_crc);
  p[8] = h.type;
  EncodeFixedLE<uint64_t>(p + 9, h.group);
  EncodeFixedLE<uint64_t>(p + 17, h.seq);
  EncodeFixedLE<uint64_t>(p + 25, h.term);
  EncodeFixedLE<uint64_t>(p + 33, h.index);
  EncodeFixedLE<uint32_t>(p + kRecordHeaderCrcOffset, Crc32c(0, p, kRecordHeaderCrcOffset));
}

// False when the header's CRC fails.
bool DecodeRecordHeader(const uint8_t* p, RecordHeader* h) {
  if (Crc32c(0, p, kRecordHeaderCrcOffset) != DecodeFixedLE<uint32_t>(p + kRecordHeaderCrcOffset)) {
    return false;
  }
  h->length = DecodeFixedLE<uint32_t>(p);
  h->payload_crc = DecodeFixedLE<uint32_t>(p + 4);
  h->type = p[8];
  h->group = DecodeFixedLE<uint64_t>(p + 9);
  h->seq = DecodeFixedLE<uint64_t>(p + 17);
  h->term = DecodeFixedLE<uint64_t>(p + 25);
  h->index = DecodeFixedLE<uint64_t>(p + 33);
  return true;
}

std::string EncodeSegmentHeader(uint64_t seq) {
  uint8_t b[kSegmentHeaderSize];
  memcpy(b, kMagic, 8);
  EncodeFixedLE<uint32_t>(b + 8, kFormatVersion);
  EncodeFixedLE<uint64_t>(b + 12, seq);
  EncodeFixedLE<uint32_t>(b + 20, Crc32c(0, b, 20));
  return std::string(reinterpret_cast<char*>(b), sizeof(b));
}

// Empty when `data` starts with a good header of segment `seq`, else what is wrong.
std::string CheckSegmentHeader(const std::string& data, uint64_t seq) {
  if (data.size() < kSegmentHeaderSize) return "short segment header";
  const auto* b = reinterpret_cast<const uint8_t*>(data.data());
  if (memcmp(b, kMagic, 8) != 0) return "bad segment magic";
  if (Crc32c(0, b, 20) != DecodeFixedLE<uint32_t>(b + 20))
    return "segment header checksum mismatch";
  if (DecodeFixedLE<uint32_t>(b + 8) != kFormatVersion) return "unknown segment format version";
  if (DecodeFixedLE<uint64_t>(b + 12) != seq) return "segment sequence differs from its file name";
  return "";
}

const char* CheckReason(RecordCheck c) {
  switch (c) {
    case RecordCheck::kValid:
      return "valid";
    case RecordCheck::kShortHeader:
      return "short record header";
    case RecordCheck::kBadHeader:
      return "record header checksum mismatch";
    case RecordCheck::kShortPayload:
      return "short record payload";
    case RecordCheck::kBadPayload:
      return "record payload checksum mismatch";
    case RecordCheck::kBadType:
      return "unknown record type";
  }
  return "?";
}

// Whether the header (so the group) of a record that failed `c` can be trusted.
bool HeaderIntact(RecordCheck c) {
  return c == RecordCheck::kShortPayload || c == RecordCheck::kBadPayload ||
         c == RecordCheck::kBadType;
}

RecordCheck CheckRecord(const std::string& data, size_t off, RecordHeader* h) {
  if (data.size() - off < kRecordHeaderSize) return RecordCheck::kShortHeader;
  const auto* p = reinterpret_cast<const uint8_t*>(data.data()) + off;
  if (!DecodeRecordHeader(p, h)) return RecordCheck::kBadHeader;
  if (data.size() - off - kRecordHeaderSize < h->length) return RecordCheck::kShortPayload;
  if (Crc32c(0, p + kRecordHeaderSize, h->length) != h->payload_crc) {
    return RecordCheck::kBadPayload;
  }
  if (!ValidType(h->type)) return RecordCheck::kBadType;
  return RecordCheck::kValid;
}

// The offset at or after `from` of the next whole, valid record; npos if none.
size_t FindNextValid(const std::string& data, size_t from) {
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  for (size_t off = from; off + kRecordHeaderSize <= data.size(); off++) {
    // Cheap filters before the CRCs.
    if (!ValidType(p[off + 8])) continue;
    if (DecodeFixedLE<uint32_t>(p + off) > data.size() - off - kRecordHeaderSize) continue;
    RecordHeader h;
    if (CheckRecord(data, off, &h) == RecordCheck::kValid) return off;
  }
  return std::string::npos;
}

// Where the run of zeros that ends `data` starts (data.size() when none).
size_t StartOfTrailingZeros(const std::string& data) {
  size_t end = data.size();
  while (end > 0 && data[end - 1] == 0) end--;
  return end;
}

std::string SegmentName(uint64_t seq) {
  char name[32];
  snprintf(name, sizeof(name), "wal-%016" PRIu64 ".log", seq);
  return name;
}

// The sequence of a segment file name, or 0 when `name` is not one.
uint64_t ParseSegmentName(const std::string& name) {
  if (name.size() != 24 || name.compare(0, 4, "wal-") != 0 || name.compare(20, 4, ".log") != 0) {
    return 0;
  }
  uint64_t seq = 0;
  for (size_t i = 4; i < 20; i++) {
    if (name[i] < '0' || name[i] > '9') return 0;
    seq = seq * 10 + uint64_t(name[i] - '0');
  }
  return seq;
}

std::string EncodeHardState(const HardState& hs) {
  std::string p;
  PutFixedLE<uint64_t>(&p, hs.term);
  PutFixedLE<uint64_t>(&p, hs.commit_index);
  p.append(hs.voted_for);
  return p;
}

bool DecodeHardState(Slice p, HardState* hs) {
  if (p.size() < kHardStateFixedSize) return false;
  hs->term = DecodeFixedLE<uint64_t>(p.data());
  hs->commit_index = DecodeFixedLE<uint64_t>(p.data() + 8);
  hs->voted_for.assign(p.cdata() + kHardStateFixedSize, p.size() - kHardStateFixedSize);
  return true;
}

const char* RecordTypeName(RecordType type) {
  switch (type) {
    case RecordType::kEntry:
      return "ENTRY";
    case RecordType::kHardState:
      return "HARD_STATE";
    case RecordType::kTruncate:
      return "TRUNCATE";
    case RecordType::kSnapshotMark:
      return "SNAPSHOT_MARK";
    case RecordType::kRemoveGroup:
      return "REMOVE_GROUP";
  }
  return "UNKNOWN";
}

}  // namespace nyala::consensus
