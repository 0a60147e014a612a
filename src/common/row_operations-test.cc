#include "common/row_operations.h"
#include "common/status.h"

#include <glog/logging.h>
#include <gtest/gtest.h>

#include "common/coding.h"
#include "common/common.pb.h"
#include "common/data_model_test_util.h"
#include "common/row_encoding.h"
#include "common/test_util.h"
#include "nyala/monotime.h"

namespace nyala {
namespace {

using C = ColumnSchema;

void ExpectMessage(const Status& s, const std::string& part) {
  EXPECT_NE(s.message().find(part), std::string::npos)
      << "'" << part << "' not in " << s.ToString();
}

// (key INT64, a INT32, b STRING NULLABLE, c BOOL NULLABLE, d INT32 DEFAULT 5)
Schema TestSchema() {
  return Schema::Create({C("key", DataType::kInt64), C("a", DataType::kInt32),
                         C("b", DataType::kString, true), C("c", DataType::kBool, true),
                         C("d", DataType::kInt32, false, Value(Cell::Int32(5)))},
                        1)
      .value();
}

// Builds `rows` by hand, following the layout in row_operations.h.
struct RawRow {
  uint8_t op;
  uint8_t isset;  // bitmaps of up to 8 columns
  uint8_t nulls;
  std::string values;
};
RowOperationsPB BuildBlock(uint64_t ncols, const std::vector<RawRow>& rows,
                           const std::string& indirect = "") {
  RowOperationsPB pb;
  std::string* out = pb.mutable_rows();
  PutVarint64(out, ncols);
  PutVarint64(out, rows.size());
  for (const RawRow& r : rows) {
    out->push_back(static_cast<char>(r.op));
    out->push_back(static_cast<char>(r.isset));
    out->push_back(static_cast<char>(r.nulls));
    out->append(r.values);
  }
  pb.set_indirect_data(indirect);
  return pb;
}
std::string I64(int64_t v) {
  std::string s;
  PutFixedLE(&s, v);
  return s;
}
std::string I32(int32_t v) {
  std::string s;
  PutFixedLE(&s, v);
  return s;
}
std::string Str(uint64_t offset, uint64_t len) {
  std::string s;
  PutVarint64(&s, offset);
  PutVarint64(&s, len);
  return s;
}

// A valid block of the test schema: INSERT (1, 10, "hello", true), DELETE 2.
RowOperationsPB ValidBlock(const Schema& schema) {
  RowOperationsEncoder enc(&schema);
  Row r(&schema);
  CHECK_OK(r.Set("key", Cell::Int64(1)));
  CHECK_OK(r.Set("a", Cell::Int32(10)));
  CHECK_OK(r.Set("b", Cell::String("hello")));
  CHECK_OK(r.Set("c", Cell::Bool(true)));
  CHECK_OK(enc.Add(RowOpType::kInsert, r));
  Row d(&schema);
  CHECK_OK(d.Set("key", Cell::Int64(2)));
  CHECK_OK(enc.Add(RowOpType::kDelete, d));
  RowOperationsPB pb;
  enc.Finish(&pb);
  return pb;
}

Status Decode(const RowOperationsPB& pb, const Schema& schema, DecodedRowOps* out = nullptr) {
  DecodedRowOps tmp;
  return DecodeRowOperations(pb, schema, RowBlockKind::kWrites, out ? out : &tmp);
}

const RowOpType kWriteOps[] = {
    RowOpType::kInsert,       RowOpType::kUpsert,       RowOpType::kUpdate,      RowOpType::kDelete,
    RowOpType::kInsertIgnore, RowOpType::kUpdateIgnore, RowOpType::kDeleteIgnore};

// Adjusts a random row so it carries what `type` needs.
void FitRowToOp(RowOpType type, DataGen* gen, Row* row) {
  const Schema& s = row->schema();
  Arena tmp;
  for (int i = s.num_key_columns(); i < s.num_columns(); i++) {
    const ColumnSchema& col = s.column(i);
    if (IsDeleteLike(type)) {
      row->Unset(i);
    } else if (IsInsertLike(type) && !row->IsSet(i) && !col.is_nullable() && !col.has_default()) {
      CHECK_OK(row->SetCopy(i, gen->RandomValue(col.type(), &tmp)));
    }
  }
  if (IsUpdateLike(type)) {
    bool any = false;
    for (int i = s.num_key_columns(); i < s.num_columns(); i++) any |= row->IsSet(i);
    if (!any) {
      const int i = s.num_key_columns();
      CHECK_OK(row->SetCopy(i, gen->RandomValue(s.column(i).type(), &tmp)));
    }
  }
}

TEST(RowOperationsTest, RandomBlocksRoundTrip) {
  DataGen gen(TestRandomSeed());
  for (int trial = 0; trial < 200; trial++) {
    Schema schema = gen.RandomSchema(3, 6);
    RowOperationsEncoder enc(&schema);
    std::vector<std::pair<RowOpType, Row>> sent;
    const int n = static_cast<int>(gen.Uniform(40));
    for (int i = 0; i < n; i++) {
      RowOpType type = kWriteOps[gen.Uniform(7)];
      if (IsUpdateLike(type) && schema.num_value_columns() == 0) type = RowOpType::kUpsert;
      Row row = gen.RandomRow(&schema, true);
      FitRowToOp(type, &gen, &row);
      ASSERT_OK(enc.Add(type, row));
      sent.emplace_back(type, std::move(row));
    }
    EXPECT_EQ(enc.num_rows(), n);
    RowOperationsPB pb;
    enc.Finish(&pb);
    EXPECT_EQ(enc.num_rows(), 0);
    EXPECT_EQ(enc.encoded_size(), 0u);
    DecodedRowOps ops;
    ASSERT_OK(DecodeRowOperations(pb, schema, RowBlockKind::kWrites, &ops));
    ASSERT_EQ(ops.size(), sent.size());
    EXPECT_EQ(ops.num_row_errors(), 0);
    for (size_t i = 0; i < ops.size(); i++) {
      ASSERT_OK(ops[i].error);
      ASSERT_EQ(ops[i].type, sent[i].first);
      for (int c = 0; c < schema.num_columns(); c++) {
        ASSERT_EQ(ops[i].row.cell(c), sent[i].second.cell(c))
            << "row " << i << " column " << c << ": " << sent[i].second.ToString() << " vs "
            << ops[i].row.ToString();
      }
      // The decoded row encodes to the same key as the sent one.
      std::string k1, k2;
      ASSERT_OK(EncodeRowKey(ops[i].row, &k1));
      ASSERT_OK(EncodeRowKey(sent[i].second, &k2));
      EXPECT_EQ(k1, k2);
    }
  }
}

TEST(RowOperationsTest, EncoderRejectsInvalidRows) {
  Schema schema = TestSchema();
  RowOperationsEncoder enc(&schema);
  Row row(&schema);
  ASSERT_OK(row.Set("key", Cell::Int64(1)));
  Status s = enc.Add(RowOpType::kInsert, row);
  EXPECT_TRUE(s.IsInvalidArgument());
  ExpectMessage(s, "INSERT: column 'a' is not nullable, has no default and was not set");
  s = enc.Add(RowOpType::kUpdate, row);
  ExpectMessage(s, "UPDATE sets no non-key column");
  ASSERT_OK(row.Set("b", Cell::String("x")));
  s = enc.Add(RowOpType::kDeleteIgnore, row);
  ExpectMessage(s, "DELETE_IGNORE may set only key columns; non-key column 'b' is set");
  EXPECT_EQ(enc.num_rows(), 0);
  EXPECT_EQ(enc.encoded_size(), 0u);
  // Cells of the wrong type in a hand-made view.
  Cell cells[5] = {Cell::Int32(1), Cell(), Cell(), Cell(), Cell()};
  s = enc.Add(RowOpType::kDelete, RowView(&schema, cells));
  ExpectMessage(s, "column 'key' is INT64, value is INT32");
  // A row of a schema with another column count.
  Schema narrow = Schema::Create({C("key", DataType::kInt64)}, 1).value();
  Row short_row(&narrow);
  ASSERT_OK(short_row.Set(0, Cell::Int64(1)));
  s = enc.Add(RowOpType::kDelete, short_row);
  ExpectMessage(s, "row has 1 columns, the encoder's schema 5");
  ASSERT_OK(enc.Add(RowOpType::kUpdate, row));
  EXPECT_EQ(enc.num_rows(), 1);
}

TEST(RowOperationsTest, TruncatedBlocks) {
  Schema schema = TestSchema();
  RowOperationsPB pb = ValidBlock(schema);
  ASSERT_OK(Decode(pb, schema));
  const std::string rows = pb.rows();
  for (size_t len = 0; len < rows.size(); len++) {
    RowOperationsPB cut = pb;
    cut.set_rows(rows.substr(0, len));
    Status s = Decode(cut, schema);
    ASSERT_TRUE(s.IsCorruption()) << len << ": " << s.ToString();
    ASSERT_NE(s.message().find("truncated"), std::string::npos) << len << ": " << s.ToString();
  }
}

TEST(RowOperationsTest, WrongBitmapSize) {
  Schema schema = TestSchema();
  Schema other = Schema::Create({C("key", DataType::kInt64), C("a", DataType::kInt32),
                                 C("b", DataType::kString, true), C("c", DataType::kBool, true)},
                                1)
                     .value();
  RowOperationsPB pb = ValidBlock(other);
  Status s = Decode(pb, schema);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  ExpectMessage(s, "bitmaps are for 4 columns, the schema has 5");
}

TEST(RowOperationsTest, StringOutsideIndirectData) {
  Schema schema = TestSchema();
  RowOperationsPB pb = ValidBlock(schema);
  ASSERT_EQ(pb.indirect_data(), "hello");
  pb.set_indirect_data("hell");
  Status s = Decode(pb, schema);
  EXPECT_TRUE(s.IsCorruption());
  ExpectMessage(s, "row 0: column 'b': string at offset 0 length 5 is outside the 4-byte indirect");
  // A huge offset whose sum with the length would overflow.
  RowOperationsPB big =
      BuildBlock(5, {{1, 0x07, 0, I64(1) + I32(2) + Str(UINT64_MAX - 1, 4)}}, "abcd");
  s = Decode(big, schema);
  EXPECT_TRUE(s.IsCorruption());
  ExpectMessage(s, "is outside the 4-byte indirect data");
}

TEST(RowOperationsTest, StructuralErrors) {
  Schema schema = TestSchema();
  const std::string key = I64(7);
  // Unknown operation types.
  for (uint8_t op : {0, 11, 200}) {
    Status s = Decode(BuildBlock(5, {{op, 0x01, 0, key}}), schema);
    EXPECT_TRUE(s.IsCorruption());
    ExpectMessage(s, "row 0: unknown operation type " + std::to_string(op));
  }
  // Bits past the 5 columns.
  Status s = Decode(BuildBlock(5, {{4, 0x81, 0, key}}), schema);
  EXPECT_TRUE(s.IsCorruption());
  ExpectMessage(s, "bitmap bits set past the 5 columns");
  s = Decode(BuildBlock(5, {{4, 0x01, 0x20, key}}), schema);
  ExpectMessage(s, "bitmap bits set past the 5 columns");
  // A NULL bit on an unset column.
  s = Decode(BuildBlock(5, {{4, 0x01, 0x04, key}}), schema);
  EXPECT_TRUE(s.IsCorruption());
  ExpectMessage(s, "column 'b' has its NULL bit set but is not set");
  // A BOOL byte that is neither 0 nor 1.
  s = Decode(BuildBlock(5, {{3, 0x09, 0, key + "\x02"}}), schema);
  EXPECT_TRUE(s.IsCorruption());
  ExpectMessage(s, "row 0: column 'c': BOOL byte 2 is not 0 or 1");
  // Trailing bytes after the announced rows.
  RowOperationsPB pb = BuildBlock(5, {{4, 0x01, 0, key}});
  pb.mutable_rows()->append("zz");
  s = Decode(pb, schema);
  EXPECT_TRUE(s.IsCorruption());
  ExpectMessage(s, "2 trailing bytes after its 1 rows");
  // Partition rows are not writes, and the other way round.
  s = Decode(BuildBlock(5, {{4, 0x01, 0, key}, {8, 0x01, 0, key}}), schema);
  EXPECT_TRUE(s.IsInvalidArgument());
  ExpectMessage(s, "row 1: operation SPLIT_ROW is not allowed in a write");
  DecodedRowOps ops;
  s = DecodeRowOperations(BuildBlock(5, {{1, 0x01, 0, key}}), schema, RowBlockKind::kPartitionRows,
                          &ops);
  ExpectMessage(s, "operation INSERT is not allowed among partition rows");
  EXPECT_EQ(ops.size(), 0u);
}

// Rows that parse but break their operation's rules fail alone, by index.
TEST(RowOperationsTest, RowErrorsCarryTheirIndex) {
  Schema schema = TestSchema();
  const std::string key = I64(7);
  std::vector<RawRow> rows = {
      {1, 0x03, 0, key + I32(1)},     // 0: valid INSERT
      {1, 0x02, 0, I32(1)},           // 1: INSERT without key
      {1, 0x03, 0x02, key},           // 2: INSERT with NULL in NOT NULL 'a'
      {4, 0x05, 0, key + Str(0, 1)},  // 3: DELETE setting 'b'
      {3, 0x01, 0, key},              // 4: UPDATE setting nothing
      {2, 0x05, 0, key + Str(0, 1)},  // 5: UPSERT without 'a'
      {1, 0x03, 0x01, I32(1)},        // 6: INSERT with NULL key
      {6, 0x0d, 0x04, key + "\x01"},  // 7: valid UPDATE_IGNORE (b NULL, c, no d)
      {7, 0x01, 0, key},              // 8: valid DELETE_IGNORE
  };
  DecodedRowOps ops;
  ASSERT_OK(Decode(BuildBlock(5, rows, "x"), schema, &ops));
  ASSERT_EQ(ops.size(), rows.size());
  EXPECT_EQ(ops.num_row_errors(), 6);
  EXPECT_OK(ops[0].error);
  EXPECT_EQ(ops[0].row.cell(1).int_value(), 1);
  ExpectMessage(ops[1].error, "INSERT: key column 'key' not set");
  ExpectMessage(ops[2].error, "INSERT: column 'a' is not nullable but NULL was given");
  ExpectMessage(ops[3].error, "DELETE may set only key columns; non-key column 'b' is set");
  ExpectMessage(ops[4].error, "UPDATE sets no non-key column");
  ExpectMessage(ops[5].error, "UPSERT: column 'a' is not nullable, has no default and was not set");
  ExpectMessage(ops[6].error, "INSERT: key column 'key' is NULL");
  EXPECT_OK(ops[7].error);
  EXPECT_TRUE(ops[7].row.IsNull(2));
  EXPECT_TRUE(ops[7].row.cell(3).bool_value());
  EXPECT_FALSE(ops[7].row.IsSet(4));
  EXPECT_OK(ops[8].error);
  for (size_t i = 1; i <= 6; i++) EXPECT_TRUE(ops[i].error.IsInvalidArgument()) << i;
}

TEST(RowOperationsTest, PartitionRowsBlock) {
  Schema schema = TestSchema();
  RowOperationsEncoder enc(&schema);
  Row split(&schema);
  ASSERT_OK(split.Set("key", Cell::Int64(100)));
  ASSERT_OK(enc.Add(RowOpType::kSplitRow, split));
  Row empty(&schema);
  ASSERT_OK(enc.Add(RowOpType::kRangeLowerBound, empty));  // no rules for partition rows
  RowOperationsPB pb;
  enc.Finish(&pb);
  DecodedRowOps ops;
  ASSERT_OK(DecodeRowOperations(pb, schema, RowBlockKind::kPartitionRows, &ops));
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].type, RowOpType::kSplitRow);
  EXPECT_EQ(ops[0].row.cell(0).int_value(), 100);
  EXPECT_EQ(ops[1].type, RowOpType::kRangeLowerBound);
  EXPECT_TRUE(Decode(pb, schema).IsInvalidArgument());
}

