// Reads rows for `nyala table insert|upsert|delete_rows` from CSV (a header line of
// column names, then one row per line; an empty unquoted field is NULL, so a bad line
// for a NOT NULL column, and a quoted empty field "" is the empty string) or JSON:
// either JSON Lines (one object per line, column name → value) or one JSON array of
// such objects, which is what `nyala table scan --format=json` prints (told apart by
// the first character, '['). Values take the forms of value_parse.h (BINARY in JSON
// as base64, NaN/Infinity as strings, timestamps as ISO-8601 or integers). Each row
// is parsed into a Row of the table; a bad line (array element) is reported with its
// number and the reason, and the reader carries on with the next. An array is read
// element by element, so memory stays bounded by a row whatever the input's size.
// Thread-compatible.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "common/result.h"
#include "nyala/row.h"
#include "nyala/schema.h"

namespace nyala::tools {

class RowReader {
 public:
  enum class Format { kCsv, kJsonLines };
  // Format from the file name: *.csv → CSV, *.jsonl / *.ndjson / *.json → JSON (Lines
  // or an array, told by the content).
  static Result<Format> FormatForPath(const std::string& path);
  // For standard input: JSON when the first character is '[' or '{', else CSV.
  // Leaves the character in `in`.
  static Format SniffFormat(FILE* in);

  // `in` stays owned by the caller. `schema` must outlive the reader.
  RowReader(FILE* in, Format format, const Schema* schema);

  // Reads the next row into `row` (cleared first). Returns EndOfFile at the end; for
  // a bad line, a status naming the line and the reason (the line is consumed).
  Status Next(Row* row);
  // Line number (1-based) of the row last returned or rejected; in a JSON array the
  // element number (1-based) instead.
  int64_t line_number() const { return in_array_ ? element_no_ : line_no_; }
  // Where row `n` (a line_number()) was: "line 5", or "element 5" in a JSON array.
  std::string Where(int64_t n) const;
  // Bytes consumed so far (for progress).
  int64_t bytes_read() const { return bytes_; }

 private:
  Status ReadHeader();
  Status ParseCsv(const std::string& line, Row* row);
  Status ParseJsonLine(const std::string& line, Row* row);
  bool ReadLine(std::string* line);
  int GetChar();
  // In a JSON array: the text of the next element into `text`; EndOfFile after ']'.
  Status NextArrayElement(std::string* text);

  FILE* in_;
  const Format format_;
  const Schema* schema_;
  std::vector<int> csv_columns_;  // schema index of each CSV field
  bool header_done_ = false;
  bool sniffed_ = false;     // JSON: looked for '[' at the start
  bool in_array_ = false;    // JSON: the input is one array
  bool array_done_ = false;  // ... whose end (or a fatal error) was reached
  int64_t element_no_ = 0;
  int64_t line_no_ = 0;
  int64_t bytes_ = 0;
};

// Splits one CSV record (RFC 4180 quoting, no embedded newlines). `quoted` tells
// which fields were quoted. InvalidArgument for an unterminated quote.
Status SplitCsvLine(const std::string& line, std::vector<std::string>* fields,
                    std::vector<bool>* quoted);

}  // namespace nyala::tools
