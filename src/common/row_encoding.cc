#include "common/row_encoding.h"

#include <glog/logging.h>

#include "common/coding.h"
#include "common/key_encoding.h"

namespace nyala {

Status EncodeRowKey(const RowView& row, std::string* dst) {
  const Schema& schema = row.schema();
  for (int i = 0; i < schema.num_key_columns(); i++) {
    if (!row.cell(i).has_value()) [[unlikely]] {
      return Status::InvalidArgument("key column '" + schema.column(i).name() + "' is " +
                                     (row.IsNull(i) ? "NULL" : "not set"));
    }
  }
  EncodeKey(schema, row.cells(), dst);
  return Status::OK();
}

Status DecodeRowKey(Slice key, Row* row) {
  return DecodeKey(row->schema(), key, row->mutable_cells(), row->arena());
}

Status EncodeRowValue(const RowView& row, std::string* dst) {
  const Schema& schema = row.schema();
  const int nk = schema.num_key_columns();
  const int n = schema.num_value_columns();
  PutVarint64(dst, schema.version());
  PutVarint64(dst, n);
  const size_t bitmap_pos = dst->size();
  dst->append((n + 7) / 8, '\0');
  for (int i = 0; i < n; i++) {
    const ColumnSchema& col = schema.column(nk + i);
    Cell c = row.cell(nk + i);
    if (c.is_absent()) {
      c = col.MissingValue();
      if (c.is_absent()) [[unlikely]] {
        return Status::InvalidArgument("column '" + col.name() +
                                       "' is not set, not nullable and has no default");
      }
    }
    DCHECK(c.type() == col.type()) << col.name();
    if (c.is_null()) {
      if (!col.is_nullable()) [[unlikely]] {
        return Status::InvalidArgument("column '" + col.name() + "' is not nullable");
      }
      (*dst)[bitmap_pos + i / 8] |= static_cast<char>(1 << (i % 8));
      continue;
    }
    if (IsVariableLength(col.type())) {
      PutLengthPrefixed(dst, c.slice_value());
    } else {
      uint8_t buf[8];
      uint8_t* end = EncodeFixedCell(c, buf);
      dst->append(reinterpret_cast<const char*>(buf), end - buf);
    }
  }
  return Status::OK();
}

Result<uint32_t> RowValueSchemaVersion(Slice value) {
  uint32_t version;
  if (!GetVarint32(&value, &version)) return Status::Corruption("row value: bad schema version");
  return version;
}

Status DecodeRowValue(Slice value, Row* row) {
  const Schema& schema = row->schema();
  Slice in = value;
  uint32_t version;
  uint64_t n;
  if (!GetVarint32(&in, &version) || !GetVarint64(&in, &n)) [[unlikely]] {
    return Status::Corruption("row value: truncated header");
  }
  if (version > schema.version()) [[unlikely]] {
    return Status::IllegalState("row value written with schema version " + std::to_string(version) +
                                ", newer than the reader's " + std::to_string(schema.version()));
  }
  const int nk = schema.num_key_columns();
  if (n > static_cast<uint64_t>(schema.num_value_columns())) [[unlikely]] {
    return Status::Corruption(
        "row value has " + std::to_string(n) + " non-key columns, schema version " +
        std::to_string(schema.version()) + " has " + std::to_string(schema.num_value_columns()));
  }
  const size_t bitmap_bytes = (n + 7) / 8;
  if (in.size() < bitmap_bytes) [[unlikely]] {
    return Status::Corruption("row value: truncated null bitmap");
  }
  const uint8_t* nulls = in.data();
  if ((n % 8) != 0 && (nulls[bitmap_bytes - 1] >> (n % 8)) != 0) [[unlikely]] {
    return Status::Corruption("row value: null bitmap has bits set past its columns");
  }
  in.remove_prefix(bitmap_bytes);
  Cell* cells = row->mutable_cells();
  for (size_t i = 0; i < n; i++) {
    const ColumnSchema& col = schema.column(nk + static_cast<int>(i));
    const DataType type = col.type();
    if (nulls[i / 8] & (1 << (i % 8))) {
      if (!col.is_nullable()) [[unlikely]] {
        return Status::Corruption("row value: NULL in NOT NULL column '" + col.name() + "'");
      }
      cells[nk + i] = Cell::Null(type);
      continue;
    }
    if (IsVariableLength(type)) {
      Slice s;
      if (!GetLengthPrefixed(&in, &s)) [[unlikely]] {
        return Status::Corruption("row value: truncated column '" + col.name() + "'");
      }
      cells[nk + i] = Cell::VarLen(type, s);
    } else {
      const size_t size = GetTypeInfo(type).fixed_size;
      if (in.size() < size) [[unlikely]] {
        return Status::Corruption("row value: truncated column '" + col.name() + "'");
      }
      if (type == DataType::kBool && !IsValidBoolByte(in[0])) [[unlikely]] {
        return Status::Corruption("row value: bad BOOL byte in column '" + col.name() + "'");
      }
      cells[nk + i] = DecodeFixedCell(type, in.data());
      in.remove_prefix(size);
    }
  }
  for (int i = nk + static_cast<int>(n); i < schema.num_columns(); i++) {
    // Added after this value was written.
    const ColumnSchema& col = schema.column(i);
    cells[i] = col.MissingValue();
    if (cells[i].is_absent()) [[unlikely]] {
      return Status::IllegalState("column '" + col.name() +
                                  "' is missing from an older row value and has no default");
    }
  }
  if (!in.empty()) [[unlikely]] {
    return Status::Corruption("row value: " + std::to_string(in.size()) + " trailing bytes");
  }
  return Status::OK();
}

}  // namespace nyala
