// A table's description as JSON: what `nyala table describe --format=json` prints and
// the Python client's describe_table() returns. Its fields: name, id, num_replicas,
// partitioning (text), hash_partitions and range_partition (in the form of a table
// spec, see table_spec.h), ranges (text, in order), tablets (id, hash buckets and
// partition as text) and columns (column, type, key, nullable, default).
//
// Thread-compatible functions of their arguments.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "nyala/client.h"
#include "tools/value_parse.h"

namespace nyala::tools {

// The table's ranges, in order, as the spec's range_partition: the columns, the split
// points and the bounds (split points cut a bound into ranges). From the partitions of
// the first hash bucket combination, which hold every range once.
struct RangeLayout {
  std::vector<std::pair<std::string, std::string>> ranges;  // encoded [start, end)
  std::vector<std::string> splits;
  std::vector<std::pair<std::string, std::string>> bounds;
};
RangeLayout RangesOf(const std::vector<client::TabletInfo>& tablets);

// `tablets`: the table's, in partition-key order (Client::ListTabletsOfTable).
// Timestamps (defaults, range bounds) in format `ts`.
nlohmann::json DescribeTableJson(const client::Table& table,
                                 const std::vector<client::TabletInfo>& tablets,
                                 TimestampFormat ts);

}  // namespace nyala::tools
