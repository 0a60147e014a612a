// Converting cell values between the CLI's text forms (command-line words, CSV
// fields, JSON values) and typed Cells. Errors name the column and the bad text.
//
// The forms, the same for output and input (kValueFormsHelp says it for --help):
//   FLOAT, DOUBLE    shortest decimal that reads back as the same value; NaN,
//                    Infinity and -Infinity as those words (in JSON as the strings
//                    "NaN", "Infinity", "-Infinity": JSON null is SQL NULL). Input
//                    out of the type's range (1e40 for a FLOAT) is an error.
//   UNIXTIME_MICROS  ISO-8601 UTC with microseconds, 2023-11-14T22:13:21.000000Z
//                    (TimestampFormat::kMicros: the integer of microseconds since
//                    1970-01-01, in JSON a number). Input takes both forms.
//   BINARY           in text (CSV, command-line words) the bytes as they are; in
//                    JSON standard base64 (RFC 4648, with '=' padding), so any bytes
//                    survive.
//   STRING           as it is (JSON escapes it; bytes that are not UTF-8 print as
//                    U+FFFD in JSON).
// All functions are pure: safe to call from any thread.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

#include "common/result.h"
#include "nyala/arena.h"
#include "nyala/schema.h"
#include "nyala/types.h"

namespace nyala::tools {

// How UNIXTIME_MICROS values print.
enum class TimestampFormat { kIso8601, kMicros };
// "iso8601" or "micros" (the values of --timestamp_format).
Result<TimestampFormat> ParseTimestampFormat(const std::string& s);

// Parses `text` as a value of `col`'s type. Strings and binary are taken verbatim
// (copied into `arena`). Integers must fit the type; BOOL takes true/false/1/0;
// FLOAT and DOUBLE a decimal number or NaN/Infinity/-Infinity (any case, also
// inf/-inf), within the type's range; UNIXTIME_MICROS an ISO-8601 time with a zone
// (Z or +hh:mm) or an integer of microseconds.
Result<Cell> ParseCellText(const ColumnSchema& col, std::string_view text, Arena* arena);

// Converts a JSON value: null (for nullable columns), numbers, strings (any text
// form above, e.g. "NaN" or an ISO-8601 time), booleans; BINARY from base64.
Result<Cell> ParseCellJson(const ColumnSchema& col, const nlohmann::json& v, Arena* arena);

// A cell for display and CSV: numbers as numbers, strings and binary as they are,
// timestamps per `ts`, NULL as "NULL".
std::string CellToText(const Cell& c, TimestampFormat ts = TimestampFormat::kIso8601);
// A cell as JSON: NULL as null, NaN/±infinity as strings, BINARY as base64, timestamps
// per `ts` (a string, or a number for kMicros).
nlohmann::json CellToJson(const Cell& c, TimestampFormat ts = TimestampFormat::kIso8601);

// Microseconds since the epoch ↔ "2023-11-14T22:13:21.000000Z". Years outside
// 0000-9999 carry a sign and at least four digits ("-0001-...", "+10000-...").
std::string FormatTimestampMicros(int64_t micros);
// Takes "YYYY-MM-DD[T| ]hh:mm:ss[.f{1,6}](Z|+hh:mm|-hh:mm)". InvalidArgument saying
// what is wrong (no zone, a bad field, out of the int64 range).
Result<int64_t> ParseTimestampIso8601(std::string_view text);

// Standard base64 with padding (RFC 4648 section 4).
std::string Base64Encode(std::string_view bytes);
// Strict: padding required, no whitespace. InvalidArgument when not base64.
Result<std::string> Base64Decode(std::string_view text);

// "INT64" etc. → DataType; InvalidArgument listing the valid names.
Result<DataType> ParseTypeName(std::string_view name);

// The value forms above, for the --help of the verbs that print or read rows.
extern const char kValueFormsHelp[];

}  // namespace nyala::tools
