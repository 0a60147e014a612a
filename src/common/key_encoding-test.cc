#include "common/key_encoding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/data_model_test_util.h"
#include "common/test_util.h"
#include "nyala/row.h"

namespace nyala {
namespace {

std::string Hex(const std::string& s) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::string Key(const Cell& c, bool is_last) {
  std::string s;
  EncodeKeyCell(c, is_last, &s);
  return s;
}

Schema KeySchema(const std::vector<DataType>& types) {
  std::vector<ColumnSchema> cols;
  for (size_t i = 0; i < types.size(); i++) cols.emplace_back("k" + std::to_string(i), types[i]);
  return Schema::Create(std::move(cols), static_cast<int>(types.size())).value();
}

TEST(KeyEncodingTest, KnownEncodings) {
  EXPECT_EQ(Hex(Key(Cell::Int32(-1), true)), "7fffffff");
  EXPECT_EQ(Hex(Key(Cell::Int32(0), true)), "80000000");
  EXPECT_EQ(Hex(Key(Cell::Int8(-128), true)), "00");
  EXPECT_EQ(Hex(Key(Cell::Int16(1), true)), "8001");
  EXPECT_EQ(Hex(Key(Cell::Int64(INT64_MIN), true)), "0000000000000000");
  EXPECT_EQ(Hex(Key(Cell::UnixtimeMicros(1), true)), "8000000000000001");
  EXPECT_EQ(Hex(Key(Cell::Bool(true), true)), "01");
  EXPECT_EQ(Hex(Key(Cell::Float(1.0f), true)), "bf800000");
  EXPECT_EQ(Hex(Key(Cell::Float(-1.0f), true)), "407fffff");
  EXPECT_EQ(Hex(Key(Cell::Double(0.0), true)), "8000000000000000");
  EXPECT_EQ(Hex(Key(Cell::String(Slice("a\0b", 3)), false)), "610001620000");
  EXPECT_EQ(Hex(Key(Cell::String(Slice("a\0b", 3)), true)), "610062");
  EXPECT_EQ(Hex(Key(Cell::Binary(""), false)), "0000");
}

TEST(KeyEncodingTest, FloatingRules) {
  const double nan = std::nan("");
  // -0.0 is +0.0.
  EXPECT_EQ(Key(Cell::Double(-0.0), true), Key(Cell::Double(0.0), true));
  EXPECT_EQ(Key(Cell::Float(-0.0f), true), Key(Cell::Float(0.0f), true));
  // Every NaN is one NaN, above +inf.
  EXPECT_EQ(Key(Cell::Double(nan), true), Key(Cell::Double(-nan), true));
  EXPECT_EQ(Key(Cell::Double(nan), true), Key(Cell::Double(std::nan("0xabc")), true));
  EXPECT_EQ(Key(Cell::Float(std::nanf("")), true), Key(Cell::Float(-std::nanf("7")), true));
  EXPECT_GT(Key(Cell::Double(nan), true),
            Key(Cell::Double(std::numeric_limits<double>::infinity()), true));
  EXPECT_EQ(Hex(Key(Cell::Double(nan), true)), "fff8000000000000");
  EXPECT_EQ(Hex(Key(Cell::Float(std::nanf("")), true)), "ffc00000");
  // Decoding gives the canonical values back.
  std::string k = Key(Cell::Double(-0.0), true);
  Slice in(k);
  Cell c;
  Arena arena;
  ASSERT_OK(DecodeKeyCell(DataType::kDouble, true, &in, &c, &arena));
  EXPECT_FALSE(std::signbit(c.double_value()));
  EXPECT_EQ(c.double_value(), 0.0);
}

// Encodes keys of random composite schemas (every type, 1-3 columns) and checks
// that memcmp order equals typed order for every pair, and that keys decode back.
TEST(KeyEncodingTest, EncodedOrderMatchesTypedOrder) {
  DataGen gen(TestRandomSeed());
  int64_t pairs = 0, equal_pairs = 0;
  for (int trial = 0; trial < 150; trial++) {
    const int nk = 1 + static_cast<int>(gen.Uniform(3));
    std::vector<DataType> types;
    for (int i = 0; i < nk; i++) types.push_back(gen.RandomType());
    if (trial < kMaxDataType) types[0] = DataType(trial + 1);  // each type at least once
    Schema schema = KeySchema(types);
    const bool small = gen.OneIn(2);
    std::vector<Row> rows;
    std::vector<std::string> keys;
    for (int i = 0; i < 120; i++) {
      rows.push_back(gen.RandomRow(&schema, false, small));
      keys.emplace_back();
      EncodeKey(schema, rows.back().view().cells(), &keys.back());
    }
    for (size_t i = 0; i < rows.size(); i++) {
      for (size_t j = 0; j < rows.size(); j++) {
        const int typed = Sign(CompareKeys(rows[i], rows[j]));
        const int encoded = Sign(Slice(keys[i]).compare(Slice(keys[j])));
        pairs++;
        equal_pairs += typed == 0;
        ASSERT_EQ(typed, encoded) << schema.ToString() << "\n"
                                  << rows[i].ToString() << " " << Hex(keys[i]) << "\n"
                                  << rows[j].ToString() << " " << Hex(keys[j]);
      }
      // Round trip: same typed key, same bytes.
      Row back(&schema);
      ASSERT_OK(DecodeKey(schema, Slice(keys[i]), back.mutable_cells(), back.arena()));
      ASSERT_EQ(CompareKeys(back, rows[i]), 0) << rows[i].ToString() << " " << back.ToString();
      std::string again;
      EncodeKey(schema, back.view().cells(), &again);
      ASSERT_EQ(again, keys[i]);
    }
  }
  EXPECT_GT(equal_pairs, pairs / 1000);  // the small domains produced ties too
}

TEST(KeyEncodingTest, StringsWithZerosAndFFs) {
  // Composite (STRING, INT8): the string column is escaped.
  Schema schema = KeySchema({DataType::kString, DataType::kInt8});
  const std::vector<std::string> strs = {std::string(),
                                         std::string("\0", 1),
                                         std::string("\0\0", 2),
                                         std::string("\0\1", 2),
                                         std::string("\1", 1),
                                         "a",
                                         std::string("a\0", 2),
                                         std::string("a\0a", 3),
                                         "ab",
                                         "\xff",
                                         "\xff\xff",
                                         std::string("\xff\0", 2)};
  std::vector<std::pair<std::string, Row>> enc;
  for (const std::string& s : strs) {
    for (int8_t i : {int8_t(-128), int8_t(0), int8_t(127)}) {
      Row row(&schema);
      ASSERT_OK(row.SetCopy(0, Cell::String(s)));
      ASSERT_OK(row.Set(1, Cell::Int8(i)));
      std::string k;
      EncodeKey(schema, row.view().cells(), &k);
      enc.emplace_back(k, std::move(row));
    }
  }
  for (auto& [ka, ra] : enc) {
    for (auto& [kb, rb] : enc) {
      ASSERT_EQ(Sign(CompareKeys(ra, rb)), Sign(Slice(ka).compare(Slice(kb))))
          << ra.ToString() << " vs " << rb.ToString();
    }
    Row back(&schema);
    ASSERT_OK(DecodeKey(schema, Slice(ka), back.mutable_cells(), back.arena()));
    EXPECT_EQ(back.cell(0), ra.cell(0));
    EXPECT_EQ(back.cell(1), ra.cell(1));
  }
}

TEST(KeyEncodingTest, DecodeErrors) {
  Arena arena;
  Cell c;
  auto decode = [&](DataType t, bool last, std::string bytes) {
    Slice in(bytes);
    return DecodeKeyCell(t, last, &in, &c, &arena);
  };
  Status s = decode(DataType::kInt32, true, "\x80\x00");
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("truncated key"), std::string::npos) << s.ToString();
  s = decode(DataType::kString, false, std::string("abc\0", 4));
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("truncated key"), std::string::npos) << s.ToString();
  s = decode(DataType::kString, false, "abc");
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  s = decode(DataType::kBinary, false, std::string("a\0\1b\0\2", 6));
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("bad escape"), std::string::npos) << s.ToString();
  s = decode(DataType::kBool, true, "\x05");
  EXPECT_TRUE(s.IsCorruption());

  Schema schema = KeySchema({DataType::kInt16, DataType::kString});
  // An INT16 then an empty last string decodes fine.
  Cell cells[2];
  ASSERT_OK(DecodeKey(schema, Slice("\x80\x01"), cells, &arena));
  EXPECT_EQ(cells[0].int_value(), 1);
  EXPECT_TRUE(cells[1].slice_value().empty());
  Schema fixed = KeySchema({DataType::kInt8});
  s = DecodeKey(fixed, Slice("\x80\x01"), cells, &arena);
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("after the last key column"), std::string::npos) << s.ToString();
  s = DecodeKey(schema, Slice("\x80"), cells, &arena);
  EXPECT_NE(s.message().find("key column 'k0'"), std::string::npos) << s.ToString();
}

TEST(KeyEncodingTest, PrefixSuccessor) {
  EXPECT_EQ(PrefixSuccessor(Slice("abc")), "abd");
  EXPECT_EQ(PrefixSuccessor(Slice("a\xff\xff")), "b");
  EXPECT_EQ(PrefixSuccessor(Slice("\xff\xff")), "");
  EXPECT_EQ(PrefixSuccessor(Slice("")), "");
  EXPECT_EQ(ImmediateSuccessor(Slice("ab")), std::string("ab\0", 3));
}

}  // namespace
}  // namespace nyala
