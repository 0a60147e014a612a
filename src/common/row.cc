#include "nyala/row.h"
#include "common/result.h"

namespace nyala {

namespace {

Result<int> IndexOf(const Schema& schema, std::string_view column) {
  int idx = schema.FindColumn(column);
  if (idx < 0) {
    return Status::InvalidArgument("no column '" + std::string(column) + "' in schema");
  }
  return idx;
}

}  // namespace

std::string RowView::ToString() const {
  std::string s = "(";
  bool first = true;
  for (int i = 0; i < schema_->num_columns(); i++) {
    if (cells_[i].is_absent()) continue;
    if (!first) s += ", ";
    first = false;
    s += schema_->column(i).name();
    s += '=';
    s += cells_[i].ToString();
  }
  s += ')';
  return s;
}

Row::Row(const Row& other) : schema_(other.schema_), cells_(other.cells_) { CopyOwnStrings(); }

Row& Row::operator=(const Row& other) {
  if (this != &other) {
    schema_ = other.schema_;
    cells_ = other.cells_;
    arena_.Reset();
    CopyOwnStrings();
  }
  return *this;
}

void Row::CopyOwnStrings() {
  for (Cell& c : cells_) {
    if (c.has_value() && IsVariableLength(c.type())) {
      c = Cell::VarLen(c.type(), arena_.Copy(c.slice_value()));
    }
  }
}

void Row::Clear() {
  for (Cell& c : cells_) c = Cell();
  arena_.Reset();
}

Status Row::CheckSet(int idx, const Cell& value) const {
  if (idx < 0 || idx >= schema_->num_columns()) {
    return Status::InvalidArgument("column index " + std::to_string(idx) + " out of range");
  }
  const ColumnSchema& col = schema_->column(idx);
  if (value.is_absent()) {
    return Status::InvalidArgument("column '" + col.name() + "': no value given (use Unset)");
  }
  if (value.type() != col.type()) {
    return Status::InvalidArgument("column '" + col.name() + "' is " + DataTypeName(col.type()) +
                                   ", value is " + DataTypeName(value.type()));
  }
  if (value.is_null() && !col.is_nullable()) {
    return Status::InvalidArgument("column '" + col.name() + "' is not nullable");
  }
  return Status::OK();
}

Status Row::Set(int idx, const Cell& value) {
  RETURN_NOT_OK(CheckSet(idx, value));
  cells_[idx] = value;
  return Status::OK();
}

Status Row::Set(std::string_view column, const Cell& value) {
  ASSIGN_OR_RETURN(int idx, IndexOf(*schema_, column));
  return Set(idx, value);
}

Status Row::SetCopy(int idx, const Cell& value) {
  RETURN_NOT_OK(CheckSet(idx, value));
  if (value.has_value() && IsVariableLength(value.type())) {
    cells_[idx] = Cell::VarLen(value.type(), arena_.Copy(value.slice_value()));
  } else {
    cells_[idx] = value;
  }
  return Status::OK();
}

Status Row::SetCopy(std::string_view column, const Cell& value) {
  ASSIGN_OR_RETURN(int idx, IndexOf(*schema_, column));
  return SetCopy(idx, value);
}

Status Row::SetNull(int idx) {
  if (idx < 0 || idx >= schema_->num_columns()) {
    return Status::InvalidArgument("column index " + std::to_string(idx) + " out of range");
  }
  return Set(idx, Cell::Null(schema_->column(idx).type()));
}

Status Row::SetNull(std::string_view column) {
  ASSIGN_OR_RETURN(int idx, IndexOf(*schema_, column));
  return SetNull(idx);
}

}  // namespace nyala
