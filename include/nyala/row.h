// Rows of a Schema: each column is unset (an absent Cell), NULL, or a value.
//
//  - RowView: a borrowed read-only view (schema + one Cell per column). Cheap to
//    copy; valid while the schema and the cells (and their string bytes) live.
//    Decoders (row_operations.h, row_encoding.h) hand rows out as views.
//  - Row: owns its cells; STRING/BINARY bytes are either borrowed (Set) or copied
//    into the row's own arena (SetCopy). Copying a Row copies every string, so a
//    copy never borrows; moving keeps string addresses.
//
// Both are thread-compatible. The Schema must outlive every Row and RowView of it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nyala/arena.h"
#include "nyala/export.h"
#include "nyala/schema.h"
#include "nyala/status.h"
#include "nyala/types.h"

namespace nyala {

NYALA_EXPORT_BEGIN

class RowView {
 public:
  RowView() = default;
  // `cells` has schema->num_columns() entries.
  RowView(const Schema* schema, const Cell* cells) : schema_(schema), cells_(cells) {}

  const Schema& schema() const { return *schema_; }
  const Cell* cells() const { return cells_; }
  const Cell& cell(int idx) const { return cells_[idx]; }
  bool IsSet(int idx) const { return !cells_[idx].is_absent(); }
  bool IsNull(int idx) const { return cells_[idx].is_null(); }

  // "(key=1, name="ab", score=NULL)"; unset columns are left out.
  std::string ToString() const;

 private:
  const Schema* schema_ = nullptr;
  const Cell* cells_ = nullptr;
};

class Row {
 public:
  // A row with every column unset.
  explicit Row(const Schema* schema) : schema_(schema), cells_(schema->num_columns()) {}
  Row(const Row& other);
  Row& operator=(const Row& other);
  Row(Row&&) noexcept = default;
  Row& operator=(Row&&) noexcept = default;

  const Schema& schema() const { return *schema_; }
  RowView view() const { return RowView(schema_, cells_.data()); }
  operator RowView() const { return view(); }  // NOLINT(runtime/explicit)
  const Cell& cell(int idx) const { return cells_[idx]; }
  bool IsSet(int idx) const { return !cells_[idx].is_absent(); }
  bool IsNull(int idx) const { return cells_[idx].is_null(); }

  // Checked setters. InvalidArgument naming the column for an unknown name or
  // index, a value of another type than the column's, an absent value, or NULL in a
  // NOT NULL column. Set borrows STRING/BINARY bytes (they must outlive every use
  // of this row); SetCopy copies them into the row.
  Status Set(int idx, const Cell& value);
  Status Set(std::string_view column, const Cell& value);
  Status SetCopy(int idx, const Cell& value);
  Status SetCopy(std::string_view column, const Cell& value);
  Status SetNull(int idx);
  Status SetNull(std::string_view column);
  void Unset(int idx) { cells_[idx] = Cell(); }
  // Unsets every column and frees copied bytes.
  void Clear();

  // For decoders that validated the value already. REQUIRES: `value` is absent or
  // has the column's type; borrowed bytes outlive the row's use.
  void SetUnchecked(int idx, const Cell& value) { cells_[idx] = value; }
  Cell* mutable_cells() { return cells_.data(); }
  Arena* arena() { return &arena_; }

  std::string ToString() const { return view().ToString(); }

 private:
  Status CheckSet(int idx, const Cell& value) const;
  // Re-points every STRING/BINARY cell at a copy in arena_.
  void CopyOwnStrings();

  const Schema* schema_;
  std::vector<Cell> cells_;
  Arena arena_;
};

NYALA_EXPORT_END

}  // namespace nyala
