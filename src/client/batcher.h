// Batcher: one batch of a session's write operations, from buffering to the last
// response. Flush() looks up each operation's tablet in the meta cache, groups the
// operations per tablet and sends one Write RPC per tablet, all at once (async).
// Each WriteRpc is retried on its own (same request id, so a retried write applies
// once) until the batch's deadline: busy or timed-out servers after a backoff,
// unreachable servers and TABLET_NOT_FOUND after a fresh location lookup. When every
// RPC has finished, failed operations go to the error collector, the others are
// freed, and `done` runs with OK or the first error.
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

#include "client/client.h"
#include "client/meta_cache.h"
#include "common/monotime.h"
#include "common/status.h"

namespace nyala::client::internal {

class ClientData;
class ErrorCollector;
class WriteRpc;

struct InFlightOp {
  std::unique_ptr<WriteOperation> op;
  std::string partition_key;
  size_t size = 0;  // estimated encoded bytes
  TabletPtr tablet;
  Status status;
};

// Estimated bytes `row` takes in a row-operations block.
size_t EstimateOpSize(const RowView& row);

class Batcher : public std::enable_shared_from_this<Batcher> {
 public:
  using DoneCallback = std::function<void(const Status&)>;

  Batcher(ClientData* client, ErrorCollector* errors);
  ~Batcher();

  void Add(InFlightOp op);
  size_t buffer_bytes() const { return buffer_bytes_; }
  int num_ops() const { return static_cast<int>(ops_.size()); }
  bool empty() const { return ops_.empty(); }
  MonoTime first_op_time() const { return first_op_time_; }

  // Sends everything; `done` runs once, on any thread, when all is finished.
  void Flush(MonoTime deadline, DoneCallback done);

  // After `done`: Write RPCs sent (one per tablet), retries not counted.
  int num_write_rpcs() const { return num_rpcs_; }

 private:
  friend class WriteRpc;
  void OnLookupDone(size_t idx, Result<TabletPtr> r);
  void LookupFinished();
  void SendAll();
  void RpcFinished();
  void Finish();

  ClientData* const client_;
  ErrorCollector* const errors_;
  std::vector<InFlightOp> ops_;
  size_t buffer_bytes_ = 0;
  MonoTime first_op_time_;
  MonoTime deadline_;
  DoneCallback done_;
  std::atomic<int> pending_lookups_{0};
  std::atomic<int> pending_rpcs_{0};
  int num_rpcs_ = 0;
  std::vector<std::unique_ptr<WriteRpc>> rpcs_;
  std::shared_ptr<Batcher> self_;  // from Flush() until Finish()
};

}  // namespace nyala::client::internal
