// Unit tests of the CLI's parsing and output: the command line, values, table specs,
// predicates' JSON, CSV/JSONL row input and the three output formats; ksck's verdicts.
#include <gflags/gflags.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "common/flag_util.h"
#include "common/test_util.h"
#include "tools/cluster_admin.h"
#include "tools/command_line.h"
#include "tools/ksck.h"
#include "tools/master_probe.h"
#include "tools/output.h"
#include "tools/row_input.h"
#include "tools/table_spec.h"
#include "tools/value_parse.h"

DEFINE_bool(command_line_test_bool, false, "For CommandLineTest.LooksUpTheGflagsRegistry.");
DEFINE_int32(command_line_test_int, 0, "For CommandLineTest.LooksUpTheGflagsRegistry.");

namespace nyala::tools {
namespace {

using nlohmann::json;

TEST(ValueParseTest, TextPerType) {
  Arena arena;
  ColumnSchema i8("a", DataType::kInt8);
  auto c = ParseCellText(i8, "-128", &arena);
  ASSERT_OK(c.status());
  EXPECT_EQ(c->int_value(), -128);
  EXPECT_TRUE(ParseCellText(i8, "128", &arena).status().IsInvalidArgument());
  EXPECT_TRUE(ParseCellText(i8, "1x", &arena).status().IsInvalidArgument());
  EXPECT_TRUE(ParseCellText(i8, "", &arena).status().IsInvalidArgument());
  ColumnSchema i64("k", DataType::kInt64);
  EXPECT_EQ(ParseCellText(i64, "-9223372036854775808", &arena)->int_value(), INT64_MIN);
  EXPECT_FALSE(ParseCellText(i64, "9223372036854775808", &arena).ok());
  ColumnSchema d("d", DataType::kDouble);
  EXPECT_DOUBLE_EQ(ParseCellText(d, "-1.5e3", &arena)->double_value(), -1500);
  ColumnSchema b("b", DataType::kBool);
  EXPECT_TRUE(ParseCellText(b, "true", &arena)->bool_value());
  EXPECT_FALSE(ParseCellText(b, "maybe", &arena).ok());
  ColumnSchema s("s", DataType::kString);
  EXPECT_EQ(ParseCellText(s, "a,b", &arena)->slice_value().ToString(), "a,b");
  Status err = ParseCellText(i8, "zz", &arena).status();
  EXPECT_NE(err.message().find("column 'a'"), std::string::npos) << err.ToString();
}

TEST(ValueParseTest, JsonAndBack) {
  Arena arena;
  ColumnSchema n("n", DataType::kInt32, /*is_nullable=*/true);
  EXPECT_TRUE(ParseCellJson(n, json(nullptr), &arena)->is_null());
  EXPECT_EQ(ParseCellJson(n, json(7), &arena)->int_value(), 7);
  EXPECT_FALSE(ParseCellJson(n, json("x"), &arena).ok());
  EXPECT_FALSE(ParseCellJson(n, json(5000000000LL), &arena).ok());
  ColumnSchema nn("nn", DataType::kInt32);
  EXPECT_FALSE(ParseCellJson(nn, json(nullptr), &arena).ok());
  EXPECT_EQ(CellToJson(Cell::Int64(5)), json(5));
  EXPECT_EQ(CellToJson(Cell::Null(DataType::kInt64)), json(nullptr));
  EXPECT_EQ(CellToText(Cell::Double(0.1)), "0.1");
  EXPECT_EQ(CellToText(Cell::Double(1.0 / 3)), "0.3333333333333333");
  EXPECT_EQ(CellToText(Cell::Float(5.7f)), "5.7");
  EXPECT_EQ(CellToText(Cell::Null(DataType::kString)), "NULL");
  EXPECT_TRUE(ParseTypeName("string").ok());
  EXPECT_NE(ParseTypeName("STRNG").status().message().find("expected one of"), std::string::npos);
}

// Every type survives print → parse, through JSON (what scan --format=json prints and
// insert reads) and through text (CSV): NaN and infinities (not null), bytes that are
// not UTF-8 (base64 in JSON), timestamps before 1970 and at the ends of int64, NULL.
TEST(ValueParseTest, EveryTypeRoundTripsThroughJsonAndText) {
  Arena arena;
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const float finf = std::numeric_limits<float>::infinity();
  const std::string bytes("\x00\xff\xfe\"\\\n\x80zz", 9);
  struct Case {
    DataType type;
    std::vector<Cell> cells;
  };
  std::vector<Case> cases = {
      {DataType::kBool, {Cell::Bool(true), Cell::Bool(false)}},
      {DataType::kInt8, {Cell::Int8(-128), Cell::Int8(127)}},
      {DataType::kInt16, {Cell::Int16(-32768), Cell::Int16(32767)}},
      {DataType::kInt32, {Cell::Int32(INT32_MIN), Cell::Int32(INT32_MAX)}},
      {DataType::kInt64, {Cell::Int64(INT64_MIN), Cell::Int64(INT64_MAX), Cell::Int64(0)}},
      {DataType::kFloat,
       {Cell::Float(5.7f), Cell::Float(finf), Cell::Float(-finf), Cell::Float(float(nan)),
        Cell::Float(std::numeric_limits<float>::max()),
        Cell::Float(std::numeric_limits<float>::denorm_min()), Cell::Float(-0.0f)}},
      {DataType::kDouble,
       {Cell::Double(0.1), Cell::Double(inf), Cell::Double(-inf), Cell::Double(nan),
        Cell::Double(std::numeric_limits<double>::max()),
        Cell::Double(std::numeric_limits<double>::denorm_min()), Cell::Double(1.0 / 3)}},
      {DataType::kString, {Cell::String(Slice("héllo, \"w\"")), Cell::String(Slice(""))}},
      {DataType::kBinary,
       {Cell::Binary(Slice(bytes)), Cell::Binary(Slice("")), Cell::Binary(Slice("a")),
        Cell::Binary(Slice("ab"))}},
      {DataType::kUnixtimeMicros,
       {Cell::UnixtimeMicros(1700000001000000), Cell::UnixtimeMicros(-1),
        Cell::UnixtimeMicros(-62135596800000001), Cell::UnixtimeMicros(-62167219200000001),
        Cell::UnixtimeMicros(INT64_MIN), Cell::UnixtimeMicros(INT64_MAX), Cell::UnixtimeMicros(0)}},
  };
  auto same = [](const Cell& a, const Cell& b) {
    if (a.is_null() || b.is_null()) return a.is_null() == b.is_null();
    switch (a.type()) {
      case DataType::kFloat:
        return (std::isnan(a.float_value()) && std::isnan(b.float_value())) ||
               (a.float_value() == b.float_value() &&
                std::signbit(a.float_value()) == std::signbit(b.float_value()));
      case DataType::kDouble:
        return (std::isnan(a.double_value()) && std::isnan(b.double_value())) ||
               (a.double_value() == b.double_value() &&
                std::signbit(a.double_value()) == std::signbit(b.double_value()));
      case DataType::kString:
      case DataType::kBinary:
        return a.slice_value().ToString() == b.slice_value().ToString();
      default:
        return a.int_value() == b.int_value();
    }
  };
  for (auto& c : cases) {
    ColumnSchema col("c", c.type, /*is_nullable=*/true);
    c.cells.push_back(Cell::Null(c.type));
    for (TimestampFormat ts : {TimestampFormat::kIso8601, TimestampFormat::kMicros}) {
      for (const Cell& cell : c.cells) {
        SCOPED_TRACE(std::string(DataTypeName(c.type)) + " " + cell.ToString());
        // JSON: through its text, as a file carries it.
        const std::string text = DumpJson(json{{"c", CellToJson(cell, ts)}});
        if (!cell.is_null()) {
          EXPECT_EQ(text.find("null"), std::string::npos) << text;
        }
        auto back = ParseCellJson(col, json::parse(text)["c"], &arena);
        ASSERT_OK(back.status());
        EXPECT_TRUE(same(cell, *back)) << text << " read back as " << back->ToString();
        if (cell.is_null()) continue;
        // Text (CSV fields, command-line words).
        const std::string t = CellToText(cell, ts);
        auto from_text = ParseCellText(col, t, &arena);
        ASSERT_OK(from_text.status());
        EXPECT_TRUE(same(cell, *from_text)) << t << " read back as " << from_text->ToString();
      }
    }
  }
}

TEST(ValueParseTest, LosslessJsonForms) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(CellToJson(Cell::Double(std::nan(""))), json("NaN"));
  EXPECT_EQ(CellToJson(Cell::Double(inf)), json("Infinity"));
  EXPECT_EQ(CellToJson(Cell::Float(-float(inf))), json("-Infinity"));
  EXPECT_EQ(CellToJson(Cell::Double(-0.5)), json(-0.5));
  EXPECT_EQ(CellToJson(Cell::Binary(Slice(std::string("\x00\xff", 2)))), json("AP8="));
  EXPECT_EQ(CellToJson(Cell::Binary(Slice("Man"))), json("TWFu"));
  EXPECT_EQ(CellToJson(Cell::UnixtimeMicros(1700000001000000)),
            json("2023-11-14T22:13:21.000000Z"));
  EXPECT_EQ(CellToJson(Cell::UnixtimeMicros(1700000001000000), TimestampFormat::kMicros),
            json(1700000001000000));
  EXPECT_EQ(CellToText(Cell::UnixtimeMicros(-1)), "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(CellToText(Cell::UnixtimeMicros(-1), TimestampFormat::kMicros), "-1");
  EXPECT_EQ(CellToText(Cell::UnixtimeMicros(951782400123456)), "2000-02-29T00:00:00.123456Z");
  EXPECT_EQ(CellToText(Cell::UnixtimeMicros(-62135596800000001)), "0000-12-31T23:59:59.999999Z");
  EXPECT_EQ(CellToText(Cell::UnixtimeMicros(-62167219200000001)), "-0001-12-31T23:59:59.999999Z");
  EXPECT_EQ(CellToText(Cell::UnixtimeMicros(INT64_MAX)), "+294247-01-10T04:00:54.775807Z");
  EXPECT_EQ(CellToText(Cell::Double(-inf)), "-Infinity");
  EXPECT_FALSE(ParseTimestampFormat("seconds").ok());
  EXPECT_EQ(*Base64Decode("AP8="), std::string("\x00\xff", 2));
  EXPECT_EQ(*Base64Decode(""), "");
  for (const char* bad : {"AP8", "AP=8", "A*8=", "AP9=", "AP8=AP8="}) {
    EXPECT_FALSE(Base64Decode(bad).ok()) << bad;
  }
}

TEST(ValueParseTest, TimestampInput) {
  Arena arena;
  ColumnSchema t("t", DataType::kUnixtimeMicros);
  auto micros = [&](const std::string& s) -> int64_t {
    auto c = ParseCellText(t, s, &arena);
    EXPECT_OK(c.status());
    return c.ok() ? c->int_value() : -42;
  };
  EXPECT_EQ(micros("2023-11-14T22:13:21.000000Z"), 1700000001000000);
  EXPECT_EQ(micros("2023-11-14T22:13:21Z"), 1700000001000000);
  EXPECT_EQ(micros("2023-11-14 22:13:21.5Z"), 1700000001500000);
  EXPECT_EQ(micros("2023-11-14T23:13:21+01:00"), 1700000001000000);
  EXPECT_EQ(micros("1969-12-31T23:59:59.999999Z"), -1);
  EXPECT_EQ(micros("1700000001000000"), 1700000001000000);
  EXPECT_EQ(micros("-1"), -1);
  for (const char* bad :
       {"2023-11-14T22:13:21", "2023-11-14", "2023-13-01T00:00:00Z", "2023-02-29T00:00:00Z",
        "2023-11-14T24:00:00Z", "2023-11-14T22:13:21.1234567Z", "+300000-01-01T00:00:00Z",
        "2023-11-14T22:13:21Zjunk", "yesterday"}) {
    Status s = ParseCellText(t, bad, &arena).status();
    EXPECT_TRUE(s.IsInvalidArgument()) << bad;
    EXPECT_NE(s.message().find("column 't'"), std::string::npos) << s.ToString();
  }
  EXPECT_NE(ParseCellText(t, "2023-11-14T22:13:21", &arena).status().message().find("Z for UTC"),
            std::string::npos);
  // JSON: the ISO string or a number.
  EXPECT_EQ(ParseCellJson(t, json("1970-01-01T00:00:01Z"), &arena)->int_value(), 1000000);
  EXPECT_EQ(ParseCellJson(t, json(-7), &arena)->int_value(), -7);
}

// Out of range is an error, for FLOAT and DOUBLE and the integers, in text and JSON;
// infinity written as such stays allowed.
TEST(ValueParseTest, OutOfRangeIsAnError) {
  Arena arena;
  ColumnSchema f("f", DataType::kFloat);
  ColumnSchema d("d", DataType::kDouble);
  for (const char* bad : {"1e40", "-1e40", "3.5e38", "1e-50"}) {
    Status s = ParseCellText(f, bad, &arena).status();
    EXPECT_TRUE(s.IsInvalidArgument()) << bad;
    EXPECT_NE(s.message().find("out of range"), std::string::npos) << s.ToString();
  }
  EXPECT_NE(ParseCellText(f, "1e40", &arena).status().message().find("column 'f': '1e40'"),
            std::string::npos);
  EXPECT_FALSE(ParseCellJson(f, json(1e40), &arena).ok());
  EXPECT_FALSE(ParseCellJson(f, json::parse("1e40"), &arena).ok());
  // A number beyond a double fails the parse (it does not throw).
  auto huge = ParseJson("{\"d\": 1e400}", "the line");
  EXPECT_TRUE(huge.status().IsInvalidArgument());
  EXPECT_NE(huge.status().message().find("1e400"), std::string::npos) << huge.status().ToString();
  EXPECT_FALSE(ParseCellText(d, "1e400", &arena).ok());
  EXPECT_FALSE(ParseCellText(d, "1e-400", &arena).ok());
  EXPECT_EQ(ParseCellText(f, "3.4028235e38", &arena)->float_value(),
            std::numeric_limits<float>::max());
  for (const char* word : {"inf", "Infinity", "INF", "+inf"}) {
    EXPECT_TRUE(std::isinf(ParseCellText(f, word, &arena)->float_value())) << word;
    EXPECT_GT(ParseCellText(d, word, &arena)->double_value(), 0) << word;
  }
  EXPECT_LT(ParseCellText(d, "-Infinity", &arena)->double_value(), 0);
  EXPECT_TRUE(std::isnan(ParseCellJson(f, json("NaN"), &arena)->float_value()));
  EXPECT_FALSE(ParseCellText(d, "nope", &arena).ok());
  EXPECT_FALSE(ParseCellText(d, " 1", &arena).ok());
  ColumnSchema i64("i", DataType::kInt64);
  ColumnSchema i16("s", DataType::kInt16);
  EXPECT_NE(
      ParseCellText(i64, "9223372036854775808", &arena).status().message().find("out of range"),
      std::string::npos);
  EXPECT_NE(ParseCellText(i16, "40000", &arena).status().message().find("out of range"),
            std::string::npos);
  EXPECT_NE(ParseCellJson(i64, json::parse("100000000000000000000"), &arena)
                .status()
                .message()
                .find("out of range"),
            std::string::npos);
  EXPECT_NE(ParseCellJson(i64, json(1.5), &arena).status().message().find("not an integer"),
            std::string::npos);
}

TEST(TableSpecTest, ParsesFullSpec) {
  json j = json::parse(R"({
    "name": "metrics",
    "columns": [
      {"name": "host", "type": "STRING", "key": true},
      {"name": "ts", "type": "INT64", "key": true},
      {"name": "value", "type": "DOUBLE", "nullable": true, "default": 1.5}
    ],
    "hash_partitions": [{"columns": ["host"], "buckets": 4}],
    "range_partition": {"columns": ["ts"], "splits": [[100], [200]],
                        "bounds": [{"lower": [0], "upper": [300]}]},
    "num_replicas": 1
  })");
  auto spec = ParseTableSpec(j);
  ASSERT_OK(spec.status());
  EXPECT_EQ(spec->name, "metrics");
  EXPECT_EQ(spec->schema.num_columns(), 3);
  EXPECT_EQ(spec->schema.num_key_columns(), 2);
  ASSERT_EQ(spec->hash_partitions.size(), 1u);
  EXPECT_EQ(spec->hash_partitions[0].buckets, 4);
  EXPECT_EQ(spec->splits.size(), 2u);
  EXPECT_EQ(spec->bounds.size(), 1u);
}

TEST(TableSpecTest, ErrorsNameTheField) {
  struct Case {
    const char* json;
    const char* field;
  } cases[] = {
      {R"({"columns": [{"name": "k", "type": "INT64", "key": true}]})", "name:"},
      {R"({"name": "t", "columns": [{"name": "k", "type": "INT46", "key": true}]})",
       "columns[0].type"},
      {R"({"name": "t", "columns": [{"name": "v", "type": "INT32"},
                                    {"name": "k", "type": "INT64", "key": true}]})",
       "columns[1].key"},
      {R"({"name": "t", "columns": [{"name": "k", "type": "INT64", "key": true, "nullable": true}]})",
       "columns[0].nullable"},
      {R"({"name": "t", "columns": [{"name": "k", "type": "INT64", "key": true, "colour": 1}]})",
       "columns[0].colour"},
      {R"({"name": "t", "columns": [{"name": "k", "type": "INT64", "key": true}],
           "hash_partitions": [{"columns": ["k"]}]})",
       "hash_partitions[0].buckets"},
      {R"({"name": "t", "columns": [{"name": "k", "type": "INT64", "key": true}],
           "range_partition": {"columns": ["k"], "splits": [["x"]]}})",
       "range_partition.splits[0][0]"},
      {R"({"name": "t", "columns": [{"name": "k", "type": "INT64", "key": true}],
           "range_partition": {"columns": ["k"], "splits": [[1, 2]]}})",
       "range_partition.splits[0]"},
      {R"({"name": "t", "columns": [{"name": "v", "type": "INT64"}]})", "columns:"},
  };
  for (const auto& c : cases) {
    auto spec = ParseTableSpec(json::parse(c.json));
    ASSERT_FALSE(spec.ok()) << c.json;
    EXPECT_NE(spec.status().message().find(c.field), std::string::npos)
        << "expected field " << c.field << " in: " << spec.status().ToString();
  }
}

