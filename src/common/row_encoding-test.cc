#include "common/row_encoding.h"

#include <gtest/gtest.h>

#include "common/coding.h"
#include "common/data_model_test_util.h"
#include "common/test_util.h"

namespace nyala {
namespace {

using C = ColumnSchema;

void ExpectMessage(const Status& s, const std::string& part) {
  EXPECT_NE(s.message().find(part), std::string::npos)
      << "'" << part << "' not in " << s.ToString();
}

TEST(RowTest, SettersCheckTypesAndNullability) {
  Schema schema =
      Schema::Create(
          {C("k", DataType::kInt64), C("s", DataType::kString, true), C("n", DataType::kInt32)}, 1)
          .value();
  Row row(&schema);
  EXPECT_FALSE(row.IsSet(0));
  ASSERT_OK(row.Set("k", Cell::Int64(3)));
  Status s = row.Set("k", Cell::Int32(3));
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_EQ(s.message(), "column 'k' is INT64, value is INT32");
  s = row.SetNull("n");
  EXPECT_TRUE(s.IsInvalidArgument());
  ExpectMessage(s, "column 'n' is not nullable");
  s = row.SetNull("k");
  ExpectMessage(s, "column 'k' is not nullable");
  s = row.Set("zz", Cell::Int32(1));
  EXPECT_TRUE(s.IsInvalidArgument());
  ExpectMessage(s, "no column 'zz'");
  EXPECT_TRUE(row.Set(7, Cell::Int32(1)).IsInvalidArgument());
  EXPECT_TRUE(row.Set(1, Cell()).IsInvalidArgument());
  ASSERT_OK(row.SetNull("s"));
  EXPECT_TRUE(row.IsNull(1));
  EXPECT_EQ(row.ToString(), "(k=3, s=NULL)");
}

TEST(RowTest, CopiesOwnTheirStrings) {
  Schema schema = Schema::Create({C("k", DataType::kString), C("v", DataType::kBinary)}, 1).value();
  std::string key = "key-bytes-longer-than-sso-buffer";
  std::string val = "value";
  Row row(&schema);
  ASSERT_OK(row.SetCopy(0, Cell::String(key)));
  ASSERT_OK(row.Set(1, Cell::Binary(val)));  // borrowed
  key[0] = 'X';
  EXPECT_EQ(row.cell(0).slice_value().ToString(), "key-bytes-longer-than-sso-buffer");
  Row copy = row;
  val[0] = 'Y';
  EXPECT_EQ(row.cell(1).slice_value().ToString(), "Yalue");   // the original borrows
  EXPECT_EQ(copy.cell(1).slice_value().ToString(), "value");  // the copy owns
  Row moved = std::move(copy);
  EXPECT_EQ(moved.cell(0).slice_value().ToString(), "key-bytes-longer-than-sso-buffer");
  Row assigned(&schema);
  assigned = moved;
  EXPECT_EQ(assigned.cell(1).slice_value().ToString(), "value");
  assigned.Clear();
  EXPECT_FALSE(assigned.IsSet(0));
}

// Every random row round-trips through the key and value encodings.
TEST(RowEncodingTest, RandomRowsRoundTrip) {
  DataGen gen(TestRandomSeed());
  for (int trial = 0; trial < 300; trial++) {
    Schema schema = gen.RandomSchema(3, 8);
    for (int i = 0; i < 30; i++) {
      Row row = gen.RandomRow(&schema, false);
      std::string key, value;
      ASSERT_OK(EncodeRowKey(row, &key));
      ASSERT_OK(EncodeRowValue(row, &value));
      Row back(&schema);
      ASSERT_OK(DecodeRowKey(Slice(key), &back));
      ASSERT_OK(DecodeRowValue(Slice(value), &back));
      for (int c = 0; c < schema.num_columns(); c++) {
        ASSERT_EQ(back.cell(c), row.cell(c)) << schema.ToString() << "\n"
                                             << row.ToString() << "\n"
                                             << back.ToString();
      }
      Result<uint32_t> v = RowValueSchemaVersion(Slice(value));
      ASSERT_OK(v.status());
      EXPECT_EQ(*v, schema.version());
      // Every strict prefix of a value is rejected, never misread.
      for (size_t len = 0; len < value.size(); len++) {
        Row tmp(&schema);
        ASSERT_FALSE(DecodeRowValue(Slice(value.data(), len), &tmp).ok());
      }
    }
  }
}

TEST(RowEncodingTest, UnsetColumnsGetDefaultOrNull) {
  Schema schema = Schema::Create({C("k", DataType::kInt32), C("a", DataType::kInt32, true),
                                  C("b", DataType::kString, false, Value(Cell::String("dflt"))),
                                  C("c", DataType::kInt8)},
                                 1)
                      .value();
  Row row(&schema);
  ASSERT_OK(row.Set(0, Cell::Int32(1)));
  std::string value;
  Status s = EncodeRowValue(row, &value);
  EXPECT_TRUE(s.IsInvalidArgument());
  ExpectMessage(s, "column 'c' is not set, not nullable and has no default");
  ASSERT_OK(row.Set(3, Cell::Int8(-2)));
  value.clear();
  ASSERT_OK(EncodeRowValue(row, &value));
  Row back(&schema);
  ASSERT_OK(DecodeRowValue(Slice(value), &back));
  EXPECT_TRUE(back.IsNull(1));
  EXPECT_EQ(back.cell(2).slice_value().ToString(), "dflt");
  EXPECT_EQ(back.cell(3).int_value(), -2);

  Row no_key(&schema);
  std::string key;
  s = EncodeRowKey(no_key, &key);
  EXPECT_TRUE(s.IsInvalidArgument());
  ExpectMessage(s, "key column 'k' is not set");
}

// A value written under an older, shorter schema decodes under the newer one with
// the added columns NULL or defaulted.
TEST(RowEncodingTest, OlderValueDecodesWithAddedColumns) {
  Schema v1 =
      Schema::Create({C("k", DataType::kInt64), C("a", DataType::kString, true)}, 1, 1).value();
  Schema v2 = Schema::Create({C("k", DataType::kInt64), C("a", DataType::kString, true),
                              C("b", DataType::kDouble, true),
                              C("c", DataType::kInt32, false, Value(Cell::Int32(42))),
                              C("d", DataType::kBinary, true, Value(Cell::Binary("zz")))},
                             1, 2)
                  .value();
  Row old(&v1);
  ASSERT_OK(old.Set(0, Cell::Int64(9)));
  ASSERT_OK(old.Set(1, Cell::String("hello")));
  std::string value;
  ASSERT_OK(EncodeRowValue(old, &value));
  Row row(&v2);
  ASSERT_OK(DecodeRowValue(Slice(value), &row));
  EXPECT_EQ(row.cell(1).slice_value().ToString(), "hello");
  EXPECT_TRUE(row.IsNull(2));
  EXPECT_EQ(row.cell(3).int_value(), 42);
  EXPECT_EQ(row.cell(4).slice_value().ToString(), "zz");

  // Newer than the reader: refused.
  std::string newer;
  Row r2(&v2);
  ASSERT_OK(r2.Set(0, Cell::Int64(1)));
  ASSERT_OK(EncodeRowValue(r2, &newer));
  Row reader(&v1);
  Status s = DecodeRowValue(Slice(newer), &reader);
  EXPECT_TRUE(s.IsIllegalState()) << s.ToString();
  ExpectMessage(s, "schema version 2, newer than the reader's 1");

  // An added NOT NULL column without default cannot be filled.
  Schema v3 = Schema::Create({C("k", DataType::kInt64), C("a", DataType::kString, true),
                              C("x", DataType::kInt32)},
                             1, 3)
                  .value();
  Row r3(&v3);
  s = DecodeRowValue(Slice(value), &r3);
  EXPECT_TRUE(s.IsIllegalState()) << s.ToString();
  ExpectMessage(s, "column 'x'");
}

// Columns map by id across versions: a dropped column is skipped, a renamed one keeps
// its values, an added one reads its read default (not the default set later), and a
// column dropped and added again under its old name does not bring old values back.
TEST(RowValueTranslationTest, MapsColumnsById) {
  auto v1 = std::make_shared<const Schema>(
      Schema::Create({C("k", DataType::kInt64, false, Value(), 0),
                      C("a", DataType::kString, true, Value(), 1),
                      C("b", DataType::kInt32, false, Value(), 2),
                      C("c", DataType::kDouble, true, Value(), 3)},
                     1, 1)
          .value());
  // v2: 'a' renamed 'a2', 'b' dropped, 'c' dropped and added again (id 5), 'd' added
  // NOT NULL with read default 7 (its default now 8), 'e' added nullable.
  std::vector<ColumnSchema> cols = {
      C("k", DataType::kInt64, false, Value(), 0), C("a2", DataType::kString, true, Value(), 1),
      C("c", DataType::kDouble, true, Value(), 5),
      C("d", DataType::kInt32, false, Value(Cell::Int32(8)), 4),
      C("e", DataType::kString, true, Value(), 6)};
  cols[3].set_read_default(Value(Cell::Int32(7)));
  Schema v2 = Schema::Create(cols, 1, 2).value();

  Row old(v1.get());
  ASSERT_OK(old.Set(0, Cell::Int64(1)));
  ASSERT_OK(old.Set(1, Cell::String("alpha")));
  ASSERT_OK(old.Set(2, Cell::Int32(-5)));
  ASSERT_OK(old.Set(3, Cell::Double(2.5)));
  std::string value;
  ASSERT_OK(EncodeRowValue(old, &value));

  RowValueTranslation t = RowValueTranslation::Create(v1, v2).value();
  Row row(&v2);
  ASSERT_OK(t.Decode(Slice(value), &row));
  EXPECT_EQ(row.cell(1).slice_value().ToString(), "alpha");
  EXPECT_TRUE(row.IsNull(2)) << row.ToString();  // the new 'c', not the old 2.5
  EXPECT_EQ(row.cell(3).int_value(), 7);
  EXPECT_TRUE(row.IsNull(4));

  // Re-encoded under the reader, the row decodes without translation.
  ASSERT_OK(row.Set(0, Cell::Int64(1)));
  std::string now;
  ASSERT_OK(EncodeRowValue(row, &now));
  EXPECT_EQ(RowValueSchemaVersion(Slice(now)).value(), 2u);
  Row again(&v2);
  ASSERT_OK(again.Set(0, Cell::Int64(1)));
  ASSERT_OK(DecodeRowValue(Slice(now), &again));
  EXPECT_EQ(again.ToString(), row.ToString());

  // A value of another version is refused, and so is a malformed one.
  Status s = t.Decode(Slice(now), &row);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  s = t.Decode(Slice(value.substr(0, value.size() - 2)), &row);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
}

TEST(RowValueTranslationTest, RefusesWhatCannotBeRead) {
  auto v1 = std::make_shared<const Schema>(
      Schema::Create({C("k", DataType::kInt64), C("a", DataType::kInt32)}, 1, 1).value());
  // The same id with another type.
  Schema retyped = Schema::Create({C("k", DataType::kInt64, false, Value(), 0),
                                   C("a", DataType::kInt64, false, Value(), 1)},
                                  1, 2)
                       .value();
  Status s = RowValueTranslation::Create(v1, retyped).status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  ExpectMessage(s, "column id 1");
  // An added NOT NULL column without a read default.
  Schema no_default = Schema::Create({C("k", DataType::kInt64, false, Value(), 0),
                                      C("a", DataType::kInt32, false, Value(), 1),
                                      C("x", DataType::kInt32, false, Value(), 2)},
                                     1, 2)
                          .value();
  s = RowValueTranslation::Create(v1, no_default).status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  ExpectMessage(s, "no read default");
  // Not older.
  EXPECT_TRUE(RowValueTranslation::Create(v1, *v1).status().IsInvalidArgument());
}

TEST(RowEncodingTest, MalformedValues) {
  Schema schema =
      Schema::Create(
          {C("k", DataType::kInt32), C("a", DataType::kBool), C("b", DataType::kString, true)}, 1)
          .value();
  Row row(&schema);
  auto decode = [&](const std::string& v) { return DecodeRowValue(Slice(v), &row); };
  // version 0, 2 columns, bitmap, bool, string.
  std::string good("\x00\x02\x00\x01\x02hi", 7);
  ASSERT_OK(decode(good));
  EXPECT_TRUE(row.cell(1).bool_value());

  Status s = decode(good + "x");
  EXPECT_TRUE(s.IsCorruption());
  ExpectMessage(s, "1 trailing bytes");
  s = decode(std::string("\x00\x02\x00\x07\x02hi", 7));
  EXPECT_TRUE(s.IsCorruption());
  ExpectMessage(s, "bad BOOL byte in column 'a'");
  s = decode(std::string("\x00\x02\x01\x01", 4));  // NULL in NOT NULL column a
  EXPECT_TRUE(s.IsCorruption());
  ExpectMessage(s, "NULL in NOT NULL column 'a'");
  s = decode(std::string("\x00\x02\x04\x01", 4));  // bit past the 2 columns
  EXPECT_TRUE(s.IsCorruption());
  ExpectMessage(s, "bits set past");
  s = decode(std::string("\x00\x03\x00\x01\x00\x00", 6));
  EXPECT_TRUE(s.IsCorruption());
  ExpectMessage(s, "row value has 3 non-key columns");
  s = decode(std::string("\x00\x02\x00\x01\x09hi", 7));
  EXPECT_TRUE(s.IsCorruption());
  ExpectMessage(s, "truncated column 'b'");
  s = decode(std::string("\x80", 1));
  ExpectMessage(s, "truncated header");
}

}  // namespace
}  // namespace nyala
