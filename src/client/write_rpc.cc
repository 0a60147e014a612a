#include "client/write_rpc.h"

#include <glog/logging.h>

#include "client/batcher.h"
#include "client/client-internal.h"
#include "client/tablet_rpc.h"
#include "common/row_operations.h"
#include "common/wire_protocol.h"
#include "rpc/retry.h"
#include "tserver/tserver.proxy.h"

namespace nyala::client::internal {

WriteRpc::WriteRpc(Batcher* batcher, TabletBuffer* buffer)
    : batcher_(batcher), buffer_(buffer), tablet_(buffer->tablet) {
  const Table& table = *buffer->table;
  table_id_ = table.id();
  num_rows_ = buffer->encoder.num_rows();
  req_.set_tablet_id(tablet_->tablet_id);
  table.schema().ToPB(req_.mutable_schema());
  buffer->encoder.Finish(req_.mutable_row_operations());
  seq_no_ = batcher_->client_->request_ids()->NewSeqNo();
}

WriteRpc::~WriteRpc() = default;

const Table& WriteRpc::table() const { return *buffer_->table; }

void WriteRpc::Send() {
  ClientData* client = batcher_->client_;
  const MonoDelta left = batcher_->deadline_ - MonoTime::Now();
  if (left <= MonoDelta()) {
    FailAll(Status::TimedOut("write to tablet " + tablet_->tablet_id +
                             " timed out before it could be sent"));
    return;
  }
  server_ = tablet_->leader();
  Result<std::shared_ptr<tserver::TabletServerServiceProxy>> proxy =
      server_ ? server_->GetProxy(client->messenger())
             : Result<std::shared_ptr<tserver::TabletServerServiceProxy>>(
                   Status::NotFound("tablet " + tablet_->tablet_id + " has no live replica"));
  if (!proxy.ok()) {
    client->meta_cache()->InvalidateTablet(table_id_, tablet_->tablet_id);
    return Retry(proxy.status(), true);
  }

  rpc_.Reset();
  resp_.Clear();
  rpc_.set_timeout(AttemptTimeout(*tablet_, client->rpc_timeout(), batcher_->deadline_));
  rpc::RequestIdPB id;
  id.set_client_id(client->request_ids()->client_id());
  id.set_seq_no(seq_no_);
  id.set_first_incomplete_seq_no(client->request_ids()->first_incomplete());
  id.set_attempt_no(attempt_);
  rpc_.set_request_id(std::move(id));
  (*proxy)->WriteAsync(req_, &resp_, &rpc_, [this] { OnResponse(); });
}

void WriteRpc::OnResponse() {
  TabletRpcVerdict v = ClassifyReplicaRpc(*tablet_, server_.get(), rpc_,
                                          resp_.has_error() ? &resp_.error() : nullptr);
  switch (v.action) {
    case TabletRpcAction::kSuccess:
      for (const auto& e : resp_.per_row_errors()) {
        if (e.row_index() < 0 || e.row_index() >= num_rows_) {
          LOG(WARNING) << "tablet " << tablet_->tablet_id << " reported an error for row "
                       << e.row_index() << " of " << num_rows_;
          continue;
        }
        row_errors_.emplace_back(e.row_index(), StatusFromPB(e.error()));
      }
      return Done();
    case TabletRpcAction::kFail:
      return FailAll(v.status.CloneAndPrepend("write to tablet " + tablet_->tablet_id));
    case TabletRpcAction::kRetry:
      if (resp_.has_error()) last_replica_answer_ = v.status;
      return Retry(v.status, false,
                   v.next_replica ? LeaderSearchMaxBackoff() : MonoDelta::FromSeconds(2));
    case TabletRpcAction::kRelookup:
      batcher_->client_->meta_cache()->InvalidateTablet(table_id_, tablet_->tablet_id);
      return Retry(v.status, true);
  }
}

void WriteRpc::Retry(const Status& why, bool relookup, MonoDelta max_backoff) {
  attempt_++;
  MonoDelta backoff = rpc::ComputeBackoff(attempt_, MonoDelta::FromMilliseconds(10), max_backoff);
  if (MonoTime::Now() + backoff >= batcher_->deadline_) {
    // The server may have applied the write: TimedOut says the outcome is unknown.
    // The last answer of a replica says more than a dead server's refusal.
    std::string detail = why.ToString();
    if (!last_replica_answer_.ok() && last_replica_answer_.ToString() != detail) {
      detail += "; the last replica to answer said: " + last_replica_answer_.ToString();
    }
    FailAll(Status::TimedOut("write to tablet " + tablet_->tablet_id + " not acknowledged after " +
                                 std::to_string(attempt_) + " attempts before the deadline",
                             detail));
    return;
  }
  VLOG(1) << "retrying write to tablet " << tablet_->tablet_id << ": " << why.ToString();
  batcher_->client_->timers()->Schedule(backoff, [this, relookup] {
    if (relookup) {
      Relookup();
    } else {
      Send();
    }
  });
}

void WriteRpc::Relookup() {
  ClientData* client = batcher_->client_;
  client->meta_cache()->LookupTablet(
      table_id_, tablet_->partition.partition_key_start, batcher_->deadline_, LookupMode::kExact,
      [this](Result<TabletPtr> r) {
        if (!r.ok()) return Retry(r.status(), true);
        if ((*r)->tablet_id != tablet_->tablet_id) {
          // Nothing was applied (the old tablet is gone); the rows belong elsewhere now.
          return FailAll(Status::IllegalState("tablet " + tablet_->tablet_id + " was replaced by " +
                                              (*r)->tablet_id));
        }
        tablet_ = *r;
        Send();
      });
}

void WriteRpc::FailAll(const Status& s) {
  failed_all_ = s.ok() ? Status::RuntimeError("write failed") : s;
  row_errors_.clear();
  Done();
}

void WriteRpc::Done() {
  batcher_->client_->request_ids()->Complete(seq_no_);
  batcher_->RpcFinished();  // may free the batcher and this object: nothing after
}

}  // namespace nyala::client::internal
