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
#include "tools/table_alter.h"
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

Result<Value> ParseValue(const ColumnSchema& col, const std::string& text) {
  Arena arena;
  Result<Cell> cell = ParseCellText(col, text, &arena);
  if (!cell.ok()) {
    return Status::InvalidArgument("value '" + text + "' for " + DataTypeName(col.type()) +
                                   " column '" + col.name() + "': " + cell.status().message());
  }
  return Value(*cell);
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
  ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
  ASSIGN_OR_RETURN(auto table, client->OpenTable(args[1]));
  auto a = client->NewTableAlterer(args[1]);
  std::string new_name;
  RETURN_NOT_OK(AddAlterSteps(*table, j, a.get(), &new_name));
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
               m + " <json|file>", wait, 3, 3, AlterFromJson, kAlterStepsHelp});
}

}  // namespace nyala::tools