// `nyala table create --help` documents the spec itself, not a source file: its example
// parses, and it names every field and type the parser takes.
TEST(TableSpecTest, HelpDocumentsEveryFieldAndItsExampleParses) {
  const std::string help = kTableSpecHelp;
  const size_t begin = help.find("For example:\n\n");
  const size_t end = help.find("\n\nFields");
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  auto spec = ParseTableSpec(json::parse(help.substr(begin + 14, end - begin - 14)));
  ASSERT_OK(spec.status());
  EXPECT_EQ(spec->name, "metrics");
  EXPECT_EQ(spec->schema.num_key_columns(), 2);
  EXPECT_EQ(spec->splits.size(), 1u);
  EXPECT_EQ(spec->bounds.size(), 1u);
  for (const char* field :
       {"name", "columns", "type", "key", "nullable", "default", "hash_partitions", "buckets",
        "seed", "range_partition", "splits", "bounds", "lower", "upper", "num_replicas"}) {
    // Described in the field list ("  name  ...") or, for lower and upper, in the text.
    EXPECT_TRUE(help.find(std::string("  ") + field + " ") != std::string::npos ||
                help.find(std::string("{\"") + field + "\": [values]") != std::string::npos ||
                help.find(std::string("\"") + field + "\": [values]") != std::string::npos)
        << field;
  }
  for (const char* type : {"BOOL", "INT8", "INT16", "INT32", "INT64", "FLOAT", "DOUBLE", "STRING",
                           "BINARY", "UNIXTIME_MICROS", "TIMESTAMP"}) {
    EXPECT_NE(help.find(type), std::string::npos) << type;
    EXPECT_TRUE(ParseTypeName(type).ok()) << type;
  }
  EXPECT_EQ(help.find("src/"), std::string::npos);
  EXPECT_EQ(help.find(".h"), std::string::npos);
}

