// The order-preserving primary-key encoding: for any two keys a and b of one
// schema, memcmp(Encode(a), Encode(b)) has the sign of the typed comparison of
// a and b column by column (Cell::Compare). Columns are encoded one after the
// other:
//
//   BOOL                  one byte, 0 or 1
//   INT8..INT64,          big-endian two's complement with the sign bit flipped
//   UNIXTIME_MICROS       (1, 2, 4, 8 bytes; UNIXTIME_MICROS as INT64)
//   FLOAT, DOUBLE         IEEE bits big-endian; a positive number gets its sign bit
//                         set, a negative number has every bit inverted. Before that,
//                         -0.0 becomes +0.0 and every NaN becomes the one quiet NaN
//                         0x7fc00000 / 0x7ff8000000000000, which then sorts after
//                         +inf. Decoding yields +0.0 and that NaN.
//   STRING, BINARY        not the last key column: each 0x00 byte written as 0x00 0x01,
//                         then the terminator 0x00 0x00. Last key column: raw bytes.
//
// A non-last column's encoding is self-delimiting and no encoding of one value is
// a proper prefix of another's, so appending the following columns never upsets
// the order. The same composite encoding of a subset of key columns (the last of
// the subset raw) serves as range key and hash input in partition.h.
//
// Stateless functions; thread-safe.
#pragma once

#include <string>

#include "common/status.h"
#include "nyala/arena.h"
#include "nyala/schema.h"
#include "nyala/slice.h"
#include "nyala/types.h"

namespace nyala {

// Appends the key encoding of `c`; `is_last` selects the raw form for strings.
// REQUIRES: c.has_value().
void EncodeKeyCell(const Cell& c, bool is_last, std::string* dst);

// Decodes one column of type `type` from the front of `*in`, advancing it. A
// last-column string takes all the rest. Strings point into `*in` unless they
// contained escaped zeros, in which case they are unescaped into `arena`.
// Corruption on truncated input, a bad escape, or a BOOL byte other than 0 or 1.
Status DecodeKeyCell(DataType type, bool is_last, Slice* in, Cell* out, Arena* arena);

// Appends the encoded primary key made of `cells[0, schema.num_key_columns())`.
// REQUIRES: those cells have values of the columns' types.
void EncodeKey(const Schema& schema, const Cell* cells, std::string* dst);

// Decodes a whole encoded primary key into `cells[0, schema.num_key_columns())`.
// Corruption also when bytes remain after the last column.
Status DecodeKey(const Schema& schema, Slice key, Cell* cells, Arena* arena);

// The smallest string greater than every string that starts with `prefix`: the
// prefix with trailing 0xff bytes dropped and its last byte incremented. Empty
// when there is none (prefix empty or all 0xff), which as an exclusive upper
// bound means "unbounded".
std::string PrefixSuccessor(Slice prefix);

// The smallest string greater than `key`: key + "\0".
inline std::string ImmediateSuccessor(Slice key) {
  std::string s = key.ToString();
  s.push_back('\0');
  return s;
}

}  // namespace nyala
