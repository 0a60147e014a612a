// The JSON form of a table definition taken by `nyala table create`:
//
//   {
//     "name": "metrics",
//     "columns": [
//       {"name": "host", "type": "STRING", "key": true},
//       {"name": "ts", "type": "UNIXTIME_MICROS", "key": true},
//       {"name": "value", "type": "DOUBLE", "nullable": true}
//     ],
//     "hash_partitions": [{"columns": ["host"], "buckets": 4}],
//     "range_partition": {"columns": ["ts"], "splits": [[1000000], [2000000]],
//                         "bounds": [{"lower": [0], "upper": [3000000]}]},
//     "num_replicas": 1
//   }
//
// Errors name the offending field by its JSON path ("columns[2].type: ...").
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "client/client.h"
#include "common/result.h"

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
};

Result<TableSpec> ParseTableSpec(const nlohmann::json& j);

// Configures `creator` from `spec` (name, schema, partitioning, replicas).
Status ApplyTableSpec(const TableSpec& spec, client::TableCreator* creator);

}  // namespace nyala::tools
