// A table's definition as JSON, exactly in the form `nyala table create` takes (a
// table spec, table_spec.h): what `nyala table describe --format=json` prints and the
// Python client's describe_table() returns, so that creating a table from it makes one
// of the same definition. Its fields: name, columns (name, type, key, nullable, and
// default and comment when set), hash_partitions and range_partition (when the table
// has them; the ranges as bounds cut at split points), num_replicas, and comment when
// set. What is not part of a definition (the id, the schema version, the tablets) is
// in the text form of describe.
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

// `tablets`: the table's, in partition-key order (Client::ListTabletsOfTable), which
// give its ranges. Timestamps (defaults, range bounds) in format `ts`.
nlohmann::json DescribeTableJson(const client::Table& table,
                                 const std::vector<client::TabletInfo>& tablets,
                                 TimestampFormat ts);

}  // namespace nyala::tools
