// ColumnSchema and Schema: a table's typed columns. Primary-key columns come
// first and are never nullable; other columns are NOT NULL unless declared
// nullable and may carry a default. Every column has a stable id (kept across
// schema versions: a renamed column keeps it, a column dropped and added again
// under the same name gets a new one) and the schema has a version, raised by
// every alteration of the table and stored in every row value.
//
// Schemas are built only through Schema::Create / FromPB, which validate and
// return InvalidArgument naming the offending column. A Schema is immutable
// after construction: safe to share between threads for reading. Rows, encoders
// and predicates hold `const Schema*`: the Schema must outlive them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nyala/export.h"
#include "nyala/result.h"
#include "nyala/status.h"
#include "nyala/types.h"

namespace nyala {

// The wire forms, for the tree's own use (not exported).
class ColumnSchemaPB;
class SchemaPB;

NYALA_EXPORT_BEGIN

constexpr int32_t kInvalidColumnId = -1;

class ColumnSchema {
 public:
  // `default_value`, when not absent, must have type `type` (checked by Schema::Create).
  ColumnSchema(std::string name, DataType type, bool is_nullable = false,
               Value default_value = Value(), int32_t id = kInvalidColumnId)
      : name_(std::move(name)),
        type_(type),
        is_nullable_(is_nullable),
        default_(std::move(default_value)),
        id_(id) {}

  const std::string& name() const { return name_; }
  DataType type() const { return type_; }
  const TypeInfo& type_info() const { return GetTypeInfo(type_); }
  bool is_nullable() const { return is_nullable_; }
  bool has_default() const { return !default_.is_absent(); }
  const Value& default_value() const { return default_; }
  int32_t id() const { return id_; }
  // A free-text description ("" when none).
  const std::string& comment() const { return comment_; }
  ColumnSchema& set_comment(std::string comment) {
    comment_ = std::move(comment);
    return *this;
  }
  // What rows written before the column was added to the table read in it: its
  // default when it was added (absent: NULL). Later changes of the default change
  // only what new rows get. Absent for a table's original columns.
  bool has_read_default() const { return !read_default_.is_absent(); }
  const Value& read_default() const { return read_default_; }
  ColumnSchema& set_read_default(Value v) {
    read_default_ = std::move(v);
    return *this;
  }

  // What a row that does not set this column holds: the default, else NULL when
  // nullable, else an absent cell (the row is invalid without a value).
  Cell MissingValue() const {
    if (has_default()) return default_.cell();
    return is_nullable_ ? Cell::Null(type_) : Cell();
  }
  // What a row stored before the column existed reads: the read default, else NULL
  // when nullable, else an absent cell.
  Cell ReadMissingValue() const {
    if (has_read_default()) return read_default_.cell();
    return is_nullable_ ? Cell::Null(type_) : Cell();
  }

  // "name INT32 NOT NULL DEFAULT 5".
  std::string ToString() const;
  friend bool operator==(const ColumnSchema& a, const ColumnSchema& b) {
    return a.name_ == b.name_ && a.type_ == b.type_ && a.is_nullable_ == b.is_nullable_ &&
           a.default_ == b.default_ && a.id_ == b.id_ && a.comment_ == b.comment_ &&
           a.read_default_ == b.read_default_;
  }

 private:
  friend class Schema;
  std::string name_;
  DataType type_;
  bool is_nullable_;
  Value default_;
  int32_t id_;
  std::string comment_;
  Value read_default_;
};

class Schema {
 public:
  static constexpr int kMaxColumns = 1024;
  static constexpr size_t kMaxColumnNameLength = 256;

  // An empty schema (no columns); only a placeholder to assign to.
  Schema() = default;

  // Validates and builds a table schema: `columns[0, num_key_columns)` form the
  // primary key. Columns without ids (all of them, or none) get ids 0..n-1.
  // InvalidArgument, naming the column, when: there is no key column; a name is
  // empty, too long or duplicated; a type is unknown; a key column is nullable or
  // has a default; a default has the wrong type or is NULL for a NOT NULL column;
  // ids are partly missing, negative or duplicated; there are too many columns; a
  // read default has the wrong type, or is on a key column.
  static Result<Schema> Create(std::vector<ColumnSchema> columns, int num_key_columns,
                               uint32_t version = 0);
  // Same checks; also that is_key columns come first and defaults decode.
  NYALA_NO_EXPORT static Result<Schema> FromPB(const SchemaPB& pb);
  NYALA_NO_EXPORT void ToPB(SchemaPB* pb) const;

  int num_columns() const { return static_cast<int>(columns_.size()); }
  int num_key_columns() const { return num_key_columns_; }
  int num_value_columns() const { return num_columns() - num_key_columns_; }
  bool is_key_column(int idx) const { return idx < num_key_columns_; }
  const ColumnSchema& column(int idx) const { return columns_[idx]; }
  const std::vector<ColumnSchema>& columns() const { return columns_; }
  uint32_t version() const { return version_; }
  bool has_nullable_columns() const { return has_nullable_; }

  // Index of the column called `name`, or -1.
  int FindColumn(std::string_view name) const;
  // Index of the column called `name`, or NotFound("column 'x' not in schema").
  Result<int> ColumnIndex(std::string_view name) const;
  // Index of the column with id `id`, or -1.
  int FindColumnById(int32_t id) const;
  // The largest column id (-1 without columns).
  int32_t MaxColumnId() const;

  // The indexes of `names` in order. NotFound for an unknown name,
  // InvalidArgument for a name given twice.
  Result<std::vector<int>> ColumnIndexes(const std::vector<std::string>& names) const;
  // A projection: the named columns in the given order, same ids and version. A
  // projection has no key columns (num_key_columns() == 0) and is not a table
  // schema: use it to describe result rows, not to encode keys or row values.
  Result<Schema> Project(const std::vector<std::string>& names) const;

  // "(key INT64 NOT NULL, v STRING NULLABLE, PRIMARY KEY (key)) version 3".
  std::string ToString() const;
  friend bool operator==(const Schema& a, const Schema& b) {
    return a.num_key_columns_ == b.num_key_columns_ && a.version_ == b.version_ &&
           a.columns_ == b.columns_;
  }

 private:
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  // Builds the derived fields; no validation.
  Schema(std::vector<ColumnSchema> columns, int num_key_columns, uint32_t version);

  std::vector<ColumnSchema> columns_;
  int num_key_columns_ = 0;
  uint32_t version_ = 0;
  bool has_nullable_ = false;
  std::unordered_map<std::string, int, NameHash, std::equal_to<>> name_to_index_;
};

NYALA_EXPORT_END

}  // namespace nyala