// Not a benchmark with a threshold (timings vary); logs the decode rate of the seed
// schema (key INT64, a INT32, b STRING, c STRING, d INT32) with 32-byte strings.
TEST(RowOperationsTest, DecodeThroughputSmoke) {
  Schema schema = Schema::Create({C("key", DataType::kInt64), C("a", DataType::kInt32),
                                  C("b", DataType::kString), C("c", DataType::kString),
                                  C("d", DataType::kInt32)},
                                 1)
                      .value();
  const int kRows = 200000;
  RowOperationsEncoder enc(&schema);
  const std::string s32(32, 'x');
  for (int i = 0; i < kRows; i++) {
    Row row(&schema);
    ASSERT_OK(row.Set(0, Cell::Int64(i)));
    ASSERT_OK(row.Set(1, Cell::Int32(i)));
    ASSERT_OK(row.Set(2, Cell::String(s32)));
    ASSERT_OK(row.Set(3, Cell::String(s32)));
    ASSERT_OK(row.Set(4, Cell::Int32(-i)));
    ASSERT_OK(enc.Add(RowOpType::kInsert, row));
  }
  RowOperationsPB pb;
  enc.Finish(&pb);
  DecodedRowOps ops;
  MonoTime start = MonoTime::Now();
  ASSERT_OK(DecodeRowOperations(pb, schema, RowBlockKind::kWrites, &ops));
  MonoDelta decode = MonoTime::Now() - start;
  start = MonoTime::Now();
  std::string key, value;
  size_t bytes = 0;
  for (const DecodedRowOp& op : ops) {
    key.clear();
    value.clear();
    ASSERT_OK(EncodeRowKey(op.row, &key));
    ASSERT_OK(EncodeRowValue(op.row, &value));
    bytes += key.size() + value.size();
  }
  MonoDelta encode = MonoTime::Now() - start;
  ASSERT_EQ(ops.size(), static_cast<size_t>(kRows));
  EXPECT_EQ(ops.num_row_errors(), 0);
  EXPECT_EQ(ops[kRows - 1].row.cell(4).int_value(), -(kRows - 1));
  EXPECT_GT(bytes, size_t{kRows} * 70);
  LOG(INFO) << "decoded " << kRows << " rows in " << decode.ToString() << " ("
            << int64_t(kRows / decode.ToSeconds()) << " rows/s); encoded keys+values in "
            << encode.ToString() << " (" << int64_t(kRows / encode.ToSeconds()) << " rows/s)";
}

}  // namespace
}  // namespace nyala
