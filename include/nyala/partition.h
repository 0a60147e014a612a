// Partitioning: how a table's rows are spread over tablets.
//
// A PartitionSchema has zero or more hash dimensions (each a set of key columns, a
// bucket count >= 2 and a seed) and range partitioning on an ordered list of key
// columns (possibly none). For a row:
//   bucket(d)      = MurmurHash2_64(composite key encoding of d's columns, d.seed)
//                    % d.num_buckets
//   range key      = composite key encoding of the range columns (key_encoding.h:
//                    the last range column raw); empty without range columns
//   partition key  = for each dimension in order, bucket(d) as 4-byte big-endian,
//                    then the range key
// A tablet owns the partition keys [partition_key_start, partition_key_end).
//
// CreatePartitions lays out the tablets: the cartesian product of all bucket
// combinations (first dimension most significant) and the ranges (range bounds cut
// at split points), sorted by partition key. Without explicit bounds the
// partitions tile the whole byte-string space: the first starts at "", each ends
// where the next starts, the last ends at "" (unbounded); a range unbounded above
// ends where the next bucket combination starts.
//
// PartitionSchema and Partition are immutable values: safe to share for reading.
// A PartitionSchema holds the column indexes of the Schema it was built for; use
// it only with rows of that schema (or of later versions: key columns never move).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nyala/export.h"
#include "nyala/result.h"
#include "nyala/row.h"
#include "nyala/row_op_type.h"
#include "nyala/schema.h"
#include "nyala/slice.h"

namespace nyala {

// The wire forms, for the tree's own use (not exported).
class PartitionPB;
class PartitionSchemaPB;
class DecodedRowOps;

NYALA_EXPORT_BEGIN

// MurmurHash64A by Austin Appleby, reading 8-byte blocks little-endian on every
// platform, so bucket assignment is stable everywhere.
uint64_t MurmurHash2_64(Slice data, uint64_t seed);

struct HashDimension {
  std::vector<std::string> columns;
  int32_t num_buckets = 0;
  uint32_t seed = 0;
  friend bool operator==(const HashDimension&, const HashDimension&) = default;
};

struct Partition {
  std::vector<int32_t> hash_buckets;  // one per hash dimension
  std::string partition_key_start;    // inclusive; "" = from the first key
  std::string partition_key_end;      // exclusive; "" = unbounded
  std::string range_key_start;        // the range part; "" = unbounded
  std::string range_key_end;

  bool ContainsPartitionKey(Slice key) const {
    return Slice(partition_key_start).compare(key) <= 0 &&
           (partition_key_end.empty() || key.compare(Slice(partition_key_end)) < 0);
  }
  NYALA_NO_EXPORT void ToPB(PartitionPB* pb) const;
  NYALA_NO_EXPORT static Partition FromPB(const PartitionPB& pb);
  // "buckets [1, 0], keys [0x00000001..., 0x00000002...)".
  std::string ToString() const;
  friend bool operator==(const Partition&, const Partition&) = default;
};

class PartitionSchema {
 public:
  static constexpr int32_t kMaxBuckets = 65536;
  static constexpr size_t kMaxPartitions = 100000;

  // No hash dimensions, no range columns: everything in one partition.
  PartitionSchema() = default;

  // Validates against `schema`; InvalidArgument naming the column or dimension when
  // a column is unknown, not a key column, listed twice, or in two hash
  // dimensions; a dimension has no columns; num_buckets is outside
  // [2, kMaxBuckets].
  static Result<PartitionSchema> Create(const Schema& schema,
                                        std::vector<HashDimension> hash_dimensions,
                                        std::vector<std::string> range_columns);
  NYALA_NO_EXPORT static Result<PartitionSchema> FromPB(const PartitionSchemaPB& pb,
                                                        const Schema& schema);
  NYALA_NO_EXPORT void ToPB(PartitionSchemaPB* pb) const;

