// PartitionPruner: hash buckets from equality/IN predicates, range pruning from key
// bounds, and never a dropped partition that holds a matching row (checked against
// every row of a small key space).
#include <gtest/gtest.h>

#include "client/partition_pruner.h"
#include "common/key_encoding.h"
#include "common/status.h"
#include "common/test_util.h"

namespace nyala::client::internal {
namespace {

class PartitionPrunerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s =
        Schema::Create({ColumnSchema("a", DataType::kInt32), ColumnSchema("b", DataType::kInt32),
                        ColumnSchema("v", DataType::kString, true)},
                       2);
    ASSERT_OK(s.status());
    schema_ = *s;
    // Hash on a into 3 buckets; range on (a, b) split at a=10 and a=20.
    auto ps = PartitionSchema::Create(schema_, {HashDimension{{"b"}, 3, 0}}, {"a", "b"});
    ASSERT_OK(ps.status());
    ps_ = *ps;
    std::vector<RowView> splits;
    for (int a : {10, 20}) {
      rows_.emplace_back(&schema_);
      CHECK_OK(rows_.back().Set("a", Cell::Int32(a)));
      CHECK_OK(rows_.back().Set("b", Cell::Int32(0)));
    }
    for (Row& r : rows_) splits.push_back(r.view());
    auto parts = ps_.CreatePartitions(splits, {});
    ASSERT_OK(parts.status());
    parts_ = *parts;
    ASSERT_EQ(parts_.size(), 9u);
  }

  ColumnPredicate Pred(Result<ColumnPredicate> p) {
    CHECK_OK(p.status());
    return *p;
  }

  // Every (a, b) in [0, 30) x [0, 5) matching `preds` lies in a partition kept.
  void CheckSound(const std::vector<ColumnPredicate>& preds, int* kept) {
    KeyRange range = KeyRangeFromPredicates(schema_, preds);
    auto pruner = PartitionPruner::Create(schema_, ps_, preds, range);
    *kept = 0;
    for (const Partition& p : parts_) *kept += pruner.ShouldScan(p);
    for (int a = 0; a < 30; a++) {
      for (int b = 0; b < 5; b++) {
        Row row(&schema_);
        CHECK_OK(row.Set("a", Cell::Int32(a)));
        CHECK_OK(row.Set("b", Cell::Int32(b)));
        bool match = true;
        for (const auto& p : preds) match = match && p.Evaluate(row.view());
        if (!match) continue;
        std::string pk;
        CHECK_OK(ps_.EncodePartitionKey(row, &pk));
        bool found = false;
        for (const Partition& p : parts_) {
          if (p.ContainsPartitionKey(pk)) {
            EXPECT_TRUE(pruner.ShouldScan(p))
                << "row a=" << a << " b=" << b << " in " << p.ToString();
            found = true;
          }
        }
        EXPECT_TRUE(found);
      }
    }
  }

  Schema schema_;
  PartitionSchema ps_;
  std::vector<Row> rows_;
  std::vector<Partition> parts_;
};

TEST_F(PartitionPrunerTest, NoPredicatesKeepsAll) {
  int kept;
  CheckSound({}, &kept);
  EXPECT_EQ(kept, 9);
}

TEST_F(PartitionPrunerTest, EqualityOnHashColumnPicksOneBucket) {
  int kept;
  CheckSound({Pred(ColumnPredicate::Equality(schema_, 1, Cell::Int32(3)))}, &kept);
  EXPECT_EQ(kept, 3);  // one bucket x three ranges
}

TEST_F(PartitionPrunerTest, InListOnHashColumnPicksItsBuckets) {
  int kept;
  CheckSound({Pred(ColumnPredicate::InList(schema_, 1, {Cell::Int32(1), Cell::Int32(4)}))}, &kept);
  EXPECT_LE(kept, 6);
  EXPECT_GE(kept, 3);
}

TEST_F(PartitionPrunerTest, RangeOnKeyPrunesRanges) {
  int kept;
  CheckSound({Pred(ColumnPredicate::Comparison(schema_, 0, ColumnPredicate::CompareOp::kLess,
                                               Cell::Int32(10)))},
             &kept);
  EXPECT_EQ(kept, 3);  // the first range in every bucket
  CheckSound({Pred(ColumnPredicate::Equality(schema_, 0, Cell::Int32(15))),
              Pred(ColumnPredicate::Equality(schema_, 1, Cell::Int32(2)))},
             &kept);
  EXPECT_EQ(kept, 1);
}

TEST_F(PartitionPrunerTest, ContradictionKeepsNothing) {
  int kept;
  CheckSound({Pred(ColumnPredicate::Equality(schema_, 0, Cell::Int32(1))),
              Pred(ColumnPredicate::Equality(schema_, 0, Cell::Int32(2)))},
             &kept);
  EXPECT_EQ(kept, 0);
}

TEST_F(PartitionPrunerTest, NonKeyPredicatesPruneNothing) {
  int kept;
  CheckSound({Pred(ColumnPredicate::IsNull(schema_, 2))}, &kept);
  EXPECT_EQ(kept, 9);
}

}  // namespace
}  // namespace nyala::client::internal
