// Tests of PlanAlterTable: every step kind, the rules it enforces with the error code
// the client sees, and that a request applies whole or not at all.
#include "master/alter_table.h"

#include <gtest/gtest.h>

#include "common/row_operations.h"
#include "common/test_util.h"
#include "nyala/schema.h"

namespace nyala::master {
namespace {

using C = ColumnSchema;

// (k INT64 key, v STRING NULLABLE, n INT32 NOT NULL), range partitioned on k with one
// range [0, 100).
class AlterTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    schema_ = Schema::Create({C("k", DataType::kInt64), C("v", DataType::kString, true),
                              C("n", DataType::kInt32)},
                             1)
                  .value();
    schema_.ToPB(table_.mutable_schema());
    key_schema_ = Schema::Create({C("k", DataType::kInt64)}, 1).value();
    table_.set_name("t");
    ps_ = PartitionSchema::Create(schema_, {}, {"k"}).value();
    ps_.ToPB(table_.mutable_partition_schema());
    ranges_.push_back(Range(0, 100));
  }
  std::pair<std::string, std::string> Range(int64_t lo, int64_t hi) {
    auto parts = ps_.CreatePartitions({}, {{Key(lo), Key(hi)}}).value();
    return {parts[0].range_key_start, parts[0].range_key_end};
  }
  std::string Key(int64_t k) {
    Row r(&schema_);
    EXPECT_OK(r.Set(0, Cell::Int64(k)));
    std::string out;
    EXPECT_OK(ps_.EncodeRangeKey(r.view(), &out));
    return out;
  }
  AlterTableStepPB RangeStep(AlterTableStepPB::Type type, int64_t lo, int64_t hi) {
    AlterTableStepPB s;
    s.set_type(type);
    RowOperationsEncoder enc(&key_schema_);
    Row l(&key_schema_), u(&key_schema_);
    EXPECT_OK(l.Set(0, Cell::Int64(lo)));
    EXPECT_OK(u.Set(0, Cell::Int64(hi)));
    EXPECT_OK(enc.Add(RowOpType::kRangeLowerBound, l.view()));
    EXPECT_OK(enc.Add(RowOpType::kRangeUpperBound, u.view()));
    enc.Finish(s.mutable_range_bounds());
    return s;
  }
  Result<AlterPlan> Plan(const AlterTableRequestPB& req) {
    return PlanAlterTable(table_, req, ranges_, &code_);
  }

  Schema schema_;
  Schema key_schema_;  // what range bounds are rows of
  PartitionSchema ps_;
  SysTableEntryPB table_;
  std::vector<std::pair<std::string, std::string>> ranges_;
  MasterErrorPB::Code code_ = MasterErrorPB::UNKNOWN_ERROR;
};

AlterTableStepPB AddColumn(const std::string& name, DataTypePB type, bool nullable,
                           const Cell* def = nullptr) {
  AlterTableStepPB s;
  s.set_type(AlterTableStepPB::ADD_COLUMN);
  s.mutable_add_column()->set_name(name);
  s.mutable_add_column()->set_type(type);
  s.mutable_add_column()->set_is_nullable(nullable);
  if (def) EncodeCellValue(*def, s.mutable_add_column()->mutable_default_value());
  return s;
}

AlterTableStepPB ColumnStep(AlterTableStepPB::Type type, const std::string& name,
                            const std::string& new_name = "") {
  AlterTableStepPB s;
  s.set_type(type);
  s.set_column_name(name);
  s.set_new_column_name(new_name);
  return s;
}

