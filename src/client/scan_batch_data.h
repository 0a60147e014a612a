// ScanBatchData: a validated row block (common/row_block.h) of a Get or Scan
// response, with the projection it is in and the owner of its bytes (the RPC
// controller holding the sidecars), so a ScanBatch outlives the call without copying.
//
// Immutable after Make(); shared by a ScanBatch and the RowPtrs it hands out.
#pragma once

#include <memory>

#include "common/row_block.h"
#include "nyala/client.h"
#include "nyala/schema.h"
#include "nyala/slice.h"

namespace nyala::rpc {
class RpcController;
}  // namespace nyala::rpc
namespace nyala::tserver {
class RowwiseRowBlockPB;
}  // namespace nyala::tserver

namespace nyala::client::internal {

class ScanBatchData {
 public:
  // Validates the block (RowBlock::Parse) and fills `out`. `owner` keeps `rows` and
  // `indirect` alive.
  static Status Make(std::shared_ptr<const Schema> projection, int64_t num_rows, Slice rows,
                     Slice indirect, std::shared_ptr<void> owner, ScanBatch* out);
  // Makes `to` a second handle on the rows of `from` (no copy).
  static void Share(const ScanBatch& from, ScanBatch* to) { to->data_ = from.data_; }
  // An empty batch of `projection`.
  static void MakeEmpty(std::shared_ptr<const Schema> projection, ScanBatch* out);

  const Schema& schema() const { return *schema_; }
  int64_t num_rows() const { return block_.num_rows(); }
  Cell CellAt(int64_t row, int col) const { return block_.cell(row, col); }
  // Bytes of the row block as received (rows and indirect data).
  size_t data_bytes() const { return data_bytes_; }

 private:
  ScanBatchData() = default;

  std::shared_ptr<const Schema> schema_;
  std::shared_ptr<void> owner_;
  RowBlock block_;
  size_t data_bytes_ = 0;
};

// Decodes the row block `pb` of a finished call: its sidecars in `rpc`, which
// `owner` keeps alive for as long as the batch lives. With `max_rows` >= 0 only the
// first max_rows rows are kept.
Status DecodeRowBlock(const rpc::RpcController& rpc, const tserver::RowwiseRowBlockPB& pb,
                      std::shared_ptr<const Schema> projection, std::shared_ptr<void> owner,
                      ScanBatch* out, int64_t max_rows = -1);

}  // namespace nyala::client::internal