TEST(RowInputTest, CsvWithErrorsByLine) {
  auto schema =
      Schema::Create({ColumnSchema("k", DataType::kInt64), ColumnSchema("s", DataType::kString),
                      ColumnSchema("n", DataType::kInt32, true)},
                     1, 0);
  ASSERT_OK(schema.status());
  std::string text = "k,s,n\n1,hello,5\n2,\"a,\"\"b\"\"\",\nx,bad,1\n\n3,three,7\n4,four\n";
  FILE* f = fmemopen(text.data(), text.size(), "r");
  RowReader reader(f, RowReader::Format::kCsv, &*schema);
  Row row(&*schema);
  ASSERT_OK(reader.Next(&row));
  EXPECT_EQ(row.view().cell(0).int_value(), 1);
  EXPECT_EQ(reader.line_number(), 2);
  ASSERT_OK(reader.Next(&row));
  EXPECT_EQ(row.view().cell(1).slice_value().ToString(), "a,\"b\"");
  EXPECT_TRUE(row.view().cell(2).is_null());
  Status s = reader.Next(&row);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("line 4"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("column 'k'"), std::string::npos) << s.ToString();
  ASSERT_OK(reader.Next(&row));  // blank line skipped
  EXPECT_EQ(row.view().cell(0).int_value(), 3);
  s = reader.Next(&row);
  EXPECT_NE(s.message().find("line 7: expected 3 fields, found 2"), std::string::npos)
      << s.ToString();
  EXPECT_TRUE(reader.Next(&row).IsEndOfFile());
  fclose(f);
}

