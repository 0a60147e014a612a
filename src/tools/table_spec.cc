#include "tools/table_spec.h"
#include "common/result.h"

#include "tools/value_parse.h"

namespace nyala::tools {

using nlohmann::json;

// Keep in step with ParseTableSpec below and the README's "Table specs" section.
const char kTableSpecHelp[] =
    R"(The table spec is a JSON object, given inline (an argument whose first non-blank
character is '{') or as the name of a file that holds it. For example:

  {"name": "metrics",
   "columns": [{"name": "host", "type": "STRING", "key": true},
               {"name": "ts", "type": "UNIXTIME_MICROS", "key": true},
               {"name": "value", "type": "DOUBLE", "nullable": true, "default": 0.0}],
   "hash_partitions": [{"columns": ["host"], "buckets": 4}],
   "range_partition": {"columns": ["ts"],
                       "splits": [[1700000000000000]],
                       "bounds": [{"lower": [1600000000000000],
                                   "upper": [1800000000000000]}]},
   "num_replicas": 1}

Fields (any other field is an error, named by its path, e.g. columns[2].type):
  name             the table's name (required): not empty, at most 256 bytes, no
                   control characters.
  columns          the columns in order (required, not empty). Key columns come
                   first, and there is at least one. Each column is an object:
    name           its name (required; unique in the table).
    type           its type (required): BOOL, INT8, INT16, INT32, INT64, FLOAT,
                   DOUBLE, STRING, BINARY or UNIXTIME_MICROS (microseconds since
                   1970-01-01 UTC; TIMESTAMP means the same). Any letter case.
    key            true for a primary-key column (default false). Key columns are
                   never NULL and have no default.
    nullable       true if the column may hold NULL (default false).
    default        the value a row gets when a write leaves the column out (non-key
                   columns only; see Values below).
    comment        a free-text description of the column (default none).
  hash_partitions  hash dimensions (default: none), an array of objects:
    columns        the key columns hashed together (required); a column is in at
                   most one dimension.
    buckets        the number of buckets, 2 to 65536 (required).
    seed           the hash seed, an unsigned 32-bit integer (default 0).
  range_partition  range partitioning on key columns (default: none, which is one
                   range that holds every key), an object:
    columns        the key columns whose values, in this order, order the ranges
                   (required).
    splits         split points (default: none): an array of rows, each an array
                   of values, one per range column, strictly increasing. Each split
                   point is the inclusive start of a range.
    bounds         the ranges that exist (default: one unbounded range): an array
                   of {"lower": [values], "upper": [values]}, sorted and not
                   overlapping; lower is inclusive, upper exclusive, and [] or a
                   missing bound is unbounded. Every split point must lie inside a
                   bound. A write to a key outside every bound fails (no tablet
                   covers it).
  comment          a free-text description of the table (default none).
  num_replicas     replicas of each tablet: odd, 1 to --max_num_replicas (7);
                   default --default_num_replicas (3), both flags of the master. A
                   table needs that many live tablet servers.

Values in default, splits and bounds: BOOL true or false; the integer types a JSON
integer (or a string holding one); UNIXTIME_MICROS a JSON integer of microseconds
since 1970-01-01 UTC or an ISO-8601 string ("2023-11-14T22:13:21.5Z", with Z or an
offset like +01:00); FLOAT and DOUBLE a JSON number, or a string holding one or
"NaN", "Infinity", "-Infinity"; STRING a JSON string; BINARY a JSON string of its
bytes in standard base64 with = padding ("AP8=" is 0x00 0xff); null only as the
default of a nullable column. 'nyala table describe --format=json' prints a table's
definition as such a spec, which creates a table like it.

The table gets one tablet per range and combination of hash buckets (one bucket of
every dimension), at most 100000 in all.)";

namespace {

Status FieldError(const std::string& path, const std::string& msg) {
  return Status::InvalidArgument(path + ": " + msg);
}

Result<std::vector<std::string>> StringList(const json& j, const std::string& path) {
  if (!j.is_array()) return FieldError(path, "expected an array of column names");
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); i++) {
    if (!j[i].is_string()) {
      return FieldError(path + "[" + std::to_string(i) + "]", "expected a column name (string)");
    }
    out.push_back(j[i].get<std::string>());
  }
  return out;
}

Status CheckKeys(const json& obj, const std::string& path,
                 std::initializer_list<const char*> allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok |= it.key() == a;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      return FieldError(path.empty() ? it.key() : path + "." + it.key(),
                        "unknown field (expected one of " + list + ")");
    }
  }
  return Status::OK();
}

}  // namespace

