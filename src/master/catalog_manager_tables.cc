// CatalogManager: CreateTable (validation, placement), DeleteTable, ListTables,
// GetTableSchema, IsCreateTableDone.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <unordered_set>

#include "common/flag_tags.h"
#include "common/result.h"
#include "common/row_operations.h"
#include "master/alter_table.h"
#include "master/catalog_manager.h"
#include "nyala/schema.h"
#include "server/fs_manager.h"

DEFINE_int32(default_num_replicas, 3,
             "Replicas of each tablet (the size of its Raft group) when CreateTable does not "
             "say. Must be odd and at most --max_num_replicas.");
DEFINE_validator(default_num_replicas, [](const char*, int32_t v) { return v >= 1 && v % 2 == 1; });
TAG_FLAG(default_num_replicas, runtime);
DEFINE_int32(max_num_replicas, 7, "The largest replication factor a table may have.");
DEFINE_validator(max_num_replicas, [](const char*, int32_t v) { return v >= 1; });
TAG_FLAG(max_num_replicas, runtime);
DEFINE_int32(max_create_tablets_per_ts, 1000,
             "CreateTable fails with TOO_MANY_TABLETS when tablets x replicas would exceed this "
             "many per live tablet server.");
DEFINE_validator(max_create_tablets_per_ts, [](const char*, int32_t v) { return v >= 1; });
TAG_FLAG(max_create_tablets_per_ts, runtime);
DECLARE_int32(tablet_creation_timeout_ms);

