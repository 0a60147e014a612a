// SchemaBuilder and TableCreator.
#include <algorithm>

#include "client/client-internal.h"
#include "common/result.h"
#include "common/row_operations.h"
#include "master/master.pb.h"
#include "nyala/client.h"

namespace nyala::client {

// ---- SchemaBuilder ------------------------------------------------------------------

SchemaBuilder& SchemaBuilder::AddKeyColumn(std::string name, DataType type) {
  if (static_cast<int>(columns_.size()) > num_keys_) key_after_value_ = true;
  columns_.insert(columns_.begin() + num_keys_, ColumnSchema(std::move(name), type));
  num_keys_++;
  return *this;
}

SchemaBuilder& SchemaBuilder::AddColumn(std::string name, DataType type, bool nullable,
                                        Value default_value) {
  columns_.emplace_back(std::move(name), type, nullable, std::move(default_value));
  return *this;
}

Result<Schema> SchemaBuilder::Build() const {
  if (key_after_value_) {
    return Status::InvalidArgument("key columns must be added before value columns");
  }
  return Schema::Create(columns_, num_keys_);
}

// ---- TableCreator -------------------------------------------------------------------

TableCreator::TableCreator(std::shared_ptr<Client> client)
    : client_(std::move(client)), timeout_(client_->default_admin_operation_timeout()) {}
TableCreator::~TableCreator() = default;

TableCreator& TableCreator::table_name(std::string name) {
  name_ = std::move(name);
  return *this;
}
TableCreator& TableCreator::schema(const Schema& schema) {
  schema_ = std::make_unique<Schema>(schema);
  return *this;
}
TableCreator& TableCreator::add_hash_partitions(std::vector<std::string> columns,
                                                int32_t num_buckets, uint32_t seed) {
  hash_.push_back(HashDimension{std::move(columns), num_buckets, seed});
  return *this;
}
TableCreator& TableCreator::set_range_partition_columns(std::vector<std::string> columns) {
  range_columns_ = std::move(columns);
  return *this;
}
Row TableCreator::NewRow() const {
  CHECK(schema_) << "TableCreator::NewRow before schema()";
  return Row(schema_.get());
}
TableCreator& TableCreator::add_range_partition_split(const Row& split) {
  splits_.push_back(split);
  return *this;
}
TableCreator& TableCreator::add_range_partition(const Row& lower, const Row& upper) {
  bounds_.emplace_back(lower, upper);
  return *this;
}
TableCreator& TableCreator::num_replicas(int n) {
  num_replicas_ = n;
  return *this;
}
TableCreator& TableCreator::comment(std::string comment) {
  comment_ = std::move(comment);
  return *this;
}
TableCreator& TableCreator::wait(bool wait) {
  wait_ = wait;
  return *this;
}
TableCreator& TableCreator::timeout(MonoDelta timeout) {
  timeout_ = timeout;
  return *this;
}

Status TableCreator::Create() {
  if (name_.empty()) return Status::InvalidArgument("table name not set");
  if (!schema_) return Status::InvalidArgument("schema not set");
  const MonoTime deadline = MonoTime::Now() + timeout_;
  // Validate the partitioning locally: the same checks the master makes.
  ASSIGN_OR_RETURN(PartitionSchema ps, PartitionSchema::Create(*schema_, hash_, range_columns_));
  {
    std::vector<RowView> splits(splits_.begin(), splits_.end());
    std::vector<std::pair<RowView, RowView>> bounds;
    for (const auto& [lo, hi] : bounds_) bounds.emplace_back(lo.view(), hi.view());
    RETURN_NOT_OK_PREPEND(ps.CreatePartitions(splits, bounds).status(), "range partitioning");
  }

  master::CreateTableRequestPB req;
  req.set_name(name_);
  schema_->ToPB(req.mutable_schema());
  ps.ToPB(req.mutable_partition_schema());
  req.set_num_replicas(num_replicas_);
  req.set_comment(comment_);
  RowOperationsEncoder enc(schema_.get());
  for (const Row& r : splits_) RETURN_NOT_OK(enc.Add(RowOpType::kSplitRow, r));
  for (const auto& [lo, hi] : bounds_) {
    RETURN_NOT_OK(enc.Add(RowOpType::kRangeLowerBound, lo));
    RETURN_NOT_OK(enc.Add(RowOpType::kRangeUpperBound, hi));
  }
  if (enc.num_rows() > 0) enc.Finish(req.mutable_split_rows_range_bounds());

  internal::ClientData* data = internal::DataOf(*client_);
  master::CreateTableResponsePB resp;
  RETURN_NOT_OK(
      data->master()->Call(&master::MasterServiceProxy::CreateTableAsync, req, &resp, deadline));
  if (!wait_) return Status::OK();

  master::IsCreateTableDoneRequestPB done_req;
  done_req.mutable_table()->set_table_id(resp.table_id());
  if (resp.table_id().empty()) done_req.mutable_table()->set_table_name(name_);
  for (int attempt = 0;; attempt++) {
    master::IsCreateTableDoneResponsePB done_resp;
    RETURN_NOT_OK(data->master()->Call(&master::MasterServiceProxy::IsCreateTableDoneAsync,
                                       done_req, &done_resp, deadline));
    if (done_resp.done()) return Status::OK();
    MonoDelta backoff = MonoDelta::FromMilliseconds(std::min(500, 10 << std::min(attempt, 6)));
    if (MonoTime::Now() + backoff >= deadline) {
      return Status::TimedOut("table " + name_ + " created, but not all tablets started: " +
                              std::to_string(done_resp.tablets_running()) + " of " +
                              std::to_string(done_resp.tablets_total()) + " running");
    }
    SleepFor(backoff);  // polling interval, bounded by the deadline
  }
}

}  // namespace nyala::client
