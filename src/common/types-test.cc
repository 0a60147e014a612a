#include "nyala/types.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "common/common.pb.h"
#include "common/data_model_test_util.h"
#include "common/test_util.h"

namespace nyala {
namespace {

TEST(TypesTest, TypeInfoTable) {
  EXPECT_STREQ(DataTypeName(DataType::kUnixtimeMicros), "UNIXTIME_MICROS");
  EXPECT_EQ(GetTypeInfo(DataType::kInt16).fixed_size, 2);
  EXPECT_EQ(GetTypeInfo(DataType::kDouble).fixed_size, 8);
  EXPECT_TRUE(GetTypeInfo(DataType::kString).is_variable_length());
  EXPECT_TRUE(GetTypeInfo(DataType::kBinary).is_variable_length());
  EXPECT_FALSE(GetTypeInfo(DataType::kBool).is_variable_length());
  EXPECT_TRUE(GetTypeInfo(DataType::kUnixtimeMicros).is_integer);
  EXPECT_TRUE(GetTypeInfo(DataType::kFloat).is_floating);
  for (int t = 1; t <= kMaxDataType; t++) {
    EXPECT_EQ(static_cast<int>(GetTypeInfo(DataType(t)).type), t);
    EXPECT_EQ(DataTypePB_Name(DataTypePB(t)), DataTypeName(DataType(t)));
  }
}

TEST(TypesTest, DataTypeFromPB) {
  Result<DataType> t = DataTypeFromPB(DataTypePB::STRING);
  ASSERT_OK(t.status());
  EXPECT_EQ(*t, DataType::kString);
  EXPECT_TRUE(DataTypeFromPB(0).status().IsInvalidArgument());
  EXPECT_TRUE(DataTypeFromPB(11).status().IsInvalidArgument());
  EXPECT_TRUE(DataTypeFromPB(-3).status().IsInvalidArgument());
}

TEST(TypesTest, FloatingOrderRules) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::nan("");
  EXPECT_EQ(Cell::Double(-0.0).Compare(Cell::Double(0.0)), 0);
  EXPECT_EQ(Cell::Double(nan).Compare(Cell::Double(-nan)), 0);
  EXPECT_EQ(Cell::Double(nan).Compare(Cell::Double(std::nan("0x77"))), 0);
  EXPECT_GT(Cell::Double(nan).Compare(Cell::Double(inf)), 0);
  EXPECT_LT(Cell::Double(-inf).Compare(Cell::Double(-1e308)), 0);
  EXPECT_LT(Cell::Float(-1.0f).Compare(Cell::Float(-0.0f)), 0);
  EXPECT_GT(Cell::Float(std::nanf("")).Compare(Cell::Float(std::numeric_limits<float>::infinity())),
            0);
  EXPECT_TRUE(Cell::Float(-0.0f) == Cell::Float(0.0f));
}

TEST(TypesTest, StatesOrderAndEquality) {
  EXPECT_LT(Cell().Compare(Cell::Null(DataType::kInt32)), 0);
  EXPECT_LT(Cell::Null(DataType::kInt32).Compare(Cell::Int32(INT32_MIN)), 0);
  EXPECT_EQ(Cell::Null(DataType::kString).Compare(Cell::Null(DataType::kString)), 0);
  EXPECT_FALSE(Cell::Int32(1) == Cell::Int64(1));  // different types are never equal
  EXPECT_TRUE(Cell::String("ab") == Cell::String(std::string("ab")));
  EXPECT_LT(Cell::String("a").Compare(Cell::String(Slice("a\0", 2))), 0);
  EXPECT_LT(Cell::Binary("\x7f").Compare(Cell::Binary("\x80")), 0);  // unsigned bytes
  EXPECT_EQ(Cell::String(Slice("a\0b", 3)).ToString(), "\"a\\x00b\"");
  EXPECT_EQ(Cell::Int8(-5).ToString(), "-5");
  EXPECT_EQ(Cell::Null(DataType::kBool).ToString(), "NULL");
}

TEST(TypesTest, ValueOwnsItsBytes) {
  auto buf = std::make_unique<std::string>("hello\0world", 11);
  Value v(Cell::Binary(Slice(*buf)));
  (*buf)[0] = 'X';
  buf.reset();
  EXPECT_EQ(v.cell().slice_value().ToString(), std::string("hello\0world", 11));
  Value copy = v;
  Value moved = std::move(v);
  EXPECT_EQ(copy, moved);
  EXPECT_EQ(copy.cell().slice_value().size(), 11u);
  EXPECT_EQ(Value(Cell::Int64(7)).cell().int_value(), 7);
  EXPECT_TRUE(Value().is_absent());
}

TEST(TypesTest, CellValueEncodingRoundTripsRandomValues) {
  DataGen gen(TestRandomSeed());
  Arena arena;
  for (int i = 0; i < 5000; i++) {
    const DataType type = gen.RandomType();
    const Cell c = gen.RandomValue(type, &arena);
    std::string enc = EncodeCellValue(c);
    if (!IsVariableLength(type)) {
      EXPECT_EQ(enc.size(), static_cast<size_t>(GetTypeInfo(type).fixed_size));
    }
    Cell back;
    ASSERT_OK(DecodeCellValue(type, Slice(enc), &back));
    ASSERT_EQ(back.Compare(c), 0) << c.ToString() << " vs " << back.ToString();
    if (type == DataType::kDouble || type == DataType::kFloat) {
      // Bits are kept exactly (no canonicalisation outside keys).
      EXPECT_EQ(EncodeCellValue(back), enc);
    }
  }
}

TEST(TypesTest, CellValueDecodingErrors) {
  Cell c;
  Status s = DecodeCellValue(DataType::kInt32, Slice("abc"), &c);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_EQ(s.message(), "value is 3 bytes, INT32 needs 4");
  s = DecodeCellValue(DataType::kBool, Slice("\x02", 1), &c);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("BOOL"), std::string::npos);
  EXPECT_TRUE(DecodeCellValue(DataType::kUnknown, Slice(""), &c).IsInvalidArgument());
  ASSERT_OK(DecodeCellValue(DataType::kString, Slice(""), &c));
  EXPECT_TRUE(c.has_value());
  EXPECT_TRUE(c.slice_value().empty());
}

}  // namespace
}  // namespace nyala