// An empty unquoted CSV field is NULL for every type: a NOT NULL column (STRING too)
// makes the line bad; a quoted "" is the empty string.
TEST(RowInputTest, CsvEmptyFieldIsNull) {
  auto schema =
      Schema::Create({ColumnSchema("k", DataType::kInt64), ColumnSchema("s", DataType::kString),
                      ColumnSchema("ns", DataType::kString, true),
                      ColumnSchema("n", DataType::kInt32, true)},
                     1, 0);
  ASSERT_OK(schema.status());
  std::string text = "k,s,ns,n\n1,,a,1\n2,\"\",,\n3,x,\"\",\n,y,b,2\n";
  FILE* f = fmemopen(text.data(), text.size(), "r");
  RowReader reader(f, RowReader::Format::kCsv, &*schema);
  Row row(&*schema);
  Status s = reader.Next(&row);  // line 2: s (NOT NULL STRING) empty and unquoted
  ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("line 2: column 's' is NOT NULL"), std::string::npos)
      << s.ToString();
  ASSERT_OK(reader.Next(&row));  // line 3: "" is the empty string; empty fields are NULL
  EXPECT_EQ(row.view().cell(0).int_value(), 2);
  EXPECT_FALSE(row.view().cell(1).is_null());
  EXPECT_EQ(row.view().cell(1).slice_value().ToString(), "");
  EXPECT_TRUE(row.view().cell(2).is_null());
  EXPECT_TRUE(row.view().cell(3).is_null());
  ASSERT_OK(reader.Next(&row));  // line 4: a nullable STRING quoted "" is not NULL
  EXPECT_FALSE(row.view().cell(2).is_null());
  EXPECT_EQ(row.view().cell(2).slice_value().ToString(), "");
  s = reader.Next(&row);  // line 5: the key empty
  EXPECT_NE(s.message().find("line 5: column 'k' is NOT NULL"), std::string::npos)
      << s.ToString();
  EXPECT_TRUE(reader.Next(&row).IsEndOfFile());
  fclose(f);
}

TEST(RowInputTest, JsonLines) {
  auto schema = Schema::Create(
      {ColumnSchema("k", DataType::kInt64), ColumnSchema("n", DataType::kInt32, true)}, 1, 0);
  ASSERT_OK(schema.status());
  std::string text = "{\"k\": 1, \"n\": null}\n{\"k\": 2, \"zz\": 1}\n{oops\n";
  FILE* f = fmemopen(text.data(), text.size(), "r");
  RowReader reader(f, RowReader::Format::kJsonLines, &*schema);
  Row row(&*schema);
  ASSERT_OK(reader.Next(&row));
  EXPECT_TRUE(row.view().cell(1).is_null());
  Status s = reader.Next(&row);
  EXPECT_NE(s.message().find("line 2: unknown column 'zz'"), std::string::npos) << s.ToString();
  s = reader.Next(&row);
  EXPECT_NE(s.message().find("line 3"), std::string::npos) << s.ToString();
  EXPECT_TRUE(reader.Next(&row).IsEndOfFile());
  fclose(f);
}

