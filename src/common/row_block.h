// The row-wise projection layout: how the tablet server returns rows (Get and Scan
// results) to clients, in two RPC sidecars described by a RowwiseRowBlockPB
// (docs/wire-format.md, "Row blocks").
//
// For a projection of n columns of which m are nullable, every row takes the same
// number of bytes, the stride:
//
//   stride = ceil(m/8) + sum over projected columns of slot(col)
//   slot   = the type's fixed width (BOOL, INT8 1; INT16 2; INT32, FLOAT 4;
//            INT64, DOUBLE, UNIXTIME_MICROS 8), or 16 for STRING and BINARY
//
// and a row is:
//   bytes   null bitmap, ceil(m/8) bytes: bit j (byte j/8, mask 1 << j%8) set when the
//           j-th nullable projected column is NULL; bits past m are zero
//   slots   each projected column in projection order: fixed-size values
//           little-endian; STRING/BINARY as uint64 LE offset, uint64 LE length of the
//           bytes in the indirect-data sidecar. The slot of a NULL cell is all zero.
//
// The rows sidecar is exactly num_rows * stride bytes; the indirect-data sidecar
// holds the string bytes, referenced by offset.
//
// RowBlockEncoder (server side) appends rows and hands the two buffers out;
// RowBlock (client side) validates the two sidecars once, then hands out cells in
// O(1) without copying (strings point into the indirect sidecar).
//
// Both are thread-compatible. The projection Schema must outlive them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "nyala/schema.h"
#include "nyala/slice.h"
#include "nyala/types.h"

namespace nyala {

// Where each projected column sits inside a row. Built once per projection.
class RowBlockLayout {
 public:
  RowBlockLayout() = default;
  explicit RowBlockLayout(const Schema& projection);

  size_t stride() const { return stride_; }
  size_t bitmap_bytes() const { return bitmap_bytes_; }
  int num_columns() const { return static_cast<int>(offsets_.size()); }
  // Byte offset of column `col`'s slot within a row.
  size_t offset(int col) const { return offsets_[col]; }
  // Index of column `col` among the nullable projected columns, or -1.
  int null_index(int col) const { return null_index_[col]; }
  DataType type(int col) const { return types_[col]; }

  static constexpr size_t kVarLenSlotSize = 16;

 private:
  size_t stride_ = 0;
  size_t bitmap_bytes_ = 0;
  std::vector<size_t> offsets_;
  std::vector<int> null_index_;
  std::vector<DataType> types_;
};

class RowBlockEncoder {
 public:
  // `projection` must outlive the encoder.
  explicit RowBlockEncoder(const Schema* projection);

  // Appends one row. Projected column i takes its value from
  // `cells[source_index[i]]`. REQUIRES: each such cell has a value or is NULL, of the
  // projected column's type; NULL only in nullable columns (the tablet server's own
  // decoded rows, never unchecked input).
  void AppendRow(const Cell* cells, const int* source_index);
  // The same with source_index[i] == i.
  void AppendRow(const Cell* cells);

  int num_rows() const { return num_rows_; }
  // Bytes produced so far (both buffers).
  size_t encoded_size() const { return rows_.size() + indirect_.size(); }

  // Moves the rows and indirect data out and resets the encoder for reuse.
  void Finish(std::string* rows, std::string* indirect);
  // Drops everything appended; keeps the buffers' capacity.
  void Reset();

  const RowBlockLayout& layout() const { return layout_; }

 private:
  const Schema* const projection_;
  const RowBlockLayout layout_;
  std::vector<int> identity_;
  std::string rows_;
  std::string indirect_;
  int num_rows_ = 0;
};

class RowBlock {
 public:
  RowBlock() = default;

  // Validates `rows`/`indirect` as `num_rows` rows of `projection`: rows.size() ==
  // num_rows * stride, every string reference inside `indirect`, BOOL bytes 0 or
  // 1, bitmap bits past the nullable columns zero. Corruption naming the row and
  // column otherwise. The bytes and the schema must outlive `out`.
  static Status Parse(const Schema* projection, int64_t num_rows, Slice rows, Slice indirect,
                      RowBlock* out);

  int64_t num_rows() const { return num_rows_; }
  const Schema& projection() const { return *projection_; }
  // The cell of row `row`, column `col` (a value or NULL). REQUIRES: in range.
  Cell cell(int64_t row, int col) const;
  // Fills cells[0, num_columns) with row `row`.
  void GetRow(int64_t row, Cell* cells) const;

 private:
  const Schema* projection_ = nullptr;
  RowBlockLayout layout_;
  int64_t num_rows_ = 0;
  Slice rows_;
  Slice indirect_;
};

}  // namespace nyala
