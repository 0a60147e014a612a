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

namespace {

// Decodes the value of `col` at the front of `in` (or its NULL) into `cell`.
[[gnu::always_inline]] inline Status DecodeValue(const ColumnSchema& col, bool is_null, Slice* in,
                                                 Cell* cell) {
  const DataType type = col.type();
  if (is_null) {
    if (!col.is_nullable()) [[unlikely]] {
      return Status::Corruption("row value: NULL in NOT NULL column '" + col.name() + "'");
    }
    *cell = Cell::Null(type);
    return Status::OK();
  }
  if (IsVariableLength(type)) {
    Slice s;
    if (!GetLengthPrefixed(in, &s)) [[unlikely]] {
      return Status::Corruption("row value: truncated column '" + col.name() + "'");
    }
    *cell = Cell::VarLen(type, s);
    return Status::OK();
  }
  const size_t size = GetTypeInfo(type).fixed_size;
  if (in->size() < size) [[unlikely]] {
    return Status::Corruption("row value: truncated column '" + col.name() + "'");
  }
  if (type == DataType::kBool && !IsValidBoolByte((*in)[0])) [[unlikely]] {
    return Status::Corruption("row value: bad BOOL byte in column '" + col.name() + "'");
  }
  *cell = DecodeFixedCell(type, in->data());
  in->remove_prefix(size);
  return Status::OK();
}

// Reads the header of a row value written under `schema`'s version (`exact`) or
// an older one: its version, its number of columns (at most `schema`'s) and its null
// bitmap, leaving `in` at the first value.
[[gnu::always_inline]] inline Status DecodeHeader(Slice* in, const Schema& schema, bool exact,
                                                  uint32_t* version, uint64_t* n,
                    const uint8_t** nulls) {
  if (!GetVarint32(in, version) || !GetVarint64(in, n)) [[unlikely]] {
    return Status::Corruption("row value: truncated header");
  }
  if (exact && *version != schema.version()) [[unlikely]] {
    return Status::InvalidArgument("row value of schema version " + std::to_string(*version) +
                                   " decoded as version " + std::to_string(schema.version()));
  }
  if (*version > schema.version()) [[unlikely]] {
    return Status::IllegalState("row value written with schema version " +
                                std::to_string(*version) + ", newer than the reader's " +
                                std::to_string(schema.version()));
  }
  const int max_columns = schema.num_value_columns();
  if (*n > static_cast<uint64_t>(max_columns)) [[unlikely]] {
    return Status::Corruption(
        "row value has " + std::to_string(*n) + " non-key columns, schema version " +
        std::to_string(schema.version()) + " has " + std::to_string(max_columns));
  }
  const size_t bitmap_bytes = (*n + 7) / 8;
  if (in->size() < bitmap_bytes) [[unlikely]] {
    return Status::Corruption("row value: truncated null bitmap");
  }
  *nulls = in->data();
  if ((*n % 8) != 0 && ((*nulls)[bitmap_bytes - 1] >> (*n % 8)) != 0) [[unlikely]] {
    return Status::Corruption("row value: null bitmap has bits set past its columns");
  }
  in->remove_prefix(bitmap_bytes);
  return Status::OK();
}

}  // namespace

Status DecodeRowValue(Slice value, Row* row) {
  const Schema& schema = row->schema();
  Slice in = value;
  uint32_t version;
  uint64_t n;
  const uint8_t* nulls;
  RETURN_NOT_OK(DecodeHeader(&in, schema, /*exact=*/false, &version, &n, &nulls));
  const int nk = schema.num_key_columns();
  Cell* cells = row->mutable_cells();
  for (size_t i = 0; i < n; i++) {
    const ColumnSchema& col = schema.column(nk + static_cast<int>(i));
    RETURN_NOT_OK(DecodeValue(col, (nulls[i / 8] & (1 << (i % 8))) != 0, &in, &cells[nk + i]));
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

Result<RowValueTranslation> RowValueTranslation::Create(std::shared_ptr<const Schema> writer,
                                                        const Schema& reader) {
  if (writer->version() >= reader.version()) {
    return Status::InvalidArgument("schema version " + std::to_string(writer->version()) +
                                   " is not older than " + std::to_string(reader.version()));
  }
  RowValueTranslation t;
  const int wk = writer->num_key_columns();
  std::vector<bool> covered(reader.num_columns());
  for (int i = wk; i < writer->num_columns(); i++) {
    const ColumnSchema& wc = writer->column(i);
    int r = reader.FindColumnById(wc.id());
    if (r >= 0) {
      const ColumnSchema& rc = reader.column(r);
      if (reader.is_key_column(r) || rc.type() != wc.type()) {
        return Status::InvalidArgument("column id " + std::to_string(wc.id()) + " is " +
                                       wc.ToString() + " in schema version " +
                                       std::to_string(writer->version()) + " but " +
                                       rc.ToString() + " in version " +
                                       std::to_string(reader.version()));
      }
      covered[r] = true;
    }
    t.reader_index_.push_back(r);
  }
  for (int r = reader.num_key_columns(); r < reader.num_columns(); r++) {
    if (covered[r]) continue;
    const ColumnSchema& rc = reader.column(r);
    if (rc.ReadMissingValue().is_absent()) {
      return Status::InvalidArgument("column " + rc.ToString() + " of schema version " +
                                     std::to_string(reader.version()) +
                                     " has no value for rows of version " +
                                     std::to_string(writer->version()) +
                                     " (no read default, not nullable)");
    }
    t.missing_.push_back(r);
  }
  t.writer_ = std::move(writer);
  return t;
}

Status RowValueTranslation::Decode(Slice value, Row* row) const {
  const Schema& w = *writer_;
  Slice in = value;
  uint32_t version;
  uint64_t n;
  const uint8_t* nulls;
  RETURN_NOT_OK(DecodeHeader(&in, w, /*exact=*/true, &version, &n, &nulls));
  Cell* cells = row->mutable_cells();
  const int wk = w.num_key_columns();
  Cell scratch;
  for (size_t i = 0; i < n; i++) {
    const int r = reader_index_[i];
    RETURN_NOT_OK(DecodeValue(w.column(wk + static_cast<int>(i)), (nulls[i / 8] & (1 << (i % 8))) != 0,
                              &in, r >= 0 ? &cells[r] : &scratch));
  }
  // Columns the writer added at the end after this value was written (the older
  // form of evolution), then the reader's columns the writer did not have.
  for (size_t i = n; i < reader_index_.size(); i++) {
    const int r = reader_index_[i];
    if (r < 0) continue;
    cells[r] = row->schema().column(r).ReadMissingValue();
    if (cells[r].is_absent()) cells[r] = w.column(wk + static_cast<int>(i)).MissingValue();
    if (cells[r].is_absent()) [[unlikely]] {
      return Status::IllegalState("column '" + row->schema().column(r).name() +
                                  "' is missing from an older row value and has no default");
    }
  }
  for (int r : missing_) cells[r] = row->schema().column(r).ReadMissingValue();
  if (!in.empty()) [[unlikely]] {
    return Status::Corruption("row value: " + std::to_string(in.size()) + " trailing bytes");
  }
  return Status::OK();
}

}  // namespace nyala
