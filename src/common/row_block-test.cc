// Tests of the row-wise projection layout: random rows of random schemas round-trip
// through RowBlockEncoder and RowBlock, projections reorder columns, and corrupt
// sidecars are refused.
#include "common/row_block.h"

#include <gtest/gtest.h>

#include "common/data_model_test_util.h"
#include "common/test_util.h"

namespace nyala {
namespace {

TEST(RowBlockTest, LayoutOfSeedSchema) {
  auto s = Schema::Create(
      {ColumnSchema("key", DataType::kInt64), ColumnSchema("a", DataType::kInt32),
       ColumnSchema("b", DataType::kString, true), ColumnSchema("c", DataType::kBool, true)},
      1);
  ASSERT_OK(s.status());
  RowBlockLayout layout(*s);
  EXPECT_EQ(layout.bitmap_bytes(), 1u);
  EXPECT_EQ(layout.offset(0), 1u);
  EXPECT_EQ(layout.offset(1), 9u);
  EXPECT_EQ(layout.offset(2), 13u);
  EXPECT_EQ(layout.offset(3), 29u);
  EXPECT_EQ(layout.stride(), 30u);
  EXPECT_EQ(layout.null_index(0), -1);
  EXPECT_EQ(layout.null_index(2), 0);
  EXPECT_EQ(layout.null_index(3), 1);
}

TEST(RowBlockTest, RandomRowsRoundTrip) {
  DataGen gen(TestRandomSeed());
  for (int iter = 0; iter < 200; iter++) {
    Schema schema = gen.RandomSchema(3, 8);
    std::vector<Row> rows;
    const int n = static_cast<int>(gen.Uniform(50));
    for (int i = 0; i < n; i++) rows.push_back(gen.RandomRow(&schema, /*allow_unset=*/false));
    RowBlockEncoder enc(&schema);
    for (const Row& r : rows) enc.AppendRow(r.view().cells());
    ASSERT_EQ(enc.num_rows(), n);
    std::string data, indirect;
    enc.Finish(&data, &indirect);
    EXPECT_EQ(enc.num_rows(), 0);
    RowBlock block;
    ASSERT_OK(RowBlock::Parse(&schema, n, Slice(data), Slice(indirect), &block));
    ASSERT_EQ(block.num_rows(), n);
    std::vector<Cell> cells(schema.num_columns());
    for (int i = 0; i < n; i++) {
      block.GetRow(i, cells.data());
      for (int c = 0; c < schema.num_columns(); c++) {
        ASSERT_TRUE(cells[c] == rows[i].cell(c))
            << schema.ToString() << " row " << i << " col " << c << ": " << cells[c].ToString()
            << " vs " << rows[i].cell(c).ToString();
      }
    }
  }
}

TEST(RowBlockTest, ProjectionPicksAndReordersColumns) {
  auto s =
      Schema::Create({ColumnSchema("key", DataType::kInt64), ColumnSchema("a", DataType::kInt32),
                      ColumnSchema("b", DataType::kString, true)},
                     1);
  ASSERT_OK(s.status());
  auto proj = s->Project({"b", "key"});
  ASSERT_OK(proj.status());
  Row row(&*s);
  ASSERT_OK(row.Set(0, Cell::Int64(-7)));
  ASSERT_OK(row.Set(1, Cell::Int32(3)));
  ASSERT_OK(row.Set(2, Cell::String("hello")));
  Row null_row(&*s);
  ASSERT_OK(null_row.Set(0, Cell::Int64(8)));
  ASSERT_OK(null_row.Set(1, Cell::Int32(4)));
  ASSERT_OK(null_row.SetNull(2));
  const int map[] = {2, 0};
  RowBlockEncoder enc(&*proj);
  enc.AppendRow(row.view().cells(), map);
  enc.AppendRow(null_row.view().cells(), map);
  std::string data, indirect;
  enc.Finish(&data, &indirect);
  EXPECT_EQ(indirect, "hello");
  RowBlock block;
  ASSERT_OK(RowBlock::Parse(&*proj, 2, data, indirect, &block));
  EXPECT_EQ(block.cell(0, 0).slice_value().ToString(), "hello");
  EXPECT_EQ(block.cell(0, 1).int_value(), -7);
  EXPECT_TRUE(block.cell(1, 0).is_null());
  EXPECT_EQ(block.cell(1, 1).int_value(), 8);
}

TEST(RowBlockTest, CorruptBlocksAreRefused) {
  auto s =
      Schema::Create({ColumnSchema("key", DataType::kInt64), ColumnSchema("b", DataType::kString),
                      ColumnSchema("f", DataType::kBool, true)},
                     1);
  ASSERT_OK(s.status());
  Row row(&*s);
  ASSERT_OK(row.Set(0, Cell::Int64(1)));
  ASSERT_OK(row.Set(1, Cell::String("abc")));
  ASSERT_OK(row.Set(2, Cell::Bool(true)));
  RowBlockEncoder enc(&*s);
  enc.AppendRow(row.view().cells());
  std::string data, indirect;
  enc.Finish(&data, &indirect);
  RowBlock block;
  ASSERT_OK(RowBlock::Parse(&*s, 1, data, indirect, &block));
  // Wrong row count / truncated rows.
  EXPECT_TRUE(RowBlock::Parse(&*s, 2, data, indirect, &block).IsCorruption());
  EXPECT_TRUE(RowBlock::Parse(&*s, 1, Slice(data.data(), data.size() - 1), indirect, &block)
                  .IsCorruption());
  // A string past the indirect data.
  EXPECT_TRUE(RowBlock::Parse(&*s, 1, data, Slice(indirect.data(), 2), &block).IsCorruption());
  // A bad BOOL byte.
  std::string bad_bool = data;
  bad_bool[RowBlockLayout(*s).offset(2)] = 7;
  EXPECT_TRUE(RowBlock::Parse(&*s, 1, bad_bool, indirect, &block).IsCorruption());
  // A null bit past the nullable columns.
  std::string bad_bits = data;
  bad_bits[0] = 0x02;
  EXPECT_TRUE(RowBlock::Parse(&*s, 1, bad_bits, indirect, &block).IsCorruption());
  // An empty block is fine.
  ASSERT_OK(RowBlock::Parse(&*s, 0, Slice(), Slice(), &block));
  EXPECT_EQ(block.num_rows(), 0);
}

}  // namespace
}  // namespace nyala
