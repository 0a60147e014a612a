#include "consensus/log_format.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "common/crc32c.h"

namespace nyala::consensus {
namespace {

RecordHeader SampleHeader(uint32_t length, uint32_t payload_crc) {
  RecordHeader h;
  h.length = length;
  h.payload_crc = payload_crc;
  h.type = uint8_t(RecordType::kEntry);
  h.group = 0x0102030405060708;
  h.seq = 42;
  h.term = 7;
  h.index = 0xfedcba9876543210;
  return h;
}

// A whole record: header and payload, as the log writes one.
std::string EncodeRecord(RecordHeader h, const std::string& payload, uint32_t payload_crc) {
  h.length = uint32_t(payload.size());
  h.payload_crc = payload_crc;
  std::string out(kRecordHeaderSize, '\0');
  EncodeRecordHeader(h, reinterpret_cast<uint8_t*>(out.data()));
  return out + payload;
}

uint32_t PayloadCrc(const std::string& payload) {
  return Crc32c(0, payload.data(), payload.size());
}

TEST(LogFormatTest, RecordHeaderRoundTrip) {
  const RecordHeader in = SampleHeader(123, 0xdeadbeef);
  uint8_t buf[kRecordHeaderSize];
  EncodeRecordHeader(in, buf);
  RecordHeader out;
  ASSERT_TRUE(DecodeRecordHeader(buf, &out));
  EXPECT_EQ(in.length, out.length);
  EXPECT_EQ(in.payload_crc, out.payload_crc);
  EXPECT_EQ(in.type, out.type);
  EXPECT_EQ(in.group, out.group);
  EXPECT_EQ(in.seq, out.seq);
  EXPECT_EQ(in.term, out.term);
  EXPECT_EQ(in.index, out.index);
  // The documented layout: little-endian fields at fixed offsets.
  EXPECT_EQ(123, buf[0]);
  EXPECT_EQ(uint8_t(RecordType::kEntry), buf[8]);
  EXPECT_EQ(0x08, buf[9]);
  EXPECT_EQ(42, buf[17]);
  EXPECT_EQ(7, buf[25]);
  EXPECT_EQ(0x10, buf[33]);
}

TEST(LogFormatTest, RecordHeaderCrcMismatchIsDetected) {
  uint8_t buf[kRecordHeaderSize];
  EncodeRecordHeader(SampleHeader(5, 1), buf);
  RecordHeader out;
  for (size_t i = 0; i < kRecordHeaderSize; i++) {
    uint8_t copy[kRecordHeaderSize];
    memcpy(copy, buf, sizeof(copy));
    copy[i] ^= 0x10;
    EXPECT_FALSE(DecodeRecordHeader(copy, &out)) << "flipped byte " << i;
  }
}

TEST(LogFormatTest, SegmentHeaderRoundTrip) {
  const std::string h = EncodeSegmentHeader(17);
  ASSERT_EQ(kSegmentHeaderSize, h.size());
  EXPECT_EQ(std::string(kMagic, 8), h.substr(0, 8));
  EXPECT_EQ("", CheckSegmentHeader(h, 17));
  // Records follow the header: what comes after it is not the header's business.
  EXPECT_EQ("", CheckSegmentHeader(h + "more", 17));
  EXPECT_EQ("segment sequence differs from its file name", CheckSegmentHeader(h, 18));
}

TEST(LogFormatTest, SegmentHeaderCrcMismatchIsDetected) {
  std::string h = EncodeSegmentHeader(17);
  h[14] ^= 0x01;  // in the sequence
  EXPECT_EQ("segment header checksum mismatch", CheckSegmentHeader(h, 17));
  h = EncodeSegmentHeader(17);
  h[0] = 'X';
  EXPECT_EQ("bad segment magic", CheckSegmentHeader(h, 17));
}

TEST(LogFormatTest, TruncatedSegmentHeaderIsRefused) {
  const std::string h = EncodeSegmentHeader(3);
  for (size_t n = 0; n < kSegmentHeaderSize; n++) {
    EXPECT_EQ("short segment header", CheckSegmentHeader(h.substr(0, n), 3)) << n;
  }
}

TEST(LogFormatTest, ValidRecordIsFoundAfterGarbage) {
  const std::string rec = EncodeRecord(SampleHeader(0, 0), "abc", PayloadCrc("abc"));
  RecordHeader h;
  ASSERT_EQ(RecordCheck::kValid, CheckRecord(rec, 0, &h));
  const std::string data = std::string(10, 'x') + rec;
  EXPECT_EQ(10u, FindNextValid(data, 0));
  EXPECT_EQ(std::string::npos, FindNextValid(data, 11));
}

TEST(LogFormatTest, PayloadCrcMismatchIsDetected) {
  const std::string rec = EncodeRecord(SampleHeader(0, 0), "payload", 0x12345678);
  RecordHeader h;
  EXPECT_EQ(RecordCheck::kBadPayload, CheckRecord(rec, 0, &h));
  EXPECT_TRUE(HeaderIntact(RecordCheck::kBadPayload));
  EXPECT_EQ(7u, h.length);
  EXPECT_STREQ("record payload checksum mismatch", CheckReason(RecordCheck::kBadPayload));
  EXPECT_EQ(std::string::npos, FindNextValid(rec, 0));
}

TEST(LogFormatTest, TruncatedRecordIsRefused) {
  const std::string rec = EncodeRecord(SampleHeader(0, 0), "abc", PayloadCrc("abc"));
  RecordHeader h;
  ASSERT_EQ(RecordCheck::kValid, CheckRecord(rec, 0, &h));
  for (size_t n = 0; n < kRecordHeaderSize; n++) {
    EXPECT_EQ(RecordCheck::kShortHeader, CheckRecord(rec.substr(0, n), 0, &h)) << n;
  }
  // A header announcing more payload than there is.
  const std::string longer =
      EncodeRecord(SampleHeader(0, 0), "twelve bytes", PayloadCrc("twelve bytes"));
  EXPECT_EQ(RecordCheck::kShortPayload,
            CheckRecord(longer.substr(0, kRecordHeaderSize + 5), 0, &h));
  EXPECT_TRUE(HeaderIntact(RecordCheck::kShortPayload));
  EXPECT_FALSE(HeaderIntact(RecordCheck::kShortHeader));
}

TEST(LogFormatTest, HardStateRoundTripAndShortPayload) {
  HardState in;
  in.term = 9;
  in.voted_for = "peer-3";
  in.commit_index = 1000;
  const std::string p = EncodeHardState(in);
  ASSERT_EQ(kHardStateFixedSize + 6, p.size());
  HardState out;
  ASSERT_TRUE(DecodeHardState(Slice(p), &out));
  EXPECT_EQ(in, out);
  EXPECT_FALSE(DecodeHardState(Slice(p.data(), kHardStateFixedSize - 1), &out));
}

TEST(LogFormatTest, SegmentNames) {
  EXPECT_EQ("wal-0000000000000001.log", SegmentName(1));
  EXPECT_EQ(1234567u, ParseSegmentName(SegmentName(1234567)));
  EXPECT_EQ(0u, ParseSegmentName("wal-000000000000001.log"));
  EXPECT_EQ(0u, ParseSegmentName("wal-000000000000000x.log"));
  EXPECT_EQ(0u, ParseSegmentName("other-file"));
}

TEST(LogFormatTest, TrailingZeros) {
  EXPECT_EQ(3u, StartOfTrailingZeros(std::string("abc") + std::string(5, '\0')));
  EXPECT_EQ(3u, StartOfTrailingZeros("abc"));
  EXPECT_EQ(0u, StartOfTrailingZeros(std::string(4, '\0')));
}

}  // namespace
}  // namespace nyala::consensus
