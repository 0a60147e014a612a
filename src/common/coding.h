// Fixed-width and varint encodings shared by the wire format and the storage
// encodings. Decoders take a Slice, advance it past what they read, and return
// false (leaving the slice unspecified) when the input is short or malformed.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "nyala/slice.h"

namespace nyala {

inline void PutFixed32BE(std::string* dst, uint32_t v) {
  char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  dst->append(b, 4);
}
inline void EncodeFixed32BE(uint8_t* p, uint32_t v) {
  p[0] = v >> 24;
  p[1] = v >> 16;
  p[2] = v >> 8;
  p[3] = v;
}
inline uint32_t DecodeFixed32BE(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}
inline void PutFixed64BE(std::string* dst, uint64_t v) {
  PutFixed32BE(dst, uint32_t(v >> 32));
  PutFixed32BE(dst, uint32_t(v));
}
inline uint64_t DecodeFixed64BE(const uint8_t* p) {
  return (uint64_t(DecodeFixed32BE(p)) << 32) | DecodeFixed32BE(p + 4);
}

// Little-endian fixed widths (row values).
template <typename T>
inline void PutFixedLE(std::string* dst, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  char b[sizeof(T)];
  memcpy(b, &v, sizeof(T));  // x86-64 and aarch64 Linux are little-endian
  dst->append(b, sizeof(T));
}
template <typename T>
inline void EncodeFixedLE(uint8_t* p, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  memcpy(p, &v, sizeof(T));
}
template <typename T>
inline T DecodeFixedLE(const uint8_t* p) {
  static_assert(std::is_trivially_copyable_v<T>);
  T v;
  memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
inline bool GetFixedLE(Slice* in, T* v) {
  if (in->size() < sizeof(T)) return false;
  memcpy(v, in->data(), sizeof(T));
  in->remove_prefix(sizeof(T));
  return true;
}

constexpr int kMaxVarint64Len = 10;

// Writes `v` as a base-128 varint into `p`; returns one past the last byte written.
inline uint8_t* EncodeVarint64(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = uint8_t(v | 0x80);
    v >>= 7;
  }
  *p++ = uint8_t(v);
  return p;
}
inline void PutVarint64(std::string* dst, uint64_t v) {
  uint8_t buf[kMaxVarint64Len];
  uint8_t* end = EncodeVarint64(buf, v);
  dst->append(reinterpret_cast<char*>(buf), end - buf);
}
inline int VarintLength(uint64_t v) {
  int len = 1;
  while (v >= 0x80) {
    v >>= 7;
    len++;
  }
  return len;
}
inline bool GetVarint64(Slice* in, uint64_t* v) {
  uint64_t result = 0;
  const uint8_t* p = in->data();
  const uint8_t* limit = p + in->size();
  for (int shift = 0; shift <= 63 && p < limit; shift += 7) {
    uint64_t byte = *p++;
    if (shift == 63 && byte > 1) return false;  // overflows 64 bits
    result |= (byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      in->remove_prefix(p - in->data());
      return true;
    }
  }
  return false;
}
inline bool GetVarint32(Slice* in, uint32_t* v) {
  uint64_t v64;
  if (!GetVarint64(in, &v64) || v64 > UINT32_MAX) return false;
  *v = uint32_t(v64);
  return true;
}
// A varint length followed by that many bytes.
inline void PutLengthPrefixed(std::string* dst, Slice s) {
  PutVarint64(dst, s.size());
  dst->append(s.cdata(), s.size());
}
inline bool GetLengthPrefixed(Slice* in, Slice* out) {
  uint64_t len;
  if (!GetVarint64(in, &len) || len > in->size()) return false;
  *out = Slice(in->data(), len);
  in->remove_prefix(len);
  return true;
}

}  // namespace nyala
