// PartitionPruner: which partitions a scan must visit, from its predicates and
// primary-key range.
//  - Hash: a dimension whose every column has an equality or IN-list predicate can
//    only hold matching rows in the buckets of those values (at most kMaxCombinations
//    value combinations are hashed; beyond that the dimension is not pruned).
//  - Range: when the range columns are the whole primary key, the key range is the
//    range-key range; when they are a key prefix of fixed-width columns, the key
//    range's bounds cut to that prefix bound it. Otherwise ranges are not pruned.
// Pruning never drops a partition holding a matching row.
//
// Immutable after Create(); thread-safe.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "nyala/partition.h"
#include "nyala/predicate.h"
#include "nyala/schema.h"

namespace nyala::client::internal {

class PartitionPruner {
 public:
  static constexpr size_t kMaxCombinations = 1024;

  static PartitionPruner Create(const Schema& schema, const PartitionSchema& ps,
                                const std::vector<ColumnPredicate>& predicates,
                                const KeyRange& key_range);

  bool ShouldScan(const Partition& p) const;
  // Range-key bounds used, for tests ("" = unbounded).
  const std::string& range_lower() const { return range_lo_; }
  const std::string& range_upper() const { return range_hi_; }

 private:
  bool empty_ = false;
  // Per hash dimension: the buckets that may match, or nullopt for all.
  std::vector<std::optional<std::set<int32_t>>> buckets_;
  std::string range_lo_;
  std::string range_hi_;
};

}  // namespace nyala::client::internal
