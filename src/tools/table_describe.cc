#include "tools/table_describe.h"

#include "nyala/arena.h"

namespace nyala::tools {

using nlohmann::json;

RangeLayout RangesOf(const std::vector<client::TabletInfo>& tablets) {
  RangeLayout r;
  if (tablets.empty()) return r;
  const std::vector<int32_t>& first = tablets[0].partition.hash_buckets;
  for (const auto& t : tablets) {
    if (t.partition.hash_buckets != first) continue;
    r.ranges.emplace_back(t.partition.range_key_start, t.partition.range_key_end);
  }
  for (size_t i = 0; i < r.ranges.size(); i++) {
    const auto& [start, end] = r.ranges[i];
    if (i > 0 && !start.empty() && r.bounds.back().second == start) {
      r.splits.push_back(start);
      r.bounds.back().second = end;
    } else {
      r.bounds.emplace_back(start, end);
    }
  }
  return r;
}

json DescribeTableJson(const client::Table& table, const std::vector<client::TabletInfo>& tablets,
                       TimestampFormat ts) {
  const Schema& schema = table.schema();
  const PartitionSchema& ps = table.partition_schema();
  json columns = json::array();
  for (int i = 0; i < schema.num_columns(); i++) {
    const ColumnSchema& c = schema.column(i);
    columns.push_back(
        {{"column", c.name()},
         {"type", DataTypeName(c.type())},
         {"key", schema.is_key_column(i)},
         {"nullable", c.is_nullable()},
         {"default",
          c.default_value().has_value() ? CellToJson(c.default_value().cell(), ts) : json()}});
  }
  const RangeLayout ranges = RangesOf(tablets);
  // A range key as the spec's array of values ([] = unbounded).
  auto values = [&](const std::string& key) {
    json arr = json::array();
    if (key.empty()) return arr;
    Arena arena;
    std::vector<Cell> cells;
    if (!ps.DecodeRangeKey(Slice(key), schema, &arena, &cells).ok()) return json(nullptr);
    for (const Cell& c : cells) arr.push_back(CellToJson(c, ts));
    return arr;
  };
  json hash = json::array();
  for (const HashDimension& d : ps.hash_dimensions()) {
    hash.push_back({{"columns", d.columns}, {"buckets", d.num_buckets}, {"seed", d.seed}});
  }
  // hash_partitions and range_partition in the form of a table spec; the ranges
  // (bounds cut at the split points) and each tablet's partition as text.
  json range = {
      {"columns", ps.range_columns()}, {"splits", json::array()}, {"bounds", json::array()}};
  json range_texts = json::array();
  for (const auto& s : ranges.splits) range["splits"].push_back(values(s));
  for (const auto& [lower, upper] : ranges.bounds) {
    range["bounds"].push_back({{"lower", values(lower)}, {"upper", values(upper)}});
  }
  for (const auto& [lower, upper] : ranges.ranges) {
    range_texts.push_back(ps.RangeToString(lower, upper, schema));
  }
  json tablets_json = json::array();
  for (const auto& t : tablets) {
    tablets_json.push_back({{"tablet_id", t.tablet_id},
                            {"hash_buckets", t.partition.hash_buckets},
                            {"partition", ps.PartitionToString(t.partition, schema)}});
  }
  json j = {{"name", table.name()},
            {"id", table.id()},
            {"num_replicas", table.num_replicas()},
            {"partitioning", ps.ToString()},
            {"hash_partitions", hash},
            {"range_partition", range},
            {"ranges", range_texts},
            {"tablets", tablets_json},
            {"columns", columns}};
  return j;
}

}  // namespace nyala::tools
