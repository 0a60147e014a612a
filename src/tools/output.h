// Tabular output of the CLI in three formats: aligned columns for people
// ("table"), CSV, and JSON (an array of objects) for scripts. Rows are collected,
// then printed (column widths need every row).
#pragma once

#include <nlohmann/json.hpp>

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

// RFC 4180 quoting when needed.
std::string CsvQuote(const std::string& s);
// JSON text that never throws on invalid UTF-8 (bad bytes become U+FFFD).
std::string DumpJson(const nlohmann::json& j, int indent = -1);
// Parses JSON; InvalidArgument with the position of the error. `what` names the input.
Result<nlohmann::json> ParseJson(const std::string& text, const std::string& what);

}  // namespace nyala::tools
