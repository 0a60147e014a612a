// TableAlterer and Client::IsAlterTableInProgress.
#include <algorithm>

#include "client/client-internal.h"
#include "common/result.h"
#include "common/row_operations.h"
#include "master/master.pb.h"
#include "nyala/client.h"

namespace nyala::client {

struct TableAlterer::Step {
  master::AlterTableStepPB pb;
  // Range steps: the bounds, rows of the table's schema (encoded on Alter()).
  std::optional<Row> lower;
  std::optional<Row> upper;
};

TableAlterer::TableAlterer(std::shared_ptr<Client> client, std::string name)
    : client_(std::move(client)),
      name_(std::move(name)),
      timeout_(client_->default_admin_operation_timeout()) {}
TableAlterer::~TableAlterer() = default;

TableAlterer& TableAlterer::RenameTo(std::string new_name) {
  new_name_ = std::move(new_name);
  return *this;
}

TableAlterer& TableAlterer::SetComment(std::string comment) {
  comment_ = std::move(comment);
  return *this;
}

TableAlterer& TableAlterer::AddColumn(std::string name, DataType type, bool nullable,
                                      Value default_value, std::string comment) {
  auto s = std::make_unique<Step>();
  s->pb.set_type(master::AlterTableStepPB::ADD_COLUMN);
  ColumnSchemaPB* c = s->pb.mutable_add_column();
  c->set_name(std::move(name));
  c->set_type(static_cast<DataTypePB>(DataTypeToPB(type)));
  c->set_is_nullable(nullable);
  c->set_comment(std::move(comment));
  if (default_value.has_value()) {
    if (default_value.type() != type && error_.ok()) {
      error_ = Status::InvalidArgument("column '" + c->name() + "' is " + DataTypeName(type) +
                                       ", its default " + DataTypeName(default_value.type()));
    }
    EncodeCellValue(default_value.cell(), c->mutable_default_value());
  }
  steps_.push_back(std::move(s));
  return *this;
}

namespace {
std::unique_ptr<master::AlterTableStepPB> ColumnStep(master::AlterTableStepPB::Type type,
                                                     std::string name) {
  auto pb = std::make_unique<master::AlterTableStepPB>();
  pb->set_type(type);
  pb->set_column_name(std::move(name));
  return pb;
}
}  // namespace

TableAlterer& TableAlterer::DropColumn(std::string name) {
  auto s = std::make_unique<Step>();
  s->pb = *ColumnStep(master::AlterTableStepPB::DROP_COLUMN, std::move(name));
  steps_.push_back(std::move(s));
  return *this;
}

TableAlterer& TableAlterer::RenameColumn(std::string name, std::string new_name) {
  auto s = std::make_unique<Step>();
  s->pb = *ColumnStep(master::AlterTableStepPB::RENAME_COLUMN, std::move(name));
  s->pb.set_new_column_name(std::move(new_name));
  steps_.push_back(std::move(s));
  return *this;
}

TableAlterer& TableAlterer::SetColumnDefault(std::string name, Value value) {
  auto s = std::make_unique<Step>();
  s->pb = *ColumnStep(master::AlterTableStepPB::ALTER_COLUMN, std::move(name));
  if (!value.has_value() && error_.ok()) {
    error_ = Status::InvalidArgument("SetColumnDefault of column '" + s->pb.column_name() +
                                     "' without a value: use RemoveColumnDefault");
  } else {
    EncodeCellValue(value.cell(), s->pb.mutable_new_default());
  }
  steps_.push_back(std::move(s));
  return *this;
}

TableAlterer& TableAlterer::RemoveColumnDefault(std::string name) {
  auto s = std::make_unique<Step>();
  s->pb = *ColumnStep(master::AlterTableStepPB::ALTER_COLUMN, std::move(name));
  s->pb.set_remove_default(true);
  steps_.push_back(std::move(s));
  return *this;
}

TableAlterer& TableAlterer::SetColumnComment(std::string name, std::string comment) {
  auto s = std::make_unique<Step>();
  s->pb = *ColumnStep(master::AlterTableStepPB::ALTER_COLUMN, std::move(name));
  s->pb.set_new_comment(std::move(comment));
  steps_.push_back(std::move(s));
  return *this;
}

TableAlterer& TableAlterer::AddRangePartition(const Row& lower, const Row& upper) {
  auto s = std::make_unique<Step>();
  s->pb.set_type(master::AlterTableStepPB::ADD_RANGE_PARTITION);
  s->lower = lower;
  s->upper = upper;
  steps_.push_back(std::move(s));
  return *this;
}

TableAlterer& TableAlterer::DropRangePartition(const Row& lower, const Row& upper) {
  auto s = std::make_unique<Step>();
  s->pb.set_type(master::AlterTableStepPB::DROP_RANGE_PARTITION);
  s->lower = lower;
  s->upper = upper;
  steps_.push_back(std::move(s));
  return *this;
}

TableAlterer& TableAlterer::wait(bool wait) {
  wait_ = wait;
  return *this;
}

TableAlterer& TableAlterer::timeout(MonoDelta timeout) {
  timeout_ = timeout;
  return *this;
}

namespace {

// `lower` and `upper` as a kPartitionRows block of the key columns alone.
Status EncodeRange(const Row& lower, const Row& upper, RowOperationsPB* out) {
  const Schema& schema = lower.schema();
  if (&upper.schema() != &schema && !(upper.schema() == schema)) {
    return Status::InvalidArgument("the bounds of a range are rows of different schemas");
  }
  std::vector<ColumnSchema> keys(schema.columns().begin(),
                                 schema.columns().begin() + schema.num_key_columns());
  ASSIGN_OR_RETURN(Schema key_schema, Schema::Create(std::move(keys), schema.num_key_columns()));
  RowOperationsEncoder enc(&key_schema);
  for (const auto& [row, type] : {std::pair<const Row*, RowOpType>{&lower, RowOpType::kRangeLowerBound},
                                  {&upper, RowOpType::kRangeUpperBound}}) {
    Row key(&key_schema);
    for (int c = 0; c < schema.num_key_columns(); c++) {
      if (row->IsSet(c)) RETURN_NOT_OK(key.Set(c, row->cell(c)));
    }
    RETURN_NOT_OK(enc.Add(type, key.view()));
  }
  enc.Finish(out);
  return Status::OK();
}

}  // namespace

Status TableAlterer::Alter() {
  RETURN_NOT_OK(error_);
  if (name_.empty()) return Status::InvalidArgument("no table name");
  const MonoTime deadline = MonoTime::Now() + timeout_;
  master::AlterTableRequestPB req;
  req.mutable_table()->set_table_name(name_);
  req.set_new_table_name(new_name_);
  if (comment_) req.set_new_table_comment(*comment_);
  for (const auto& s : steps_) {
    master::AlterTableStepPB* pb = req.add_steps();
    *pb = s->pb;
    if (s->lower) RETURN_NOT_OK(EncodeRange(*s->lower, *s->upper, pb->mutable_range_bounds()));
  }
  internal::ClientData* data = internal::DataOf(*client_);
  master::AlterTableResponsePB resp;
  RETURN_NOT_OK(
      data->master()->Call(&master::MasterServiceProxy::AlterTableAsync, req, &resp, deadline));
  // Its partitions may have changed: this client looks them up again.
  data->meta_cache()->InvalidateTable(resp.table_id());
  if (!wait_) return Status::OK();
  master::IsAlterTableDoneRequestPB done_req;
  done_req.mutable_table()->set_table_id(resp.table_id());
  for (int attempt = 0;; attempt++) {
    master::IsAlterTableDoneResponsePB done_resp;
    RETURN_NOT_OK(data->master()->Call(&master::MasterServiceProxy::IsAlterTableDoneAsync,
                                       done_req, &done_resp, deadline));
    if (done_resp.done()) {
      data->meta_cache()->InvalidateTable(resp.table_id());  // new tablets run now
      return Status::OK();
    }
    MonoDelta backoff = MonoDelta::FromMilliseconds(std::min(500, 10 << std::min(attempt, 6)));
    if (MonoTime::Now() + backoff >= deadline) {
      return Status::TimedOut(
          "table " + name_ + " altered, but not every tablet has the change yet: " +
          std::to_string(done_resp.tablets_done()) + " of " +
          std::to_string(done_resp.tablets_total()) + " tablets done");
    }
    SleepFor(backoff);  // polling interval, bounded by the deadline
  }
}

std::unique_ptr<TableAlterer> Client::NewTableAlterer(const std::string& name) {
  return std::unique_ptr<TableAlterer>(new TableAlterer(shared_from_this(), name));
}

Result<bool> Client::IsAlterTableInProgress(const std::string& name) {
  master::IsAlterTableDoneRequestPB req;
  req.mutable_table()->set_table_name(name);
  master::IsAlterTableDoneResponsePB resp;
  RETURN_NOT_OK(data_->master()->Call(&master::MasterServiceProxy::IsAlterTableDoneAsync, req,
                                      &resp, data_->AdminDeadline()));
  return !resp.done();
}

}  // namespace nyala::client
