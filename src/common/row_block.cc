#include "common/row_block.h"

#include <glog/logging.h>

namespace nyala {

namespace {

inline void PutU64LE(uint8_t* p, uint64_t v) { memcpy(p, &v, 8); }
inline uint64_t GetU64LE(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

}  // namespace

RowBlockLayout::RowBlockLayout(const Schema& projection) {
  const int n = projection.num_columns();
  int num_nullable = 0;
  null_index_.resize(n);
  types_.resize(n);
  for (int i = 0; i < n; i++) {
    const ColumnSchema& col = projection.column(i);
    null_index_[i] = col.is_nullable() ? num_nullable++ : -1;
    types_[i] = col.type();
  }
  bitmap_bytes_ = (num_nullable + 7) / 8;
  size_t off = bitmap_bytes_;
  offsets_.resize(n);
  for (int i = 0; i < n; i++) {
    offsets_[i] = off;
    off += IsVariableLength(types_[i]) ? kVarLenSlotSize : GetTypeInfo(types_[i]).fixed_size;
  }
  stride_ = off;
}

RowBlockEncoder::RowBlockEncoder(const Schema* projection)
    : projection_(projection), layout_(*projection) {
  identity_.resize(projection->num_columns());
  for (int i = 0; i < projection->num_columns(); i++) identity_[i] = i;
}

void RowBlockEncoder::AppendRow(const Cell* cells) { AppendRow(cells, identity_.data()); }

void RowBlockEncoder::AppendRow(const Cell* cells, const int* source_index) {
  const size_t start = rows_.size();
  rows_.resize(start + layout_.stride());  // zero-filled: NULL slots and the bitmap
  uint8_t* row = reinterpret_cast<uint8_t*>(rows_.data()) + start;
  const int n = layout_.num_columns();
  for (int i = 0; i < n; i++) {
    const Cell& c = cells[source_index[i]];
    DCHECK(c.type() == layout_.type(i)) << projection_->column(i).name();
    if (!c.has_value()) {
      DCHECK(c.is_null() && layout_.null_index(i) >= 0) << projection_->column(i).name();
      const int j = layout_.null_index(i);
      row[j / 8] |= static_cast<uint8_t>(1 << (j % 8));
      continue;
    }
    uint8_t* slot = row + layout_.offset(i);
    if (IsVariableLength(layout_.type(i))) {
      const Slice s = c.slice_value();
      PutU64LE(slot, indirect_.size());
      PutU64LE(slot + 8, s.size());
      indirect_.append(s.cdata(), s.size());
    } else {
      EncodeFixedCell(c, slot);
    }
  }
  num_rows_++;
}

void RowBlockEncoder::Finish(std::string* rows, std::string* indirect) {
  *rows = std::move(rows_);
  *indirect = std::move(indirect_);
  rows_ = std::string();
  indirect_ = std::string();
  num_rows_ = 0;
}

void RowBlockEncoder::Reset() {
  rows_.clear();
  indirect_.clear();
  num_rows_ = 0;
}

Status RowBlock::Parse(const Schema* projection, int64_t num_rows, Slice rows, Slice indirect,
                       RowBlock* out) {
  RowBlockLayout layout(*projection);
  const size_t stride = layout.stride();
  if (num_rows < 0 || (stride == 0 && num_rows != 0 && !rows.empty()) ||
      (stride != 0 && (rows.size() % stride != 0 || rows.size() / stride != uint64_t(num_rows)))) {
    return Status::Corruption("row block: " + std::to_string(rows.size()) + " bytes are not " +
                              std::to_string(num_rows) + " rows of " + std::to_string(stride) +
                              " bytes");
  }
  int num_nullable = 0;
  for (int i = 0; i < layout.num_columns(); i++) num_nullable += layout.null_index(i) >= 0;
  const uint8_t last_mask =
      (num_nullable % 8) == 0 ? 0 : static_cast<uint8_t>(0xff << (num_nullable % 8));
  for (int64_t r = 0; r < num_rows; r++) {
    const uint8_t* row = rows.data() + r * stride;
    if (layout.bitmap_bytes() > 0 && (row[layout.bitmap_bytes() - 1] & last_mask)) {
      return Status::Corruption("row block: row " + std::to_string(r) +
                                " has null bits set past its nullable columns");
    }
    for (int i = 0; i < layout.num_columns(); i++) {
      const int j = layout.null_index(i);
      if (j >= 0 && (row[j / 8] >> (j % 8)) & 1) continue;
      const uint8_t* slot = row + layout.offset(i);
      const DataType type = layout.type(i);
      if (IsVariableLength(type)) {
        const uint64_t off = GetU64LE(slot), len = GetU64LE(slot + 8);
        if (off > indirect.size() || len > indirect.size() - off) {
          return Status::Corruption(
              "row block: row " + std::to_string(r) + " column '" + projection->column(i).name() +
              "': string at offset " + std::to_string(off) + " length " + std::to_string(len) +
              " is outside the " + std::to_string(indirect.size()) + "-byte indirect data");
        }
      } else if (type == DataType::kBool && !IsValidBoolByte(*slot)) {
        return Status::Corruption("row block: row " + std::to_string(r) + " column '" +
                                  projection->column(i).name() + "': bad BOOL byte");
      }
    }
  }
  out->projection_ = projection;
  out->layout_ = std::move(layout);
  out->num_rows_ = num_rows;
  out->rows_ = rows;
  out->indirect_ = indirect;
  return Status::OK();
}

Cell RowBlock::cell(int64_t row, int col) const {
  const uint8_t* p = rows_.data() + row * layout_.stride();
  const DataType type = layout_.type(col);
  const int j = layout_.null_index(col);
  if (j >= 0 && (p[j / 8] >> (j % 8)) & 1) return Cell::Null(type);
  const uint8_t* slot = p + layout_.offset(col);
  if (IsVariableLength(type)) {
    return Cell::VarLen(type, Slice(indirect_.data() + GetU64LE(slot), GetU64LE(slot + 8)));
  }
  return DecodeFixedCell(type, slot);
}

void RowBlock::GetRow(int64_t row, Cell* cells) const {
  for (int i = 0; i < layout_.num_columns(); i++) cells[i] = cell(row, i);
}

}  // namespace nyala
