#include "client/batcher.h"

#include <unordered_map>

#include "client/client-internal.h"
#include "client/error_collector.h"
#include "client/write_rpc.h"

namespace nyala::client::internal {

size_t EstimateOpSize(const RowView& row) {
  const Schema& s = row.schema();
  size_t size = 1 + 2 * ((s.num_columns() + 7) / 8);
  for (int i = 0; i < s.num_columns(); i++) {
    const Cell& c = row.cell(i);
    if (!c.has_value()) continue;
    size += IsVariableLength(c.type()) ? c.slice_value().size() + 4
                                       : size_t(GetTypeInfo(c.type()).fixed_size);
  }
  return size;
}

Batcher::Batcher(ClientData* client, ErrorCollector* errors) : client_(client), errors_(errors) {}
Batcher::~Batcher() = default;

void Batcher::Add(InFlightOp op) {
  if (ops_.empty()) first_op_time_ = MonoTime::Now();
  buffer_bytes_ += op.size;
  ops_.push_back(std::move(op));
}

void Batcher::Flush(MonoTime deadline, DoneCallback done) {
  deadline_ = deadline;
  done_ = std::move(done);
  self_ = shared_from_this();  // released by Finish()
  if (ops_.empty()) return Finish();
  // Cache hits are answered here; misses go to the master, merged per range.
  // The extra count keeps LookupFinished from firing before the loop ends.
  pending_lookups_.store(1);
  MetaCache* cache = client_->meta_cache();
  TabletPtr last;
  std::vector<size_t> misses;
  for (size_t i = 0; i < ops_.size(); i++) {
    InFlightOp& op = ops_[i];
    if (last && last->partition.ContainsPartitionKey(op.partition_key)) {
      op.tablet = last;
      continue;
    }
    const std::string& table_id = op.op->table().id();
    op.tablet = cache->LookupFast(table_id, op.partition_key);
    if (op.tablet) {
      last = op.tablet;
    } else {
      misses.push_back(i);
    }
  }
  pending_lookups_.fetch_add(static_cast<int>(misses.size()));
  for (size_t i : misses) {
    cache->LookupTablet(ops_[i].op->table().id(), ops_[i].partition_key, deadline_,
                        LookupMode::kExact,
                        [this, i](Result<TabletPtr> r) { OnLookupDone(i, std::move(r)); });
  }
  LookupFinished();
}

void Batcher::OnLookupDone(size_t idx, Result<TabletPtr> r) {
  InFlightOp& op = ops_[idx];
  if (r.ok()) {
    op.tablet = *r;
  } else if (r.status().IsNotFound()) {
    op.status =
        Status::NotFound("no tablet covers the row's partition key (no range partition for it)");
  } else {
    op.status = r.status().CloneAndPrepend("looking up the row's tablet");
  }
  LookupFinished();
}

void Batcher::LookupFinished() {
  if (pending_lookups_.fetch_sub(1) == 1) SendAll();
}

void Batcher::SendAll() {
  std::unordered_map<std::string, std::vector<InFlightOp*>> per_tablet;
  std::unordered_map<std::string, TabletPtr> tablets;
  for (InFlightOp& op : ops_) {
    if (!op.status.ok() || !op.tablet) continue;
    per_tablet[op.tablet->tablet_id].push_back(&op);
    tablets.emplace(op.tablet->tablet_id, op.tablet);
  }
  for (auto& [id, ops] : per_tablet) {
    const Table& table = ops.front()->op->table();
    auto rpc = std::make_unique<WriteRpc>(this, tablets[id], std::move(ops));
    if (rpc->Encode(table)) rpcs_.push_back(std::move(rpc));
  }
  num_rpcs_ = static_cast<int>(rpcs_.size());
  if (rpcs_.empty()) return Finish();
  pending_rpcs_.store(num_rpcs_);
  // Copy the pointers first: the last response may finish the batcher.
  std::vector<WriteRpc*> to_send;
  for (auto& r : rpcs_) to_send.push_back(r.get());
  for (WriteRpc* r : to_send) r->Send();
}

void Batcher::RpcFinished() {
  if (pending_rpcs_.fetch_sub(1) == 1) Finish();
}

void Batcher::Finish() {
  Status first_error;
  int failed = 0;
  for (InFlightOp& op : ops_) {
    if (op.status.ok()) continue;
    if (first_error.ok()) first_error = op.status;
    failed++;
    errors_->Add(std::move(op.op), std::move(op.status));
  }
  // Free the operations (they hold their tables) before anyone is told.
  ops_.clear();
  if (failed > 1) {
    first_error = Status::IOError(std::to_string(failed) + " operations failed",
                                  "first: " + first_error.ToString());
  }
  DoneCallback done = std::move(done_);
  std::shared_ptr<Batcher> self = std::move(self_);
  done(first_error);
  // `self` may be the last reference: the batcher goes away on return.
}

}  // namespace nyala::client::internal
