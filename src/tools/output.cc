#include "tools/output.h"

#include <algorithm>

namespace nyala::tools {

using nlohmann::json;

Result<OutputFormat> ParseOutputFormat(const std::string& s) {
  if (s == "table") return OutputFormat::kTable;
  if (s == "csv") return OutputFormat::kCsv;
  if (s == "json") return OutputFormat::kJson;
  return Status::InvalidArgument("--format must be table, csv or json, not '" + s + "'");
}

void TableOutput::AddRow(std::vector<std::string> text, std::vector<json> values) {
  rows_.push_back(std::move(text));
  values_.push_back(std::move(values));
}

void TableOutput::AddRow(std::vector<std::string> text) {
  std::vector<json> values(text.begin(), text.end());
  AddRow(std::move(text), std::move(values));
}

std::string Count(int64_t n, const std::string& singular, const std::string& plural) {
  return std::to_string(n) + " " + (n == 1 || n == -1 ? singular : plural);
}

std::string Rows(int64_t n) { return Count(n, "row", "rows"); }

std::string CsvQuote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos && !s.empty() && s.front() != ' ' &&
      s.back() != ' ') {
    return s;
  }
  if (s.empty()) return "\"\"";
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string DumpJson(const json& j, int indent) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

Result<json> ParseJson(const std::string& text, const std::string& what) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    return Status::InvalidArgument(what + " is not valid JSON: " + e.what());
  } catch (const json::exception& e) {
    // E.g. out_of_range for a number beyond a double ("1e400").
    return Status::InvalidArgument(what + " is not usable JSON: " + e.what());
  }
}

namespace {
// One row as a JSON object whose members are in the order of `columns` (a json object
// would sort them by name), printed as DumpJson prints an object.
std::string JsonRow(const std::vector<std::string>& columns, const std::vector<json>& row) {
  std::string out = "{";
  for (size_t i = 0; i < columns.size() && i < row.size(); i++) {
    out += (i ? "," : "") + DumpJson(json(columns[i])) + ":" + DumpJson(row[i]);
  }
  return out + "}";
}
}  // namespace

std::string TableOutput::Render(OutputFormat format) const {
  std::string out;
  switch (format) {
    case OutputFormat::kJson: {
      out = "[";
      for (size_t r = 0; r < values_.size(); r++) {
        out += (r ? "," : "") + JsonRow(columns_, values_[r]);
      }
      return out + "]\n";
    }
    case OutputFormat::kCsv: {
      for (size_t i = 0; i < columns_.size(); i++) out += (i ? "," : "") + CsvQuote(columns_[i]);
      out += "\n";
      // NULL is an empty unquoted field (an empty string is ""), as the CSV reader takes it.
      for (size_t r = 0; r < rows_.size(); r++) {
        for (size_t i = 0; i < rows_[r].size(); i++) {
          const bool null = i < values_[r].size() && values_[r][i].is_null();
          out += (i ? "," : "") + (null ? std::string() : CsvQuote(rows_[r][i]));
        }
        out += "\n";
      }
      return out;
    }
    case OutputFormat::kTable: {
      std::vector<size_t> width(columns_.size());
      for (size_t i = 0; i < columns_.size(); i++) width[i] = columns_[i].size();
      for (const auto& row : rows_) {
        for (size_t i = 0; i < row.size() && i < width.size(); i++) {
          width[i] = std::max(width[i], row[i].size());
        }
      }
      auto line = [&](const std::vector<std::string>& cells) {
        std::string l;
        for (size_t i = 0; i < columns_.size(); i++) {
          const std::string& c = i < cells.size() ? cells[i] : std::string();
          l += (i ? " | " : " ") + c;
          if (i + 1 < columns_.size()) l += std::string(width[i] - c.size(), ' ');
        }
        return l + "\n";
      };
      out += line(columns_);
      std::string sep;
      for (size_t i = 0; i < columns_.size(); i++) {
        sep += (i ? "-+-" : "-") + std::string(width[i], '-');
      }
      out += sep + "\n";
      for (const auto& row : rows_) out += line(row);
      return out;
    }
  }
  return out;
}

StreamingOutput::StreamingOutput(std::vector<std::string> columns, OutputFormat format, FILE* out)
    : columns_(std::move(columns)), format_(format), out_(out) {
  for (const auto& c : columns_) width_.push_back(c.size());
}

void StreamingOutput::AddRow(std::vector<std::string> text, std::vector<json> values) {
  rows_.push_back(std::move(text));
  values_.push_back(std::move(values));
}

std::string StreamingOutput::Line(const std::vector<std::string>& cells) const {
  std::string l;
  for (size_t i = 0; i < columns_.size(); i++) {
    const std::string& c = i < cells.size() ? cells[i] : std::string();
    l += (i ? " | " : " ") + c;
    if (i + 1 < columns_.size() && c.size() < width_[i]) {
      l += std::string(width_[i] - c.size(), ' ');
    }
  }
  return l + "\n";
}

void StreamingOutput::EndBatch() {
  std::string out;
  switch (format_) {
    case OutputFormat::kJson:
      for (const auto& row : values_) {
        out += (started_ ? (num_rows_ > 0 ? "," : "") : "[") + JsonRow(columns_, row);
        started_ = true;
        num_rows_++;
      }
      if (!started_) {
        out += "[";
        started_ = true;
      }
      break;
    case OutputFormat::kCsv:
      if (!started_) {
        for (size_t i = 0; i < columns_.size(); i++) out += (i ? "," : "") + CsvQuote(columns_[i]);
        out += "\n";
        started_ = true;
      }
      // NULL is an empty unquoted field (an empty string is ""), as the CSV reader takes it.
      for (size_t r = 0; r < rows_.size(); r++) {
        for (size_t i = 0; i < rows_[r].size(); i++) {
          const bool null = i < values_[r].size() && values_[r][i].is_null();
          out += (i ? "," : "") + (null ? std::string() : CsvQuote(rows_[r][i]));
        }
        out += "\n";
        num_rows_++;
      }
      break;
    case OutputFormat::kTable:
      for (const auto& row : rows_) {
        for (size_t i = 0; i < row.size() && i < width_.size(); i++) {
          width_[i] = std::max(width_[i], row[i].size());
        }
      }
      if (!started_) {
        out += Line(columns_);
        std::string sep;
        for (size_t i = 0; i < columns_.size(); i++) {
          sep += (i ? "-+-" : "-") + std::string(width_[i], '-');
        }
        out += sep + "\n";
        started_ = true;
      }
      for (const auto& row : rows_) {
        out += Line(row);
        num_rows_++;
      }
      break;
  }
  rows_.clear();
  values_.clear();
  fwrite(out.data(), 1, out.size(), out_);
  fflush(out_);
}

void StreamingOutput::Finish() {
  EndBatch();
  if (format_ == OutputFormat::kJson) {
    fputs("]\n", out_);
    fflush(out_);
  }
}

void TableOutput::Print(OutputFormat format, FILE* out) const {
  std::string s = Render(format);
  fwrite(s.data(), 1, s.size(), out);
}

}  // namespace nyala::tools
