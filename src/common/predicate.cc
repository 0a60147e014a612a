#include "nyala/predicate.h"
#include "common/result.h"

#include <algorithm>

#include "common/common.pb.h"
#include "common/key_encoding.h"

namespace nyala {

namespace {

std::string OnColumn(const std::string& name) { return "predicate on column '" + name + "'"; }

}  // namespace

Result<const ColumnSchema*> ColumnPredicate::CheckColumn(const Schema& schema, int column) {
  if (column < 0 || column >= schema.num_columns()) {
    return Status::InvalidArgument("predicate on column index " + std::to_string(column) +
                                   ", out of range");
  }
  return &schema.column(column);
}

Status ColumnPredicate::CheckValue(const ColumnSchema& col, const Cell& value, const char* what) {
  if (value.is_absent()) {
    return Status::InvalidArgument(OnColumn(col.name()) + ": " + what + " is missing");
  }
  if (value.type() != col.type()) {
    return Status::InvalidArgument(OnColumn(col.name()) + ": " + what + " is " +
                                   DataTypeName(value.type()) + ", the column is " +
                                   DataTypeName(col.type()));
  }
  if (value.is_null()) {
    return Status::InvalidArgument(OnColumn(col.name()) + ": " + what + " is NULL (use IS NULL)");
  }
  return Status::OK();
}

Result<ColumnPredicate> ColumnPredicate::Comparison(const Schema& schema, int column, CompareOp op,
                                                    const Cell& value) {
  switch (op) {
    case CompareOp::kEqual:
      return Equality(schema, column, value);
    case CompareOp::kLess:
      return Range(schema, column, Cell(), false, value, false);
    case CompareOp::kLessEqual:
      return Range(schema, column, Cell(), false, value, true);
    case CompareOp::kGreater:
      return Range(schema, column, value, false, Cell(), false);
    case CompareOp::kGreaterEqual:
      return Range(schema, column, value, true, Cell(), false);
  }
  return Status::InvalidArgument("unknown comparison operator");
}

Result<ColumnPredicate> ColumnPredicate::Range(const Schema& schema, int column, const Cell& lower,
                                               bool lower_inclusive, const Cell& upper,
                                               bool upper_inclusive) {
  ASSIGN_OR_RETURN(const ColumnSchema* col, CheckColumn(schema, column));
  if (lower.is_absent() && upper.is_absent()) {
    return Status::InvalidArgument(OnColumn(col->name()) + ": range has no bounds");
  }
  ColumnPredicate p(Kind::kRange, column, *col);
  if (!lower.is_absent()) {
    RETURN_NOT_OK(CheckValue(*col, lower, "lower bound"));
    p.lower_ = Value(lower);
    p.lower_inclusive_ = lower_inclusive;
  }
  if (!upper.is_absent()) {
    RETURN_NOT_OK(CheckValue(*col, upper, "upper bound"));
    p.upper_ = Value(upper);
    p.upper_inclusive_ = upper_inclusive;
  }
  return p;
}

Result<ColumnPredicate> ColumnPredicate::Equality(const Schema& schema, int column,
                                                  const Cell& value) {
  ASSIGN_OR_RETURN(const ColumnSchema* col, CheckColumn(schema, column));
  RETURN_NOT_OK(CheckValue(*col, value, "value"));
  ColumnPredicate p(Kind::kEquality, column, *col);
  p.lower_ = Value(value);
  p.upper_ = p.lower_;
  p.lower_inclusive_ = p.upper_inclusive_ = true;
  return p;
}

Result<ColumnPredicate> ColumnPredicate::InList(const Schema& schema, int column,
                                                const std::vector<Cell>& values) {
  ASSIGN_OR_RETURN(const ColumnSchema* col, CheckColumn(schema, column));
  ColumnPredicate p(Kind::kInList, column, *col);
  std::vector<Cell> sorted;
  sorted.reserve(values.size());
  for (const Cell& v : values) {
    RETURN_NOT_OK(CheckValue(*col, v, "IN list value"));
    sorted.push_back(v);
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const Cell& a, const Cell& b) { return a.Compare(b) < 0; });
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  p.in_list_.reserve(sorted.size());
  for (const Cell& v : sorted) p.in_list_.emplace_back(v);
  return p;
}

Result<ColumnPredicate> ColumnPredicate::IsNull(const Schema& schema, int column) {
  ASSIGN_OR_RETURN(const ColumnSchema* col, CheckColumn(schema, column));
  return ColumnPredicate(Kind::kIsNull, column, *col);
}

Result<ColumnPredicate> ColumnPredicate::IsNotNull(const Schema& schema, int column) {
  ASSIGN_OR_RETURN(const ColumnSchema* col, CheckColumn(schema, column));
  return ColumnPredicate(Kind::kIsNotNull, column, *col);
}

