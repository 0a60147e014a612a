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
    json col = {{"name", c.name()},
                {"type", DataTypeName(c.type())},
                {"key", schema.is_key_column(i)},
                {"nullable", c.is_nullable()}};
    if (c.has_default()) col["default"] = CellToJson(c.default_value().cell(), ts);
    if (!c.comment().empty()) col["comment"] = c.comment();
    columns.push_back(std::move(col));
  }
  json j = {{"name", table.name()}, {"columns", columns}};
  if (!ps.hash_dimensions().empty()) {
    json hash = json::array();
    for (const HashDimension& d : ps.hash_dimensions()) {
      hash.push_back({{"columns", d.columns}, {"buckets", d.num_buckets}, {"seed", d.seed}});
    }
    j["hash_partitions"] = std::move(hash);
  }
  if (!ps.range_columns().empty()) {
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
    json range = {
        {"columns", ps.range_columns()}, {"splits", json::array()}, {"bounds", json::array()}};
    for (const auto& s : ranges.splits) range["splits"].push_back(values(s));
    for (const auto& [lower, upper] : ranges.bounds) {
      range["bounds"].push_back({{"lower", values(lower)}, {"upper", values(upper)}});
    }
    j["range_partition"] = std::move(range);
  }
  j["num_replicas"] = table.num_replicas();
  if (!table.comment().empty()) j["comment"] = table.comment();
  return j;
}

}  // namespace nyala::tools