TEST_F(AlterTableTest, ColumnStepsMakeOneNewVersion) {
  AlterTableRequestPB req;
  const Cell seven = Cell::Int32(7);
  *req.add_steps() = AddColumn("a", INT32, false, &seven);
  *req.add_steps() = ColumnStep(AlterTableStepPB::DROP_COLUMN, "n");
  *req.add_steps() = ColumnStep(AlterTableStepPB::RENAME_COLUMN, "v", "vee");
  AlterTableStepPB alter = ColumnStep(AlterTableStepPB::ALTER_COLUMN, "a");
  EncodeCellValue(Cell::Int32(8), alter.mutable_new_default());
  alter.set_new_comment("the a");
  *req.add_steps() = alter;
  req.set_new_table_name("t2");
  req.set_new_table_comment("a table");
  auto plan = Plan(req);
  ASSERT_OK(plan.status());
  EXPECT_TRUE(plan->schema_changed);
  Schema s = Schema::FromPB(plan->table.schema()).value();
  EXPECT_EQ(s.version(), 1u);
  EXPECT_EQ(plan->table.name(), "t2");
  EXPECT_EQ(plan->table.comment(), "a table");
  ASSERT_EQ(s.num_columns(), 3);
  EXPECT_EQ(s.column(1).name(), "vee");
  EXPECT_EQ(s.column(1).id(), 1);
  const ColumnSchema& a = s.column(2);
  EXPECT_EQ(a.id(), 3);  // never an id a column had
  EXPECT_EQ(a.default_value().cell().int_value(), 8);
  EXPECT_EQ(a.read_default().cell().int_value(), 7);  // what old rows read
  EXPECT_EQ(a.comment(), "the a");
  EXPECT_EQ(plan->table.next_column_id(), 4);

  // Dropping 'a' and adding it again (from the planned entry) gives a new id.
  table_ = plan->table;
  AlterTableRequestPB again;
  *again.add_steps() = ColumnStep(AlterTableStepPB::DROP_COLUMN, "a");
  *again.add_steps() = AddColumn("a", INT32, true);
  plan = Plan(again);
  ASSERT_OK(plan.status());
  s = Schema::FromPB(plan->table.schema()).value();
  EXPECT_EQ(s.version(), 2u);
  EXPECT_EQ(s.column(s.FindColumn("a")).id(), 4);
  EXPECT_FALSE(s.column(s.FindColumn("a")).has_read_default());
}

TEST_F(AlterTableTest, RefusedStepsSayWhyAndChangeNothing) {
  struct Case {
    AlterTableStepPB step;
    MasterErrorPB::Code code;
    std::string message;
  };
  std::vector<Case> cases;
  cases.push_back({AddColumn("x", INT32, false), MasterErrorPB::INVALID_SCHEMA,
                   "NOT NULL without a default"});
  cases.push_back({AddColumn("v", INT32, true), MasterErrorPB::INVALID_SCHEMA,
                   "already has a column 'v'"});
  AlterTableStepPB key = AddColumn("k2", INT32, false);
  key.mutable_add_column()->set_is_key(true);
  cases.push_back({key, MasterErrorPB::INVALID_SCHEMA, "primary key cannot change"});
  const Cell wrong = Cell::String("x");
  cases.push_back({AddColumn("y", INT32, true, &wrong), MasterErrorPB::INVALID_SCHEMA, "default"});
  cases.push_back({ColumnStep(AlterTableStepPB::DROP_COLUMN, "k"), MasterErrorPB::INVALID_SCHEMA,
                   "primary-key column"});
  cases.push_back({ColumnStep(AlterTableStepPB::DROP_COLUMN, "zz"), MasterErrorPB::INVALID_SCHEMA,
                   "no column 'zz'"});
  cases.push_back({ColumnStep(AlterTableStepPB::RENAME_COLUMN, "k", "kk"),
                   MasterErrorPB::INVALID_SCHEMA, "primary key cannot change"});
  cases.push_back({ColumnStep(AlterTableStepPB::RENAME_COLUMN, "v", "n"),
                   MasterErrorPB::INVALID_SCHEMA, "already has a column 'n'"});
  cases.push_back({ColumnStep(AlterTableStepPB::ALTER_COLUMN, "v"), MasterErrorPB::INVALID_SCHEMA,
                   "nothing to change"});
  cases.push_back({RangeStep(AlterTableStepPB::ADD_RANGE_PARTITION, 50, 150),
                   MasterErrorPB::INVALID_PARTITION_SCHEMA, "overlaps"});
  cases.push_back({RangeStep(AlterTableStepPB::DROP_RANGE_PARTITION, 0, 50),
                   MasterErrorPB::INVALID_PARTITION_SCHEMA, "no range partition"});
  cases.push_back({RangeStep(AlterTableStepPB::DROP_RANGE_PARTITION, 0, 100),
                   MasterErrorPB::INVALID_PARTITION_SCHEMA, "last range partition"});
  AlterTableStepPB unknown;
  cases.push_back({unknown, MasterErrorPB::INVALID_ARGUMENT, "unknown step type"});
  for (const Case& c : cases) {
    AlterTableRequestPB req;
    // A good step first: the whole request still fails.
    *req.add_steps() = AddColumn("fine", INT64, true);
    *req.add_steps() = c.step;
    auto plan = Plan(req);
    ASSERT_FALSE(plan.ok()) << c.message;
    EXPECT_EQ(code_, c.code) << plan.status().ToString();
    EXPECT_NE(plan.status().ToString().find(c.message), std::string::npos)
        << plan.status().ToString();
    if (c.message != "last range partition") {
      EXPECT_NE(plan.status().ToString().find("step 2"), std::string::npos)
          << plan.status().ToString();
    }
  }
  AlterTableRequestPB none;
  EXPECT_FALSE(Plan(none).ok());
  AlterTableRequestPB bad_name;
  bad_name.set_new_table_name(std::string("a\x01b"));
  EXPECT_FALSE(Plan(bad_name).ok());
  EXPECT_EQ(code_, MasterErrorPB::INVALID_TABLE_NAME);
}

