#include "common/row_operations.h"
#include "common/status.h"

#include <glog/logging.h>

#include "common/coding.h"
#include "common/common.pb.h"

namespace nyala {

namespace {

inline bool BitSet(const uint8_t* bitmap, size_t i) { return (bitmap[i / 8] >> (i % 8)) & 1; }

std::string RowPrefix(size_t row) { return "row " + std::to_string(row) + ": "; }

}  // namespace

const char* RowOpTypeName(RowOpType type) {
  switch (type) {
    case RowOpType::kInsert:
      return "INSERT";
    case RowOpType::kUpsert:
      return "UPSERT";
    case RowOpType::kUpdate:
      return "UPDATE";
    case RowOpType::kDelete:
      return "DELETE";
    case RowOpType::kInsertIgnore:
      return "INSERT_IGNORE";
    case RowOpType::kUpdateIgnore:
      return "UPDATE_IGNORE";
    case RowOpType::kDeleteIgnore:
      return "DELETE_IGNORE";
    case RowOpType::kSplitRow:
      return "SPLIT_ROW";
    case RowOpType::kRangeLowerBound:
      return "RANGE_LOWER_BOUND";
    case RowOpType::kRangeUpperBound:
      return "RANGE_UPPER_BOUND";
  }
  return "UNKNOWN";
}

Status ValidateRowOperation(RowOpType type, const RowView& row) {
  if (!IsWriteOp(type)) return Status::OK();
  const Schema& schema = row.schema();
  for (int i = 0; i < schema.num_key_columns(); i++) {
    const Cell& c = row.cell(i);
    if (!c.has_value()) [[unlikely]] {
      return Status::InvalidArgument(std::string(RowOpTypeName(type)) + ": key column '" +
                                     schema.column(i).name() + "' " +
                                     (c.is_null() ? "is NULL" : "not set"));
    }
  }
  bool any_value_set = false;
  for (int i = schema.num_key_columns(); i < schema.num_columns(); i++) {
    const Cell& c = row.cell(i);
    const ColumnSchema& col = schema.column(i);
    if (c.is_absent()) {
      if (IsInsertLike(type) && !col.is_nullable() && !col.has_default()) [[unlikely]] {
        return Status::InvalidArgument(std::string(RowOpTypeName(type)) + ": column '" +
                                       col.name() +
                                       "' is not nullable, has no default and was not set");
      }
      continue;
    }
    any_value_set = true;
    if (IsDeleteLike(type)) [[unlikely]] {
      return Status::InvalidArgument(std::string(RowOpTypeName(type)) +
                                     " may set only key columns; non-key column '" + col.name() +
                                     "' is set");
    }
    if (c.is_null() && !col.is_nullable()) [[unlikely]] {
      return Status::InvalidArgument(std::string(RowOpTypeName(type)) + ": column '" + col.name() +
                                     "' is not nullable but NULL was given");
    }
  }
  if (IsUpdateLike(type) && !any_value_set) [[unlikely]] {
    return Status::InvalidArgument(std::string(RowOpTypeName(type)) + " sets no non-key column");
  }
  return Status::OK();
}

Status RowOperationsEncoder::Add(RowOpType type, const RowView& row_in) {
  const Schema& schema = *schema_;
  const int n = schema.num_columns();
  if (&row_in.schema() != schema_ && row_in.schema().num_columns() != n) {
    return Status::InvalidArgument("row has " + std::to_string(row_in.schema().num_columns()) +
                                   " columns, the encoder's schema " + std::to_string(n));
  }
  // Judge the cells by the encoder's schema, as the server will.
  const RowView row(schema_, row_in.cells());
  for (int i = 0; i < n; i++) {
    const Cell& c = row.cell(i);
    if (!c.is_absent() && c.type() != schema.column(i).type()) [[unlikely]] {
      return Status::InvalidArgument("column '" + schema.column(i).name() + "' is " +
                                     DataTypeName(schema.column(i).type()) + ", value is " +
                                     DataTypeName(c.type()));
    }
  }
  RETURN_NOT_OK(ValidateRowOperation(type, row));

  const size_t bitmap_bytes = (n + 7) / 8;
  rows_.push_back(static_cast<char>(type));
  const size_t isset_pos = rows_.size();
  const size_t null_pos = isset_pos + bitmap_bytes;
  rows_.append(2 * bitmap_bytes, '\0');
  for (int i = 0; i < n; i++) {
    const Cell& c = row.cell(i);
    if (c.is_absent()) continue;
    rows_[isset_pos + i / 8] |= static_cast<char>(1 << (i % 8));
    if (c.is_null()) {
      rows_[null_pos + i / 8] |= static_cast<char>(1 << (i % 8));
      continue;
    }
    if (IsVariableLength(c.type())) {
      const Slice s = c.slice_value();
      PutVarint64(&rows_, indirect_.size());
      PutVarint64(&rows_, s.size());
      indirect_.append(s.cdata(), s.size());
    } else {
      uint8_t buf[8];
      uint8_t* end = EncodeFixedCell(c, buf);
      rows_.append(reinterpret_cast<const char*>(buf), end - buf);
    }
  }
  num_rows_++;
  return Status::OK();
}

void RowOperationsEncoder::Finish(RowOperationsPB* pb) {
  std::string* rows = pb->mutable_rows();
  rows->clear();
  rows->reserve(2 * kMaxVarint64Len + rows_.size());
  PutVarint64(rows, schema_->num_columns());
  PutVarint64(rows, num_rows_);
  rows->append(rows_);
  *pb->mutable_indirect_data() = std::move(indirect_);
  rows_.clear();
  indirect_.clear();
  num_rows_ = 0;
}

namespace {

// Parses one row's cells into `cells`; whole-block errors only.
Status DecodeRow(const Schema& schema, size_t row_idx, const uint8_t* isset, const uint8_t* nulls,
                 Slice indirect, Slice* in, Cell* cells) {
  const int n = schema.num_columns();
  for (int i = 0; i < n; i++) {
    const bool is_null = BitSet(nulls, i);
    if (!BitSet(isset, i)) {
      if (is_null) [[unlikely]] {
        return Status::Corruption(RowPrefix(row_idx) + "column '" + schema.column(i).name() +
                                  "' has its NULL bit set but is not set");
      }
      continue;  // cells start absent
    }
    const DataType type = schema.column(i).type();
    if (is_null) {
      cells[i] = Cell::Null(type);
      continue;
    }
    if (IsVariableLength(type)) {
      uint64_t offset, length;
      if (!GetVarint64(in, &offset) || !GetVarint64(in, &length)) [[unlikely]] {
        return Status::Corruption("row block truncated: " + RowPrefix(row_idx) + "column '" +
                                  schema.column(i).name() + "'");
      }
      if (offset > indirect.size() || length > indirect.size() - offset) [[unlikely]] {
        return Status::Corruption(RowPrefix(row_idx) + "column '" + schema.column(i).name() +
                                  "': string at offset " + std::to_string(offset) + " length " +
                                  std::to_string(length) + " is outside the " +
                                  std::to_string(indirect.size()) + "-byte indirect data");
      }
      cells[i] = Cell::VarLen(type, Slice(indirect.data() + offset, length));
    } else {
      const size_t size = GetTypeInfo(type).fixed_size;
      if (in->size() < size) [[unlikely]] {
        return Status::Corruption("row block truncated: " + RowPrefix(row_idx) + "column '" +
                                  schema.column(i).name() + "'");
      }
      if (type == DataType::kBool && !IsValidBoolByte((*in)[0])) [[unlikely]] {
        return Status::Corruption(RowPrefix(row_idx) + "column '" + schema.column(i).name() +
                                  "': BOOL byte " + std::to_string((*in)[0]) + " is not 0 or 1");
      }
      cells[i] = DecodeFixedCell(type, in->data());
      in->remove_prefix(size);
    }
  }
  return Status::OK();
}

Status DecodeRows(const RowOperationsPB& pb, const Schema& schema, RowBlockKind kind,
                  std::vector<Cell>* cells, std::vector<DecodedRowOp>* ops, int* num_errors) {
  Slice in(pb.rows());
  const Slice indirect(pb.indirect_data());
  uint64_t num_columns, num_rows;
  if (!GetVarint64(&in, &num_columns) || !GetVarint64(&in, &num_rows)) {
    return Status::Corruption("row block truncated: incomplete header");
  }
  const size_t n = schema.num_columns();
  if (num_columns != n) {
    return Status::InvalidArgument("row block bitmaps are for " + std::to_string(num_columns) +
                                   " columns, the schema has " + std::to_string(n) +
                                   " (schema mismatch)");
  }
  const size_t bitmap_bytes = (n + 7) / 8;
  const size_t min_row_size = 1 + 2 * bitmap_bytes;
  if (num_rows > in.size() / min_row_size) {
    return Status::Corruption("row block truncated: header announces " + std::to_string(num_rows) +
                              " rows, " + std::to_string(in.size()) + " bytes follow");
  }
  if (num_rows * n > DecodedRowOps::kMaxCells) {
    return Status::InvalidArgument("row block too large: " + std::to_string(num_rows) +
                                   " rows of " + std::to_string(n) + " columns");
  }
  cells->assign(num_rows * n, Cell());
  ops->clear();
  ops->resize(num_rows);
  const uint8_t last_byte_mask = (n % 8) == 0 ? 0 : static_cast<uint8_t>(0xff << (n % 8));
  for (size_t r = 0; r < num_rows; r++) {
    if (in.size() < min_row_size) [[unlikely]] {
      return Status::Corruption("row block truncated: " + RowPrefix(r) + "incomplete bitmaps");
    }
    const uint8_t op = in[0];
    if (op < 1 || op > kMaxRowOpType) [[unlikely]] {
      return Status::Corruption(RowPrefix(r) + "unknown operation type " + std::to_string(op));
    }
    const RowOpType type = static_cast<RowOpType>(op);
    if (IsWriteOp(type) != (kind == RowBlockKind::kWrites)) [[unlikely]] {
      return Status::InvalidArgument(RowPrefix(r) + "operation " + RowOpTypeName(type) +
                                     (kind == RowBlockKind::kWrites
                                          ? " is not allowed in a write"
                                          : " is not allowed among partition rows"));
    }
    const uint8_t* isset = in.data() + 1;
    const uint8_t* nulls = isset + bitmap_bytes;
    if (bitmap_bytes > 0 && ((isset[bitmap_bytes - 1] | nulls[bitmap_bytes - 1]) & last_byte_mask))
        [[unlikely]] {
      return Status::Corruption(RowPrefix(r) + "bitmap bits set past the " + std::to_string(n) +
                                " columns");
    }
    in.remove_prefix(min_row_size);
    Cell* row_cells = cells->data() + r * n;
    RETURN_NOT_OK(DecodeRow(schema, r, isset, nulls, indirect, &in, row_cells));
    DecodedRowOp& dop = (*ops)[r];
    dop.type = type;
    dop.row = RowView(&schema, row_cells);
    dop.error = ValidateRowOperation(type, dop.row);
    if (!dop.error.ok()) (*num_errors)++;
  }
  if (!in.empty()) {
    return Status::Corruption("row block has " + std::to_string(in.size()) +
                              " trailing bytes after its " + std::to_string(num_rows) + " rows");
  }
  return Status::OK();
}

}  // namespace

Status DecodeRowOperations(const RowOperationsPB& pb, const Schema& schema, RowBlockKind kind,
                           DecodedRowOps* out) {
  out->num_row_errors_ = 0;
  Status s = DecodeRows(pb, schema, kind, &out->cells_, &out->ops_, &out->num_row_errors_);
  if (!s.ok()) {
    out->cells_.clear();
    out->ops_.clear();
    out->num_row_errors_ = 0;
  }
  return s;
}

}  // namespace nyala