// A JSON array of objects, as scan --format=json prints it (one line or spread over
// many), reads row by row; a bad element is named by its number and skipped; an
// array cut short ends with an error.
TEST(RowInputTest, JsonArray) {
  auto schema = Schema::Create(
      {ColumnSchema("k", DataType::kInt64), ColumnSchema("b", DataType::kBinary, true),
       ColumnSchema("d", DataType::kDouble, true)},
      1, 0);
  ASSERT_OK(schema.status());
  auto read_all = [&](std::string text, std::vector<std::string>* rows,
                      std::vector<std::string>* errors) {
    FILE* f = fmemopen(text.data(), text.size(), "r");
    RowReader reader(f, RowReader::Format::kJsonLines, &*schema);
    Row row(&*schema);
    for (int i = 0; i < 100; i++) {
      Status s = reader.Next(&row);
      if (s.IsEndOfFile()) break;
      if (s.ok()) {
        rows->push_back(row.view().ToString());
      } else {
        errors->push_back(s.message());
      }
    }
    fclose(f);
  };
  std::vector<std::string> rows, errors;
  read_all(R"([{"k":1,"b":"AP8=","d":"NaN"},{"k":2,"b":null,"d":"-Infinity"},{"k":3,"s":"]"}])"
           "\n",
           &rows, &errors);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NE(rows[0].find("\\x00\\xff"), std::string::npos) << rows[0];
  EXPECT_NE(rows[1].find("-inf"), std::string::npos) << rows[1];
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("element 3: unknown column 's'"), std::string::npos) << errors[0];

  rows.clear();
  errors.clear();
  read_all("\n  [\n {\"k\": 1},\n {\"k\": \"x\"},\n {\"k\": 3, \"b\": \"a}b\"}\n]\n", &rows,
           &errors);
  EXPECT_EQ(rows.size(), 1u);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("element 2: column 'k'"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("element 3: column 'b'"), std::string::npos) << errors[1];
  EXPECT_NE(errors[1].find("base64"), std::string::npos) << errors[1];

  rows.clear();
  errors.clear();
  read_all("[]", &rows, &errors);
  EXPECT_TRUE(rows.empty() && errors.empty());

  rows.clear();
  errors.clear();
  read_all(R"([{"k":1},{"k":2},{"k":)", &rows, &errors);  // a scan that failed midway
  EXPECT_EQ(rows.size(), 2u);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("element 3: the JSON array ends inside an element"), std::string::npos)
      << errors[0];

  rows.clear();
  errors.clear();
  read_all(R"([{"k":1}] [)", &rows, &errors);
  EXPECT_EQ(rows.size(), 1u);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("after the end of the JSON array"), std::string::npos) << errors[0];

  // Standard input is told apart by its first character.
  std::string csv = "k\n1\n", jsonl = "{\"k\": 1}\n";
  FILE* f = fmemopen(csv.data(), csv.size(), "r");
  EXPECT_EQ(RowReader::SniffFormat(f), RowReader::Format::kCsv);
  EXPECT_EQ(fgetc(f), 'k');
  fclose(f);
  f = fmemopen(jsonl.data(), jsonl.size(), "r");
  EXPECT_EQ(RowReader::SniffFormat(f), RowReader::Format::kJsonLines);
  fclose(f);
}

TEST(OutputTest, CountsInTheSingularForOne) {
  EXPECT_EQ(Rows(1), "1 row");
  EXPECT_EQ(Rows(0), "0 rows");
  EXPECT_EQ(Rows(2), "2 rows");
  EXPECT_EQ(Rows(-1), "-1 row");
  EXPECT_EQ(Rows(120000), "120000 rows");
  EXPECT_EQ(Count(1, "bad input line", "bad input lines"), "1 bad input line");
  EXPECT_EQ(Count(3, "bad input line", "bad input lines"), "3 bad input lines");
}

TEST(OutputTest, Formats) {
  TableOutput out({"id", "name"});
  out.AddRow({"1", "a,b"}, {1, "a,b"});
  out.AddRow({"22", "c"}, {22, "c"});
  TableOutput nulls({"a", "b"});
  nulls.AddRow({"NULL", ""}, {nullptr, ""});
  EXPECT_EQ(nulls.Render(OutputFormat::kCsv), "a,b\n,\"\"\n");
  EXPECT_EQ(out.Render(OutputFormat::kCsv), "id,name\n1,\"a,b\"\n22,c\n");
  EXPECT_EQ(out.Render(OutputFormat::kJson),
            "[{\"id\":1,\"name\":\"a,b\"},{\"id\":22,\"name\":\"c\"}]\n");
  EXPECT_EQ(out.Render(OutputFormat::kTable), " id | name\n----+-----\n 1  | a,b\n 22 | c\n");
  EXPECT_FALSE(ParseOutputFormat("xml").ok());
}

// JSON objects keep the columns' order (a table's or a projection's), not the names'
// alphabetical order, in both outputs; special characters in names are escaped.
TEST(OutputTest, JsonKeepsTheColumnOrder) {
  const std::vector<std::string> columns = {"zeta", "alpha", "mid \"q\""};
  TableOutput out(columns);
  out.AddRow({"1", "x", "NULL"}, {1, "x", nullptr});
  out.AddRow({"2", "y", "3.5"}, {2, "y", 3.5});
  const std::string expected =
      "[{\"zeta\":1,\"alpha\":\"x\",\"mid \\\"q\\\"\":null},"
      "{\"zeta\":2,\"alpha\":\"y\",\"mid \\\"q\\\"\":3.5}]\n";
  EXPECT_EQ(out.Render(OutputFormat::kJson), expected);
  EXPECT_EQ(TableOutput({"b", "a"}).Render(OutputFormat::kJson), "[]\n");

  char* buf = nullptr;
  size_t len = 0;
  FILE* mem = open_memstream(&buf, &len);
  StreamingOutput stream(columns, OutputFormat::kJson, mem);
  stream.AddRow({"1", "x", "NULL"}, {1, "x", nullptr});
  stream.EndBatch();
  stream.AddRow({"2", "y", "3.5"}, {2, "y", 3.5});
  stream.Finish();
  fclose(mem);
  EXPECT_EQ(std::string(buf, len), expected);
  free(buf);
}

// StreamingOutput writes each batch at EndBatch, before the next one exists; the
// whole output is TableOutput's for the same rows (the table format too, when no later
// value is wider than the first batch's), also when there are no rows at all.
TEST(OutputTest, StreamingPrintsEachBatchAsItEnds) {
  for (OutputFormat f : {OutputFormat::kCsv, OutputFormat::kJson, OutputFormat::kTable}) {
    SCOPED_TRACE(int(f));
    char* buf = nullptr;
    size_t len = 0;
    FILE* mem = open_memstream(&buf, &len);
    ASSERT_NE(mem, nullptr);
    TableOutput whole({"id", "name"});
    {
      StreamingOutput out({"id", "name"}, f, mem);
      out.AddRow({"1", "a,b"}, {1, "a,b"});
      whole.AddRow({"1", "a,b"}, {1, "a,b"});
      EXPECT_EQ(len, 0u);  // nothing before the batch ends
      out.EndBatch();
      const std::string first(buf, len);
      EXPECT_NE(first.find("a,b"), std::string::npos) << first;
      out.EndBatch();  // an empty batch changes nothing
      EXPECT_EQ(std::string(buf, len), first);
      out.AddRow({"22", "c"}, {22, "c"});
      whole.AddRow({"22", "c"}, {22, "c"});
      out.AddRow({"3", "NULL"}, {3, nullptr});
      whole.AddRow({"3", "NULL"}, {3, nullptr});
      out.EndBatch();
      EXPECT_NE(std::string(buf, len).find('c'), std::string::npos);
      out.Finish();
      EXPECT_EQ(out.num_rows(), 3);
    }
    fclose(mem);
    EXPECT_EQ(std::string(buf, len), whole.Render(f));
    free(buf);

    buf = nullptr;
    len = 0;
    mem = open_memstream(&buf, &len);
    ASSERT_NE(mem, nullptr);
    StreamingOutput empty({"id", "name"}, f, mem);
    empty.Finish();
    fclose(mem);
    EXPECT_EQ(std::string(buf, len), TableOutput({"id", "name"}).Render(f));
    free(buf);
  }
}

