// Converting cell values between the CLI's text forms (command-line words, CSV
// fields, JSON values) and typed Cells. Errors name the column and the bad text.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

#include "common/arena.h"
#include "common/result.h"
#include "common/schema.h"
#include "common/types.h"

namespace nyala::tools {

// Parses `text` as a value of `col`'s type. Strings are taken verbatim (copied into
// `arena`). Integers must fit the type; BOOL takes true/false/1/0; UNIXTIME_MICROS an
// integer of microseconds.
Result<Cell> ParseCellText(const ColumnSchema& col, std::string_view text, Arena* arena);

// Converts a JSON value: null (for nullable columns), numbers, strings, booleans.
Result<Cell> ParseCellJson(const ColumnSchema& col, const nlohmann::json& v, Arena* arena);

// A cell for display: numbers as numbers, strings as is, NULL as "NULL".
std::string CellToText(const Cell& c);
// A cell as JSON (strings as JSON strings; BINARY as a string of its bytes).
nlohmann::json CellToJson(const Cell& c);

// "INT64" etc. → DataType; InvalidArgument listing the valid names.
Result<DataType> ParseTypeName(std::string_view name);

}  // namespace nyala::tools
