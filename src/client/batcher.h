// Batcher: one batch of a session's write operations, from buffering to the last
// response.
//
// Add() encodes each operation at once into the row block of its tablet, found from
// the tablets this batch writes to already or, on the first operation for a tablet,
// from the meta cache without a master call; the operation object is freed there and
// then. Only when the meta cache cannot answer is an operation kept as it is; from
// then on every later operation of the batch is kept too (so each tablet still gets
// its operations in Apply order), and Flush() looks their tablets up (master calls
// merged per range) and encodes them after the others.
//
// Flush() sends one Write RPC per tablet, all at once (async). Each WriteRpc is
// retried on its own (same request id, so a retried write applies once) until the
// batch's deadline: busy or timed-out servers after a backoff, unreachable servers
// and TABLET_NOT_FOUND after a fresh location lookup. When every RPC has finished,
// failed operations go to the error collector (rebuilt from the row block, so the
// WriteError holds an operation equal to the one applied, tag included: each buffer
// keeps the tags of its rows beside the block) and `done` runs with OK or the first
// error. The batch's outcome counts (succeeded, failed, timed out) are set by then.
//
// Thread-safety: Add() and the accessors before Flush(), by the owning session under
// its lock. After Flush() the batcher runs on reactor and timer threads and keeps
// itself alive (shared_ptr) until `done` has run. `client` and `errors` must
// outlive that.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/meta_cache.h"
#include "common/row_operations.h"
#include "common/status.h"
#include "nyala/client.h"
#include "nyala/monotime.h"

namespace nyala::client::internal {

class ClientData;
class ErrorCollector;
class WriteRpc;

// An operation whose tablet is not known yet.
struct InFlightOp {
  std::unique_ptr<WriteOperation> op;
  std::string partition_key;
  TabletPtr tablet;
  Status status;
};

// The operations of one batch for one tablet, encoded in Apply order.
struct TabletBuffer {
  TabletBuffer(TabletPtr t, std::shared_ptr<const Table> tb)
      : tablet(std::move(t)), table(std::move(tb)), encoder(&table->schema()) {}

  // Records the tag of the row just encoded.
  void AddTag(int64_t tag) {
    if (tag == 0 && tags.empty()) return;  // untagged loads keep no tags at all
    tags.resize(size_t(encoder.num_rows()) - 1, 0);
    tags.push_back(tag);
  }
  // The tag of encoded row `row`.
  int64_t TagOf(int row) const { return size_t(row) < tags.size() ? tags[size_t(row)] : 0; }

  TabletPtr tablet;
  std::shared_ptr<const Table> table;  // keeps the encoder's schema alive
  RowOperationsEncoder encoder;
  // The tag of each encoded row, by row index; rows past the end have tag 0.
  std::vector<int64_t> tags;
};

// Estimated bytes `row` takes in a row-operations block.
size_t EstimateOpSize(const RowView& row);

class Batcher : public std::enable_shared_from_this<Batcher> {
 public:
  using DoneCallback = std::function<void(const Status&)>;

  Batcher(ClientData* client, ErrorCollector* errors);
  ~Batcher();

  // Takes `op`, whose row was validated (ValidateRowOperation) and whose partition
  // key is `partition_key`. An error (the row does not encode) leaves the batch as
  // it was.
  Status Add(std::unique_ptr<WriteOperation> op, Slice partition_key);
  // Bytes buffered: encoded rows, plus estimates for operations not encoded yet.
  size_t buffer_bytes() const { return buffer_bytes_; }
  int num_ops() const { return num_ops_; }
  bool empty() const { return num_ops_ == 0; }
  MonoTime first_op_time() const { return first_op_time_; }

  // Sends everything; `done` runs once, on any thread, when all is finished.
  void Flush(MonoTime deadline, DoneCallback done);

  // After `done`: Write RPCs sent (one per tablet), retries not counted.
  int num_write_rpcs() const { return num_rpcs_; }
  // After `done`: operations that failed (TimedOut ones included, whether or not
  // their errors were kept), and of those the TimedOut ones. The other num_ops()
  // succeeded.
  int num_failed_ops() const { return num_failed_; }
  int num_timed_out_ops() const { return num_timed_out_; }

 private:
  friend class WriteRpc;
  // The buffer of the tablet holding `partition_key` of `table`, when this batch
  // writes to it already or the meta cache knows it; nullptr otherwise.
  TabletBuffer* FindBuffer(const Table& table, Slice partition_key);
  // The buffer of `tablet` of `table`, made when there is none.
  TabletBuffer* BufferFor(const Table& table, TabletPtr tablet);
  struct TableIndex {
    std::string table_id;
    std::vector<TabletBuffer*> by_start;  // sorted by partition-key start
  };
  TableIndex* IndexOf(const std::string& table_id);
  void OnLookupDone(size_t idx, Result<TabletPtr> r);
  void LookupFinished();
  void SendAll();
  void RpcFinished();
  void Finish();

  ClientData* const client_;
  ErrorCollector* const errors_;
  // In first-use order; indexed per table in `indexes_` (one entry per table, most
  // batches write to one).
  std::vector<std::unique_ptr<TabletBuffer>> buffers_;
  std::vector<TableIndex> indexes_;
  TabletBuffer* last_ = nullptr;  // the buffer the previous operation went to
  // Operations after the first one the meta cache could not place, in Apply order.
  std::vector<InFlightOp> unplaced_;
  size_t buffer_bytes_ = 0;
  int num_ops_ = 0;
  MonoTime first_op_time_;
  MonoTime deadline_;
  DoneCallback done_;
  std::atomic<int> pending_lookups_{0};
  std::atomic<int> pending_rpcs_{0};
  int num_rpcs_ = 0;
  int num_failed_ = 0;
  int num_timed_out_ = 0;
  std::vector<std::unique_ptr<WriteRpc>> rpcs_;
  std::shared_ptr<Batcher> self_;  // from Flush() until Finish()
};

}  // namespace nyala::client::internal