  const std::vector<HashDimension>& hash_dimensions() const { return hash_dims_; }
  const std::vector<std::string>& range_columns() const { return range_columns_; }

  // Appends the partition key of `row`. InvalidArgument naming the column when a
  // hash or range column is unset or NULL.
  Status EncodePartitionKey(const RowView& row, std::string* dst) const;
  // The bucket of `row` in hash dimension `dim`.
  Result<int32_t> HashBucket(const RowView& row, int dim) const;
  // Appends the range key of `row`.
  Status EncodeRangeKey(const RowView& row, std::string* dst) const;

  // The partitions, sorted, from encoded range keys: `bounds` are [lower, upper)
  // ranges ("" = unbounded; none given = one unbounded range), `splits` cut them.
  // InvalidArgument when: there are splits or bounds without range columns; a
  // bound's lower is not below its upper; bounds overlap or are not sorted; splits
  // are empty, not strictly increasing, or not strictly inside a bound; there would
  // be more than kMaxPartitions partitions.
  Result<std::vector<Partition>> CreatePartitions(
      const std::vector<std::string>& splits,
      const std::vector<std::pair<std::string, std::string>>& bounds) const;
  // Same, from rows: a split row sets every range column; a bound row sets every
  // range column, or none for "unbounded".
  Result<std::vector<Partition>> CreatePartitions(
      const std::vector<RowView>& split_rows,
      const std::vector<std::pair<RowView, RowView>>& bounds) const;
  // Same, from a decoded RowBlockKind::kPartitionRows block: SPLIT_ROW rows, and
  // RANGE_LOWER_BOUND rows each directly followed by a RANGE_UPPER_BOUND row.
  NYALA_NO_EXPORT Result<std::vector<Partition>> CreatePartitions(const DecodedRowOps& rows) const;

  // "HASH (k) PARTITIONS 4 SEED 0, RANGE (k)": the schema of the partitioning.
  std::string ToString() const;

  // Typed, readable forms of partitions, for people (the CLI's describe, the master's
  // web UI). `schema` is the table's schema (the one this was built for).
  //
  // Decodes an encoded range key (Partition::range_key_start/_end, not empty) into one
  // cell per range column, in range-column order; strings point into `key` or `arena`.
  // Corruption when `key` is not a whole encoding of the range columns.
  Status DecodeRangeKey(Slice key, const Schema& schema, Arena* arena,
                        std::vector<Cell>* cells) const;
  // The range [start, end) of range keys as a condition on the range columns, with
  // unbounded sides left out: "k >= 100 AND k < 200", "k < 100", "(a, b) >= (1, \"x\")"
  // (a row comparison when there are several range columns); "" when both sides are
  // unbounded. Values print as Cell::ToString, timestamps as ISO-8601 UTC in quotes; a
  // key that does not decode prints as its bytes in hex (0x...).
  std::string RangeToString(const std::string& start, const std::string& end,
                            const Schema& schema) const;
  // A whole partition: "HASH(k) bucket 2 of 4, k >= 100 AND k < 200" (buckets count
  // from 0); "all rows" when nothing restricts it.
  std::string PartitionToString(const Partition& p, const Schema& schema) const;

  friend bool operator==(const PartitionSchema& a, const PartitionSchema& b) {
    return a.hash_dims_ == b.hash_dims_ && a.range_columns_ == b.range_columns_;
  }

 private:
  // Appends the composite key encoding of `row`'s columns `idxs`.
  static Status EncodeColumns(const RowView& row, const std::vector<int>& idxs, std::string* dst);
  Status EncodeBoundRow(const RowView& row, bool allow_unset, const char* what,
                        std::string* dst) const;

  std::vector<HashDimension> hash_dims_;
  std::vector<std::vector<int>> hash_idxs_;  // per dimension, schema column indexes
  std::vector<std::string> range_columns_;
  std::vector<int> range_idxs_;
};

NYALA_EXPORT_END

}  // namespace nyala
