// The JSON form of a table definition taken by `nyala table create`; kTableSpecHelp
// documents every field (it is the --help text of `nyala table create`, and README.md
// repeats it). Errors name the offending field by its JSON path ("columns[2].type: ...").
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "common/result.h"
#include "nyala/client.h"

namespace nyala::tools {

struct TableSpec {
  std::string name;
  Schema schema;
  struct Hash {
    std::vector<std::string> columns;
    int32_t buckets = 0;
    uint32_t seed = 0;
  };
  std::vector<Hash> hash_partitions;
  std::vector<std::string> range_columns;
  std::vector<nlohmann::json> splits;                             // arrays of range-column values
  std::vector<std::pair<nlohmann::json, nlohmann::json>> bounds;  // lower, upper ([] = unbounded)
  int num_replicas = 0;
  std::string comment;
};

Result<TableSpec> ParseTableSpec(const nlohmann::json& j);

// The whole spec for people: an example, every field with its default, the value forms.
extern const char kTableSpecHelp[];

// Fills the range columns of `row` (a row of `schema`) from `values`, a JSON array
// of their values in range-column order ([] = unbounded: nothing set). Errors name
// `path`.
Status FillRangeRow(const Schema& schema, const std::vector<std::string>& range_cols,
                    const nlohmann::json& values, const std::string& path, Row* row);

// Configures `creator` from `spec` (name, schema, partitioning, replicas, comment).
Status ApplyTableSpec(const TableSpec& spec, client::TableCreator* creator);

}  // namespace nyala::tools
