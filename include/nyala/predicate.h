// Scan predicates on single columns, and the primary-key bounds they imply.
//
// A ColumnPredicate is one of: a range (lower and/or upper bound, each inclusive
// or exclusive: expresses =, <, <=, >, >= and between), an equality, an IN list,
// IS NULL, IS NOT NULL. Values compare by Cell::Compare (types.h), so for FLOAT
// and DOUBLE -0.0 equals +0.0 and NaN equals NaN and sorts after +inf, the same
// order as the key encoding. Every kind but IS NULL is false on NULL.
//
// KeyRangeFromPredicates turns predicates on key columns into encoded-key bounds
// [start, stop) for a storage iterator: equalities on a key prefix, then a range
// (or IN list, by its smallest and largest value) on the next key column. The
// bounds never exclude a matching row; rows inside them must still be checked with
// Evaluate, against every predicate.
//
// ColumnPredicate is an immutable value after construction: safe to share for
// reading. It records the column index of the Schema it was built against.
#pragma once

#include <string>
#include <vector>

#include "nyala/export.h"
#include "nyala/result.h"
#include "nyala/row.h"
#include "nyala/schema.h"
#include "nyala/types.h"

namespace nyala {

// The wire forms, for the tree's own use (not exported).
class ColumnPredicatePB;

NYALA_EXPORT_BEGIN

class ColumnPredicate {
 public:
  enum class Kind : uint8_t { kRange, kEquality, kInList, kIsNull, kIsNotNull };
  enum class CompareOp : uint8_t { kEqual, kLess, kLessEqual, kGreater, kGreaterEqual };

  // Builders. `column` is an index into `schema`. InvalidArgument naming the
  // column for a bad index, a value whose type is not the column's, or a NULL value
  // (use IsNull); Range also when both bounds are absent.
  // column <op> value.
  static Result<ColumnPredicate> Comparison(const Schema& schema, int column, CompareOp op,
                                            const Cell& value);
  // An absent Cell is a missing bound.
  static Result<ColumnPredicate> Range(const Schema& schema, int column, const Cell& lower,
                                       bool lower_inclusive, const Cell& upper,
                                       bool upper_inclusive);
  static Result<ColumnPredicate> Equality(const Schema& schema, int column, const Cell& value);
  // An empty list matches nothing.
  static Result<ColumnPredicate> InList(const Schema& schema, int column,
                                        const std::vector<Cell>& values);
  static Result<ColumnPredicate> IsNull(const Schema& schema, int column);
  static Result<ColumnPredicate> IsNotNull(const Schema& schema, int column);

  // From the wire. InvalidArgument naming the column for an unknown column, a
  // declared type other than the column's, a value that does not decode as the
  // column's type, or a predicate with no kind or a range without bounds.
  NYALA_NO_EXPORT static Result<ColumnPredicate> FromPB(const ColumnPredicatePB& pb,
                                                        const Schema& schema);
  NYALA_NO_EXPORT void ToPB(ColumnPredicatePB* pb) const;

  Kind kind() const { return kind_; }
  int column() const { return column_; }
  const std::string& column_name() const { return column_name_; }
  DataType type() const { return type_; }
  // Bounds of a range (absent when missing); the value of an equality is lower().
  const Value& lower() const { return lower_; }
  const Value& upper() const { return upper_; }
  bool lower_inclusive() const { return lower_inclusive_; }
  bool upper_inclusive() const { return upper_inclusive_; }
  // IN values, sorted and without duplicates.
  const std::vector<Value>& in_list() const { return in_list_; }

  // Whether `cell` (a value or NULL of the column's type) satisfies the predicate.
  bool Evaluate(const Cell& cell) const;
  bool Evaluate(const RowView& row) const { return Evaluate(row.cell(column_)); }

  // "a >= 3 AND a < 7", "b IN (1, 2)", "c IS NULL".
  std::string ToString() const;

 private:
  ColumnPredicate(Kind kind, int column, const ColumnSchema& col)
      : kind_(kind), column_(column), column_name_(col.name()), type_(col.type()) {}
  static Result<const ColumnSchema*> CheckColumn(const Schema& schema, int column);
  static Status CheckValue(const ColumnSchema& col, const Cell& value, const char* what);

  Kind kind_;
  int column_;
  std::string column_name_;
  DataType type_;
  Value lower_;
  Value upper_;
  bool lower_inclusive_ = false;
  bool upper_inclusive_ = false;
  std::vector<Value> in_list_;
};

// Bounds on encoded primary keys. `empty` when the predicates contradict each
// other on the key (then start and stop mean nothing).
struct KeyRange {
  std::string start;  // inclusive; "" = from the first key
  std::string stop;   // exclusive; "" = to the last key
  bool empty = false;

  bool Contains(Slice key) const {
    return !empty && Slice(start).compare(key) <= 0 && (stop.empty() || key.compare(stop) < 0);
  }
};

// The tightest KeyRange the key-column predicates give in the way the file
// comment describes. Predicates on non-key columns are ignored. All predicates must
// have been built against `schema`.
KeyRange KeyRangeFromPredicates(const Schema& schema,
                                const std::vector<ColumnPredicate>& predicates);

// Narrows `range` to also lie within [start, stop) ("" stop = unbounded).
void IntersectKeyRange(Slice start, Slice stop, KeyRange* range);

NYALA_EXPORT_END

}  // namespace nyala
