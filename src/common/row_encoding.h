// How a row is stored: its encoded primary key (key_encoding.h) as the storage
// key, and the row value below as the storage value.
//
// Row value:
//   varint   schema version the row was written with
//   varint   n = number of non-key columns encoded (that version's count)
//   bytes    null bitmap, ceil(n/8) bytes; bit i (byte i/8, mask 1 << i%8) set means
//            non-key column i is NULL; bits past n are zero
//   values   for each non-key column that is not NULL, in schema order:
//            fixed-size types little-endian in their width (BOOL one byte 0/1),
//            STRING/BINARY a varint length then the bytes
//
// Schema evolution: the supported change is adding non-key columns at the end
// (nullable or with a default). A value written under an older version has a
// smaller n; decoding it with the newer schema gives the added columns their
// default, else NULL. Column ids (schema.h) leave room for dropping columns later,
// which will decode with the writer's schema and map columns by id.
//
// Stateless functions; thread-safe.
#pragma once

#include <string>

#include "common/status.h"
#include "nyala/row.h"
#include "nyala/slice.h"

namespace nyala {

// Appends the encoded primary key of `row`. InvalidArgument naming the column when
// a key column is unset or NULL.
Status EncodeRowKey(const RowView& row, std::string* dst);
// Sets the key columns of `row` from an encoded primary key. Strings point into
// `key` (or into the row's arena when they held escaped zeros). Corruption on a
// malformed key.
Status DecodeRowKey(Slice key, Row* row);

// Appends the row value of `row` under its schema's version. An unset non-key
// column is stored as its default, else NULL; InvalidArgument naming the column
// if it has neither, or if a NOT NULL column holds NULL.
Status EncodeRowValue(const RowView& row, std::string* dst);
// Sets every non-key column of `row` from `value`; strings point into `value`,
// which must outlive the row's use. Corruption on malformed input (truncated,
// bad BOOL byte, NULL in a NOT NULL column, trailing bytes, more columns than the
// schema); IllegalState when the value was written with a newer schema version.
Status DecodeRowValue(Slice value, Row* row);

// The schema version stored at the front of `value`; Corruption if unreadable.
Result<uint32_t> RowValueSchemaVersion(Slice value);

}  // namespace nyala