// In the table format a value wider than the first batch's widens its column from its
// own batch on.
TEST(OutputTest, StreamingTableWidensLaterColumns) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* mem = open_memstream(&buf, &len);
  ASSERT_NE(mem, nullptr);
  StreamingOutput out({"id", "name"}, OutputFormat::kTable, mem);
  out.AddRow({"1", "a"}, {1, "a"});
  out.EndBatch();
  out.AddRow({"12345", "b"}, {12345, "b"});
  out.AddRow({"2", "c"}, {2, "c"});
  out.Finish();
  fclose(mem);
  EXPECT_EQ(std::string(buf, len), " id | name\n----+-----\n 1  | a\n 12345 | b\n 2     | c\n");
  free(buf);
}

// A flag table for SplitCommandLine: "format" and "timeout_ms" take values, "verbose" is
// a boolean.
FlagKind FakeFlags(const std::string& name) {
  if (name == "format" || name == "timeout_ms") return FlagKind::kValue;
  if (name == "verbose" || name == "noverbose") return FlagKind::kBool;
  return FlagKind::kUnknown;
}

std::vector<std::string> Positional(const std::vector<std::string>& words) {
  auto cl = SplitCommandLine(words, FakeFlags);
  EXPECT_OK(cl.status());
  return cl.ok() ? cl->positional : std::vector<std::string>{"<error>"};
}

TEST(CommandLineTest, NegativeNumbersAndDashStringsStayPositional) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Positional({"table", "get", "M", "t", "-5"}), (V{"table", "get", "M", "t", "-5"}));
  EXPECT_EQ(Positional({"table", "get", "M", "t", "-5", "-1.5e3", "-dash", "-", "-.5"}),
            (V{"table", "get", "M", "t", "-5", "-1.5e3", "-dash", "-", "-.5"}));
  // gflags would take each of these for a flag and fail: "unknown command line flag".
  EXPECT_EQ(Positional({"table", "count", "M", "-t"}), (V{"table", "count", "M", "-t"}));
}

TEST(CommandLineTest, DoubleDashKeepsTheOrder) {
  using V = std::vector<std::string>;
  // gflags' remove_flags moves what follows `--` ahead of the words before it.
  EXPECT_EQ(Positional({"table", "get", "M", "t", "--", "-5"}),
            (V{"table", "get", "M", "t", "-5"}));
  // After `--` even flag names and `--help` are values.
  auto cl = SplitCommandLine({"table", "get", "--format=csv", "M", "--", "t", "--format=json",
                              "--x", "--help", "--", "-verbose"},
                             FakeFlags);
  ASSERT_OK(cl.status());
  EXPECT_EQ(cl->positional,
            (V{"table", "get", "M", "t", "--format=json", "--x", "--help", "--", "-verbose"}));
  EXPECT_EQ(cl->flags, (V{"--format=csv"}));
  EXPECT_FALSE(cl->help);
}

TEST(CommandLineTest, FlagsAnywhereInEveryForm) {
  using V = std::vector<std::string>;
  auto cl = SplitCommandLine({"--timeout_ms", "100", "table", "get", "M", "-format", "csv", "t",
                              "-5", "--verbose", "-noverbose", "--format=json", "-9"},
                             FakeFlags);
  ASSERT_OK(cl.status());
  EXPECT_EQ(cl->positional, (V{"table", "get", "M", "t", "-5", "-9"}));
  EXPECT_EQ(cl->flags,
            (V{"--timeout_ms=100", "--format=csv", "--verbose", "--noverbose", "--format=json"}));
  // A boolean does not take the next word; a value flag at the end is left for gflags
  // to report as missing its value.
  cl = SplitCommandLine({"t", "--verbose", "-5", "--format"}, FakeFlags);
  ASSERT_OK(cl.status());
  EXPECT_EQ(cl->positional, (V{"t", "-5"}));
  EXPECT_EQ(cl->flags, (V{"--verbose", "--format"}));
}

TEST(CommandLineTest, Help) {
  for (const char* h : {"--help", "-help", "-h"}) {
    auto cl = SplitCommandLine({"table", h, "get"}, FakeFlags);
    ASSERT_OK(cl.status());
    EXPECT_TRUE(cl->help) << h;
    EXPECT_EQ(cl->positional, (std::vector<std::string>{"table", "get"}));
  }
}

TEST(CommandLineTest, UnknownDoubleDashFlagIsAnError) {
  auto cl = SplitCommandLine({"table", "scan", "M", "t", "--formt=csv"}, FakeFlags);
  ASSERT_FALSE(cl.ok());
  EXPECT_TRUE(cl.status().IsInvalidArgument());
  EXPECT_NE(cl.status().message().find("unknown flag --formt "), std::string::npos)
      << cl.status().ToString();
  EXPECT_NE(cl.status().message().find("-- --formt=csv"), std::string::npos)
      << cl.status().ToString();
  EXPECT_EQ(cl.status().message().find("did you mean"), std::string::npos)
      << cl.status().ToString();
}

// With a suggester, the error names the closest known flag, and only when one is close.
TEST(CommandLineTest, UnknownFlagSuggestsTheClosest) {
  auto suggest = [](const std::string& name) {
    return ClosestName(name, {"format", "timeout_ms", "verbose"});
  };
  auto cl = SplitCommandLine({"table", "scan", "M", "t", "--frmat=json"}, FakeFlags, suggest);
  ASSERT_FALSE(cl.ok());
  EXPECT_NE(cl.status().message().find("unknown flag --frmat; did you mean --format?"),
            std::string::npos)
      << cl.status().ToString();
  cl = SplitCommandLine({"--timeout=5", "table"}, FakeFlags, suggest);
  ASSERT_FALSE(cl.ok());
  EXPECT_NE(cl.status().message().find("unknown flag --timeout; did you mean --timeout_ms?"),
            std::string::npos)
      << cl.status().ToString();
  cl = SplitCommandLine({"table", "--colour"}, FakeFlags, suggest);
  ASSERT_FALSE(cl.ok());
  EXPECT_EQ(cl.status().message().find("did you mean"), std::string::npos)
      << cl.status().ToString();
  // Known flags and single-dash values are untouched.
  cl = SplitCommandLine({"table", "-frmat", "--format=csv"}, FakeFlags, suggest);
  ASSERT_OK(cl.status());
  EXPECT_EQ(cl->positional, (std::vector<std::string>{"table", "-frmat"}));
}