Status FillRangeRow(const Schema& schema, const std::vector<std::string>& range_cols,
                    const json& values, const std::string& path, Row* row) {
  if (!values.is_array()) return FieldError(path, "expected an array of range-column values");
  if (values.empty()) return Status::OK();  // unbounded
  if (values.size() != range_cols.size()) {
    return FieldError(path, "expected " + std::to_string(range_cols.size()) +
                                " values (one per range column), got " +
                                std::to_string(values.size()));
  }
  for (size_t i = 0; i < values.size(); i++) {
    ASSIGN_OR_RETURN(int idx, schema.ColumnIndex(range_cols[i]));
    auto cell = ParseCellJson(schema.column(idx), values[i], row->arena());
    if (!cell.ok())
      return FieldError(path + "[" + std::to_string(i) + "]", cell.status().message());
    RETURN_NOT_OK(row->SetCopy(idx, *cell));
  }
  return Status::OK();
}

Result<TableSpec> ParseTableSpec(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("the table spec must be a JSON object");
  RETURN_NOT_OK(
      CheckKeys(j, "", {"name", "columns", "hash_partitions", "range_partition", "num_replicas",
                      "comment"}));
  TableSpec spec;
  if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty()) {
    return FieldError("name", "expected a non-empty table name");
  }
  spec.name = j["name"].get<std::string>();
  if (!j.contains("columns") || !j["columns"].is_array() || j["columns"].empty()) {
    return FieldError("columns", "expected a non-empty array of columns");
  }
  std::vector<ColumnSchema> cols;
  int num_keys = 0;
  bool seen_value = false;
  for (size_t i = 0; i < j["columns"].size(); i++) {
    const json& c = j["columns"][i];
    const std::string path = "columns[" + std::to_string(i) + "]";
    if (!c.is_object()) return FieldError(path, "expected an object");
    RETURN_NOT_OK(CheckKeys(c, path, {"name", "type", "key", "nullable", "default", "comment"}));
    if (c.contains("comment") && !c["comment"].is_string()) {
      return FieldError(path + ".comment", "expected a string");
    }
    if (!c.contains("name") || !c["name"].is_string()) {
      return FieldError(path + ".name", "expected a column name");
    }
    if (!c.contains("type") || !c["type"].is_string()) {
      return FieldError(path + ".type", "expected a type name");
    }
    auto type = ParseTypeName(c["type"].get<std::string>());
    if (!type.ok()) return FieldError(path + ".type", type.status().message());
    const bool key = c.value("key", false);
    const bool nullable = c.value("nullable", false);
    if (key && seen_value) {
      return FieldError(path + ".key", "key columns must come before every non-key column");
    }
    if (key && nullable) return FieldError(path + ".nullable", "a key column cannot be nullable");
    Value def;
    if (c.contains("default")) {
      if (key) return FieldError(path + ".default", "a key column cannot have a default");
      ColumnSchema tmp(c["name"].get<std::string>(), *type, nullable);
      Arena arena;
      auto cell = ParseCellJson(tmp, c["default"], &arena);
      if (!cell.ok()) return FieldError(path + ".default", cell.status().message());
      def = Value(*cell);
    }
    if (key)
      num_keys++;
    else
      seen_value = true;
    cols.emplace_back(c["name"].get<std::string>(), *type, nullable, def);
    cols.back().set_comment(c.value("comment", std::string()));
  }
  if (num_keys == 0) return FieldError("columns", "at least one column needs \"key\": true");
  auto schema = Schema::Create(std::move(cols), num_keys, 0);
  if (!schema.ok()) return FieldError("columns", schema.status().message());
  spec.schema = std::move(*schema);

  if (j.contains("hash_partitions")) {
    const json& hp = j["hash_partitions"];
    if (!hp.is_array()) return FieldError("hash_partitions", "expected an array");
    for (size_t i = 0; i < hp.size(); i++) {
      const std::string path = "hash_partitions[" + std::to_string(i) + "]";
      if (!hp[i].is_object()) return FieldError(path, "expected an object");
      RETURN_NOT_OK(CheckKeys(hp[i], path, {"columns", "buckets", "seed"}));
      TableSpec::Hash h;
      ASSIGN_OR_RETURN(h.columns, StringList(hp[i].value("columns", json()), path + ".columns"));
      if (!hp[i].contains("buckets") || !hp[i]["buckets"].is_number_integer()) {
        return FieldError(path + ".buckets", "expected an integer >= 2");
      }
      h.buckets = hp[i]["buckets"].get<int32_t>();
      h.seed = hp[i].value("seed", 0u);
      spec.hash_partitions.push_back(std::move(h));
    }
  }
  if (j.contains("range_partition")) {
    const json& rp = j["range_partition"];
    if (!rp.is_object()) return FieldError("range_partition", "expected an object");
    RETURN_NOT_OK(CheckKeys(rp, "range_partition", {"columns", "splits", "bounds"}));
    ASSIGN_OR_RETURN(spec.range_columns,
                     StringList(rp.value("columns", json()), "range_partition.columns"));
    if (rp.contains("splits")) {
      if (!rp["splits"].is_array())
        return FieldError("range_partition.splits", "expected an array");
      for (const auto& s : rp["splits"]) spec.splits.push_back(s);
    }
    if (rp.contains("bounds")) {
      const json& b = rp["bounds"];
      if (!b.is_array()) return FieldError("range_partition.bounds", "expected an array");
      for (size_t i = 0; i < b.size(); i++) {
        const std::string path = "range_partition.bounds[" + std::to_string(i) + "]";
        if (!b[i].is_object())
          return FieldError(path, "expected {\"lower\": [...], \"upper\": [...]}");
        RETURN_NOT_OK(CheckKeys(b[i], path, {"lower", "upper"}));
        spec.bounds.emplace_back(b[i].value("lower", json::array()),
                                 b[i].value("upper", json::array()));
      }
    }
  }
  if (j.contains("comment")) {
    if (!j["comment"].is_string()) return FieldError("comment", "expected a string");
    spec.comment = j["comment"].get<std::string>();
  }
  if (j.contains("num_replicas")) {
    if (!j["num_replicas"].is_number_integer() || j["num_replicas"].get<int>() < 1) {
      return FieldError("num_replicas", "expected a positive integer");
    }
    spec.num_replicas = j["num_replicas"].get<int>();
  }
  // Check the row values now, so errors name the JSON field.
  for (size_t i = 0; i < spec.splits.size(); i++) {
    Row row(&spec.schema);
    RETURN_NOT_OK(FillRangeRow(spec.schema, spec.range_columns, spec.splits[i],
                               "range_partition.splits[" + std::to_string(i) + "]", &row));
  }
  for (size_t i = 0; i < spec.bounds.size(); i++) {
    Row row(&spec.schema);
    const std::string path = "range_partition.bounds[" + std::to_string(i) + "]";
    RETURN_NOT_OK(
        FillRangeRow(spec.schema, spec.range_columns, spec.bounds[i].first, path + ".lower", &row));
    Row row2(&spec.schema);
    RETURN_NOT_OK(FillRangeRow(spec.schema, spec.range_columns, spec.bounds[i].second,
                               path + ".upper", &row2));
  }
  return spec;
}

