// The row-operations block: a batch of row operations in one RowOperationsPB, as
// the client sends it in a Write (and in CreateTable for range split rows and
// bounds). RowOperationsEncoder builds it on the client; DecodeRowOperations
// parses and validates it on the server without copying: decoded string cells
// point into the PB's indirect_data.
//
// Layout of RowOperationsPB.rows (n = number of columns of the schema):
//   varint   n
//   varint   number of rows
//   per row:
//     u8       operation (RowOpType)
//     bytes    isset bitmap, ceil(n/8) bytes: bit i (byte i/8, mask 1 << i%8) set
//              when column i is given; bits past n are zero
//     bytes    null bitmap, same size: bit i set when column i is given as NULL
//              (only for set columns)
//     values   for each set, non-NULL column in schema order: fixed-size types
//              little-endian in their width (BOOL one byte 0/1); STRING and BINARY
//              as varint offset, varint length of their bytes in indirect_data
//
// What each operation must carry (checked per row, ValidateRowOperation):
//   every write     all key columns, not NULL; no NULL in a NOT NULL column
//   INSERT, UPSERT, INSERT_IGNORE
//                   every NOT NULL non-key column without a default
//   UPDATE, UPDATE_IGNORE
//                   the key plus at least one non-key column (the columns to change)
//   DELETE, DELETE_IGNORE
//                   the key only; no non-key column
//   SPLIT_ROW, RANGE_LOWER_BOUND, RANGE_UPPER_BOUND
//                   not writes; checked by PartitionSchema (range columns set)
//
// Errors. A block that cannot be parsed is a whole-block error (the request fails
// and nothing is written): Corruption for truncation, trailing bytes, an unknown
// operation, bitmap bits past n or a NULL bit on an unset column, a string
// reference outside indirect_data, a BOOL byte other than 0/1; InvalidArgument
// when n differs from the schema's column count (bitmaps of the wrong size: the
// sender has another schema), for an operation not allowed in this kind of block,
// and for a block too large to decode. A row that parses but breaks the rules
// above is a row error: only that row fails, with its index.
//
// Encoder and decoded blocks are thread-compatible. The Schema must outlive them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nyala/row.h"
#include "nyala/row_op_type.h"
#include "nyala/schema.h"
#include "nyala/status.h"

namespace nyala {

class RowOperationsPB;

// The per-row rules of the file comment. OK, or InvalidArgument naming the column.
// Always OK for the non-write operations.
Status ValidateRowOperation(RowOpType type, const RowView& row);

class RowOperationsEncoder {
 public:
  // `schema` must outlive the encoder.
  explicit RowOperationsEncoder(const Schema* schema) : schema_(schema) {}

  // Appends one operation. The row's cells are judged against the encoder's schema
  // (same column count required): their types, and ValidateRowOperation for write
  // operations. An invalid row is not appended and its error is returned.
  Status Add(RowOpType type, const RowView& row);

  int num_rows() const { return num_rows_; }
  // Bytes the block takes so far (rows and indirect data, header excluded).
  size_t encoded_size() const { return rows_.size() + indirect_.size(); }

  // Moves the block into `pb` (replacing its contents) and resets the encoder.
  void Finish(RowOperationsPB* pb);

 private:
  const Schema* const schema_;
  std::string rows_;      // rows without the header
  std::string indirect_;  // string bytes
  int num_rows_ = 0;
};

// What a block may hold.
enum class RowBlockKind {
  kWrites,         // INSERT ... DELETE_IGNORE
  kPartitionRows,  // SPLIT_ROW, RANGE_LOWER_BOUND, RANGE_UPPER_BOUND
};

struct DecodedRowOp {
  RowOpType type;
  RowView row;   // points into DecodedRowOps and the RowOperationsPB
  Status error;  // this row's error; OK when the row may be applied
};

// The rows of a decoded block, in block order. Movable, not copyable.
class DecodedRowOps {
 public:
  // Decoding stops with InvalidArgument beyond this many cells (rows x columns).
  static constexpr size_t kMaxCells = size_t{1} << 25;

  DecodedRowOps() = default;
  DecodedRowOps(const DecodedRowOps&) = delete;
  DecodedRowOps& operator=(const DecodedRowOps&) = delete;
  DecodedRowOps(DecodedRowOps&&) noexcept = default;
  DecodedRowOps& operator=(DecodedRowOps&&) noexcept = default;

  size_t size() const { return ops_.size(); }
  const DecodedRowOp& operator[](size_t i) const { return ops_[i]; }
  std::vector<DecodedRowOp>::const_iterator begin() const { return ops_.begin(); }
  std::vector<DecodedRowOp>::const_iterator end() const { return ops_.end(); }
  int num_row_errors() const { return num_row_errors_; }

 private:
  friend Status DecodeRowOperations(const RowOperationsPB&, const Schema&, RowBlockKind,
                                    DecodedRowOps*);
  std::vector<Cell> cells_;  // size() x num_columns
  std::vector<DecodedRowOp> ops_;
  int num_row_errors_ = 0;
};

// Decodes `pb` against `schema`; operations not of `kind` are a whole-block error.
// A non-OK return is a whole-block error (see the file comment) and leaves `out`
// empty. Otherwise every row is in `out`, each with its own row error or OK. `pb`
// and `schema` must outlive `out`.
Status DecodeRowOperations(const RowOperationsPB& pb, const Schema& schema, RowBlockKind kind,
                           DecodedRowOps* out);

}  // namespace nyala
