// Reads rows for `nyala table insert|upsert|delete_rows` from CSV (a header line of
// column names, then one row per line; an empty unquoted field is NULL) or JSON
// Lines (one object per line, column name → value). Each row is parsed into a Row
// of the table; a bad line is reported with its number and the reason, and the
// reader carries on with the next line.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/row.h"
#include "common/schema.h"

namespace nyala::tools {

class RowReader {
 public:
  enum class Format { kCsv, kJsonLines };
  // Format from the file name: *.csv → CSV, *.jsonl / *.json → JSON Lines.
  static Result<Format> FormatForPath(const std::string& path);

  // `in` stays owned by the caller. `schema` must outlive the reader.
  RowReader(FILE* in, Format format, const Schema* schema);

  // Reads the next row into `row` (cleared first). Returns EndOfFile at the end; for
  // a bad line, a status naming the line and the reason (the line is consumed).
  Status Next(Row* row);
  // Line number (1-based) of the row last returned or rejected.
  int64_t line_number() const { return line_no_; }
  // Bytes consumed so far (for progress).
  int64_t bytes_read() const { return bytes_; }

 private:
  Status ReadHeader();
  Status ParseCsv(const std::string& line, Row* row);
  Status ParseJsonLine(const std::string& line, Row* row);
  bool ReadLine(std::string* line);

  FILE* in_;
  const Format format_;
  const Schema* schema_;
  std::vector<int> csv_columns_;  // schema index of each CSV field
  bool header_done_ = false;
  int64_t line_no_ = 0;
  int64_t bytes_ = 0;
};

// Splits one CSV record (RFC 4180 quoting, no embedded newlines). `quoted` tells
// which fields were quoted. InvalidArgument for an unterminated quote.
Status SplitCsvLine(const std::string& line, std::vector<std::string>* fields,
                    std::vector<bool>* quoted);

}  // namespace nyala::tools