TEST_F(AlterTableTest, RangePartitionsAddAndDrop) {
  AlterTableRequestPB req;
  *req.add_steps() = RangeStep(AlterTableStepPB::ADD_RANGE_PARTITION, 100, 200);
  *req.add_steps() = RangeStep(AlterTableStepPB::ADD_RANGE_PARTITION, 300, 400);
  *req.add_steps() = RangeStep(AlterTableStepPB::DROP_RANGE_PARTITION, 0, 100);
  *req.add_steps() = RangeStep(AlterTableStepPB::DROP_RANGE_PARTITION, 300, 400);
  auto plan = Plan(req);
  ASSERT_OK(plan.status());
  EXPECT_FALSE(plan->schema_changed);  // the tablets' schema did not change
  EXPECT_EQ(plan->table.schema().version(), 0u);
  ASSERT_EQ(plan->add_partitions.size(), 1u);  // [300, 400) was added and dropped again
  EXPECT_EQ(plan->add_partitions[0].range_key_start, Range(100, 200).first);
  ASSERT_EQ(plan->drop_ranges.size(), 1u);
  EXPECT_EQ(plan->drop_ranges[0], Range(0, 100));

  // With hash buckets, one range is one partition per bucket.
  ps_ = PartitionSchema::Create(schema_, {HashDimension{{"k"}, 3, 0}}, {"k"}).value();
  ps_.ToPB(table_.mutable_partition_schema());
  AlterTableRequestPB add;
  *add.add_steps() = RangeStep(AlterTableStepPB::ADD_RANGE_PARTITION, 100, 200);
  plan = Plan(add);
  ASSERT_OK(plan.status());
  EXPECT_EQ(plan->add_partitions.size(), 3u);

  // A table without range columns has no range partitions to change.
  ps_ = PartitionSchema::Create(schema_, {HashDimension{{"k"}, 3, 0}}, {}).value();
  ps_.ToPB(table_.mutable_partition_schema());
  plan = Plan(add);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().ToString().find("no range partitioning"), std::string::npos);
}

}  // namespace
}  // namespace nyala::master
