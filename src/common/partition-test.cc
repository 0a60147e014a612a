#include "nyala/partition.h"
#include "common/row_operations.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/coding.h"
#include "common/common.pb.h"
#include "common/data_model_test_util.h"
#include "common/key_encoding.h"
#include "common/test_util.h"

namespace nyala {
namespace {

using C = ColumnSchema;

void ExpectInvalid(const Status& s, const std::string& part) {
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find(part), std::string::npos)
      << "'" << part << "' not in " << s.ToString();
}

// (a INT64, b STRING, c INT32, v DOUBLE NULLABLE), key (a, b, c).
Schema TestSchema() {
  return Schema::Create({C("a", DataType::kInt64), C("b", DataType::kString),
                         C("c", DataType::kInt32), C("v", DataType::kDouble, true)},
                        3)
      .value();
}

TEST(PartitionTest, MurmurIsStable) {
  // Reference values from an independent implementation of MurmurHash64A.
  EXPECT_EQ(MurmurHash2_64(Slice(""), 0), 0u);
  EXPECT_EQ(MurmurHash2_64(Slice("hello"), 0), 0x1e68d17c457bf117ull);
  EXPECT_EQ(MurmurHash2_64(Slice("hello world, nyala!"), 42), 0x02df8c4ec54a369dull);
  std::string bytes;
  for (int i = 0; i < 16; i++) bytes.push_back(static_cast<char>(i));
  EXPECT_EQ(MurmurHash2_64(Slice(bytes), 0xdeadbeef), 0x58161f9239e0e04eull);
}

TEST(PartitionTest, PartitionKeyLayout) {
  Schema schema = TestSchema();
  Result<PartitionSchema> ps =
      PartitionSchema::Create(schema, {HashDimension{{"a"}, 16, 0}}, {"b", "c"});
  ASSERT_OK(ps.status());
  Row row(&schema);
  ASSERT_OK(row.Set("a", Cell::Int64(42)));
  ASSERT_OK(row.Set("b", Cell::String(Slice("x\0y", 3))));
  ASSERT_OK(row.Set("c", Cell::Int32(-1)));
  Result<int32_t> bucket = ps->HashBucket(row, 0);
  ASSERT_OK(bucket.status());
  EXPECT_EQ(*bucket, 9);  // murmur of the key encoding of INT64 42, seed 0, mod 16
  std::string pkey;
  ASSERT_OK(ps->EncodePartitionKey(row, &pkey));
  std::string expected;
  PutFixed32BE(&expected, 9);
  EncodeKeyCell(Cell::String(Slice("x\0y", 3)), false, &expected);
  EncodeKeyCell(Cell::Int32(-1), true, &expected);
  EXPECT_EQ(pkey, expected);
  std::string range;
  ASSERT_OK(ps->EncodeRangeKey(row, &range));
  EXPECT_EQ(range, expected.substr(4));

  Row partial(&schema);
  ASSERT_OK(partial.Set("a", Cell::Int64(1)));
  Status s = ps->EncodePartitionKey(partial, &pkey);
  ExpectInvalid(s, "partition column 'b' is not set");
}

TEST(PartitionTest, ValidationErrors) {
  Schema schema = TestSchema();
  auto create = [&](std::vector<HashDimension> dims, std::vector<std::string> range) {
    return PartitionSchema::Create(schema, std::move(dims), std::move(range)).status();
  };
  ExpectInvalid(create({{{"a"}, 1, 0}}, {}), "hash dimension 0: num_buckets is 1, must be");
  ExpectInvalid(create({{{"a"}, 2, 0}, {{"b"}, 0, 0}}, {}), "hash dimension 1: num_buckets is 0");
  ExpectInvalid(create({{{"a"}, PartitionSchema::kMaxBuckets + 1, 0}}, {}), "num_buckets");
  ExpectInvalid(create({{{}, 2, 0}}, {}), "hash dimension 0 has no columns");
  ExpectInvalid(create({{{"v"}, 2, 0}}, {}), "column 'v' is not a primary key column");
  ExpectInvalid(create({{{"zz"}, 2, 0}}, {}), "column 'zz' not in schema");
  ExpectInvalid(create({{{"a", "a"}, 2, 0}}, {}), "lists column 'a' twice");
  ExpectInvalid(create({{{"a"}, 2, 0}, {{"b", "a"}, 3, 0}}, {}),
                "column 'a' is in more than one hash dimension");
  ExpectInvalid(create({}, {"v"}), "range column 'v' is not a primary key column");
  ExpectInvalid(create({}, {"c", "c"}), "range column 'c' listed twice");
  ExpectInvalid(create({}, {"q"}), "range column 'q' not in schema");
  EXPECT_OK(create({{{"a", "c"}, 3, 7}, {{"b"}, 2, 0}}, {"c", "a"}));
}

TEST(PartitionTest, SplitAndBoundErrors) {
  Schema schema = TestSchema();
  PartitionSchema ranged = PartitionSchema::Create(schema, {}, {"b"}).value();
  PartitionSchema hashed = PartitionSchema::Create(schema, {{{"a"}, 2, 0}}, {}).value();
  auto create = [](const PartitionSchema& ps, std::vector<std::string> splits,
                   std::vector<std::pair<std::string, std::string>> bounds) {
    return ps.CreatePartitions(splits, bounds).status();
  };
  ExpectInvalid(create(hashed, {"m"}, {}), "no range partitioning");
  ExpectInvalid(create(ranged, {"m", "c"}, {}), "split 1 is not above split 0");
  ExpectInvalid(create(ranged, {"m", "m"}, {}), "not strictly increasing");
  ExpectInvalid(create(ranged, {""}, {}), "split point 0 is empty");
  ExpectInvalid(create(ranged, {}, {{"m", "c"}}), "range bound 0: lower bound is not below");
  ExpectInvalid(create(ranged, {}, {{"m", "m"}}), "range bound 0: lower bound is not below");
  ExpectInvalid(create(ranged, {}, {{"a", "m"}, {"k", "z"}}), "range bounds 0 and 1 overlap");
  ExpectInvalid(create(ranged, {}, {{"k", "z"}, {"a", "c"}}), "overlap or are not sorted");
  ExpectInvalid(create(ranged, {}, {{"a", ""}, {"k", "z"}}), "overlap");
  ExpectInvalid(create(ranged, {"d"}, {{"a", "c"}, {"k", "z"}}), "split point 0 is not inside");
  ExpectInvalid(create(ranged, {"k"}, {{"a", "c"}, {"k", "z"}}), "split point 0 is not inside");
  ExpectInvalid(create(ranged, {"zz"}, {{"a", "c"}, {"k", "z"}}), "split point 0 is not inside");
  EXPECT_OK(create(ranged, {"b", "m"}, {{"a", "c"}, {"k", "z"}}));
  PartitionSchema big =
      PartitionSchema::Create(schema, {{{"a"}, 1000, 0}, {{"b"}, 1000, 0}}, {}).value();
  ExpectInvalid(create(big, {}, {}), "more than 100000 partitions");
}

// Random partition schemas and splits: the partitions tile the key space and every
// random row's partition key falls in exactly one partition, the one of its buckets
// and range.
TEST(PartitionTest, RowsLandInExactlyOnePartition) {
  DataGen gen(TestRandomSeed());
  for (int trial = 0; trial < 100; trial++) {
    Schema schema = gen.RandomSchema(3, 2);
    std::vector<std::string> keys;
    for (int i = 0; i < schema.num_key_columns(); i++) keys.push_back(schema.column(i).name());
    std::shuffle(keys.begin(), keys.end(), gen.rng());
    // Hash dimensions over a prefix of the shuffled keys, range over a random subset.
    std::vector<HashDimension> dims;
    size_t next = 0;
    while (next < keys.size() && gen.OneIn(2) && dims.size() < 2) {
      dims.push_back({{keys[next++]},
                      static_cast<int32_t>(2 + gen.Uniform(4)),
                      static_cast<uint32_t>(gen.Uniform(1000))});
    }
    std::vector<std::string> range_cols = keys;
    std::shuffle(range_cols.begin(), range_cols.end(), gen.rng());
    range_cols.resize(gen.Uniform(range_cols.size() + 1));
    Result<PartitionSchema> ps = PartitionSchema::Create(schema, dims, range_cols);
    ASSERT_OK(ps.status());

    std::vector<Row> rows;
    for (int i = 0; i < 200; i++) rows.push_back(gen.RandomRow(&schema, false, gen.OneIn(2)));
    std::set<std::string> split_set;
    if (!range_cols.empty()) {
      for (int i = 0; i < 5; i++) {
        std::string k;
        ASSERT_OK(ps->EncodeRangeKey(rows[gen.Uniform(rows.size())], &k));
        if (!k.empty()) split_set.insert(k);
      }
    }
    std::vector<std::string> splits(split_set.begin(), split_set.end());
    Result<std::vector<Partition>> parts = ps->CreatePartitions(splits, {});
    ASSERT_OK(parts.status());
    size_t combos = 1;
    for (const HashDimension& d : dims) combos *= d.num_buckets;
    ASSERT_EQ(parts->size(), combos * (splits.size() + 1));
    // Tiling.
    ASSERT_EQ(parts->front().partition_key_start, "");
    ASSERT_EQ(parts->back().partition_key_end, "");
    for (size_t i = 0; i + 1 < parts->size(); i++) {
      ASSERT_EQ((*parts)[i].partition_key_end, (*parts)[i + 1].partition_key_start)
          << (*parts)[i].ToString() << " then " << (*parts)[i + 1].ToString();
      ASSERT_LT((*parts)[i].partition_key_start, (*parts)[i + 1].partition_key_start);
    }
    for (const Row& row : rows) {
      std::string pkey, range;
      ASSERT_OK(ps->EncodePartitionKey(row, &pkey));
      ASSERT_OK(ps->EncodeRangeKey(row, &range));
      int found = 0;
      for (const Partition& p : *parts) {
        if (!p.ContainsPartitionKey(pkey)) continue;
        found++;
        for (size_t d = 0; d < dims.size(); d++) {
          ASSERT_EQ(p.hash_buckets[d], ps->HashBucket(row, static_cast<int>(d)).value());
        }
        ASSERT_LE(p.range_key_start, range);
        if (!p.range_key_end.empty()) {
          ASSERT_LT(range, p.range_key_end);
        }
      }
      ASSERT_EQ(found, 1) << row.ToString() << " in " << ps->ToString();
    }
  }
}

TEST(PartitionTest, BoundsWithGapsAndHashBuckets) {
  Schema schema = TestSchema();
  PartitionSchema ps = PartitionSchema::Create(schema, {{{"a"}, 3, 5}}, {"c"}).value();
  auto rk = [](int32_t c) {
    std::string s;
    EncodeKeyCell(Cell::Int32(c), true, &s);
    return s;
  };
  // [10, 20) split at 15, and [30, unbounded).
  Result<std::vector<Partition>> parts =
      ps.CreatePartitions({rk(15)}, {{rk(10), rk(20)}, {rk(30), ""}});
  ASSERT_OK(parts.status());
  ASSERT_EQ(parts->size(), 9u);
  std::string b1;
  PutFixed32BE(&b1, 1);
  std::string b2;
  PutFixed32BE(&b2, 2);
  const Partition& p = (*parts)[5];  // bucket 1, range [30, +inf)
  EXPECT_EQ(p.hash_buckets, std::vector<int32_t>{1});
  EXPECT_EQ(p.partition_key_start, b1 + rk(30));
  EXPECT_EQ(p.partition_key_end, b2);
  EXPECT_EQ(p.range_key_end, "");
  EXPECT_EQ((*parts)[0].partition_key_start, std::string(4, '\0') + rk(10));
  EXPECT_EQ((*parts)[8].partition_key_end, "");
  for (int c = 0; c < 40; c++) {
    for (int64_t a = 0; a < 10; a++) {
      Row row(&schema);
      ASSERT_OK(row.Set("a", Cell::Int64(a)));
      ASSERT_OK(row.Set("b", Cell::String("")));
      ASSERT_OK(row.Set("c", Cell::Int32(c)));
      std::string pkey;
      ASSERT_OK(ps.EncodePartitionKey(row, &pkey));
      int found = 0;
      for (const Partition& part : *parts) found += part.ContainsPartitionKey(pkey);
      const bool covered = (c >= 10 && c < 20) || c >= 30;
      ASSERT_EQ(found, covered ? 1 : 0) << "c=" << c;
    }
  }
}

TEST(PartitionTest, PartitionsFromRowsAndDecodedBlock) {
  Schema schema = TestSchema();
  PartitionSchema ps = PartitionSchema::Create(schema, {}, {"a"}).value();
  Row split(&schema);
  ASSERT_OK(split.Set("a", Cell::Int64(100)));
  Row lower(&schema);
  ASSERT_OK(lower.Set("a", Cell::Int64(0)));
  Row unbounded(&schema);
  Result<std::vector<Partition>> parts =
      ps.CreatePartitions(std::vector<RowView>{split}, {{lower, unbounded}});
  ASSERT_OK(parts.status());
  ASSERT_EQ(parts->size(), 2u);
  std::string k0, k100;
  EncodeKeyCell(Cell::Int64(0), true, &k0);
  EncodeKeyCell(Cell::Int64(100), true, &k100);
  EXPECT_EQ((*parts)[0].partition_key_start, k0);
  EXPECT_EQ((*parts)[0].partition_key_end, k100);
  EXPECT_EQ((*parts)[1].partition_key_end, "");

  Row no_range(&schema);
  ASSERT_OK(no_range.Set("b", Cell::String("x")));
  Status s = ps.CreatePartitions(std::vector<RowView>{no_range}, {}).status();
  ExpectInvalid(s, "split row 0: range column 'a' is not set");

  // The same through a partition-rows block.
  RowOperationsEncoder enc(&schema);
  ASSERT_OK(enc.Add(RowOpType::kSplitRow, split));
  ASSERT_OK(enc.Add(RowOpType::kRangeLowerBound, lower));
  ASSERT_OK(enc.Add(RowOpType::kRangeUpperBound, unbounded));
  RowOperationsPB pb;
  enc.Finish(&pb);
  DecodedRowOps ops;
  ASSERT_OK(DecodeRowOperations(pb, schema, RowBlockKind::kPartitionRows, &ops));
  Result<std::vector<Partition>> from_block = ps.CreatePartitions(ops);
  ASSERT_OK(from_block.status());
  EXPECT_EQ(*from_block, *parts);

  RowOperationsEncoder bad(&schema);
  ASSERT_OK(bad.Add(RowOpType::kRangeLowerBound, lower));
  bad.Finish(&pb);
  ASSERT_OK(DecodeRowOperations(pb, schema, RowBlockKind::kPartitionRows, &ops));
  ExpectInvalid(ps.CreatePartitions(ops).status(),
                "RANGE_LOWER_BOUND at row 0 is not followed by a RANGE_UPPER_BOUND");
}

TEST(PartitionTest, PBRoundTrips) {
  Schema schema = TestSchema();
  PartitionSchema ps =
      PartitionSchema::Create(schema, {{{"a", "c"}, 4, 99}, {{"b"}, 2, 0}}, {"c"}).value();
  PartitionSchemaPB pb;
  ps.ToPB(&pb);
  Result<PartitionSchema> back = PartitionSchema::FromPB(pb, schema);
  ASSERT_OK(back.status());
  EXPECT_EQ(*back, ps);
  EXPECT_EQ(back->ToString(),
            "HASH (a, c) PARTITIONS 4 SEED 99, HASH (b) PARTITIONS 2 SEED 0, RANGE (c)");
  pb.mutable_hash_dimensions(1)->set_num_buckets(1);
  ExpectInvalid(PartitionSchema::FromPB(pb, schema).status(), "hash dimension 1: num_buckets");

  std::vector<Partition> parts = ps.CreatePartitions(std::vector<std::string>{}, {}).value();
  ASSERT_EQ(parts.size(), 8u);
  for (const Partition& p : parts) {
    PartitionPB ppb;
    p.ToPB(&ppb);
    EXPECT_EQ(Partition::FromPB(ppb), p);
  }
}

// Partitions print as conditions on typed values, unbounded sides left out, hash
// buckets by dimension; several range columns compare as a row.
TEST(PartitionTest, TypedPartitionStrings) {
  Schema schema = TestSchema();
  PartitionSchema ps = PartitionSchema::Create(schema, {{{"a"}, 3, 5}}, {"c"}).value();
  auto rk = [](int32_t c) {
    std::string s;
    EncodeKeyCell(Cell::Int32(c), true, &s);
    return s;
  };
  // [unbounded, 10) split at -5, [100, 200) and [300, unbounded).
  std::vector<Partition> parts =
      ps.CreatePartitions({rk(-5)}, {{"", rk(10)}, {rk(100), rk(200)}, {rk(300), ""}}).value();
  ASSERT_EQ(parts.size(), 12u);
  std::vector<std::string> got;
  for (const Partition& p : parts) got.push_back(ps.PartitionToString(p, schema));
  EXPECT_EQ(got[0], "HASH(a) bucket 0 of 3, c < -5");
  EXPECT_EQ(got[1], "HASH(a) bucket 0 of 3, c >= -5 AND c < 10");
  EXPECT_EQ(got[2], "HASH(a) bucket 0 of 3, c >= 100 AND c < 200");
  EXPECT_EQ(got[3], "HASH(a) bucket 0 of 3, c >= 300");
  EXPECT_EQ(got[11], "HASH(a) bucket 2 of 3, c >= 300");
  EXPECT_EQ(ps.RangeToString("", "", schema), "");
  std::vector<Cell> cells;
  Arena arena;
  ASSERT_OK(ps.DecodeRangeKey(Slice(rk(100)), schema, &arena, &cells));
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].int_value(), 100);
  EXPECT_FALSE(ps.DecodeRangeKey(Slice(rk(100) + "x"), schema, &arena, &cells).ok());
  // A key that does not decode prints as bytes rather than failing.
  EXPECT_EQ(ps.RangeToString("\x01", "", schema), "c >= 0x01");

  // Nothing restricts the one partition of an unpartitioned table.
  PartitionSchema none = PartitionSchema::Create(schema, {}, {}).value();
  std::vector<Partition> one = none.CreatePartitions(std::vector<std::string>{}, {}).value();
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(none.PartitionToString(one[0], schema), "all rows");

  // Two range columns (a string with a quote, an INT32) and two hash dimensions.
  PartitionSchema two =
      PartitionSchema::Create(schema, {{{"a"}, 2, 0}, {{"c"}, 4, 0}}, {"b", "c"}).value();
  auto key2 = [](const std::string& b, int32_t c) {
    std::string s;
    EncodeKeyCell(Cell::String(Slice(b)), false, &s);
    EncodeKeyCell(Cell::Int32(c), true, &s);
    return s;
  };
  Partition p;
  p.hash_buckets = {1, 3};
  p.range_key_start = key2("m\"x", 7);
  p.range_key_end = key2("z", -1);
  EXPECT_EQ(two.PartitionToString(p, schema),
            "HASH(a) bucket 1 of 2, HASH(c) bucket 3 of 4, "
            "(b, c) >= (\"m\\\"x\", 7) AND (b, c) < (\"z\", -1)");

  // Timestamps print as ISO-8601 UTC, also before 1970.
  Schema ts_schema = Schema::Create({C("t", DataType::kUnixtimeMicros)}, 1).value();
  PartitionSchema by_time = PartitionSchema::Create(ts_schema, {}, {"t"}).value();
  std::string t0, t1;
  EncodeKeyCell(Cell::UnixtimeMicros(-1), true, &t0);
  EncodeKeyCell(Cell::UnixtimeMicros(1700000001000000), true, &t1);
  EXPECT_EQ(by_time.RangeToString(t0, t1, ts_schema),
            "t >= \"1969-12-31T23:59:59.999999Z\" AND t < \"2023-11-14T22:13:21.000000Z\"");
}

}  // namespace
}  // namespace nyala