Result<ColumnPredicate> ColumnPredicate::FromPB(const ColumnPredicatePB& pb, const Schema& schema) {
  const int idx = schema.FindColumn(pb.column());
  if (idx < 0) {
    return Status::InvalidArgument("predicate on unknown column '" + pb.column() + "'");
  }
  const ColumnSchema& col = schema.column(idx);
  if (pb.type() != UNKNOWN_DATA && pb.type() != DataTypeToPB(col.type())) {
    const char* sent =
        pb.type() > 0 && pb.type() <= kMaxDataType ? DataTypeName(DataType(pb.type())) : "UNKNOWN";
    return Status::InvalidArgument(OnColumn(col.name()) + " has type " + sent + ", the column is " +
                                   DataTypeName(col.type()));
  }
  auto decode = [&](const std::string& bytes, const char* what, Cell* out) -> Status {
    Status s = DecodeCellValue(col.type(), Slice(bytes), out);
    if (!s.ok()) {
      return Status::InvalidArgument(OnColumn(col.name()) + ": " + what + ": " + s.message());
    }
    return Status::OK();
  };
  switch (pb.predicate_case()) {
    case ColumnPredicatePB::kRange: {
      const auto& r = pb.range();
      Cell lower, upper;
      if (r.has_lower()) RETURN_NOT_OK(decode(r.lower(), "lower bound", &lower));
      if (r.has_upper()) RETURN_NOT_OK(decode(r.upper(), "upper bound", &upper));
      return Range(schema, idx, lower, r.lower_inclusive(), upper, r.upper_inclusive());
    }
    case ColumnPredicatePB::kEquality: {
      Cell v;
      RETURN_NOT_OK(decode(pb.equality().value(), "value", &v));
      return Equality(schema, idx, v);
    }
    case ColumnPredicatePB::kInList: {
      std::vector<Cell> values(pb.in_list().values_size());
      for (int i = 0; i < pb.in_list().values_size(); i++) {
        RETURN_NOT_OK(decode(pb.in_list().values(i), "IN list value", &values[i]));
      }
      return InList(schema, idx, values);
    }
    case ColumnPredicatePB::kIsNull:
      return IsNull(schema, idx);
    case ColumnPredicatePB::kIsNotNull:
      return IsNotNull(schema, idx);
    case ColumnPredicatePB::PREDICATE_NOT_SET:
      break;
  }
  return Status::InvalidArgument(OnColumn(col.name()) + " has no kind");
}

void ColumnPredicate::ToPB(ColumnPredicatePB* pb) const {
  pb->Clear();
  pb->set_column(column_name_);
  pb->set_type(static_cast<DataTypePB>(DataTypeToPB(type_)));
  switch (kind_) {
    case Kind::kRange: {
      auto* r = pb->mutable_range();
      if (lower_.has_value()) {
        EncodeCellValue(lower_.cell(), r->mutable_lower());
        r->set_lower_inclusive(lower_inclusive_);
      }
      if (upper_.has_value()) {
        EncodeCellValue(upper_.cell(), r->mutable_upper());
        r->set_upper_inclusive(upper_inclusive_);
      }
      break;
    }
    case Kind::kEquality:
      EncodeCellValue(lower_.cell(), pb->mutable_equality()->mutable_value());
      break;
    case Kind::kInList: {
      auto* in = pb->mutable_in_list();
      for (const Value& v : in_list_) EncodeCellValue(v.cell(), in->add_values());
      break;
    }
    case Kind::kIsNull:
      pb->mutable_is_null();
      break;
    case Kind::kIsNotNull:
      pb->mutable_is_not_null();
      break;
  }
}

bool ColumnPredicate::Evaluate(const Cell& cell) const {
  if (!cell.has_value()) return kind_ == Kind::kIsNull;  // NULL (or unset)
  switch (kind_) {
    case Kind::kIsNull:
      return false;
    case Kind::kIsNotNull:
      return true;
    case Kind::kEquality:
      return cell.Compare(lower_.cell()) == 0;
    case Kind::kRange: {
      if (lower_.has_value()) {
        const int c = cell.Compare(lower_.cell());
        if (c < 0 || (c == 0 && !lower_inclusive_)) return false;
      }
      if (upper_.has_value()) {
        const int c = cell.Compare(upper_.cell());
        if (c > 0 || (c == 0 && !upper_inclusive_)) return false;
      }
      return true;
    }
    case Kind::kInList: {
      auto it =
          std::lower_bound(in_list_.begin(), in_list_.end(), cell,
                           [](const Value& v, const Cell& c) { return v.cell().Compare(c) < 0; });
      return it != in_list_.end() && it->cell().Compare(cell) == 0;
    }
  }
  return false;
}