namespace nyala::master {

namespace {

// Checks that name Schema::FromPB would otherwise report less specifically.
Status PrecheckSchema(const SchemaPB& pb) {
  if (pb.columns_size() == 0) return Status::InvalidArgument("schema has no columns");
  std::unordered_set<std::string> names;
  bool seen_value_column = false;
  for (const auto& c : pb.columns()) {
    if (!names.insert(c.name()).second) {
      return Status::InvalidArgument("duplicate column name", c.name());
    }
    if (c.is_key() && seen_value_column) {
      return Status::InvalidArgument("key column must come before every non-key column", c.name());
    }
    if (c.is_key() && c.is_nullable()) {
      return Status::InvalidArgument("key column must not be nullable", c.name());
    }
    seen_value_column |= !c.is_key();
  }
  if (!pb.columns(0).is_key()) return Status::InvalidArgument("schema has no key column");
  return Status::OK();
}

Status PrecheckPartitionSchema(const PartitionSchemaPB& pb, const Schema& schema) {
  auto check_key_column = [&](const std::string& name, const std::string& where) -> Status {
    const int idx = schema.FindColumn(name);
    if (idx < 0) return Status::InvalidArgument(where + " column not in the schema", name);
    if (!schema.is_key_column(idx)) {
      return Status::InvalidArgument(where + " column is not a key column", name);
    }
    return Status::OK();
  };
  for (int d = 0; d < pb.hash_dimensions_size(); d++) {
    const auto& dim = pb.hash_dimensions(d);
    const std::string where = "hash dimension " + std::to_string(d);
    if (dim.num_buckets() < 2) {
      return Status::InvalidArgument(where + " has fewer than 2 buckets",
                                     std::to_string(dim.num_buckets()));
    }
    for (const auto& c : dim.columns()) RETURN_NOT_OK(check_key_column(c, where));
  }
  for (const auto& c : pb.range_schema().columns()) RETURN_NOT_OK(check_key_column(c, "range"));
  return Status::OK();
}

}  // namespace

Status CatalogManager::ValidateCreateTable(const CreateTableRequestPB& req, Schema* schema,
                                           PartitionSchema* partition_schema,
                                           std::vector<Partition>* partitions, int* num_replicas,
                                           MasterErrorPB::Code* code) const {
  *code = MasterErrorPB::INVALID_TABLE_NAME;
  RETURN_NOT_OK(ValidateTableName(req.name()));

  *code = MasterErrorPB::ILLEGAL_REPLICATION_FACTOR;
  *num_replicas = req.num_replicas() == 0 ? FLAGS_default_num_replicas : req.num_replicas();
  if (*num_replicas < 1 || *num_replicas % 2 == 0 || *num_replicas > FLAGS_max_num_replicas) {
    return Status::InvalidArgument(
        "num_replicas must be odd and between 1 and " + std::to_string(FLAGS_max_num_replicas),
        std::to_string(*num_replicas));
  }

  *code = MasterErrorPB::INVALID_SCHEMA;
  RETURN_NOT_OK(PrecheckSchema(req.schema()));
  SchemaPB schema_pb = req.schema();
  schema_pb.set_version(0);
  for (auto& c : *schema_pb.mutable_columns()) c.clear_id();  // a new table's ids: 0..n-1
  ASSIGN_OR_RETURN(*schema, Schema::FromPB(schema_pb));

  *code = MasterErrorPB::INVALID_PARTITION_SCHEMA;
  RETURN_NOT_OK(PrecheckPartitionSchema(req.partition_schema(), *schema));
  ASSIGN_OR_RETURN(*partition_schema, PartitionSchema::FromPB(req.partition_schema(), *schema));
  if (req.split_rows_range_bounds().rows().empty()) {
    ASSIGN_OR_RETURN(*partitions, partition_schema->CreatePartitions(
                                      std::vector<std::string>{},
                                      std::vector<std::pair<std::string, std::string>>{}));
  } else {
    DecodedRowOps rows;
    RETURN_NOT_OK_PREPEND(DecodeRowOperations(req.split_rows_range_bounds(), *schema,
                                              RowBlockKind::kPartitionRows, &rows),
                          "split_rows_range_bounds");
    for (size_t i = 0; i < rows.size(); i++) {
      RETURN_NOT_OK_PREPEND(rows[i].error, "split_rows_range_bounds row " + std::to_string(i));
    }
    ASSIGN_OR_RETURN(*partitions, partition_schema->CreatePartitions(rows));
  }
  return Status::OK();
}

void CatalogManager::CreateTable(const CreateTableRequestPB& req, CreateTableResponsePB* resp) {
  Schema schema;
  PartitionSchema partition_schema;
  std::vector<Partition> partitions;
  int num_replicas = 0;
  MasterErrorPB::Code code;
  Status s =
      ValidateCreateTable(req, &schema, &partition_schema, &partitions, &num_replicas, &code);
  if (!s.ok()) {
    SetError(code, s, resp->mutable_error());
    return;
  }

  MutexLock w(write_mu_);
  ServerLoads loads;
  ServerLoads leaders;
  {
    SharedLock l(state_mu_);
    if (table_ids_by_name_.count(req.name())) {
      SetError(MasterErrorPB::TABLE_ALREADY_PRESENT,
               Status::AlreadyPresent("table already exists", req.name()), resp->mutable_error());
      return;
    }
    loads = LiveServerLoadsLocked(&leaders);
  }
  if (int(loads.size()) < num_replicas) {
    const std::string n = std::to_string(num_replicas);
    SetError(MasterErrorPB::REPLICATION_FACTOR_TOO_HIGH,
             Status::InvalidArgument("num_replicas " + n + " needs " + n +
                                     " live tablet servers, " + std::to_string(loads.size()) +
                                     (loads.size() == 1 ? " is" : " are") +
                                     " alive: start more tablet servers or create the table "
                                     "with num_replicas 1"),
             resp->mutable_error());
    return;
  }
  const int64_t new_replicas = int64_t(partitions.size()) * num_replicas;
  if (new_replicas > int64_t(FLAGS_max_create_tablets_per_ts) * int64_t(loads.size())) {
    SetError(MasterErrorPB::TOO_MANY_TABLETS,
             Status::InvalidArgument("the table would have " + std::to_string(new_replicas) +
                                     " tablet replicas, "
                                     "more than --max_create_tablets_per_ts=" +
                                     std::to_string(FLAGS_max_create_tablets_per_ts) + " times " +
                                     std::to_string(loads.size()) + " live tablet servers"),
             resp->mutable_error());
    return;
  }

  // Build the entries and write them, then apply.
  auto table = std::make_shared<TableInfo>();
  table->id = server::GenerateUuid();
  table->pb.set_name(req.name());
  schema.ToPB(table->pb.mutable_schema());
  partition_schema.ToPB(table->pb.mutable_partition_schema());
  table->pb.set_num_replicas(num_replicas);
  table->pb.set_comment(req.comment());
  table->pb.set_next_column_id(schema.num_columns());  // ids 0..n-1 are taken
  table->pb.set_state(TABLE_CREATING);
  table->pb.set_create_time_micros(GetWallTimeMicros());
  SysCatalogBatch batch;
  batch.put_tables.emplace_back(table->id, table->pb);
  std::vector<std::shared_ptr<TabletInfo>> tablets;
  const MonoTime deadline =
      MonoTime::Now() + MonoDelta::FromMilliseconds(FLAGS_tablet_creation_timeout_ms);
  std::set<uint64_t> group_ids;  // of this table's new tablets
  for (const Partition& p : partitions) {
    auto t = std::make_shared<TabletInfo>();
    {
      SharedLock l(state_mu_);
      Result<std::string> id = NewTabletIdLocked(&group_ids);
      if (!id.ok()) {
        SetError(MasterErrorPB::UNKNOWN_ERROR, id.status(), resp->mutable_error());
        return;
      }
      t->id = std::move(*id);
    }
    t->partition = p;
    t->creation_deadline = deadline;
    t->pb.set_table_id(table->id);
    p.ToPB(t->pb.mutable_partition());
    t->pb.set_state(TABLET_CREATING);
    auto placed = PlaceReplicas(num_replicas, &loads, &rng_);
    if (!placed.ok()) {
      SetError(MasterErrorPB::REPLICATION_FACTOR_TOO_HIGH, placed.status(), resp->mutable_error());
      return;
    }
    OrderForLeadership(&*placed, &leaders);  // the first replica campaigns first
    for (const auto& uuid : *placed) t->pb.add_replica_uuids(uuid);
    batch.put_tablets.emplace_back(t->id, t->pb);
    table->all_tablet_ids.push_back(t->id);
    table->tablets_by_start[p.partition_key_start] = t;
    tablets.push_back(std::move(t));
  }
  s = sys_catalog_->Write(batch);
  if (!s.ok()) {
    LOG(ERROR) << "CreateTable " << req.name() << ": sys catalog write failed: " << s.ToString();
    SetError(MasterErrorPB::UNKNOWN_ERROR, s, resp->mutable_error());
    return;
  }
  {
    ExclusiveLock l(state_mu_);
    InvalidateLocked(table->id);
    tables_[table->id] = table;
    table_ids_by_name_[req.name()] = table->id;
    for (auto& t : tablets) {
      pending_tablets_.insert(t->id);
      AddTabletLocked(t);
    }
  }
  LOG(INFO) << "created table " << req.name() << " (" << table->id << ") with " << tablets.size()
            << " tablets x " << num_replicas << " replicas";
  resp->set_table_id(table->id);
  tasks_->Wake();
}

void CatalogManager::IsCreateTableDone(const IsCreateTableDoneRequestPB& req,
                                       IsCreateTableDoneResponsePB* resp) {
  SharedLock l(state_mu_);
  auto table = FindTableLocked(req.table());
  if (!table) {
    SetError(MasterErrorPB::TABLE_NOT_FOUND, TableNotFound(req.table()), resp->mutable_error());
    return;
  }
  int running = 0;
  for (const auto& [start, t] : table->tablets_by_start) running += t->pb.state() == TABLET_RUNNING;
  resp->set_tablets_running(running);
  resp->set_tablets_total(int32_t(table->tablets_by_start.size()));
  resp->set_done(table->pb.state() == TABLE_RUNNING);
}

void CatalogManager::DeleteTable(const DeleteTableRequestPB& req, DeleteTableResponsePB* resp) {
  MutexLock w(write_mu_);
  std::shared_ptr<TableInfo> table;
  SysCatalogBatch batch;
  std::vector<std::pair<std::shared_ptr<TabletInfo>, SysTabletEntryPB>> updates;
  {
    SharedLock l(state_mu_);
    table = FindTableLocked(req.table());
    if (!table) {
      SetError(MasterErrorPB::TABLE_NOT_FOUND, TableNotFound(req.table()), resp->mutable_error());
      return;
    }
    SysTableEntryPB pb = table->pb;
    pb.set_state(TABLE_DELETED);
    pb.set_state_msg("deleted at " + std::to_string(GetWallTimeMicros()));
    batch.put_tables.emplace_back(table->id, pb);
    for (const auto& id : table->all_tablet_ids) {
      const auto& t = tablets_.at(id);
      if (t->pb.state() == TABLET_DELETED) continue;
      SysTabletEntryPB tpb = t->pb;
      if (tpb.state() != TABLET_REPLACED) tpb.set_state(TABLET_DELETED);
      batch.put_tablets.emplace_back(id, tpb);
      updates.emplace_back(t, std::move(tpb));
    }
  }
  Status s = sys_catalog_->Write(batch);
  if (!s.ok()) {
    SetError(MasterErrorPB::UNKNOWN_ERROR, s, resp->mutable_error());
    return;
  }
  {
    ExclusiveLock l(state_mu_);
    InvalidateLocked(table->id);
    table->pb = batch.put_tables[0].second;
    table_ids_by_name_.erase(table->pb.name());
    for (auto& [t, pb] : updates) {
      t->pb = std::move(pb);
      pending_tablets_.insert(t->id);
    }
  }
  LOG(INFO) << "deleted table " << table->pb.name() << " (" << table->id << ")";
  tasks_->Wake();
}

void CatalogManager::ListTables(const ListTablesRequestPB& req, ListTablesResponsePB* resp) {
  SharedLock l(state_mu_);
  std::map<std::string, std::shared_ptr<TableInfo>> sorted;
  for (const auto& [name, id] : table_ids_by_name_) {
    if (name.find(req.name_filter()) != std::string::npos) sorted[name] = tables_.at(id);
  }
  for (const auto& [name, t] : sorted) {
    auto* e = resp->add_tables();
    e->set_id(t->id);
    e->set_name(name);
    e->set_state(t->pb.state());
    e->set_num_tablets(int32_t(t->tablets_by_start.size()));
    e->set_num_replicas(t->pb.num_replicas());
  }
}

void CatalogManager::GetTableSchema(const GetTableSchemaRequestPB& req,
                                    GetTableSchemaResponsePB* resp) {
  SharedLock l(state_mu_);
  auto table = FindTableLocked(req.table());
  if (!table) {
    SetError(MasterErrorPB::TABLE_NOT_FOUND, TableNotFound(req.table()), resp->mutable_error());
    return;
  }
  *resp->mutable_schema() = table->pb.schema();
  *resp->mutable_partition_schema() = table->pb.partition_schema();
  resp->set_num_replicas(table->pb.num_replicas());
  resp->set_table_id(table->id);
  resp->set_table_name(table->pb.name());
  resp->set_create_table_done(table->pb.state() == TABLE_RUNNING);
  resp->set_alter_in_progress(table->pb.state() == TABLE_RUNNING &&
                              TabletsAlteredLocked(*table) < int(table->tablets_by_start.size()));
  resp->set_comment(table->pb.comment());
}

}  // namespace nyala::master
