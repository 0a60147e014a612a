#include "nyala/partition.h"
#include "common/row_operations.h"
#include "common/status.h"

#include <cstdio>
#include <set>

#include "common/coding.h"
#include "common/common.pb.h"
#include "common/key_encoding.h"
#include "common/time_format.h"

namespace nyala {

uint64_t MurmurHash2_64(Slice data, uint64_t seed) {
  constexpr uint64_t m = 0xc6a4a7935bd1e995ull;
  constexpr int r = 47;
  const size_t len = data.size();
  const uint8_t* p = data.data();
  uint64_t h = seed ^ (len * m);
  const uint8_t* end = p + (len / 8) * 8;
  for (; p != end; p += 8) {
    uint64_t k = 0;
    for (int i = 7; i >= 0; i--) k = (k << 8) | p[i];  // little-endian on every host
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  switch (len & 7) {
    case 7:
      h ^= uint64_t(p[6]) << 48;
      [[fallthrough]];
    case 6:
      h ^= uint64_t(p[5]) << 40;
      [[fallthrough]];
    case 5:
      h ^= uint64_t(p[4]) << 32;
      [[fallthrough]];
    case 4:
      h ^= uint64_t(p[3]) << 24;
      [[fallthrough]];
    case 3:
      h ^= uint64_t(p[2]) << 16;
      [[fallthrough]];
    case 2:
      h ^= uint64_t(p[1]) << 8;
      [[fallthrough]];
    case 1:
      h ^= uint64_t(p[0]);
      h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

namespace {

std::string Quote(const std::string& s) { return "'" + s + "'"; }

std::string Printable(const std::string& key) {
  if (key.empty()) return "<unbounded>";
  std::string out = "0x";
  char buf[4];
  for (unsigned char c : key) {
    snprintf(buf, sizeof(buf), "%02x", c);
    out += buf;
  }
  return out;
}

std::string DimName(size_t d) { return "hash dimension " + std::to_string(d); }

}  // namespace

void Partition::ToPB(PartitionPB* pb) const {
  pb->Clear();
  pb->set_partition_key_start(partition_key_start);
  pb->set_partition_key_end(partition_key_end);
  for (int32_t b : hash_buckets) pb->add_hash_buckets(b);
  pb->set_range_key_start(range_key_start);
  pb->set_range_key_end(range_key_end);
}

Partition Partition::FromPB(const PartitionPB& pb) {
  Partition p;
  p.partition_key_start = pb.partition_key_start();
  p.partition_key_end = pb.partition_key_end();
  p.hash_buckets.assign(pb.hash_buckets().begin(), pb.hash_buckets().end());
  p.range_key_start = pb.range_key_start();
  p.range_key_end = pb.range_key_end();
  return p;
}

std::string Partition::ToString() const {
  std::string s = "buckets [";
  for (size_t i = 0; i < hash_buckets.size(); i++) {
    if (i > 0) s += ", ";
    s += std::to_string(hash_buckets[i]);
  }
  s += "], keys [" + Printable(partition_key_start) + ", " + Printable(partition_key_end) + ")";
  return s;
}

Result<PartitionSchema> PartitionSchema::Create(const Schema& schema,
                                                std::vector<HashDimension> hash_dimensions,
                                                std::vector<std::string> range_columns) {
  PartitionSchema ps;
  std::set<int> hashed;
  for (size_t d = 0; d < hash_dimensions.size(); d++) {
    const HashDimension& dim = hash_dimensions[d];
    if (dim.columns.empty()) return Status::InvalidArgument(DimName(d) + " has no columns");
    if (dim.num_buckets < 2 || dim.num_buckets > kMaxBuckets) {
      return Status::InvalidArgument(DimName(d) + ": num_buckets is " +
                                     std::to_string(dim.num_buckets) + ", must be between 2 and " +
                                     std::to_string(kMaxBuckets));
    }
    std::vector<int> idxs;
    for (const std::string& name : dim.columns) {
      int idx = schema.FindColumn(name);
      if (idx < 0) {
        return Status::InvalidArgument(DimName(d) + ": column " + Quote(name) + " not in schema");
      }
      if (!schema.is_key_column(idx)) {
        return Status::InvalidArgument(DimName(d) + ": column " + Quote(name) +
                                       " is not a primary key column");
      }
      for (int prev : idxs) {
        if (prev == idx) {
          return Status::InvalidArgument(DimName(d) + " lists column " + Quote(name) + " twice");
        }
      }
      if (!hashed.insert(idx).second) {
        return Status::InvalidArgument("column " + Quote(name) +
                                       " is in more than one hash dimension");
      }
      idxs.push_back(idx);
    }
    ps.hash_idxs_.push_back(std::move(idxs));
  }
  for (const std::string& name : range_columns) {
    int idx = schema.FindColumn(name);
    if (idx < 0) {
      return Status::InvalidArgument("range column " + Quote(name) + " not in schema");
    }
    if (!schema.is_key_column(idx)) {
      return Status::InvalidArgument("range column " + Quote(name) +
                                     " is not a primary key column");
    }
    for (int prev : ps.range_idxs_) {
      if (prev == idx) {
        return Status::InvalidArgument("range column " + Quote(name) + " listed twice");
      }
    }
    ps.range_idxs_.push_back(idx);
  }
  ps.hash_dims_ = std::move(hash_dimensions);
  ps.range_columns_ = std::move(range_columns);
  return ps;
}

Result<PartitionSchema> PartitionSchema::FromPB(const PartitionSchemaPB& pb, const Schema& schema) {
  std::vector<HashDimension> dims;
  for (const auto& d : pb.hash_dimensions()) {
    HashDimension dim;
    dim.columns.assign(d.columns().begin(), d.columns().end());
    dim.num_buckets = d.num_buckets();
    dim.seed = d.seed();
    dims.push_back(std::move(dim));
  }
  std::vector<std::string> range(pb.range_schema().columns().begin(),
                                 pb.range_schema().columns().end());
  return Create(schema, std::move(dims), std::move(range));
}

void PartitionSchema::ToPB(PartitionSchemaPB* pb) const {
  pb->Clear();
  for (const HashDimension& dim : hash_dims_) {
    auto* d = pb->add_hash_dimensions();
    for (const std::string& c : dim.columns) d->add_columns(c);
    d->set_num_buckets(dim.num_buckets);
    d->set_seed(dim.seed);
  }
  auto* range = pb->mutable_range_schema();
  for (const std::string& c : range_columns_) range->add_columns(c);
}

Status PartitionSchema::EncodeColumns(const RowView& row, const std::vector<int>& idxs,
                                      std::string* dst) {
  for (size_t i = 0; i < idxs.size(); i++) {
    const Cell& c = row.cell(idxs[i]);
    if (!c.has_value()) [[unlikely]] {
      return Status::InvalidArgument("partition column '" + row.schema().column(idxs[i]).name() +
                                     "' is " + (c.is_null() ? "NULL" : "not set"));
    }
    EncodeKeyCell(c, i + 1 == idxs.size(), dst);
  }
  return Status::OK();
}

Status PartitionSchema::EncodePartitionKey(const RowView& row, std::string* dst) const {
  for (size_t d = 0; d < hash_dims_.size(); d++) {
    // Encode the hashed columns in place, hash them, then replace them by the bucket.
    const size_t start = dst->size();
    RETURN_NOT_OK(EncodeColumns(row, hash_idxs_[d], dst));
    const uint64_t h =
        MurmurHash2_64(Slice(dst->data() + start, dst->size() - start), hash_dims_[d].seed);
    dst->resize(start);
    PutFixed32BE(dst, static_cast<uint32_t>(h % static_cast<uint64_t>(hash_dims_[d].num_buckets)));
  }
  return EncodeColumns(row, range_idxs_, dst);
}

Result<int32_t> PartitionSchema::HashBucket(const RowView& row, int dim) const {
  if (dim < 0 || dim >= static_cast<int>(hash_dims_.size())) {
    return Status::InvalidArgument("no hash dimension " + std::to_string(dim));
  }
  std::string buf;
  RETURN_NOT_OK(EncodeColumns(row, hash_idxs_[dim], &buf));
  return static_cast<int32_t>(MurmurHash2_64(Slice(buf), hash_dims_[dim].seed) %
                              static_cast<uint64_t>(hash_dims_[dim].num_buckets));
}

Status PartitionSchema::EncodeRangeKey(const RowView& row, std::string* dst) const {
  return EncodeColumns(row, range_idxs_, dst);
}

Result<std::vector<Partition>> PartitionSchema::CreatePartitions(
    const std::vector<std::string>& splits,
    const std::vector<std::pair<std::string, std::string>>& bounds_in) const {
  if (range_idxs_.empty() && (!splits.empty() || !bounds_in.empty())) {
    return Status::InvalidArgument(
        "the table has no range partitioning: split points and range bounds are not allowed");
  }
  std::vector<std::pair<std::string, std::string>> bounds = bounds_in;
  if (bounds.empty()) bounds.emplace_back();
  for (size_t i = 0; i < bounds.size(); i++) {
    const auto& [lower, upper] = bounds[i];
    if (!upper.empty() && lower >= upper) {
      return Status::InvalidArgument("range bound " + std::to_string(i) +
                                     ": lower bound is not below the upper bound");
    }
    if (i > 0 && (bounds[i - 1].second.empty() || lower < bounds[i - 1].second)) {
      return Status::InvalidArgument("range bounds " + std::to_string(i - 1) + " and " +
                                     std::to_string(i) + " overlap or are not sorted");
    }
  }
  for (size_t i = 0; i < splits.size(); i++) {
    if (splits[i].empty()) {
      return Status::InvalidArgument("split point " + std::to_string(i) + " is empty");
    }
    if (i > 0 && splits[i] <= splits[i - 1]) {
      return Status::InvalidArgument("split points are not strictly increasing: split " +
                                     std::to_string(i) + " is not above split " +
                                     std::to_string(i - 1));
    }
  }
  // Cut each bound at the splits inside it.
  std::vector<std::pair<std::string, std::string>> ranges;
  size_t s = 0;
  for (const auto& [lower, upper] : bounds) {
    std::string cur = lower;
    for (; s < splits.size() && (upper.empty() || splits[s] < upper); s++) {
      if (splits[s] <= lower) {
        return Status::InvalidArgument("split point " + std::to_string(s) +
                                       " is not inside a range bound");
      }
      ranges.emplace_back(cur, splits[s]);
      cur = splits[s];
    }
    ranges.emplace_back(cur, upper);
  }
  if (s < splits.size()) {
    return Status::InvalidArgument("split point " + std::to_string(s) +
                                   " is not inside a range bound");
  }

  size_t combos = 1;
  for (const HashDimension& dim : hash_dims_) {
    combos *= dim.num_buckets;
    if (combos * ranges.size() > kMaxPartitions) {
      return Status::InvalidArgument("more than " + std::to_string(kMaxPartitions) + " partitions");
    }
  }
  if (combos * ranges.size() > kMaxPartitions) {
    return Status::InvalidArgument("more than " + std::to_string(kMaxPartitions) + " partitions");
  }
  const size_t ndims = hash_dims_.size();
  auto buckets_of = [&](size_t combo) {
    std::vector<int32_t> b(ndims);
    for (size_t d = ndims; d-- > 0;) {
      b[d] = static_cast<int32_t>(combo % hash_dims_[d].num_buckets);
      combo /= hash_dims_[d].num_buckets;
    }
    return b;
  };
  auto prefix_of = [](const std::vector<int32_t>& b) {
    std::string p;
    for (int32_t v : b) PutFixed32BE(&p, static_cast<uint32_t>(v));
    return p;
  };
  std::vector<Partition> out;
  out.reserve(combos * ranges.size());
  for (size_t c = 0; c < combos; c++) {
    std::vector<int32_t> buckets = buckets_of(c);
    const std::string prefix = prefix_of(buckets);
    const std::string next_prefix = c + 1 < combos ? prefix_of(buckets_of(c + 1)) : "";
    for (const auto& [lower, upper] : ranges) {
      Partition p;
      p.hash_buckets = buckets;
      p.range_key_start = lower;
      p.range_key_end = upper;
      p.partition_key_start = (c == 0 && lower.empty()) ? "" : prefix + lower;
      p.partition_key_end = upper.empty() ? next_prefix : prefix + upper;
      out.push_back(std::move(p));
    }
  }
  return out;
}

Status PartitionSchema::EncodeBoundRow(const RowView& row, bool allow_unset, const char* what,
                                       std::string* dst) const {
  int set = 0;
  for (int idx : range_idxs_) set += row.IsSet(idx) ? 1 : 0;
  if (set == 0 && allow_unset) return Status::OK();
  for (int idx : range_idxs_) {
    if (!row.cell(idx).has_value()) {
      return Status::InvalidArgument(std::string(what) + ": range column '" +
                                     row.schema().column(idx).name() + "' is " +
                                     (row.IsNull(idx) ? "NULL" : "not set"));
    }
  }
  return EncodeColumns(row, range_idxs_, dst);
}

Result<std::vector<Partition>> PartitionSchema::CreatePartitions(
    const std::vector<RowView>& split_rows,
    const std::vector<std::pair<RowView, RowView>>& bound_rows) const {
  std::vector<std::string> splits(split_rows.size());
  for (size_t i = 0; i < split_rows.size(); i++) {
    RETURN_NOT_OK(EncodeBoundRow(split_rows[i], false, ("split row " + std::to_string(i)).c_str(),
                                 &splits[i]));
  }
  std::vector<std::pair<std::string, std::string>> bounds(bound_rows.size());
  for (size_t i = 0; i < bound_rows.size(); i++) {
    const std::string what = "range bound " + std::to_string(i);
    RETURN_NOT_OK(
        EncodeBoundRow(bound_rows[i].first, true, (what + " lower").c_str(), &bounds[i].first));
    RETURN_NOT_OK(
        EncodeBoundRow(bound_rows[i].second, true, (what + " upper").c_str(), &bounds[i].second));
  }
  return CreatePartitions(splits, bounds);
}

Result<std::vector<Partition>> PartitionSchema::CreatePartitions(const DecodedRowOps& rows) const {
  std::vector<RowView> splits;
  std::vector<std::pair<RowView, RowView>> bounds;
  for (size_t i = 0; i < rows.size(); i++) {
    switch (rows[i].type) {
      case RowOpType::kSplitRow:
        splits.push_back(rows[i].row);
        break;
      case RowOpType::kRangeLowerBound:
        if (i + 1 >= rows.size() || rows[i + 1].type != RowOpType::kRangeUpperBound) {
          return Status::InvalidArgument("RANGE_LOWER_BOUND at row " + std::to_string(i) +
                                         " is not followed by a RANGE_UPPER_BOUND");
        }
        bounds.emplace_back(rows[i].row, rows[i + 1].row);
        i++;
        break;
      default:
        return Status::InvalidArgument(std::string(RowOpTypeName(rows[i].type)) + " at row " +
                                       std::to_string(i) + " is not a partition row");
    }
  }
  return CreatePartitions(splits, bounds);
}

std::string PartitionSchema::ToString() const {
  std::string s;
  for (const HashDimension& dim : hash_dims_) {
    s += "HASH (";
    for (size_t i = 0; i < dim.columns.size(); i++) {
      if (i > 0) s += ", ";
      s += dim.columns[i];
    }
    s += ") PARTITIONS " + std::to_string(dim.num_buckets) + " SEED " + std::to_string(dim.seed) +
         ", ";
  }
  s += "RANGE (";
  for (size_t i = 0; i < range_columns_.size(); i++) {
    if (i > 0) s += ", ";
    s += range_columns_[i];
  }
  s += ")";
  return s;
}

Status PartitionSchema::DecodeRangeKey(Slice key, const Schema& schema, Arena* arena,
                                       std::vector<Cell>* cells) const {
  cells->clear();
  for (size_t i = 0; i < range_idxs_.size(); i++) {
    if (range_idxs_[i] >= schema.num_columns()) {
      return Status::InvalidArgument("range column index out of the schema");
    }
    Cell c;
    RETURN_NOT_OK(DecodeKeyCell(schema.column(range_idxs_[i]).type(), i + 1 == range_idxs_.size(),
                                &key, &c, arena));
    cells->push_back(c);
  }
  if (!key.empty()) return Status::Corruption("bytes left after the range columns");
  return Status::OK();
}

namespace {

std::string ValueText(const Cell& c) {
  if (c.has_value() && c.type() == DataType::kUnixtimeMicros) {
    return "\"" + FormatUnixtimeMicros(c.int_value()) + "\"";
  }
  return c.ToString();
}

}  // namespace

std::string PartitionSchema::RangeToString(const std::string& start, const std::string& end,
                                           const Schema& schema) const {
  std::string cols;
  for (size_t i = 0; i < range_columns_.size(); i++) cols += (i ? ", " : "") + range_columns_[i];
  const bool tuple = range_columns_.size() > 1;
  if (tuple) cols = "(" + cols + ")";
  auto side = [&](const std::string& key, const char* op) {
    Arena arena;
    std::vector<Cell> cells;
    std::string value;
    if (DecodeRangeKey(Slice(key), schema, &arena, &cells).ok()) {
      for (size_t i = 0; i < cells.size(); i++) value += (i ? ", " : "") + ValueText(cells[i]);
      if (tuple) value = "(" + value + ")";
    } else {
      value = Printable(key);
    }
    return cols + " " + op + " " + value;
  };
  std::string out;
  if (!start.empty()) out = side(start, ">=");
  if (!end.empty()) out += (out.empty() ? "" : " AND ") + side(end, "<");
  return out;
}

std::string PartitionSchema::PartitionToString(const Partition& p, const Schema& schema) const {
  std::string out;
  for (size_t d = 0; d < hash_dims_.size() && d < p.hash_buckets.size(); d++) {
    std::string cols;
    for (size_t i = 0; i < hash_dims_[d].columns.size(); i++) {
      cols += (i ? ", " : "") + hash_dims_[d].columns[i];
    }
    out += (d ? ", " : "") + std::string("HASH(") + cols + ") bucket " +
           std::to_string(p.hash_buckets[d]) + " of " + std::to_string(hash_dims_[d].num_buckets);
  }
  const std::string range = RangeToString(p.range_key_start, p.range_key_end, schema);
  if (!range.empty()) out += (out.empty() ? "" : ", ") + range;
  return out.empty() ? "all rows" : out;
}

}  // namespace nyala
