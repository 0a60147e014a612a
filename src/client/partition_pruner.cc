#include "client/partition_pruner.h"

#include "common/key_encoding.h"

namespace nyala::client::internal {

namespace {

// The values a column can take under `predicates`, if an equality or IN list says.
std::optional<std::vector<Value>> ColumnValues(int col,
                                               const std::vector<ColumnPredicate>& predicates) {
  for (const ColumnPredicate& p : predicates) {
    if (p.column() != col) continue;
    if (p.kind() == ColumnPredicate::Kind::kEquality) return std::vector<Value>{p.lower()};
    if (p.kind() == ColumnPredicate::Kind::kInList) return p.in_list();
  }
  return std::nullopt;
}

std::optional<std::set<int32_t>> DimensionBuckets(const Schema& schema, const PartitionSchema& ps,
                                                  int dim,
                                                  const std::vector<ColumnPredicate>& predicates) {
  const HashDimension& d = ps.hash_dimensions()[dim];
  std::vector<int> idxs;
  std::vector<std::vector<Value>> values;
  size_t combinations = 1;
  for (const std::string& name : d.columns) {
    int idx = schema.FindColumn(name);
    if (idx < 0) return std::nullopt;
    auto v = ColumnValues(idx, predicates);
    if (!v) return std::nullopt;
    combinations *= std::max<size_t>(v->size(), 1);
    if (combinations > PartitionPruner::kMaxCombinations) return std::nullopt;
    idxs.push_back(idx);
    values.push_back(std::move(*v));
  }
  std::set<int32_t> buckets;
  for (const auto& v : values) {
    if (v.empty()) return buckets;  // an empty IN list matches nothing
  }
  std::vector<size_t> pos(values.size(), 0);
  Row row(&schema);
  for (size_t n = 0; n < combinations; n++) {
    for (size_t i = 0; i < idxs.size(); i++) row.SetUnchecked(idxs[i], values[i][pos[i]].cell());
    auto b = ps.HashBucket(row, dim);
    if (!b.ok()) return std::nullopt;
    buckets.insert(*b);
    for (size_t i = 0; i < pos.size(); i++) {  // next combination, odometer style
      if (++pos[i] < values[i].size()) break;
      pos[i] = 0;
    }
  }
  return buckets;
}

}  // namespace

PartitionPruner PartitionPruner::Create(const Schema& schema, const PartitionSchema& ps,
                                        const std::vector<ColumnPredicate>& predicates,
                                        const KeyRange& key_range) {
  PartitionPruner p;
  p.empty_ = key_range.empty;
  for (size_t d = 0; d < ps.hash_dimensions().size(); d++) {
    p.buckets_.push_back(DimensionBuckets(schema, ps, int(d), predicates));
  }
  const auto& rc = ps.range_columns();
  bool prefix = !rc.empty() && rc.size() <= size_t(schema.num_key_columns());
  size_t width = 0;
  for (size_t i = 0; prefix && i < rc.size(); i++) {
    prefix = schema.column(int(i)).name() == rc[i];
    width += GetTypeInfo(schema.column(int(i)).type()).fixed_size;
  }
  if (!prefix) return p;
  if (rc.size() == size_t(schema.num_key_columns())) {
    p.range_lo_ = key_range.start;
    p.range_hi_ = key_range.stop;
    return p;
  }
  for (size_t i = 0; i < rc.size(); i++) {
    if (IsVariableLength(schema.column(int(i)).type())) return p;
  }
  // Range keys are the first `width` bytes of primary keys.
  p.range_lo_ = key_range.start.substr(0, std::min(width, key_range.start.size()));
  if (key_range.stop.size() > width) {
    p.range_hi_ = PrefixSuccessor(Slice(key_range.stop.data(), width));
  } else {
    p.range_hi_ = key_range.stop;
  }
  return p;
}

bool PartitionPruner::ShouldScan(const Partition& part) const {
  if (empty_) return false;
  for (size_t d = 0; d < buckets_.size() && d < part.hash_buckets.size(); d++) {
    if (buckets_[d] && !buckets_[d]->count(part.hash_buckets[d])) return false;
  }
  if (!range_hi_.empty() && Slice(part.range_key_start).compare(Slice(range_hi_)) >= 0) {
    return false;
  }
  if (!part.range_key_end.empty() && Slice(range_lo_).compare(Slice(part.range_key_end)) >= 0) {
    return false;
  }
  return true;
}

}  // namespace nyala::client::internal
