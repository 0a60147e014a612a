#include "nyala/predicate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/common.pb.h"
#include "common/data_model_test_util.h"
#include "common/key_encoding.h"
#include "common/test_util.h"

namespace nyala {
namespace {

using C = ColumnSchema;
using Op = ColumnPredicate::CompareOp;

void ExpectInvalid(const Status& s, const std::string& part) {
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find(part), std::string::npos)
      << "'" << part << "' not in " << s.ToString();
}

// (k INT32, s STRING, d DOUBLE NULLABLE, b BOOL NULLABLE), key (k, s).
Schema TestSchema() {
  return Schema::Create({C("k", DataType::kInt32), C("s", DataType::kString),
                         C("d", DataType::kDouble, true), C("b", DataType::kBool, true)},
                        2)
      .value();
}

TEST(PredicateTest, EvaluateEachKind) {
  Schema schema = TestSchema();
  auto cmp = [&](Op op, int v) {
    return ColumnPredicate::Comparison(schema, 0, op, Cell::Int32(v)).value();
  };
  const Cell null = Cell::Null(DataType::kInt32);
  EXPECT_TRUE(cmp(Op::kEqual, 3).Evaluate(Cell::Int32(3)));
  EXPECT_FALSE(cmp(Op::kEqual, 3).Evaluate(Cell::Int32(4)));
  EXPECT_TRUE(cmp(Op::kLess, 3).Evaluate(Cell::Int32(2)));
  EXPECT_FALSE(cmp(Op::kLess, 3).Evaluate(Cell::Int32(3)));
  EXPECT_TRUE(cmp(Op::kLessEqual, 3).Evaluate(Cell::Int32(3)));
  EXPECT_FALSE(cmp(Op::kLessEqual, 3).Evaluate(Cell::Int32(4)));
  EXPECT_TRUE(cmp(Op::kGreater, 3).Evaluate(Cell::Int32(4)));
  EXPECT_FALSE(cmp(Op::kGreater, 3).Evaluate(Cell::Int32(3)));
  EXPECT_TRUE(cmp(Op::kGreaterEqual, 3).Evaluate(Cell::Int32(3)));
  EXPECT_FALSE(cmp(Op::kGreaterEqual, 3).Evaluate(Cell::Int32(2)));
  for (Op op : {Op::kEqual, Op::kLess, Op::kLessEqual, Op::kGreater, Op::kGreaterEqual}) {
    EXPECT_FALSE(cmp(op, 3).Evaluate(null));
  }
  ColumnPredicate between =
      ColumnPredicate::Range(schema, 0, Cell::Int32(-2), true, Cell::Int32(5), false).value();
  EXPECT_TRUE(between.Evaluate(Cell::Int32(-2)));
  EXPECT_FALSE(between.Evaluate(Cell::Int32(5)));
  EXPECT_EQ(between.ToString(), "k >= -2 AND k < 5");

  ColumnPredicate in =
      ColumnPredicate::InList(schema, 1, {Cell::String("b"), Cell::String("a"), Cell::String("b")})
          .value();
  EXPECT_EQ(in.in_list().size(), 2u);
  EXPECT_EQ(in.ToString(), "s IN (\"a\", \"b\")");
  EXPECT_TRUE(in.Evaluate(Cell::String("a")));
  EXPECT_FALSE(in.Evaluate(Cell::String("ab")));
  EXPECT_FALSE(ColumnPredicate::InList(schema, 1, {}).value().Evaluate(Cell::String("")));

  ColumnPredicate is_null = ColumnPredicate::IsNull(schema, 2).value();
  ColumnPredicate not_null = ColumnPredicate::IsNotNull(schema, 2).value();
  EXPECT_TRUE(is_null.Evaluate(Cell::Null(DataType::kDouble)));
  EXPECT_FALSE(is_null.Evaluate(Cell::Double(1)));
  EXPECT_FALSE(not_null.Evaluate(Cell::Null(DataType::kDouble)));
  EXPECT_TRUE(not_null.Evaluate(Cell::Double(1)));
  EXPECT_EQ(is_null.ToString(), "d IS NULL");
}

TEST(PredicateTest, FloatingRules) {
  Schema schema = TestSchema();
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  ColumnPredicate eq_zero = ColumnPredicate::Equality(schema, 2, Cell::Double(0.0)).value();
  EXPECT_TRUE(eq_zero.Evaluate(Cell::Double(-0.0)));
  ColumnPredicate eq_nan = ColumnPredicate::Equality(schema, 2, Cell::Double(nan)).value();
  EXPECT_TRUE(eq_nan.Evaluate(Cell::Double(-nan)));
  ColumnPredicate gt_inf =
      ColumnPredicate::Comparison(schema, 2, Op::kGreater, Cell::Double(inf)).value();
  EXPECT_TRUE(gt_inf.Evaluate(Cell::Double(nan)));
  EXPECT_FALSE(gt_inf.Evaluate(Cell::Double(inf)));
}

TEST(PredicateTest, BuilderErrorsNameTheColumn) {
  Schema schema = TestSchema();
  ExpectInvalid(ColumnPredicate::Equality(schema, 0, Cell::Int64(1)).status(),
                "predicate on column 'k': value is INT64, the column is INT32");
  ExpectInvalid(ColumnPredicate::Equality(schema, 2, Cell::Null(DataType::kDouble)).status(),
                "predicate on column 'd': value is NULL (use IS NULL)");
  ExpectInvalid(ColumnPredicate::Range(schema, 1, Cell(), true, Cell(), true).status(),
                "predicate on column 's': range has no bounds");
  ExpectInvalid(ColumnPredicate::InList(schema, 3, {Cell::Bool(true), Cell::Int8(1)}).status(),
                "predicate on column 'b': IN list value is INT8, the column is BOOL");
  ExpectInvalid(ColumnPredicate::IsNull(schema, 9).status(), "column index 9");
}

TEST(PredicateTest, PBRoundTripAndErrors) {
  Schema schema = TestSchema();
  std::vector<ColumnPredicate> preds = {
      ColumnPredicate::Comparison(schema, 0, Op::kLessEqual, Cell::Int32(7)).value(),
      ColumnPredicate::Range(schema, 1, Cell::String("a"), false, Cell::String("q"), true).value(),
      ColumnPredicate::Equality(schema, 2, Cell::Double(-1.5)).value(),
      ColumnPredicate::InList(schema, 0, {Cell::Int32(3), Cell::Int32(-9)}).value(),
      ColumnPredicate::IsNull(schema, 3).value(),
      ColumnPredicate::IsNotNull(schema, 2).value(),
  };
  for (const ColumnPredicate& p : preds) {
    ColumnPredicatePB pb;
    p.ToPB(&pb);
    Result<ColumnPredicate> back = ColumnPredicate::FromPB(pb, schema);
    ASSERT_OK(back.status());
    EXPECT_EQ(back->ToString(), p.ToString());
    EXPECT_EQ(back->kind(), p.kind());
    EXPECT_EQ(back->column(), p.column());
  }

  ColumnPredicatePB pb;
  preds[0].ToPB(&pb);
  ColumnPredicatePB bad = pb;
  bad.set_column("nope");
  ExpectInvalid(ColumnPredicate::FromPB(bad, schema).status(),
                "predicate on unknown column 'nope'");
  bad = pb;
  bad.set_type(INT64);
  ExpectInvalid(ColumnPredicate::FromPB(bad, schema).status(),
                "predicate on column 'k' has type INT64, the column is INT32");
  bad = pb;
  bad.set_type(UNKNOWN_DATA);  // not declared: not checked
  EXPECT_OK(ColumnPredicate::FromPB(bad, schema).status());
  bad.mutable_range()->set_upper("12345678");
  ExpectInvalid(ColumnPredicate::FromPB(bad, schema).status(),
                "predicate on column 'k': upper bound: value is 8 bytes, INT32 needs 4");
  bad.Clear();
  bad.set_column("b");
  ExpectInvalid(ColumnPredicate::FromPB(bad, schema).status(),
                "predicate on column 'b' has no kind");
  bad.mutable_range();
  ExpectInvalid(ColumnPredicate::FromPB(bad, schema).status(), "range has no bounds");
  bad.mutable_equality()->set_value("\x07");
  ExpectInvalid(ColumnPredicate::FromPB(bad, schema).status(), "BOOL value byte is 7");
  bad.mutable_in_list()->add_values("\x01");
  bad.mutable_in_list()->add_values("");
  ExpectInvalid(ColumnPredicate::FromPB(bad, schema).status(),
                "predicate on column 'b': IN list value: value is 0 bytes, BOOL needs 1");
}

TEST(PredicateTest, KeyRangeExamples) {
  Schema schema = TestSchema();
  auto enc = [](int32_t k, const char* s) {
    std::string out;
    EncodeKeyCell(Cell::Int32(k), false, &out);
    if (s) EncodeKeyCell(Cell::String(s), true, &out);
    return out;
  };
  // No key predicates: everything.
  KeyRange r = KeyRangeFromPredicates(schema, {ColumnPredicate::IsNull(schema, 2).value()});
  EXPECT_FALSE(r.empty);
  EXPECT_EQ(r.start, "");
  EXPECT_EQ(r.stop, "");
  // k = 5: the prefix.
  r = KeyRangeFromPredicates(schema,
                             {ColumnPredicate::Equality(schema, 0, Cell::Int32(5)).value()});
  EXPECT_EQ(r.start, enc(5, nullptr));
  EXPECT_EQ(r.stop, enc(6, nullptr));
  // k = 5 AND s >= "b" AND s < "d".
  r = KeyRangeFromPredicates(
      schema, {ColumnPredicate::Equality(schema, 0, Cell::Int32(5)).value(),
               ColumnPredicate::Range(schema, 1, Cell::String("b"), true, Cell::String("d"), false)
                   .value()});
  EXPECT_EQ(r.start, enc(5, "b"));
  EXPECT_EQ(r.stop, enc(5, "d"));
  // k = 5 AND s = "x": one key.
  r = KeyRangeFromPredicates(schema,
                             {ColumnPredicate::Equality(schema, 0, Cell::Int32(5)).value(),
                              ColumnPredicate::Equality(schema, 1, Cell::String("x")).value()});
  EXPECT_EQ(r.start, enc(5, "x"));
  EXPECT_EQ(r.stop, enc(5, "x") + std::string(1, '\0'));
  // Contradictions and IS NULL on a key column.
  EXPECT_TRUE(
      KeyRangeFromPredicates(
          schema, {ColumnPredicate::Comparison(schema, 0, Op::kLess, Cell::Int32(3)).value(),
                   ColumnPredicate::Comparison(schema, 0, Op::kGreater, Cell::Int32(2)).value()})
          .empty);
  EXPECT_TRUE(KeyRangeFromPredicates(schema, {ColumnPredicate::IsNull(schema, 1).value()}).empty);
  EXPECT_TRUE(
      KeyRangeFromPredicates(schema, {ColumnPredicate::InList(schema, 0, {}).value()}).empty);
  EXPECT_TRUE(
      KeyRangeFromPredicates(
          schema,
          {ColumnPredicate::Comparison(schema, 0, Op::kGreater, Cell::Int32(INT32_MAX)).value()})
          .empty);
  // Below the empty string of a single STRING key: nothing (not "unbounded").
  Schema str_key = Schema::Create({C("s", DataType::kString)}, 1).value();
  r = KeyRangeFromPredicates(
      str_key, {ColumnPredicate::Comparison(str_key, 0, Op::kLess, Cell::String("")).value()});
  EXPECT_TRUE(r.empty);
  r = KeyRangeFromPredicates(
      str_key, {ColumnPredicate::Comparison(str_key, 0, Op::kLessEqual, Cell::String("")).value()});
  EXPECT_FALSE(r.empty);
  EXPECT_EQ(r.stop, std::string(1, '\0'));
  // Intersections with explicit scan bounds.
  r = KeyRangeFromPredicates(schema,
                             {ColumnPredicate::Equality(schema, 0, Cell::Int32(5)).value()});
  IntersectKeyRange(Slice(enc(5, "m")), Slice(""), &r);
  EXPECT_EQ(r.start, enc(5, "m"));
  EXPECT_EQ(r.stop, enc(6, nullptr));
  EXPECT_FALSE(r.empty);
  IntersectKeyRange(Slice(""), Slice(enc(5, "a")), &r);
  EXPECT_TRUE(r.empty);
}

// Random key-column predicates over random keys: every key matching all predicates
// is inside the range; when the predicates are equalities on a key prefix plus at
// most one range on the next key column, exactly the matching keys are inside.
TEST(PredicateTest, KeyRangeMatchesEvaluation) {
  DataGen gen(TestRandomSeed());
  int64_t matched = 0, exact_trials = 0;
  for (int trial = 0; trial < 300; trial++) {
    Schema schema = gen.RandomSchema(3, 1);
    const int nk = schema.num_key_columns();
    std::vector<Row> rows;
    for (int i = 0; i < 200; i++) rows.push_back(gen.RandomRow(&schema, false, true));
    Arena arena;
    auto random_value = [&](int col) {
      // Mostly a value that occurs in the data.
      if (gen.OneIn(4)) return gen.RandomValue(schema.column(col).type(), &arena, true);
      return rows[gen.Uniform(rows.size())].cell(col);
    };
    std::vector<ColumnPredicate> preds;
    const bool prefix_shape = gen.OneIn(2);
    if (prefix_shape) {
      const int eqs = static_cast<int>(gen.Uniform(nk + 1));
      for (int c = 0; c < eqs; c++) {
        preds.push_back(ColumnPredicate::Equality(schema, c, random_value(c)).value());
      }
      if (eqs < nk && gen.OneIn(2)) {
        Cell lo = gen.OneIn(3) ? Cell() : random_value(eqs);
        Cell hi = gen.OneIn(3) && !lo.is_absent() ? Cell() : random_value(eqs);
        preds.push_back(
            ColumnPredicate::Range(schema, eqs, lo, gen.OneIn(2), hi, gen.OneIn(2)).value());
      }
    } else {
      const int n = 1 + static_cast<int>(gen.Uniform(4));
      for (int i = 0; i < n; i++) {
        const int c = static_cast<int>(gen.Uniform(nk));
        switch (gen.Uniform(5)) {
          case 0:
            preds.push_back(ColumnPredicate::Equality(schema, c, random_value(c)).value());
            break;
          case 1:
            preds.push_back(
                ColumnPredicate::Comparison(schema, c, Op(1 + gen.Uniform(4)), random_value(c))
                    .value());
            break;
          case 2:
            preds.push_back(
                ColumnPredicate::InList(schema, c, {random_value(c), random_value(c)}).value());
            break;
          case 3:
            preds.push_back(ColumnPredicate::IsNotNull(schema, c).value());
            break;
          default:
            preds.push_back(ColumnPredicate::Range(schema, c, random_value(c), gen.OneIn(2),
                                                   random_value(c), gen.OneIn(2))
                                .value());
        }
      }
    }
    const KeyRange range = KeyRangeFromPredicates(schema, preds);
    exact_trials += prefix_shape;
    for (const Row& row : rows) {
      bool match = true;
      for (const ColumnPredicate& p : preds) match &= p.Evaluate(row.view());
      std::string key;
      EncodeKey(schema, row.view().cells(), &key);
      const bool inside = range.Contains(Slice(key));
      matched += match;
      if (match) {
        ASSERT_TRUE(inside) << row.ToString() << " matches but is outside the range";
      }
      if (prefix_shape) {
        std::string preds_str;
        for (const ColumnPredicate& p : preds) preds_str += p.ToString() + "; ";
        ASSERT_EQ(inside, match) << schema.ToString() << "\n"
                                 << row.ToString() << "\n"
                                 << preds_str;
      }
    }
  }
  EXPECT_GT(matched, 0);
  EXPECT_GT(exact_trials, 0);
}

}  // namespace
}  // namespace nyala