TEST(CommandLineTest, LooksUpTheGflagsRegistry) {
  EXPECT_EQ(LookUpGflag("command_line_test_bool"), FlagKind::kBool);
  EXPECT_EQ(LookUpGflag("nocommand_line_test_bool"), FlagKind::kBool);
  EXPECT_EQ(LookUpGflag("command_line_test_int"), FlagKind::kValue);
  EXPECT_EQ(LookUpGflag("nocommand_line_test_int"), FlagKind::kUnknown);
  EXPECT_EQ(LookUpGflag("5"), FlagKind::kUnknown);
  EXPECT_EQ(LookUpGflag("dash"), FlagKind::kUnknown);
}

// A socket bound to a loopback port picked by the kernel; listening or not (a port
// that is bound but not listening refuses connections).
int LoopbackSocket(bool listening, uint16_t* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  if (listening) {
    EXPECT_EQ(listen(fd, 4), 0);
  }
  socklen_t len = sizeof(a);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  *port = ntohs(a.sin_port);
  return fd;
}

TEST(MasterProbeTest, RefusedAndListening) {
  uint16_t up_port, down_port;
  int up = LoopbackSocket(true, &up_port);
  int down = LoopbackSocket(false, &down_port);
  const std::string up_addr = "127.0.0.1:" + std::to_string(up_port);
  const std::string down_addr = "127.0.0.1:" + std::to_string(down_port);
  auto probe = ProbeMasters(down_addr, kProbeTimeoutMs);
  ASSERT_OK(probe.status());
  ASSERT_EQ(probe->size(), 1u);
  EXPECT_EQ((*probe)[0].address, down_addr);
  EXPECT_EQ((*probe)[0].status.message(), "connection refused");
  EXPECT_EQ(UnreachableMastersNote(*probe, 30000),
            "master " + down_addr +
                ": connection refused, retrying until the 30 s timeout; --timeout_ms to change");
  // One master that answers: nothing to say.
  probe = ProbeMasters(down_addr + "," + up_addr, kProbeTimeoutMs);
  ASSERT_OK(probe.status());
  ASSERT_EQ(probe->size(), 2u);
  EXPECT_OK((*probe)[1].status);
  EXPECT_EQ(UnreachableMastersNote(*probe, 30000), "");
  EXPECT_FALSE(ProbeMasters("127.0.0.1:notaport", kProbeTimeoutMs).ok());
  close(up);
  close(down);
}

TEST(MasterProbeTest, NoteNamesEveryMasterAndTheTimeout) {
  std::vector<ProbeOutcome> outcomes = {{"a:7051", Status::NetworkError("connection refused")},
                                        {"b:7051", Status::TimedOut("no answer within 0.7 s")}};
  EXPECT_EQ(UnreachableMastersNote(outcomes, 1500),
            "master a:7051: connection refused; master b:7051: no answer within 0.7 s, retrying "
            "until the 1.5 s timeout; --timeout_ms to change");
  EXPECT_EQ(UnreachableMastersNote({}, 1500), "");
}

// A running replica on server `uuid` with its own consensus state.
ReplicaView Running(const std::string& uuid, const std::string& role, uint64_t term,
                    uint64_t committed, uint64_t applied) {
  ReplicaView r;
  r.ts_uuid = uuid;
  r.address = "127.0.0.1:1";
  r.ts_live = true;
  r.asked = true;
  r.hosted = true;
  r.state = "RUNNING";
  r.live_consensus = true;
  r.role = role;
  r.term = term;
  r.committed_index = committed;
  r.applied_index = applied;
  return r;
}

TabletView ThreeReplicas() {
  TabletView t;
  t.tablet_id = "t";
  t.master_state = "TABLET_RUNNING";
  t.num_replicas = 3;
  t.replicas = {Running("a", "LEADER", 2, 100, 100), Running("b", "FOLLOWER", 2, 100, 97),
                Running("c", "FOLLOWER", 2, 90, 90)};
  return t;
}

