#include "tools/predicates_json.h"
#include "common/result.h"

#include "tools/output.h"
#include "tools/value_parse.h"

namespace nyala::tools {

using nlohmann::json;

namespace {

Result<ColumnPredicate> ParseOne(const client::Table& table, const json& p, const std::string& path,
                                 Arena* arena) {
  if (!p.is_array() || p.size() < 2 || !p[0].is_string() || !p[1].is_string()) {
    return Status::InvalidArgument(path + ": expected [\"<op>\", \"<column>\", <value>]");
  }
  const std::string op = p[0].get<std::string>();
  const std::string col = p[1].get<std::string>();
  auto idx = table.schema().ColumnIndex(col);
  if (!idx.ok()) return Status::InvalidArgument(path + ": unknown column '" + col + "'");
  const ColumnSchema& cs = table.schema().column(*idx);
  if (op == "NULL" || op == "NOTNULL") {
    if (p.size() != 2) return Status::InvalidArgument(path + ": " + op + " takes no value");
    return op == "NULL" ? table.NewIsNullPredicate(col) : table.NewIsNotNullPredicate(col);
  }
  if (p.size() != 3) return Status::InvalidArgument(path + ": expected one value after the column");
  if (op == "IN") {
    if (!p[2].is_array()) return Status::InvalidArgument(path + ": IN takes an array of values");
    std::vector<Cell> values;
    for (const auto& v : p[2]) {
      auto c = ParseCellJson(cs, v, arena);
      if (!c.ok()) return Status::InvalidArgument(path + ": " + c.status().message());
      values.push_back(*c);
    }
    return table.NewInListPredicate(col, values);
  }
  ColumnPredicate::CompareOp cmp;
  if (op == "=")
    cmp = ColumnPredicate::CompareOp::kEqual;
  else if (op == "<")
    cmp = ColumnPredicate::CompareOp::kLess;
  else if (op == "<=")
    cmp = ColumnPredicate::CompareOp::kLessEqual;
  else if (op == ">")
    cmp = ColumnPredicate::CompareOp::kGreater;
  else if (op == ">=")
    cmp = ColumnPredicate::CompareOp::kGreaterEqual;
  else {
    return Status::InvalidArgument(path + ": unknown operator '" + op +
                                   "' (expected = < <= > >= IN NULL NOTNULL)");
  }
  auto c = ParseCellJson(cs, p[2], arena);
  if (!c.ok()) return Status::InvalidArgument(path + ": " + c.status().message());
  if (c->is_null()) return Status::InvalidArgument(path + ": compare with NULL; use NULL/NOTNULL");
  return table.NewComparisonPredicate(col, cmp, *c);
}

}  // namespace

Result<std::vector<ColumnPredicate>> ParsePredicates(const client::Table& table,
                                                     const std::string& json_text, Arena* arena) {
  ASSIGN_OR_RETURN(json j, ParseJson(json_text, "--predicates"));
  std::vector<ColumnPredicate> out;
  if (j.is_array() && !j.empty() && j[0].is_string() && j[0].get<std::string>() == "AND") {
    for (size_t i = 1; i < j.size(); i++) {
      ASSIGN_OR_RETURN(ColumnPredicate p,
                       ParseOne(table, j[i], "predicate " + std::to_string(i), arena));
      out.push_back(std::move(p));
    }
    return out;
  }
  ASSIGN_OR_RETURN(ColumnPredicate p, ParseOne(table, j, "predicate", arena));
  out.push_back(std::move(p));
  return out;
}

}  // namespace nyala::tools
