#include "nyala/schema.h"
#include "common/status.h"

#include <gtest/gtest.h>

#include "common/common.pb.h"
#include "common/data_model_test_util.h"
#include "common/test_util.h"

namespace nyala {
namespace {

Schema SeedSchema() {
  Result<Schema> s = Schema::Create(
      {ColumnSchema("key", DataType::kInt64), ColumnSchema("a", DataType::kInt32),
       ColumnSchema("b", DataType::kString, true), ColumnSchema("c", DataType::kString, true),
       ColumnSchema("d", DataType::kInt32, false, Value(Cell::Int32(5)))},
      1, 7);
  CHECK_OK(s.status());
  return std::move(s).value();
}

// Expects `r` to fail with InvalidArgument mentioning every string of `parts`.
template <typename T>
void ExpectInvalid(const Result<T>& r, const std::vector<std::string>& parts) {
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  for (const std::string& p : parts) {
    EXPECT_NE(r.status().message().find(p), std::string::npos)
        << "'" << p << "' not in: " << r.status().ToString();
  }
}

TEST(SchemaTest, CreateAssignsIdsAndLooksUpColumns) {
  Schema s = SeedSchema();
  EXPECT_EQ(s.num_columns(), 5);
  EXPECT_EQ(s.num_key_columns(), 1);
  EXPECT_EQ(s.num_value_columns(), 4);
  EXPECT_EQ(s.version(), 7u);
  EXPECT_TRUE(s.has_nullable_columns());
  EXPECT_EQ(s.FindColumn("c"), 3);
  EXPECT_EQ(s.FindColumn("nope"), -1);
  EXPECT_TRUE(s.ColumnIndex("nope").status().IsNotFound());
  for (int i = 0; i < s.num_columns(); i++) EXPECT_EQ(s.column(i).id(), i);
  EXPECT_EQ(s.FindColumnById(4), 4);
  EXPECT_EQ(s.column(4).MissingValue().int_value(), 5);
  EXPECT_TRUE(s.column(2).MissingValue().is_null());
  EXPECT_TRUE(s.column(1).MissingValue().is_absent());
  EXPECT_EQ(s.ToString(),
            "(key INT64 NOT NULL, a INT32 NOT NULL, b STRING NULLABLE, c STRING NULLABLE, "
            "d INT32 NOT NULL DEFAULT 5, PRIMARY KEY (key)) version 7");
}

TEST(SchemaTest, ValidationErrorsNameTheColumn) {
  using C = ColumnSchema;
  ExpectInvalid(Schema::Create({C("a", DataType::kInt32)}, 0), {"at least one primary key"});
  ExpectInvalid(Schema::Create({C("a", DataType::kInt32)}, 2), {"fewer than"});
  ExpectInvalid(Schema::Create({C("k", DataType::kInt32, true)}, 1),
                {"key column 'k'", "nullable"});
  ExpectInvalid(Schema::Create({C("k", DataType::kInt32, false, Value(Cell::Int32(1)))}, 1),
                {"key column 'k'", "default"});
  ExpectInvalid(Schema::Create({C("k", DataType::kInt32), C("k", DataType::kString)}, 1),
                {"duplicate column name 'k'"});
  ExpectInvalid(Schema::Create({C("k", DataType::kInt32), C("", DataType::kString)}, 1),
                {"column 1", "empty name"});
  ExpectInvalid(
      Schema::Create({C("k", DataType::kInt32), C(std::string(300, 'x'), DataType::kInt8)}, 1),
      {"longer than 256"});
  ExpectInvalid(Schema::Create({C("k", DataType::kInt32), C("u", DataType::kUnknown)}, 1),
                {"column 'u'", "unknown type"});
  ExpectInvalid(
      Schema::Create(
          {C("k", DataType::kInt32), C("v", DataType::kInt32, false, Value(Cell::Int64(1)))}, 1),
      {"column 'v'", "default value is INT64, column is INT32"});
  ExpectInvalid(Schema::Create({C("k", DataType::kInt32), C("v", DataType::kInt32, false,
                                                            Value(Cell::Null(DataType::kInt32)))},
                               1),
                {"column 'v'", "not nullable"});
  ExpectInvalid(
      Schema::Create({C("k", DataType::kInt32, false, Value(), 3), C("v", DataType::kInt32)}, 1),
      {"column 'v' has no id"});
  ExpectInvalid(Schema::Create({C("k", DataType::kInt32, false, Value(), 3),
                                C("v", DataType::kInt32, false, Value(), 3)},
                               1),
                {"duplicate column id 3", "'k'", "'v'"});
  ExpectInvalid(Schema::Create({C("k", DataType::kInt32, false, Value(), -5)}, 1),
                {"column 'k' has negative id"});
  std::vector<C> many;
  for (int i = 0; i < Schema::kMaxColumns + 1; i++)
    many.emplace_back("c" + std::to_string(i), DataType::kInt8);
  ExpectInvalid(Schema::Create(std::move(many), 1), {"more than the maximum"});
}

TEST(SchemaTest, KeepsGivenIdsAndDropsNullDefault) {
  using C = ColumnSchema;
  Result<Schema> s =
      Schema::Create({C("k", DataType::kInt32, false, Value(), 10),
                      C("v", DataType::kInt32, true, Value(Cell::Null(DataType::kInt32)), 3)},
                     1);
  ASSERT_OK(s.status());
  EXPECT_EQ(s->column(0).id(), 10);
  EXPECT_EQ(s->column(1).id(), 3);
  EXPECT_FALSE(s->column(1).has_default());
  EXPECT_EQ(s->FindColumnById(3), 1);
  EXPECT_EQ(s->FindColumnById(4), -1);
}

TEST(SchemaTest, PBRoundTripsRandomSchemas) {
  DataGen gen(TestRandomSeed());
  for (int i = 0; i < 200; i++) {
    Schema s = gen.RandomSchema();
    SchemaPB pb;
    s.ToPB(&pb);
    Result<Schema> back = Schema::FromPB(pb);
    ASSERT_OK(back.status());
    ASSERT_EQ(*back, s) << s.ToString() << "\nvs\n" << back->ToString();
  }
}

TEST(SchemaTest, FromPBErrors) {
  SchemaPB pb;
  SeedSchema().ToPB(&pb);
  {
    SchemaPB bad = pb;
    bad.mutable_columns(2)->set_is_key(true);
    ExpectInvalid(Schema::FromPB(bad), {"key column 'b' follows non-key column 'a'"});
  }
  {
    SchemaPB bad = pb;
    bad.mutable_columns(4)->set_default_value("xx");
    ExpectInvalid(Schema::FromPB(bad), {"column 'd'", "default value", "INT32 needs 4"});
  }
  {
    SchemaPB bad = pb;
    bad.mutable_columns(1)->set_type(UNKNOWN_DATA);
    ExpectInvalid(Schema::FromPB(bad), {"column 'a'", "unknown data type"});
  }
  {
    SchemaPB bad = pb;
    bad.mutable_columns(0)->set_is_nullable(true);
    ExpectInvalid(Schema::FromPB(bad), {"key column 'key' may not be nullable"});
  }
}

TEST(SchemaTest, Projection) {
  Schema s = SeedSchema();
  Result<Schema> p = s.Project({"c", "key"});
  ASSERT_OK(p.status());
  EXPECT_EQ(p->num_columns(), 2);
  EXPECT_EQ(p->num_key_columns(), 0);
  EXPECT_EQ(p->column(0).name(), "c");
  EXPECT_EQ(p->column(0).id(), 3);
  EXPECT_EQ(p->column(1).name(), "key");
  EXPECT_EQ(p->version(), 7u);
  EXPECT_TRUE(s.Project({"a", "zz"}).status().IsNotFound());
  ExpectInvalid(s.Project({"a", "a"}), {"column 'a' given twice"});
  Result<std::vector<int>> idxs = s.ColumnIndexes({"d", "a"});
  ASSERT_OK(idxs.status());
  EXPECT_EQ(*idxs, (std::vector<int>{4, 1}));
}

}  // namespace
}  // namespace nyala
