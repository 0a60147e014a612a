#include "master/alter_table.h"

#include <algorithm>

#include "common/common.pb.h"
#include "common/row_operations.h"
#include "common/status.h"
#include "nyala/schema.h"

namespace nyala::master {

namespace {

constexpr size_t kMaxTableNameBytes = 256;

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// The column called `name` in `pb`, or null.
ColumnSchemaPB* FindColumn(SchemaPB* pb, const std::string& name) {
  for (ColumnSchemaPB& c : *pb->mutable_columns()) {
    if (c.name() == name) return &c;
  }
  return nullptr;
}

// The non-key column `name` a step `what` names: NotFound / InvalidArgument otherwise.
Result<ColumnSchemaPB*> NonKeyColumn(SchemaPB* pb, const std::string& name, const char* what) {
  if (name.empty()) return Status::InvalidArgument(std::string(what) + ": no column name given");
  ColumnSchemaPB* c = FindColumn(pb, name);
  if (c == nullptr) {
    return Status::NotFound(std::string(what) + ": the table has no column " + Quote(name));
  }
  if (c->is_key()) {
    return Status::InvalidArgument(std::string(what) + ": " + Quote(name) +
                                   " is a primary-key column, and the primary key cannot change");
  }
  return c;
}

// OK when `v` decodes as a value of `c`'s type.
Status CheckValue(const ColumnSchemaPB& c, const std::string& v, const std::string& what) {
  Result<DataType> type = DataTypeFromPB(c.type());
  RETURN_NOT_OK(type.status());
  Cell cell;
  RETURN_NOT_OK_PREPEND(DecodeCellValue(*type, Slice(v), &cell),
                        what + " of column " + Quote(c.name()));
  return Status::OK();
}

// The range [lower, upper) a step's range_bounds describe, encoded.
Result<std::pair<std::string, std::string>> RangeOf(const AlterTableStepPB& step,
                                                   const Schema& schema,
                                                   const PartitionSchema& ps) {
  if (ps.range_columns().empty()) {
    return Status::InvalidArgument(
        "the table has no range partitioning: its partitions cannot be added or dropped");
  }
  // The bounds are rows of the key columns alone, which no alteration changes.
  std::vector<ColumnSchema> key_cols(schema.columns().begin(),
                                     schema.columns().begin() + schema.num_key_columns());
  ASSIGN_OR_RETURN(Schema key_schema, Schema::Create(std::move(key_cols), schema.num_key_columns()));
  DecodedRowOps rows;
  RETURN_NOT_OK_PREPEND(DecodeRowOperations(step.range_bounds(), key_schema,
                                            RowBlockKind::kPartitionRows, &rows),
                        "range bounds (rows of the key columns)");
  if (rows.size() != 2 || rows[0].type != RowOpType::kRangeLowerBound ||
      rows[1].type != RowOpType::kRangeUpperBound) {
    return Status::InvalidArgument(
        "range bounds: give one RANGE_LOWER_BOUND row and one RANGE_UPPER_BOUND row");
  }
  for (size_t i = 0; i < rows.size(); i++) RETURN_NOT_OK_PREPEND(rows[i].error, "range bound");
  // One range with no hash dimension gives its bounds as its partition.
  ASSIGN_OR_RETURN(PartitionSchema range_only,
                   PartitionSchema::Create(key_schema, {}, ps.range_columns()));
  ASSIGN_OR_RETURN(std::vector<Partition> one, range_only.CreatePartitions(rows));
  if (one.size() != 1) return Status::InvalidArgument("range bounds: not one range");
  return std::make_pair(one[0].range_key_start, one[0].range_key_end);
}

bool Overlap(const std::pair<std::string, std::string>& a,
             const std::pair<std::string, std::string>& b) {
  const bool a_before_b = !a.second.empty() && a.second <= b.first;
  const bool b_before_a = !b.second.empty() && b.second <= a.first;
  return !a_before_b && !b_before_a;
}

}  // namespace

Status ValidateTableName(const std::string& name) {
  if (name.empty()) return Status::InvalidArgument("table name must not be empty");
  if (name.size() > kMaxTableNameBytes) {
    return Status::InvalidArgument("table name is longer than 256 bytes",
                                   std::to_string(name.size()) + " bytes");
  }
  for (size_t i = 0; i < name.size(); i++) {
    const unsigned char c = name[i];
    if (c < 0x20 || c == 0x7f) {
      return Status::InvalidArgument("table name holds a control character at byte " +
                                     std::to_string(i));
    }
  }
  return Status::OK();
}

Result<AlterPlan> PlanAlterTable(const SysTableEntryPB& table, const AlterTableRequestPB& req,
                                 std::vector<std::pair<std::string, std::string>> ranges,
                                 MasterErrorPB::Code* code) {
  *code = MasterErrorPB::INVALID_ARGUMENT;
  if (req.steps().empty() && req.new_table_name().empty() && !req.has_new_table_comment()) {
    return Status::InvalidArgument("the alteration has no step", "name at least one change");
  }
  AlterPlan plan;
  plan.table = table;
  if (!req.new_table_name().empty() && req.new_table_name() != table.name()) {
    *code = MasterErrorPB::INVALID_TABLE_NAME;
    RETURN_NOT_OK(ValidateTableName(req.new_table_name()));
    plan.table.set_name(req.new_table_name());
    plan.schema_changed = true;  // the tablets keep their table's name
  }
  if (req.has_new_table_comment()) plan.table.set_comment(req.new_table_comment());

  *code = MasterErrorPB::INVALID_SCHEMA;
  ASSIGN_OR_RETURN(Schema schema, Schema::FromPB(table.schema()));
  ASSIGN_OR_RETURN(PartitionSchema ps, PartitionSchema::FromPB(table.partition_schema(), schema));
  SchemaPB next = table.schema();
  int32_t next_id = table.next_column_id() > 0 ? table.next_column_id() : schema.MaxColumnId() + 1;
  bool columns_changed = false;
  for (int i = 0; i < req.steps_size(); i++) {
    const AlterTableStepPB& step = req.steps(i);
    const std::string where = "step " + std::to_string(i + 1);
    *code = MasterErrorPB::INVALID_SCHEMA;
    switch (step.type()) {
      case AlterTableStepPB::ADD_COLUMN: {
        ColumnSchemaPB c = step.add_column();
        if (c.name().empty()) return Status::InvalidArgument(where + ": the new column has no name");
        if (FindColumn(&next, c.name()) != nullptr) {
          return Status::AlreadyPresent(where + ": the table already has a column " +
                                        Quote(c.name()));
        }
        if (c.is_key()) {
          return Status::InvalidArgument(where + ": " + Quote(c.name()) +
                                         " cannot be added as a key column: the primary key "
                                         "cannot change");
        }
        if (c.has_id() || c.has_read_default_value()) {
          return Status::InvalidArgument(where + ": a new column's id and read default are "
                                         "the master's to set");
        }
        if (c.has_default_value()) {
          RETURN_NOT_OK(CheckValue(c, c.default_value(), where + ": default"));
        } else if (!c.is_nullable()) {
          return Status::InvalidArgument(
              where + ": column " + Quote(c.name()) +
                  " is NOT NULL without a default, so the rows already stored have no value "
                  "for it",
              "add it nullable, or give it a default");
        }
        c.set_id(next_id++);
        // What the rows stored before it read.
        if (c.has_default_value()) c.set_read_default_value(c.default_value());
        *next.add_columns() = std::move(c);
        columns_changed = true;
        break;
      }
      case AlterTableStepPB::DROP_COLUMN: {
        ASSIGN_OR_RETURN(ColumnSchemaPB * c, NonKeyColumn(&next, step.column_name(),
                                                         (where + ": drop").c_str()));
        auto* cols = next.mutable_columns();
        for (int k = 0; k < cols->size(); k++) {
          if (&cols->at(k) == c) {
            cols->erase(cols->begin() + k);
            break;
          }
        }
        columns_changed = true;
        break;
      }
      case AlterTableStepPB::RENAME_COLUMN: {
        ASSIGN_OR_RETURN(ColumnSchemaPB * c, NonKeyColumn(&next, step.column_name(),
                                                         (where + ": rename").c_str()));
        if (step.new_column_name().empty()) {
          return Status::InvalidArgument(where + ": no new name for column " +
                                         Quote(step.column_name()));
        }
        if (step.new_column_name() != c->name() && FindColumn(&next, step.new_column_name())) {
          return Status::AlreadyPresent(where + ": the table already has a column " +
                                        Quote(step.new_column_name()));
        }
        c->set_name(step.new_column_name());
        columns_changed = true;
        break;
      }
      case AlterTableStepPB::ALTER_COLUMN: {
        ASSIGN_OR_RETURN(ColumnSchemaPB * c, NonKeyColumn(&next, step.column_name(),
                                                         (where + ": alter").c_str()));
        if (step.has_new_default() && step.remove_default()) {
          return Status::InvalidArgument(where + ": both a new default and its removal");
        }
        if (!step.has_new_default() && !step.remove_default() && !step.has_new_comment()) {
          return Status::InvalidArgument(where + ": nothing to change in column " +
                                         Quote(c->name()));
        }
        if (step.has_new_default()) {
          RETURN_NOT_OK(CheckValue(*c, step.new_default(), where + ": default"));
          c->set_default_value(step.new_default());
        }
        if (step.remove_default()) c->clear_default_value();
        if (step.has_new_comment()) c->set_comment(step.new_comment());
        columns_changed = true;
        break;
      }
      case AlterTableStepPB::ADD_RANGE_PARTITION: {
        *code = MasterErrorPB::INVALID_PARTITION_SCHEMA;
        Result<std::pair<std::string, std::string>> r = RangeOf(step, schema, ps);
        if (!r.ok()) return r.status().CloneAndPrepend(where + ": add range partition");
        for (const auto& have : ranges) {
          if (Overlap(have, *r)) {
            return Status::InvalidArgument(
                where + ": the range " + ps.RangeToString(r->first, r->second, schema) +
                " overlaps the table's range partition " +
                ps.RangeToString(have.first, have.second, schema));
          }
        }
        ranges.push_back(*r);
        ASSIGN_OR_RETURN(std::vector<Partition> parts,
                         ps.CreatePartitions(std::vector<std::string>{}, {*r}));
        for (Partition& p : parts) plan.add_partitions.push_back(std::move(p));
        break;
      }
      case AlterTableStepPB::DROP_RANGE_PARTITION: {
        *code = MasterErrorPB::INVALID_PARTITION_SCHEMA;
        Result<std::pair<std::string, std::string>> r = RangeOf(step, schema, ps);
        if (!r.ok()) return r.status().CloneAndPrepend(where + ": drop range partition");
        auto it = std::find(ranges.begin(), ranges.end(), *r);
        if (it == ranges.end()) {
          return Status::NotFound(where + ": the table has no range partition " +
                                      ps.RangeToString(r->first, r->second, schema),
                                  "name a range exactly as `table describe` lists it");
        }
        ranges.erase(it);
        // A range added by an earlier step of this request is simply not added.
        auto added = std::remove_if(plan.add_partitions.begin(), plan.add_partitions.end(),
                                    [&](const Partition& p) {
                                      return p.range_key_start == r->first &&
                                             p.range_key_end == r->second;
                                    });
        if (added != plan.add_partitions.end()) {
          plan.add_partitions.erase(added, plan.add_partitions.end());
        } else {
          plan.drop_ranges.push_back(*r);
        }
        break;
      }
      default:
        *code = MasterErrorPB::INVALID_ARGUMENT;
        return Status::InvalidArgument(where + ": unknown step type " +
                                       std::to_string(int(step.type())));
    }
  }
  if (ranges.empty() && !ps.range_columns().empty() &&
      (!plan.drop_ranges.empty() || !plan.add_partitions.empty())) {
    *code = MasterErrorPB::INVALID_PARTITION_SCHEMA;
    return Status::InvalidArgument("the alteration would drop the table's last range partition",
                                   "add another range first, or delete the table");
  }
  if (columns_changed || plan.schema_changed) {
    *code = MasterErrorPB::INVALID_SCHEMA;
    next.set_version(table.schema().version() + 1);
    Result<Schema> checked = Schema::FromPB(next);
    if (!checked.ok()) return checked.status().CloneAndPrepend("the altered schema");
    *plan.table.mutable_schema() = std::move(next);
    plan.schema_changed = true;
  }
  plan.table.set_next_column_id(next_id);
  return plan;
}

}  // namespace nyala::master
