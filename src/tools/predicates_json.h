// Scan predicates in the CLI's JSON form (the shape of Kudu's tool):
//
//   ["AND", ["=", "key", 5], [">=", "ts", 1000], ["<", "ts", 2000],
//           ["IN", "host", ["a", "b"]], ["NULL", "note"], ["NOTNULL", "value"]]
//
// Operators: = < <= > >= IN NULL NOTNULL. A single predicate may be given without
// the "AND" wrapper. Errors name the predicate by its position.
#pragma once

#include <string>
#include <vector>

#include "nyala/arena.h"
#include "nyala/client.h"

namespace nyala::tools {

// Builds the predicates against `table`'s schema. Values are copied into `arena`,
// which must outlive the predicates.
Result<std::vector<ColumnPredicate>> ParsePredicates(const client::Table& table,
                                                     const std::string& json_text, Arena* arena);

}  // namespace nyala::tools
