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
  schema_ = std::shared_ptr<const Schema>(buffer->table, &table.schema());
  table.schema().ToPB(req_.mutable_schema());
  buffer->encoder.Finish(req_.mutable_row_operations());
  seq_no_ = batcher_->client_->request_ids()->NewSeqNo();
  if (auto newer = batcher_->client_->NewestSchema(table_id_);
      newer && newer->version() > schema_->version()) {
    // Nothing is sent yet: a failure here is the first attempt's.
    translation_status_ = TranslateTo(std::move(newer));
  }
}

Status WriteRpc::TranslateTo(std::shared_ptr<const Schema> schema) {
  if (schema->version() <= schema_->version()) return Status::OK();
  DecodedRowOps rows;
  RETURN_NOT_OK_PREPEND(DecodeRowOperations(req_.row_operations(), *schema_, RowBlockKind::kWrites,
                                            &rows),
                        "re-reading a write block for a schema change");
  const Schema& to = *schema;
  // Where each column of the block's schema went, by id.
  std::vector<int> target(schema_->num_columns(), -1);
  for (int c = 0; c < schema_->num_columns(); c++) {
    target[c] = to.FindColumnById(schema_->column(c).id());
  }
  RowOperationsEncoder enc(&to);
  std::vector<int> index;
  Row row(&to);
  for (size_t i = 0; i < rows.size(); i++) {
    const int orig = original_index_.empty() ? int(i) : original_index_[i];
    row.Clear();
    Status failed;
    for (int c = 0; c < schema_->num_columns() && failed.ok(); c++) {
      if (!rows[i].row.IsSet(c)) continue;
      if (target[c] < 0) {
        failed = Status::InvalidArgument(
            "column '" + schema_->column(c).name() + "' was dropped from table " +
                buffer_->table->name() + " (schema version " + std::to_string(to.version()) + ")",
            "write without it");
        break;
      }
      failed = row.Set(target[c], rows[i].row.cell(c));
    }
    if (failed.ok()) failed = enc.Add(rows[i].type, row.view());
    if (!failed.ok()) {
      translation_errors_.emplace_back(orig, std::move(failed));
      continue;
    }
    index.push_back(orig);
  }
  if (!original_block_) {
    original_block_ = std::make_unique<RowOperationsPB>(req_.row_operations());
  }
  enc.Finish(req_.mutable_row_operations());
  to.ToPB(req_.mutable_schema());
  original_index_ = std::move(index);
  VLOG(1) << "write to tablet " << tablet_->tablet_id << ": block translated from schema version "
          << schema_->version() << " to " << to.version();
  schema_ = std::move(schema);
  return Status::OK();
}

void WriteRpc::RefreshSchema() {
  ClientData* client = batcher_->client_;
  if (++schema_refreshes_ > 5) {
    return FailAll(Status::IllegalState("write to tablet " + tablet_->tablet_id +
                                        ": the table's schema kept changing"));
  }
  auto req = std::make_shared<master::GetTableSchemaRequestPB>();
  req->mutable_table()->set_table_id(table_id_);
  auto resp = std::make_shared<master::GetTableSchemaResponsePB>();
  client->master()->AsyncCall(
      &master::MasterServiceProxy::GetTableSchemaAsync,
      std::shared_ptr<const master::GetTableSchemaRequestPB>(req), resp, batcher_->deadline_,
      [this, resp](const Status& s) {
        if (!s.ok()) return FailAll(s.CloneAndPrepend("fetching the table's new schema"));
        Result<Schema> fresh = Schema::FromPB(resp->schema());
        if (!fresh.ok()) return FailAll(fresh.status());
        std::shared_ptr<const Schema> newest = batcher_->client_->NoteSchema(
            table_id_, std::make_shared<const Schema>(std::move(fresh).value()));
        if (newest->version() <= schema_->version()) {
          // The master has not recorded what the tablet has: ask again shortly.
          return Retry(Status::IllegalState("the master's schema of the table is not newer"),
                       false);
        }
        if (Status t = TranslateTo(std::move(newest)); !t.ok()) return FailAll(t);
        if (original_index_.empty()) return Done();  // every row failed the translation
        attempt_++;
        Send();
      });
}

WriteRpc::~WriteRpc() = default;

const Table& WriteRpc::table() const { return *buffer_->table; }

void WriteRpc::Send() {
  ClientData* client = batcher_->client_;
  if (!translation_status_.ok()) return FailAll(translation_status_);
  if (original_block_ && original_index_.empty()) return Done();  // no row left to send
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
  if (rpc_.status().ok() && resp_.has_error() &&
      resp_.error().code() == tserver::TabletServerErrorPB::TABLET_HAS_A_NEWER_SCHEMA) {
    VLOG(1) << "write to tablet " << tablet_->tablet_id << ": "
            << TabletServerErrorToStatus(resp_.error()).ToString();
    return RefreshSchema();
  }
  TabletRpcVerdict v = ClassifyReplicaRpc(*tablet_, server_.get(), rpc_,
                                          resp_.has_error() ? &resp_.error() : nullptr);
  switch (v.action) {
    case TabletRpcAction::kSuccess:
      for (const auto& e : resp_.per_row_errors()) {
        const int sent = original_block_ ? int(original_index_.size()) : num_rows_;
        if (e.row_index() < 0 || e.row_index() >= sent) {
          LOG(WARNING) << "tablet " << tablet_->tablet_id << " reported an error for row "
                       << e.row_index() << " of " << sent;
          continue;
        }
        const int row = original_block_ ? original_index_[e.row_index()] : e.row_index();
        row_errors_.emplace_back(row, StatusFromPB(e.error()));
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
        if (!r.ok() && IsNoCoveringTablet(r.status())) {
          // Nothing was applied: the tablet's range partition was dropped.
          return FailAll(Status::NotFound(
              "tablet " + tablet_->tablet_id + " is gone and no tablet covers its rows' "
              "partition keys now: its range partition was dropped"));
        }
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
  translation_errors_.clear();
  Done();
}

void WriteRpc::Done() {
  for (auto& e : translation_errors_) row_errors_.push_back(std::move(e));
  translation_errors_.clear();
  batcher_->client_->request_ids()->Complete(seq_no_);
  batcher_->RpcFinished();  // may free the batcher and this object: nothing after
}

}  // namespace nyala::client::internal
