// nyala table add_column | drop_column | rename_column | rename_table |
// column_set_default | column_remove_default | column_set_comment | set_comment |
// add_range_partition | drop_range_partition | alter: Kudu's verbs for changing a table,
// each one TableAlterer (client.h) that waits until every tablet has the change.
#include <gflags/gflags.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/result.h"
#include "nyala/arena.h"
#include "tools/table_spec.h"
#include "tools/tool_action.h"
#include "tools/value_parse.h"

DEFINE_bool(nullable, true,
            "add_column: the new column may hold NULL (--nonullable: NOT NULL, which needs "
            "--default_value, the value the rows already stored read).");
DEFINE_string(default_value, "",
              "add_column: the column's default, in the value forms of 'table get' (\"\" = "
              "none).");
DEFINE_string(comment, "", "add_column: a comment on the new column.");
DECLARE_bool(wait);
DECLARE_int32(wait_timeout_sec);

namespace nyala::tools {

namespace {

using nlohmann::json;

// The type and name of column `name` of `table`.
Result<ColumnSchema> ColumnOf(const client::Table& table, const std::string& name) {
  ASSIGN_OR_RETURN(int idx, table.schema().ColumnIndex(name));
  return table.schema().column(idx);
}

Result<Value> ParseValue(const ColumnSchema& col, const std::string& text) {
  Arena arena;
  Result<Cell> cell = ParseCellText(col, text, &arena);
  if (!cell.ok()) {
    return Status::InvalidArgument("value '" + text + "' for " + DataTypeName(col.type()) +
                                   " column '" + col.name() + "': " + cell.status().message());
  }
  return Value(*cell);
}

// A range bound row of `table` from a JSON array of range-column values ([] =
// unbounded).
Result<Row> BoundRow(const client::Table& table, const json& values, const std::string& what) {
  Row row = table.NewRow();
  RETURN_NOT_OK(
      FillRangeRow(table.schema(), table.partition_schema().range_columns(), values, what, &row));
  return row;
}

Result<json> ParseJsonArg(const std::string& text, const std::string& what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument(what + ": not valid JSON: " + text);
  return j;
}

// Runs `alterer` (waiting with --wait, up to --wait_timeout_sec) and says what it did.
Status RunAlter(const std::shared_ptr<client::Client>& client, const std::string& table,
                const std::string& new_name, client::TableAlterer* alterer) {
  alterer->wait(FLAGS_wait).timeout(MonoDelta::FromSeconds(FLAGS_wait_timeout_sec));
  if (FLAGS_wait) fprintf(stderr, "Altering table %s...\n", table.c_str());
  RETURN_NOT_OK(alterer->Alter());
  const std::string now = new_name.empty() ? table : new_name;
  ASSIGN_OR_RETURN(auto t, client->OpenTable(now));
  printf("Altered table %s: schema version %u%s\n", now.c_str(), t->schema().version(),
         FLAGS_wait ? "" : " (--nowait: its tablets take the change in the background)");
  return Status::OK();
}

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

Status AlterFromJson(const std::vector<std::string>& args) {
  std::string text = args[2];
  const size_t b = text.find_first_not_of(" \t\n");
  if (b == std::string::npos || (text[b] != '[' && text[b] != '{')) {
    std::ifstream in(text);
    if (!in) return Status::NotFound("cannot read alteration file " + text);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  ASSIGN_OR_RETURN(json j, ParseJsonArg(text, "alteration"));
  if (j.is_object() && j.contains("steps") && j.size() == 1) j = j["steps"];
  if (!j.is_array() || j.empty()) {
    return Status::InvalidArgument("the alteration must be a non-empty array of steps (or "
                                   "{\"steps\": [...]})");
  }
  ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
  ASSIGN_OR_RETURN(auto table, client->OpenTable(args[1]));
  auto a = client->NewTableAlterer(args[1]);
  std::string new_name;
  for (size_t i = 0; i < j.size(); i++) {
    RETURN_NOT_OK(AddStep(*table, j[i], "steps[" + std::to_string(i) + "]", a.get(), &new_name));
  }
  return RunAlter(client, args[1], new_name, a.get());
}

// The one-step verbs: `fill` adds the step from the arguments after <table>.
using Fill = std::function<Status(const client::Table& table, const std::vector<std::string>& rest,
                                  client::TableAlterer* a, std::string* new_name)>;

std::function<Status(const std::vector<std::string>&)> OneStep(Fill fill) {
  return [fill](const std::vector<std::string>& args) -> Status {
    ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
    ASSIGN_OR_RETURN(auto table, client->OpenTable(args[1]));
    auto a = client->NewTableAlterer(args[1]);
    std::string new_name;
    RETURN_NOT_OK(fill(*table, std::vector<std::string>(args.begin() + 2, args.end()), a.get(),
                       &new_name));
    return RunAlter(client, args[1], new_name, a.get());
  };
}

Status FillRange(const client::Table& table, const std::vector<std::string>& rest, bool add,
                 client::TableAlterer* a) {
  ASSIGN_OR_RETURN(json lo, ParseJsonArg(rest[0], "lower bound"));
  ASSIGN_OR_RETURN(json hi, ParseJsonArg(rest[1], "upper bound"));
  ASSIGN_OR_RETURN(Row lower, BoundRow(table, lo, "lower bound"));
  ASSIGN_OR_RETURN(Row upper, BoundRow(table, hi, "upper bound"));
  if (add) {
    a->AddRangePartition(lower, upper);
  } else {
    a->DropRangePartition(lower, upper);
  }
  return Status::OK();
}

const char kAlterHelp[] = R"(The alteration is a JSON array of steps (or {"steps": [...]}), inline or in a
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

}  // namespace

void RegisterTableAlterActions() {
  auto& a = AllActions();
  const std::string m = "<master_addresses> <table>";
  const std::vector<std::string> wait = {"wait", "wait_timeout_sec"};
  const std::string waits_alone =
      "Waits (--wait, the default) until every tablet has the change; other clients keep "
      "reading and writing meanwhile.";
  const std::string waits = "\n\n" + waits_alone;
  a.push_back({"table", "add_column", "Add a non-key column.", m + " <column> <type>",
               {"nullable", "default_value", "comment", "wait", "wait_timeout_sec"}, 4, 4,
               OneStep([](const client::Table&, const std::vector<std::string>& r,
                          client::TableAlterer* a, std::string*) -> Status {
                 ASSIGN_OR_RETURN(DataType type, ParseTypeName(r[1]));
                 Value def;
                 if (!FLAGS_default_value.empty()) {
                   ASSIGN_OR_RETURN(def, ParseValue(ColumnSchema(r[0], type, FLAGS_nullable),
                                                    FLAGS_default_value));
                 }
                 a->AddColumn(r[0], type, FLAGS_nullable, def, FLAGS_comment);
                 return Status::OK();
               }),
               std::string("Rows already stored read the new column as its default (NULL "
                           "without one). Types as in table specs (INT64, STRING, ...).") +
                   waits});
  a.push_back({"table", "drop_column", "Drop a non-key column.", m + " <column>", wait, 3, 3,
               OneStep([](const client::Table&, const std::vector<std::string>& r,
                          client::TableAlterer* a, std::string*) {
                 a->DropColumn(r[0]);
                 return Status::OK();
               }),
               std::string("Its values disappear at once and their space is reclaimed as the "
                           "tablets compact. A column added later under the same name starts "
                           "empty.") +
                   waits});
  a.push_back({"table", "rename_column", "Rename a non-key column.", m + " <column> <new_name>",
               wait, 4, 4,
               OneStep([](const client::Table&, const std::vector<std::string>& r,
                          client::TableAlterer* a, std::string*) {
                 a->RenameColumn(r[0], r[1]);
                 return Status::OK();
               }),
               waits_alone});
  a.push_back({"table", "rename_table", "Rename a table.", m + " <new_name>", wait, 3, 3,
               OneStep([](const client::Table&, const std::vector<std::string>& r,
                          client::TableAlterer* a, std::string* new_name) {
                 *new_name = r[0];
                 a->RenameTo(r[0]);
                 return Status::OK();
               }),
               waits_alone});
  a.push_back({"table", "column_set_default", "Set a column's default (for rows written from now).",
               m + " <column> <value>", wait, 4, 4,
               OneStep([](const client::Table& t, const std::vector<std::string>& r,
                          client::TableAlterer* a, std::string*) -> Status {
                 ASSIGN_OR_RETURN(ColumnSchema col, ColumnOf(t, r[0]));
                 ASSIGN_OR_RETURN(Value v, ParseValue(col, r[1]));
                 a->SetColumnDefault(r[0], std::move(v));
                 return Status::OK();
               }),
               std::string("The value takes the forms of 'table get' keys.") + waits});
  a.push_back({"table", "column_remove_default", "Remove a column's default.", m + " <column>",
               wait, 3, 3,
               OneStep([](const client::Table&, const std::vector<std::string>& r,
                          client::TableAlterer* a, std::string*) {
                 a->RemoveColumnDefault(r[0]);
                 return Status::OK();
               }),
               waits_alone});
  a.push_back({"table", "column_set_comment", "Set a column's comment (\"\" clears it).",
               m + " <column> <comment>", wait, 4, 4,
               OneStep([](const client::Table&, const std::vector<std::string>& r,
                          client::TableAlterer* a, std::string*) {
                 a->SetColumnComment(r[0], r[1]);
                 return Status::OK();
               }),
               waits_alone});
  a.push_back({"table", "set_comment", "Set the table's comment (\"\" clears it).",
               m + " <comment>", wait, 3, 3,
               OneStep([](const client::Table&, const std::vector<std::string>& r,
                          client::TableAlterer* a, std::string*) {
                 a->SetComment(r[0]);
                 return Status::OK();
               })});
  a.push_back({"table", "add_range_partition",
               "Add a range partition (with its hash buckets): new tablets.",
               m + " <lower_bound> <upper_bound>", wait, 4, 4,
               OneStep([](const client::Table& t, const std::vector<std::string>& r,
                          client::TableAlterer* a, std::string*) {
                 return FillRange(t, r, true, a);
               }),
               std::string("Bounds are JSON arrays of range-column values, e.g. '[100]' and "
                           "'[200]' for 100 <= k < 200; '[]' is unbounded. The range must not "
                           "overlap one the table has.") +
                   waits});
  a.push_back({"table", "drop_range_partition",
               "Drop a range partition: its tablets and their rows are deleted.",
               m + " <lower_bound> <upper_bound>", wait, 4, 4,
               OneStep([](const client::Table& t, const std::vector<std::string>& r,
                          client::TableAlterer* a, std::string*) {
                 return FillRange(t, r, false, a);
               }),
               std::string("The bounds name an existing range exactly, as 'table describe' "
                           "lists them (JSON arrays of range-column values, '[]' unbounded).") +
                   waits});
  a.push_back({"table", "alter", "Apply several changes to a table at once, from JSON.",
               m + " <json|file>", wait, 3, 3, AlterFromJson, kAlterHelp});
}

}  // namespace nyala::tools
