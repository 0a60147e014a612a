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
// Schema evolution: a value is decoded with the schema version it was written
// under (its writer), and its columns are mapped to the reader's by column id
// (RowValueTranslation): a column the reader dropped is skipped, one it added reads
// the column's read default (ColumnSchema::ReadMissingValue: its default when it
// was added, else NULL), a renamed one keeps its values. A value whose n is smaller
// than its version's count (columns appended to the same version: an older form of
// evolution) reads the missing ones as their default, else NULL.
//
// Functions are stateless and RowValueTranslation immutable; thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

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

// Reads row values written under an older schema version of a table (the writer)
// as rows of a newer one (the reader), mapping columns by id.
class RowValueTranslation {
 public:
  // InvalidArgument when `writer` is not older than `reader`, a column id changed
  // type or became a key column, or a reader column the writer lacks has no value
  // for old rows (no read default and not nullable).
  static Result<RowValueTranslation> Create(std::shared_ptr<const Schema> writer,
                                            const Schema& reader);
  const Schema& writer() const { return *writer_; }
  // Sets every non-key column of `row` (a row of the reader schema) from `value`,
  // which must have the writer's version; strings point into `value`. Corruption on
  // malformed input, as DecodeRowValue.
  Status Decode(Slice value, Row* row) const;

 private:
  RowValueTranslation() = default;
  std::shared_ptr<const Schema> writer_;
  std::vector<int> reader_index_;  // per writer non-key column: its reader index, or -1
  std::vector<int> missing_;       // reader non-key columns the writer lacks
};

}  // namespace nyala