Status ApplyTableSpec(const TableSpec& spec, client::TableCreator* creator) {
  creator->table_name(spec.name).schema(spec.schema);
  for (const auto& h : spec.hash_partitions) {
    creator->add_hash_partitions(h.columns, h.buckets, h.seed);
  }
  if (!spec.range_columns.empty()) creator->set_range_partition_columns(spec.range_columns);
  for (size_t i = 0; i < spec.splits.size(); i++) {
    Row row = creator->NewRow();
    RETURN_NOT_OK(FillRangeRow(spec.schema, spec.range_columns, spec.splits[i],
                               "range_partition.splits[" + std::to_string(i) + "]", &row));
    creator->add_range_partition_split(row);
  }
  for (size_t i = 0; i < spec.bounds.size(); i++) {
    const std::string path = "range_partition.bounds[" + std::to_string(i) + "]";
    Row lower = creator->NewRow();
    Row upper = creator->NewRow();
    RETURN_NOT_OK(FillRangeRow(spec.schema, spec.range_columns, spec.bounds[i].first,
                               path + ".lower", &lower));
    RETURN_NOT_OK(FillRangeRow(spec.schema, spec.range_columns, spec.bounds[i].second,
                               path + ".upper", &upper));
    creator->add_range_partition(lower, upper);
  }
  if (spec.num_replicas > 0) creator->num_replicas(spec.num_replicas);
  creator->comment(spec.comment);
  return Status::OK();
}

}  // namespace nyala::tools