std::string ColumnPredicate::ToString() const {
  const std::string& c = column_name_;
  switch (kind_) {
    case Kind::kIsNull:
      return c + " IS NULL";
    case Kind::kIsNotNull:
      return c + " IS NOT NULL";
    case Kind::kEquality:
      return c + " = " + lower_.ToString();
    case Kind::kRange: {
      std::string s;
      if (lower_.has_value()) s = c + (lower_inclusive_ ? " >= " : " > ") + lower_.ToString();
      if (upper_.has_value()) {
        if (!s.empty()) s += " AND ";
        s += c + (upper_inclusive_ ? " <= " : " < ") + upper_.ToString();
      }
      return s;
    }
    case Kind::kInList: {
      std::string s = c + " IN (";
      for (size_t i = 0; i < in_list_.size(); i++) {
        if (i > 0) s += ", ";
        s += in_list_[i].ToString();
      }
      return s + ")";
    }
  }
  return c;
}

namespace {

// The combined bounds on one key column. Cells point into the predicates.
struct ColumnBounds {
  Cell lower;
  bool lower_inclusive = false;
  Cell upper;
  bool upper_inclusive = false;
  bool empty = false;

  void TightenLower(const Cell& v, bool inclusive) {
    const int c = lower.is_absent() ? 1 : v.Compare(lower);
    if (c > 0) {
      lower = v;
      lower_inclusive = inclusive;
    } else if (c == 0 && !inclusive) {
      lower_inclusive = false;
    }
  }
  void TightenUpper(const Cell& v, bool inclusive) {
    const int c = upper.is_absent() ? -1 : v.Compare(upper);
    if (c < 0) {
      upper = v;
      upper_inclusive = inclusive;
    } else if (c == 0 && !inclusive) {
      upper_inclusive = false;
    }
  }
};

}  // namespace

KeyRange KeyRangeFromPredicates(const Schema& schema,
                                const std::vector<ColumnPredicate>& predicates) {
  const int nk = schema.num_key_columns();
  std::vector<ColumnBounds> bounds(nk);
  KeyRange range;
  for (const ColumnPredicate& p : predicates) {
    if (p.column() >= nk) continue;
    ColumnBounds& b = bounds[p.column()];
    switch (p.kind()) {
      case ColumnPredicate::Kind::kIsNull:
        b.empty = true;  // key columns are never NULL
        break;
      case ColumnPredicate::Kind::kIsNotNull:
        break;
      case ColumnPredicate::Kind::kEquality:
      case ColumnPredicate::Kind::kRange:
        if (p.lower().has_value()) b.TightenLower(p.lower().cell(), p.lower_inclusive());
        if (p.upper().has_value()) b.TightenUpper(p.upper().cell(), p.upper_inclusive());
        break;
      case ColumnPredicate::Kind::kInList:
        if (p.in_list().empty()) {
          b.empty = true;
        } else {
          b.TightenLower(p.in_list().front().cell(), true);
          b.TightenUpper(p.in_list().back().cell(), true);
        }
        break;
    }
  }
  for (ColumnBounds& b : bounds) {
    if (b.lower.has_value() && b.upper.has_value()) {
      const int c = b.lower.Compare(b.upper);
      if (c > 0 || (c == 0 && !(b.lower_inclusive && b.upper_inclusive))) b.empty = true;
    }
    if (b.empty) {
      range.empty = true;
      return range;
    }
  }

  std::string prefix;  // encoded equal key prefix
  for (int k = 0; k < nk; k++) {
    const ColumnBounds& b = bounds[k];
    const bool last = k == nk - 1;
    if (b.lower.has_value() && b.upper.has_value() && b.lower.Compare(b.upper) == 0) {
      EncodeKeyCell(b.lower, last, &prefix);
      if (last) {
        range.start = prefix;
        range.stop = ImmediateSuccessor(prefix);
        return range;
      }
      continue;
    }
    if (b.lower.has_value()) {
      std::string s = prefix;
      EncodeKeyCell(b.lower, last, &s);
      if (b.lower_inclusive) {
        range.start = std::move(s);
      } else if (last) {
        range.start = ImmediateSuccessor(s);
      } else {
        range.start = PrefixSuccessor(s);
        if (range.start.empty()) {  // nothing sorts after s and its extensions
          range.empty = true;
          return range;
        }
      }
    } else {
      range.start = prefix;
    }
    if (b.upper.has_value()) {
      std::string s = prefix;
      EncodeKeyCell(b.upper, last, &s);
      if (!b.upper_inclusive) {
        if (s.empty()) {  // below the empty string: nothing ("" would mean unbounded)
          range.empty = true;
          return range;
        }
        range.stop = std::move(s);
      } else if (last) {
        range.stop = ImmediateSuccessor(s);
      } else {
        range.stop = PrefixSuccessor(s);
      }
    } else {
      range.stop = PrefixSuccessor(prefix);
    }
    break;
  }
  if (!range.stop.empty() && range.start >= range.stop) range.empty = true;
  return range;
}

void IntersectKeyRange(Slice start, Slice stop, KeyRange* range) {
  if (range->empty) return;
  if (Slice(range->start).compare(start) < 0) range->start = start.ToString();
  if (!stop.empty() && (range->stop.empty() || stop.compare(Slice(range->stop)) < 0)) {
    range->stop = stop.ToString();
  }
  if (!range->stop.empty() && range->start >= range->stop) range->empty = true;
}

}  // namespace nyala
