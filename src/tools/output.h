// Tabular output of the CLI in three formats: aligned columns for people
// ("table"), CSV, and JSON (an array of objects, each with its members in the order of
// the columns, not sorted by name) for scripts. TableOutput collects
// the rows, then prints them (column widths from every row); StreamingOutput prints
// them batch by batch as they come, for results of any size.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/result.h"

namespace nyala::tools {

enum class OutputFormat { kTable, kCsv, kJson };
Result<OutputFormat> ParseOutputFormat(const std::string& s);

class TableOutput {
 public:
  explicit TableOutput(std::vector<std::string> columns) : columns_(std::move(columns)) {}
  // Each row: one display string and one JSON value per column.
  void AddRow(std::vector<std::string> text, std::vector<nlohmann::json> values);
  // A row whose JSON values are its texts.
  void AddRow(std::vector<std::string> text);
  size_t num_rows() const { return rows_.size(); }
  // Writes the rows in `format` to `out`.
  void Print(OutputFormat format, FILE* out = stdout) const;
  std::string Render(OutputFormat format) const;

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::vector<nlohmann::json>> values_;
};

// Rows printed as they come, in memory bounded by one batch: each batch of rows goes
// out (and `out` is flushed) at EndBatch. CSV and JSON are byte for byte what
// TableOutput prints for the same rows. The table format takes its column widths from
// the names and the first batch; a later, longer value widens its column from its
// batch on. Output that stops early (a scan failing midway) keeps what was printed;
// JSON then lacks its closing bracket, so it does not parse as a complete result.
// Thread-compatible.
class StreamingOutput {
 public:
  // `out` must outlive this object.
  StreamingOutput(std::vector<std::string> columns, OutputFormat format, FILE* out = stdout);
  // Each row: one display string and one JSON value per column.
  void AddRow(std::vector<std::string> text, std::vector<nlohmann::json> values);
  // Prints the rows added since the last EndBatch (the header first, the first time).
  void EndBatch();
  // Ends the output: what is left, then the end of the JSON array. Call once.
  void Finish();
  int64_t num_rows() const { return num_rows_; }

 private:
  std::string Line(const std::vector<std::string>& cells) const;

  const std::vector<std::string> columns_;
  const OutputFormat format_;
  FILE* const out_;
  std::vector<size_t> width_;                   // kTable
  std::vector<std::vector<std::string>> rows_;  // this batch
  std::vector<std::vector<nlohmann::json>> values_;
  bool started_ = false;
  int64_t num_rows_ = 0;
};

// `n` and a noun for it: "1 row", "0 rows", "2 rows" (`singular` for 1 and -1, else
// `plural`).
std::string Count(int64_t n, const std::string& singular, const std::string& plural);
// Count(n, "row", "rows").
std::string Rows(int64_t n);

// RFC 4180 quoting when needed.
std::string CsvQuote(const std::string& s);
// JSON text that never throws on invalid UTF-8 (bad bytes become U+FFFD).
std::string DumpJson(const nlohmann::json& j, int indent = -1);
// Parses JSON; InvalidArgument with the position of the error. `what` names the input.
Result<nlohmann::json> ParseJson(const std::string& text, const std::string& what);

}  // namespace nyala::tools
