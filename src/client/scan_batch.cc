// ScanBatch, its row accessors, and the row-wise block decoder.
#include "client/scan_batch_data.h"

#include "common/result.h"
#include "rpc/rpc_controller.h"
#include "tserver/tserver.pb.h"

namespace nyala::client {

namespace internal {

Status ScanBatchData::Make(std::shared_ptr<const Schema> projection, int64_t num_rows, Slice rows,
                           Slice indirect, std::shared_ptr<void> owner, ScanBatch* out) {
  std::shared_ptr<ScanBatchData> d(new ScanBatchData());
  d->schema_ = std::move(projection);
  d->owner_ = std::move(owner);
  d->data_bytes_ = rows.size() + indirect.size();
  RETURN_NOT_OK(RowBlock::Parse(d->schema_.get(), num_rows, rows, indirect, &d->block_));
  out->data_ = std::move(d);
  return Status::OK();
}

void ScanBatchData::MakeEmpty(std::shared_ptr<const Schema> projection, ScanBatch* out) {
  std::shared_ptr<ScanBatchData> d(new ScanBatchData());
  d->schema_ = std::move(projection);
  CHECK_OK(RowBlock::Parse(d->schema_.get(), 0, Slice(), Slice(), &d->block_));
  out->data_ = std::move(d);
}

Status DecodeRowBlock(const rpc::RpcController& rpc, const tserver::RowwiseRowBlockPB& pb,
                      std::shared_ptr<const Schema> projection, std::shared_ptr<void> owner,
                      ScanBatch* out, int64_t max_rows) {
  if (pb.num_rows() == 0 || max_rows == 0) {
    ScanBatchData::MakeEmpty(std::move(projection), out);
    return Status::OK();
  }
  Slice rows, indirect;
  RETURN_NOT_OK_PREPEND(rpc.GetInboundSidecar(pb.rows_sidecar(), &rows), "rows sidecar");
  if (pb.indirect_data_sidecar() != pb.rows_sidecar() &&
      pb.indirect_data_sidecar() < rpc.num_inbound_sidecars()) {
    RETURN_NOT_OK_PREPEND(rpc.GetInboundSidecar(pb.indirect_data_sidecar(), &indirect),
                          "indirect data sidecar");
  }
  int64_t n = pb.num_rows();
  if (max_rows >= 0 && max_rows < n) {
    const size_t stride = RowBlockLayout(*projection).stride();
    if (rows.size() != size_t(n) * stride) {
      return Status::Corruption("row block of " + std::to_string(rows.size()) + " bytes for " +
                                std::to_string(n) + " rows");
    }
    n = max_rows;
    rows = Slice(rows.data(), size_t(n) * stride);
  }
  return ScanBatchData::Make(std::move(projection), n, rows, indirect, std::move(owner), out);
}

}  // namespace internal

// ---- ScanBatch ----------------------------------------------------------------------

ScanBatch::ScanBatch() = default;
ScanBatch::~ScanBatch() = default;
ScanBatch::ScanBatch(ScanBatch&&) noexcept = default;
ScanBatch& ScanBatch::operator=(ScanBatch&&) noexcept = default;

int ScanBatch::num_rows() const { return data_ ? int(data_->num_rows()) : 0; }
ScanBatch::RowPtr ScanBatch::row(int i) const { return RowPtr(data_.get(), i); }
const Schema& ScanBatch::projection_schema() const { return data_->schema(); }
size_t ScanBatch::data_size_bytes() const { return data_ ? data_->data_bytes() : 0; }

bool ScanBatch::RowPtr::IsNull(int col) const { return b_->CellAt(row_, col).is_null(); }
Cell ScanBatch::RowPtr::cell(int col) const { return b_->CellAt(row_, col); }

Result<Cell> ScanBatch::RowPtr::Typed(int col, DataType t1, DataType t2) const {
  const Schema& s = b_->schema();
  if (col < 0 || col >= s.num_columns()) {
    return Status::InvalidArgument("column index " + std::to_string(col) + " out of range");
  }
  const DataType t = s.column(col).type();
  if (t != t1 && t != t2) {
    return Status::InvalidArgument("column '" + s.column(col).name() + "' is " + DataTypeName(t) +
                                   ", not " + DataTypeName(t1));
  }
  Cell c = b_->CellAt(row_, col);
  if (c.is_null()) return Status::NotFound("column '" + s.column(col).name() + "' is NULL");
  return c;
}

#define NYALA_ROW_GETTER(Name, T, t1, t2, expr)           \
  Result<T> ScanBatch::RowPtr::Get##Name(int col) const { \
    ASSIGN_OR_RETURN(Cell c, Typed(col, t1, t2));         \
    return static_cast<T>(expr);                          \
  }
NYALA_ROW_GETTER(Bool, bool, DataType::kBool, DataType::kBool, c.bool_value())
NYALA_ROW_GETTER(Int8, int8_t, DataType::kInt8, DataType::kInt8, c.int_value())
NYALA_ROW_GETTER(Int16, int16_t, DataType::kInt16, DataType::kInt16, c.int_value())
NYALA_ROW_GETTER(Int32, int32_t, DataType::kInt32, DataType::kInt32, c.int_value())
NYALA_ROW_GETTER(Int64, int64_t, DataType::kInt64, DataType::kInt64, c.int_value())
NYALA_ROW_GETTER(UnixtimeMicros, int64_t, DataType::kUnixtimeMicros, DataType::kUnixtimeMicros,
                 c.int_value())
NYALA_ROW_GETTER(Float, float, DataType::kFloat, DataType::kFloat, c.float_value())
NYALA_ROW_GETTER(Double, double, DataType::kDouble, DataType::kDouble, c.double_value())
NYALA_ROW_GETTER(String, Slice, DataType::kString, DataType::kBinary, c.slice_value())
#undef NYALA_ROW_GETTER

Result<int64_t> ScanBatch::RowPtr::GetInt64(std::string_view col) const {
  ASSIGN_OR_RETURN(int idx, b_->schema().ColumnIndex(col));
  return GetInt64(idx);
}
Result<int32_t> ScanBatch::RowPtr::GetInt32(std::string_view col) const {
  ASSIGN_OR_RETURN(int idx, b_->schema().ColumnIndex(col));
  return GetInt32(idx);
}
Result<Slice> ScanBatch::RowPtr::GetString(std::string_view col) const {
  ASSIGN_OR_RETURN(int idx, b_->schema().ColumnIndex(col));
  return GetString(idx);
}

std::string ScanBatch::RowPtr::ToString() const {
  std::vector<Cell> cells;
  for (int i = 0; i < b_->schema().num_columns(); i++) cells.push_back(b_->CellAt(row_, i));
  return RowView(&b_->schema(), cells.data()).ToString();
}

// ---- GetResult ----------------------------------------------------------------------

size_t GetResult::num_found() const {
  size_t n = 0;
  for (const Location& l : locations_) n += l.batch >= 0;
  return n;
}

std::optional<ScanBatch::RowPtr> GetResult::row(size_t key_index) const {
  const Location& l = locations_[key_index];
  if (l.batch < 0) return std::nullopt;
  return batches_[l.batch].row(l.row);
}

}  // namespace nyala::client