bool HasReason(const TabletVerdict& v, const std::string& text) {
  for (const auto& r : v.reasons) {
    if (r.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(KsckTest, HealthyWithALeaderAndEveryReplicaCaughtUp) {
  TabletView t = ThreeReplicas();
  ASSERT_NE(nullptr, t.Leader());
  EXPECT_EQ("a", t.Leader()->ts_uuid);
  EXPECT_EQ(0, *t.Lag(t.replicas[0]));
  EXPECT_EQ(3, *t.Lag(t.replicas[1]));
  EXPECT_EQ(10, *t.Lag(t.replicas[2]));
  TabletVerdict v = CheckTablet(t, 10);
  EXPECT_EQ(TabletHealth::kHealthy, v.health);
  EXPECT_TRUE(v.reasons.empty());
  EXPECT_EQ(kKsckHealthy, KsckExitCode({v}, 0));
  // A replica ahead of the leader's committed index as sampled lags 0, not less.
  t.replicas[1].applied_index = 120;
  EXPECT_EQ(0, *t.Lag(t.replicas[1]));
}

// The leader's view of a follower names what a lag alone cannot: one that is
// catching up from the log on disk, and one that cannot catch up without a copy.
TEST(KsckTest, AFollowerThatNeedsACopyOrReadsTheLogIsNamedAsSuch) {
  TabletView t = ThreeReplicas();
  t.replicas[0].follower_states = {{"b", FollowerStateWord(master::FollowerStatusPB::REPLICATE)},
                                   {"c", FollowerStateWord(master::FollowerStatusPB::NEEDS_COPY)}};
  EXPECT_EQ(t.CatchUp(t.replicas[0]), "");
  EXPECT_EQ(t.CatchUp(t.replicas[1]), "replicating");
  EXPECT_EQ(t.CatchUp(t.replicas[2]), "needs a copy");
  TabletVerdict v = CheckTablet(t, 1000);  // a lag of 10 alone would be fine
  EXPECT_EQ(TabletHealth::kUnderReplicated, v.health);
  EXPECT_TRUE(HasReason(v,
                        "replica on c (127.0.0.1:1) cannot catch up: it needs a copy of the "
                        "tablet (the leader's log no longer holds the entries it lacks, 10 "
                        "behind)"))
      << v.reasons[0];
  t.replicas[0].follower_states["c"] =
      FollowerStateWord(master::FollowerStatusPB::CATCHING_UP_FROM_LOG);
  v = CheckTablet(t, 1000);
  EXPECT_EQ(TabletHealth::kUnderReplicated, v.health);
  EXPECT_TRUE(HasReason(v,
                        "replica on c (127.0.0.1:1) is catching up from the leader's log on "
                        "disk (10 entries behind)"));
  t.replicas[0].follower_states["c"] = FollowerStateWord(master::FollowerStatusPB::REPLICATE);
  EXPECT_EQ(TabletHealth::kHealthy, CheckTablet(t, 1000).health);
  // A copy its server is fetching is named, with its progress, whatever the leader says.
  t.replicas[2].copy = "copying from a: 1.0 MiB of 4.0 MiB";
  EXPECT_EQ(t.CatchUp(t.replicas[2]), "copying from a: 1.0 MiB of 4.0 MiB");
  v = CheckTablet(t, 1000);
  EXPECT_EQ(TabletHealth::kUnderReplicated, v.health);
  EXPECT_TRUE(HasReason(v, "replica on c (127.0.0.1:1) is copying from a: 1.0 MiB of 4.0 MiB"));
}

TEST(KsckTest, LaggingDownOrMissingReplicasMakeItUnderReplicated) {
  TabletView t = ThreeReplicas();
  TabletVerdict v = CheckTablet(t, 9);  // c lags 10
  EXPECT_EQ(TabletHealth::kUnderReplicated, v.health);
  EXPECT_TRUE(HasReason(v, "replica on c (127.0.0.1:1) lags 10 entries")) << v.reasons[0];
  EXPECT_EQ(kKsckUnderReplicated, KsckExitCode({v}, 0));

  t = ThreeReplicas();
  t.replicas[2].server_status = Status::NetworkError("connection refused");
  t.replicas[2].live_consensus = false;
  v = CheckTablet(t, 1000);
  EXPECT_EQ(TabletHealth::kUnderReplicated, v.health);
  EXPECT_TRUE(HasReason(v, "replica on c (127.0.0.1:1) is UNREACHABLE"));
  EXPECT_FALSE(t.Lag(t.replicas[2]).has_value());

  t = ThreeReplicas();
  t.replicas[1].hosted = false;
  t.replicas.pop_back();
  t.replicas.push_back(Running("d", "FOLLOWER", 2, 100, 100));
  t.replicas.back().ts_live = false;
  t.replicas.back().asked = false;
  v = CheckTablet(t, 1000);
  EXPECT_EQ(TabletHealth::kUnavailable, v.health);  // only a of 3 runs
  EXPECT_TRUE(HasReason(v, "1 of 3 replicas running: a majority (2) is needed"));
  EXPECT_TRUE(HasReason(v, "replica on b (127.0.0.1:1) is NOT_HOSTED"));
  EXPECT_TRUE(HasReason(v, "replica on d (127.0.0.1:1) is DEAD"));

  t = ThreeReplicas();
  t.replicas.pop_back();  // placed on 2 of 3
  v = CheckTablet(t, 1000);
  EXPECT_EQ(TabletHealth::kUnderReplicated, v.health);
  EXPECT_TRUE(HasReason(v, "placed on 2 of its 3 replicas"));

  t = ThreeReplicas();
  t.replicas[2].state = "FAILED";
  t.replicas[2].failure = "Corruption: bad entry";
  v = CheckTablet(t, 1000);
  EXPECT_EQ(TabletHealth::kUnderReplicated, v.health);
  EXPECT_TRUE(HasReason(v, "is FAILED: Corruption: bad entry"));
}

TEST(KsckTest, NoLeaderOrNoMajorityMakesItUnavailable) {
  TabletView t = ThreeReplicas();
  t.replicas[0].role = "FOLLOWER";
  TabletVerdict v = CheckTablet(t, 1000);
  EXPECT_EQ(TabletHealth::kUnavailable, v.health);
  EXPECT_TRUE(HasReason(v, "no leader"));
  EXPECT_FALSE(t.Lag(t.replicas[1]).has_value());
  EXPECT_EQ(kKsckUnavailable, KsckExitCode({CheckTablet(ThreeReplicas(), 1000), v}, 1));

  // A leader's claim in an older term than another replica's is stale: no leader.
  t = ThreeReplicas();
  t.replicas[0].term = 1;
  EXPECT_EQ(nullptr, t.Leader());
  EXPECT_EQ(TabletHealth::kUnavailable, CheckTablet(t, 1000).health);

  // A leader known only from the master's report is not one now.
  t = ThreeReplicas();
  t.replicas[0].live_consensus = false;
  t.replicas[0].reported = true;
  EXPECT_EQ(nullptr, t.Leader());

  t = ThreeReplicas();
  t.master_state = "TABLET_CREATING";
  v = CheckTablet(t, 1000);
  EXPECT_EQ(TabletHealth::kUnavailable, v.health);
  EXPECT_TRUE(HasReason(v, "the master has the tablet TABLET_CREATING"));
}

// A learner (a replica being added) does not count toward the majority, and the
// master's replacement in progress is named.
TEST(KsckTest, LearnersDoNotVoteAndAReplacementIsNamed) {
  TabletView t = ThreeReplicas();
  t.replicas[2].server_status = Status::NetworkError("connection refused");
  t.replicas[2].live_consensus = false;
  ReplicaView learner = Running("d", "LEARNER", 2, 100, 40);
  learner.learner = true;
  t.replicas.push_back(learner);
  t.replacement = "replacing c by d: adding learner";
  EXPECT_EQ(3u, t.NumVoters());
  TabletVerdict v = CheckTablet(t, 1000);
  EXPECT_EQ(TabletHealth::kUnderReplicated, v.health);
  EXPECT_TRUE(HasReason(v, "replacing c by d: adding learner"));
  EXPECT_FALSE(HasReason(v, "placed on"));
  // Two voters down of three: the running learner makes no majority.
  t.replicas[1].hosted = false;
  v = CheckTablet(t, 1000);
  EXPECT_EQ(TabletHealth::kUnavailable, v.health);
  EXPECT_TRUE(HasReason(v, "1 of 3 replicas running: a majority (2) is needed"));
}

TEST(KsckTest, OneReplicaAndDeadServers) {
  TabletView t;
  t.master_state = "TABLET_RUNNING";
  t.num_replicas = 1;
  t.replicas = {Running("a", "LEADER", 1, 5, 5)};
  TabletVerdict v = CheckTablet(t, 0);
  EXPECT_EQ(TabletHealth::kHealthy, v.health);
  // A dead server holding nothing still makes the cluster unhealthy.
  EXPECT_EQ(kKsckUnderReplicated, KsckExitCode({v}, 1));
  EXPECT_EQ(kKsckHealthy, KsckExitCode({}, 0));
  t.replicas[0].server_status = Status::TimedOut("no answer");
  EXPECT_EQ(TabletHealth::kUnavailable, CheckTablet(t, 0).health);
  EXPECT_EQ("UNREACHABLE", t.replicas[0].Health());
}

}  // namespace
}  // namespace nyala::tools
