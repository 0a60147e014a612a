#include "tools/table_alter.h"

#include "nyala/arena.h"
#include "tools/table_spec.h"
#include "tools/value_parse.h"

namespace nyala::tools {

using nlohmann::json;

const char kAlterStepsHelp[] = R"(The alteration is a JSON array of steps (or {"steps": [...]}), inline or in a
file, applied together or not at all. Each step is an object with one key:
  {"add_column": {"name": "n", "type": "INT64", "nullable": true, "default": 0,
                  "comment": "..."}}      a column as a table spec gives it
  {"drop_column": "n"}
  {"rename_column": {"name": "n", "new_name": "m"}}
  {"rename_table": "new_name"}
  {"column_set_default": {"name": "n", "default": 5}}
  {"column_remove_default": "n"}
  {"column_set_comment": {"name": "n", "comment": "..."}}
  {"set_comment": "the table's comment"}
  {"add_range_partition": {"lower": [values], "upper": [values]}}
  {"drop_range_partition": {"lower": [values], "upper": [values]}}
Range bounds are arrays of range-column values ([] = unbounded), lower inclusive,
upper exclusive. The primary key and column types cannot change; an added column is
nullable or has a default, which the rows already stored read. Stored rows are not
rewritten: the change is online, and every tablet takes it through its log.)";

Result<ColumnSchema> ColumnOf(const client::Table& table, const std::string& name) {
  ASSIGN_OR_RETURN(int idx, table.schema().ColumnIndex(name));
  return table.schema().column(idx);
}

Result<Row> BoundRow(const client::Table& table, const json& values, const std::string& what) {
  Row row = table.NewRow();
  RETURN_NOT_OK(
      FillRangeRow(table.schema(), table.partition_schema().range_columns(), values, what, &row));
  return row;
}

namespace {

// One step of `table alter`'s JSON: an object with one key, the verb.
Status AddStep(const client::Table& table, const json& step, const std::string& path,
               client::TableAlterer* a, std::string* new_name) {
  if (!step.is_object() || step.size() != 1) {
    return Status::InvalidArgument(path + ": expected an object with one key, the step's verb");
  }
  const std::string verb = step.begin().key();
  const json& v = step.begin().value();
  const std::string where = path + "." + verb;
  auto need_string = [&](const json& j, const std::string& field) -> Result<std::string> {
    if (!j.is_object() || !j.contains(field) || !j[field].is_string()) {
      return Status::InvalidArgument(where + ": expected \"" + field + "\": a string");
    }
    return j[field].get<std::string>();
  };
  if (verb == "add_column") {
    if (!v.is_object()) return Status::InvalidArgument(where + ": expected a column object");
    // A column as a table spec gives it (name, type, nullable, default, comment).
    json spec = {{"name", "x"},
                 {"columns", json::array({{{"name", "k"}, {"type", "INT8"}, {"key", true}}, v})}};
    Result<TableSpec> parsed = ParseTableSpec(spec);
    if (!parsed.ok()) {
      std::string msg = parsed.status().message();
      const std::string prefix = "columns[1]";
      if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
      return Status::InvalidArgument(where + msg);
    }
    const ColumnSchema& c = parsed->schema.column(1);
    a->AddColumn(c.name(), c.type(), c.is_nullable(), c.default_value(), c.comment());
  } else if (verb == "drop_column") {
    if (!v.is_string()) return Status::InvalidArgument(where + ": expected a column name");
    a->DropColumn(v.get<std::string>());
  } else if (verb == "rename_column") {
    ASSIGN_OR_RETURN(std::string name, need_string(v, "name"));
    ASSIGN_OR_RETURN(std::string to, need_string(v, "new_name"));
    a->RenameColumn(name, to);
  } else if (verb == "rename_table") {
    if (!v.is_string()) return Status::InvalidArgument(where + ": expected the new name");
    *new_name = v.get<std::string>();
    a->RenameTo(*new_name);
  } else if (verb == "column_set_default") {
    ASSIGN_OR_RETURN(std::string name, need_string(v, "name"));
    if (!v.contains("default")) return Status::InvalidArgument(where + ": expected \"default\"");
    ASSIGN_OR_RETURN(ColumnSchema col, ColumnOf(table, name));
    Arena arena;
    Result<Cell> cell = ParseCellJson(col, v["default"], &arena);
    if (!cell.ok()) return Status::InvalidArgument(where + ".default: " + cell.status().message());
    a->SetColumnDefault(name, Value(*cell));
  } else if (verb == "column_remove_default") {
    if (!v.is_string()) return Status::InvalidArgument(where + ": expected a column name");
    a->RemoveColumnDefault(v.get<std::string>());
  } else if (verb == "column_set_comment") {
    ASSIGN_OR_RETURN(std::string name, need_string(v, "name"));
    ASSIGN_OR_RETURN(std::string comment, need_string(v, "comment"));
    a->SetColumnComment(name, comment);
  } else if (verb == "set_comment") {
    if (!v.is_string()) return Status::InvalidArgument(where + ": expected the comment");
    a->SetComment(v.get<std::string>());
  } else if (verb == "add_range_partition" || verb == "drop_range_partition") {
    if (!v.is_object()) {
      return Status::InvalidArgument(where + ": expected {\"lower\": [...], \"upper\": [...]}");
    }
    ASSIGN_OR_RETURN(Row lower, BoundRow(table, v.value("lower", json::array()), where + ".lower"));
    ASSIGN_OR_RETURN(Row upper, BoundRow(table, v.value("upper", json::array()), where + ".upper"));
    if (verb == "add_range_partition") {
      a->AddRangePartition(lower, upper);
    } else {
      a->DropRangePartition(lower, upper);
    }
  } else {
    return Status::InvalidArgument(
        where + ": unknown step (expected add_column, drop_column, rename_column, rename_table, "
                "column_set_default, column_remove_default, column_set_comment, set_comment, "
                "add_range_partition or drop_range_partition)");
  }
  return Status::OK();
}

}  // namespace

Status AddAlterSteps(const client::Table& table, const json& steps, client::TableAlterer* alterer,
                     std::string* new_name) {
  const json& list =
      steps.is_object() && steps.contains("steps") && steps.size() == 1 ? steps["steps"] : steps;
  if (!list.is_array() || list.empty()) {
    return Status::InvalidArgument(
        "the alteration must be a non-empty array of steps (or {\"steps\": [...]})");
  }
  for (size_t i = 0; i < list.size(); i++) {
    RETURN_NOT_OK(AddStep(table, list[i], "steps[" + std::to_string(i) + "]", alterer, new_name));
  }
  return Status::OK();
}

}  // namespace nyala::tools
