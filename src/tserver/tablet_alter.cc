// Tablet::AlterSchemaAsync and the apply of schema-change entries (tablet.h).
#include <glog/logging.h>

#include "common/status.h"
#include "tserver/tablet.h"
#include "tserver/tablet_store.h"
#include "tserver/write_command.h"

namespace nyala::tserver {

namespace {

// `meta` after the change: the new schema, the old one kept among the older schemas,
// the table's new name.
TabletMetadataPB MetadataAfter(const TabletMetadataPB& meta, const AlterSchemaRequestPB& change) {
  TabletMetadataPB next = meta;
  *next.add_older_schemas() = meta.schema();
  *next.mutable_schema() = change.schema();
  if (!change.new_table_name().empty()) next.set_table_name(change.new_table_name());
  return next;
}

// OK when `next` keeps `now`'s key columns (names, types, ids), which the partitioning
// and the stored keys depend on.
Status CheckSameKey(const Schema& now, const Schema& next) {
  if (next.num_key_columns() != now.num_key_columns()) {
    return Status::InvalidArgument("the new schema has " + std::to_string(next.num_key_columns()) +
                                   " key columns, the tablet " +
                                   std::to_string(now.num_key_columns()));
  }
  for (int i = 0; i < now.num_key_columns(); i++) {
    const ColumnSchema& a = now.column(i);
    const ColumnSchema& b = next.column(i);
    if (a.name() != b.name() || a.type() != b.type() || a.id() != b.id()) {
      return Status::InvalidArgument("key column " + a.ToString() + " would become " +
                                     b.ToString() + ": the primary key cannot change");
    }
  }
  return Status::OK();
}

}  // namespace

void Tablet::AlterSchemaAsync(const AlterSchemaRequestPB& req, AlterSchemaResponsePB* resp,
                              std::function<void()> done) {
  resp->clear_error();
  if (!CheckRunning(resp->mutable_error())) return done();
  resp->clear_error();
  const std::shared_ptr<const TabletSchema> ts = tablet_schema();
  resp->set_schema_version(ts->schema.version());
  if (req.schema().version() <= ts->schema.version()) return done();  // has it already
  auto refuse = [&](const Status& s) {
    SetError(TabletServerErrorPB::INVALID_SCHEMA, s.CloneAndPrepend("tablet " + tablet_id()),
             resp->mutable_error());
    done();
  };
  Result<std::shared_ptr<const TabletSchema>> next = TabletSchema::Make(MetadataAfter(ts->meta, req));
  if (!next.ok()) return refuse(next.status());
  if (Status s = CheckSameKey(ts->schema, (*next)->schema); !s.ok()) return refuse(s);
  if (TabletServerErrorPB err; !replica_->CheckLeader(&err)) {
    *resp->mutable_error() = std::move(err);
    return done();
  }
  const uint64_t term = replica_->ReadyLeaderTerm();
  if (term == 0) {
    SetError(TabletServerErrorPB::NOT_THE_LEADER,
             Status::IllegalState("tablet " + tablet_id() + ": leadership changed"),
             resp->mutable_error());
    return done();
  }
  LOG(INFO) << "tablet " << tablet_id() << ": replicating the change to schema version "
            << req.schema().version() << " (from " << ts->schema.version() << ")";
  replica_->ReplicateAsync(
      EncodeSchemaChangeCommand(req), term, nullptr,
      [this, resp, done = std::move(done)](const Status& s) {
        if (!s.ok()) {
          const auto code = s.IsServiceUnavailable() ? TabletServerErrorPB::TABLET_NOT_RUNNING
                                                     : TabletServerErrorPB::NOT_THE_LEADER;
          SetError(code, s.CloneAndPrepend("tablet " + tablet_id() + ": schema change"),
                   resp->mutable_error());
        } else if (state() == TabletState::kFailed) {
          SetError(TabletServerErrorPB::TABLET_FAILED, failure_, resp->mutable_error());
        }
        resp->set_schema_version(schema_version());
        done();
      });
}

Status Tablet::ApplySchemaChange(const DecodedWriteCommand& cmd, Slice applied_state) {
  const std::shared_ptr<const TabletSchema> ts = tablet_schema();
  const AlterSchemaRequestPB& change = cmd.schema_change;
  if (change.schema().version() <= ts->schema.version()) {
    // Applied before (an entry proposed twice), or older than the tablet's schema.
    return StoreAppliedState(applied_state);
  }
  TabletMetadataPB meta = MetadataAfter(ts->meta, change);
  Result<std::shared_ptr<const TabletSchema>> next = TabletSchema::Make(meta);
  Status valid = next.ok() ? CheckSameKey(ts->schema, (*next)->schema) : next.status();
  if (!valid.ok()) {
    // The leader checked it before proposing; every replica skips it alike.
    LOG(ERROR) << "tablet " << tablet_id() << ": skipping a schema change to version "
               << change.schema().version() << " that does not apply: " << valid.ToString();
    return StoreAppliedState(applied_state);
  }
  StoreWriteBatch batch;
  store_->PutTabletMetadata(&batch, meta);
  store_->PutAppliedState(&batch, seq(), applied_state);
  RETURN_NOT_OK_PREPEND(store_->Write(&batch), "tablet " + tablet_id() + ": schema change");
  LOG(INFO) << "tablet " << tablet_id() << ": schema version " << ts->schema.version() << " -> "
            << (*next)->schema.version()
            << (change.new_table_name().empty() ? "" : ", table " + meta.table_name());
  schema_version_.store((*next)->schema.version(), std::memory_order_release);
  if (rewriter_) rewriter_->Advance(*next);
  {
    MutexLock l(schema_mu_);
    schema_ = std::move(next).value();
  }
  replica_->NotifyReportable();  // the master learns the version from the report
  return Status::OK();
}

}  // namespace nyala::tserver
